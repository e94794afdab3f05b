"""`barajamos bench load`: many tables of bot clients against a real server process.

For each scale (a number of 4-seat tables, say 100, 500, 1000, 2500) it:

1. creates a fresh database in an embedded PostgreSQL of its own and registers the bot accounts
   there directly at the minimum Argon2id cost (`server.accounts.register(..., MINIMUM)`; the
   server itself always hashes at the interactive cost, which would take minutes for 10,000);
2. starts `python -m server serve` on a free port with that database, pinned to one core
   (`os.sched_setaffinity`); this process, its client workers and PostgreSQL keep to the others;
3. has client worker processes (`server.botclient` pieces, public protocol only) log in, create
   private tables, join them with the invite code, connect every seat and start the matches,
   spread over a second; a share of the tables has one "sleeping" seat that never acts, so the
   server's clock acts for it (first after the 20 s decision clock, then every 2 s while absent,
   until the abandonment rule forfeits the match and the bots ask for a rematch);
4. after a warm-up, records for a window: applied actions/s (the server's counter), acknowledged
   actions/s (each ack comes after the group commit: durable actions), the latency from an action
   sent to its event received by every seat of the table, how late automatic actions came after
   their deadline (the server's histogram, and as seen by the sleeping seat), the server's RSS per
   connected player above its idle baseline, and the server's CPU use;
5. stops the bots and audits every acknowledged action: it must be in the events the acting seat
   received, in the written action rows, and in the signed record of its hand once finished.

Two modes: paced (`--rate R`: every table acts about R times a second) and `--full-speed` (each
bot acts as soon as it may, within the protocol's message rate). Figures are printed with the
machine; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import multiprocessing
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
from prometheus_client.parser import text_string_to_metric_families
from yarl import URL

from server.accounts import MAX_FAILURES_PER_REMOTE, MINIMUM, AccountError, register
from server.bench_engine import cpu_model
from server.botclient import (
    BotSession,
    ProtocolError,
    RunStats,
    TablePlan,
    TableRun,
    Unreachable,
    audit_table,
    bot_account,
    describe_errors,
    percentile,
    seat_table,
)
from server.db import EmbeddedPostgres, migrate
from server.loops import quiet_gc
from server.loops import run as run_loop
from server.metrics import LATENCY_BUCKETS
from truco import Variant

TARGET_TABLES = 2500
TARGET_P99 = 0.050
TARGET_LATENESS = 0.100
TARGET_BYTES_PER_PLAYER = 50_000  # the 50 KB, read strictly: 48.8 KiB
TARGET_FULL_SPEED = 5000.0
LOBBY_REFRESH = 4.0  # seconds between a lobby page's refreshes (server/static/js/lobby.js)
NAME_PREFIX = "load"
PASSWORD_PREFIX = "bench-load"
SERVER_START_TIMEOUT = 90.0
DRAIN_SECONDS = 3.0  # after the window: answers to messages already sent still arrive
PAGE = 1024  # KiB per MiB


class BenchError(RuntimeError):
    """The benchmark could not run (one line for the user)."""


# --- the machine ----------------------------------------------------------------------------------

def cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def pin(pid: int, cpus: Sequence[int]) -> bool:
    try:
        os.sched_setaffinity(pid, set(cpus))
    except (AttributeError, OSError):
        return False
    return True


def rss_kib(pid: int) -> int:
    """VmRSS of a process, in KiB (Linux)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def py_spy() -> str | None:
    """The py-spy sampler next to this Python, or on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start_profile(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    """Sample a process for `seconds` (py-spy, collapsed stacks); None without py-spy."""
    sampler = py_spy()
    if sampler is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sampler, "record", "--pid", str(pid), "--duration", str(max(1, round(seconds))),
         "--format", "raw", "--nonblocking", "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cpu_stall_seconds() -> float | None:
    """Seconds in which some runnable task waited for a CPU (Linux pressure stall info, the
    "some" line of /proc/pressure/cpu): how much other work crowded this machine."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as pressure:
            for line in pressure:
                if line.startswith("some"):
                    return int(line.rsplit("total=", 1)[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- the server's /metrics ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Scrape:
    """The figures read from one /metrics answer."""

    actions: float
    live_tables: float
    connected: float
    lateness: tuple[tuple[float, float], ...]  # cumulative (upper bound, count)
    batch_sum: float
    batch_count: float
    server_latency: tuple[tuple[float, float], ...]
    commit: tuple[tuple[float, float], ...] = ()
    gc_count: float = 0.0  # garbage collections so far (young and whole), and their seconds
    gc_sum: float = 0.0
    gc_whole: float = 0.0  # of them whole
    gc_pauses: tuple[tuple[float, float], ...] = ()  # cumulative (upper bound, count), both kinds


def parse_metrics(text: str) -> Scrape:
    values: dict[str, float] = {}
    buckets: dict[str, list[tuple[float, float]]] = {}
    pauses: dict[float, float] = {}  # the collections' two kinds summed bucket by bucket
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "barajamos_gc_seconds_bucket":
                bound = float(sample.labels["le"])
                pauses[bound] = pauses.get(bound, 0.0) + sample.value
            elif sample.name == "barajamos_gc_seconds_count" and sample.labels["kind"] == "whole":
                values["gc_whole"] = sample.value
            if sample.name.endswith("_bucket"):
                bound = float(sample.labels["le"])
                buckets.setdefault(sample.name, []).append((bound, sample.value))
            else:
                values[sample.name] = values.get(sample.name, 0.0) + sample.value
    return Scrape(
        actions=values.get("barajamos_actions_total", 0.0),
        live_tables=values.get("barajamos_live_tables", 0.0),
        connected=values.get("barajamos_connected_players", 0.0),
        lateness=tuple(sorted(buckets.get(
            "barajamos_automatic_action_lateness_seconds_bucket", []))),
        batch_sum=values.get("barajamos_write_batch_size_sum", 0.0),
        batch_count=values.get("barajamos_write_batch_size_count", 0.0),
        server_latency=tuple(sorted(buckets.get(
            "barajamos_action_latency_seconds_bucket", []))),
        commit=tuple(sorted(buckets.get("barajamos_write_seconds_bucket", []))),
        gc_count=values.get("barajamos_gc_seconds_count", 0.0),
        gc_sum=values.get("barajamos_gc_seconds_sum", 0.0),
        gc_whole=values.get("gc_whole", 0.0),
        gc_pauses=tuple(sorted(pauses.items())),
    )


def histogram_quantile(q: float, before: Sequence[tuple[float, float]],
                       after: Sequence[tuple[float, float]]) -> tuple[float | None, int]:
    """The q-quantile of the observations between two scrapes of a cumulative histogram,
    interpolated linearly inside its bucket (as PromQL's histogram_quantile), infinity when it
    lies beyond the last finite bucket; and how many observations there were."""
    earlier = dict(before)
    counts = [(bound, count - earlier.get(bound, 0.0)) for bound, count in after]
    if not counts or counts[-1][1] <= 0:
        return None, 0
    total = counts[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in counts:
        if count >= rank:
            if math.isinf(bound):
                return math.inf, int(total)  # only known to be over the last finite bound
            share = (rank - lower_count) / (count - lower_count) if count > lower_count else 1
            return lower_bound + (bound - lower_bound) * share, int(total)
        lower_bound, lower_count = bound, count
    return lower_bound, int(total)


def _longest(before: Sequence[tuple[float, float]],
             after: Sequence[tuple[float, float]]) -> str:
    """How long the longest collection between two scrapes was at most (the bucket bound that
    holds them all: the histogram's 1.0 quantile), as the report's words: "" when there was
    none."""
    longest, count = histogram_quantile(1.0, before, after)
    if longest is None or count == 0:
        return ""
    if math.isinf(longest):
        return f"; the longest over {after[-2][0] * 1000:.0f} ms"
    return f"; each at most {longest * 1000:.0f} ms"


async def scrape(base: URL) -> Scrape:
    async with aiohttp.ClientSession() as http, http.get(base / "metrics") as resp:
        return parse_metrics(await resp.text())


# --- the server process and its database ----------------------------------------------------------

def with_database(url: str, name: str) -> str:
    """The same server URL naming another database (also for socket-folder URLs)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


async def prepare_database(admin_url: str, name: str, accounts: int,
                           concurrency: int = 32) -> str:
    """A fresh, migrated database with the bots' accounts (minimum Argon2id cost)."""
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    dsn = with_database(admin_url, name)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(dsn, min_size=2, max_size=8)
    try:
        gate = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            account = bot_account(NAME_PREFIX, PASSWORD_PREFIX, index)
            async with gate:
                await register(pool, account.name, account.password, MINIMUM)

        await asyncio.gather(*(one(i) for i in range(accounts)))
    except AccountError as exc:
        raise BenchError(f"cannot create the bot accounts: {exc.message}") from None
    finally:
        await pool.close()
    return dsn


class ServerProcess:
    """`python -m server serve` on a free port, pinned to one core."""

    def __init__(self, dsn: str, data_dir: Path, core: int | None, log_path: Path) -> None:
        self.port = free_port()
        self.base = URL(f"http://127.0.0.1:{self.port}/")
        self.log_path = log_path
        env = {**os.environ, "BARAJAMOS_LOG_LEVEL": "WARNING"}
        pin_to: Callable[[], None] | None = None
        if core is not None:
            def pin_to() -> None:  # runs in the child before exec: every thread inherits it
                os.sched_setaffinity(0, {core})
        self._log = open(log_path, "wb")  # noqa: SIM115 (kept open for the process's life)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", "--port", str(self.port),
             "--data-dir", str(data_dir), "--database-url", dsn],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, preexec_fn=pin_to)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise BenchError(f"the server exited with {self.proc.returncode}: "
                                     f"{self._tail()}")
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with http.get(self.base / "health") as resp:
                        if resp.status == 200:
                            return
                await asyncio.sleep(0.2)
        raise BenchError(f"the server did not answer /health within {SERVER_START_TIMEOUT:g} s")

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(no output)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# --- client workers (separate processes) ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class WorkerPlan:
    base: str
    dsn: str
    plan: TablePlan
    tables: tuple[int, ...]  # global table numbers; table t's seats are accounts t*seats + s
    sleepers: frozenset[int]  # tables with a sleeping seat
    start_spread: float
    setup_concurrency: int
    seed: int
    lobby: int = 0  # of this worker's players, how many also have the lobby open (`--lobby`)


@dataclass
class WorkerResult:
    index: int
    tables: int = 0
    stats: RunStats = field(default_factory=RunStats)
    failure: str | None = None


async def _until(event: EventType, poll: float = 0.05) -> None:
    while not event.is_set():
        await asyncio.sleep(poll)


async def _audit(dsn: str, runs: Sequence[TableRun]) -> None:
    """Every acknowledged action must be in the written rows and in its hand's record."""
    ids = [run.table_id for run in runs]
    conn = await asyncpg.connect(dsn)
    try:
        records: dict[str, dict[int, list[Any]]] = {}
        durable: dict[str, dict[int, list[Any]]] = {}
        # one snapshot for both: a hand recorded between two reads (its rows dropped in the
        # record's commit: the house still plays) was in neither, and its actions read as lost
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            for row in await conn.fetch(
                    "SELECT table_id, hand, record->'actions' AS actions FROM live_hands"
                    " WHERE table_id = ANY($1) AND record IS NOT NULL", ids):
                records.setdefault(row["table_id"], {})[row["hand"]] = json.loads(
                    row["actions"])
            for row in await conn.fetch(
                    "SELECT table_id, hand, action FROM live_actions WHERE table_id = ANY($1)"
                    " ORDER BY table_id, hand, idx", ids):
                durable.setdefault(row["table_id"], {}).setdefault(row["hand"], []).append(
                    json.loads(row["action"]))
    finally:
        await conn.close()
    for run in runs:
        audit_table(run, records.get(run.table_id, {}), durable.get(run.table_id, {}))


async def _lobby_tab(session: BotSession, stats: RunStats, rng: random.Random) -> None:
    """A player's lobby page, open beside their table: both of its lists at once, then again
    `LOBBY_REFRESH` seconds after their answers, as lobby.js asks for them."""
    await asyncio.sleep(rng.uniform(0, LOBBY_REFRESH))
    while True:
        started = time.perf_counter()
        try:
            await asyncio.gather(session.request("GET", "/api/tables"),
                                 session.request("GET", "/api/tables?mine=1"))
        except (ProtocolError, Unreachable) as exc:
            stats.errors[f"lobby_{type(exc).__name__}"] += 1
        else:
            if stats.recording:
                stats.lobby.append(time.perf_counter() - started)
        await asyncio.sleep(LOBBY_REFRESH)


async def _worker_main(worker: WorkerPlan, result: WorkerResult, ready: Callable[[int], None],
                       go: EventType, record: EventType, stop: EventType) -> None:
    stats = result.stats
    stats.recording = False
    plan = worker.plan
    base = URL(worker.base)
    rng = random.Random(worker.seed)
    connector = aiohttp.TCPConnector(limit=0)
    sessions: list[BotSession] = []
    runs: list[TableRun] = []
    gate = asyncio.Semaphore(worker.setup_concurrency)

    async def seat(table: int) -> None:
        mine = [BotSession(base, bot_account(NAME_PREFIX, PASSWORD_PREFIX,
                                             table * plan.seats + s), connector)
                for s in range(plan.seats)]
        sessions.extend(mine)
        async with gate:
            try:
                for session in mine:
                    await session.login(existing=True)
                sleepers = (rng.randrange(plan.seats),) if table in worker.sleepers else ()
                runs.append(await seat_table(plan, mine, stats, rng, sleepers))
            except (ProtocolError, OSError, aiohttp.ClientError) as exc:
                # an overloaded server may not answer a login or a join in time: that table
                # is left out (and reported), the others are measured
                stats.unseated += 1
                code = f"_{exc.code}" if isinstance(exc, ProtocolError) else ""
                stats.errors[f"setup_{type(exc).__name__}{code}"] += 1

    tasks: list[asyncio.Task[None]] = []
    tabs: list[asyncio.Task[None]] = []
    try:
        await asyncio.gather(*(seat(t) for t in worker.tables))
        result.tables = len(runs)
        ready(len(runs))
        await _until(go)
        tasks = [asyncio.create_task(s.play()) for run in runs for s in run.seats]
        tabs = [asyncio.create_task(_lobby_tab(bot.session, stats, rng))
                for bot in [bot for run in runs for bot in run.seats][:worker.lobby]]

        async def start(run: TableRun) -> None:
            # spread the starts, so the tables do not all act in the same instant
            await asyncio.sleep(rng.uniform(0, worker.start_spread))
            await run.seats[0].session.start(run.table_id)

        await asyncio.gather(*(start(run) for run in runs))
        await _until(record)
        stats.recording = True
        await _until(stop)
        stats.recording = False
        for tab in tabs:
            tab.cancel()
        await asyncio.gather(*tabs, return_exceptions=True)
        for run in runs:
            run.stopping = True
        await asyncio.sleep(DRAIN_SECONDS)
        await asyncio.gather(*(bot.close() for run in runs for bot in run.seats))
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, Exception):  # a seat that stopped playing early
                stats.errors[f"client_{type(outcome).__name__}"] += 1
        await _audit(worker.dsn, runs)
    finally:
        for task in (*tasks, *tabs):
            task.cancel()
        for session in sessions:
            await session.close()
        await connector.close()


# a client process lives minutes and makes little garbage: a collection of its own (a pause
# that all its seats would read as latency) would measure the instrument, not the server; so
# it collects only a second that made 2,000,000 objects, and never walks what it froze
CLIENT_COLLECT_FLOOR = 2_000_000


def _seated(queue: Any, index: int, tables: int) -> None:
    """A client process has seated its tables: what it loaded stays (`quiet_gc`), then it says
    so."""
    quiet_gc(floor=CLIENT_COLLECT_FLOOR, whole=False)
    queue.put(("ready", index, tables))


def _worker(worker: WorkerPlan, index: int, queue: Any, go: EventType, record: EventType,
            stop: EventType) -> None:
    """A client process's entry point (spawned): plays its tables, reports on the queue."""
    result = WorkerResult(index)
    try:
        run_loop(_worker_main(worker, result, functools.partial(_seated, queue, index),
                              go, record, stop))
    except (Unreachable, ProtocolError, BenchError, OSError, asyncpg.PostgresError) as exc:
        result.failure = f"{type(exc).__name__}: {exc}"
    except KeyboardInterrupt:
        result.failure = "interrupted"
    queue.put(("result", index, result))


# --- one scale ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Options:
    tables: tuple[int, ...]
    rate: float | None  # None: full speed
    seconds: float
    warmup: float
    variant: str
    seats: int
    clients: int
    absent_share: float
    keep: Path | None
    profile: Path | None  # a folder for py-spy profiles of the server during the window
    lobby: int = 0  # players who also have the lobby open


@dataclass
class ScaleResult:
    tables: int
    players: int
    setup_seconds: float
    window: float
    before: Scrape
    after: Scrape
    rss_idle_kib: int
    rss_loaded_kib: int
    server_cpu: float  # share of one core during the window
    stats: RunStats
    sleeper_tables: int
    stall_share: float | None  # share of the window some task waited for a CPU

    @property
    def cpu_ms_per_action(self) -> float | None:
        applied = self.after.actions - self.before.actions
        return None if applied <= 0 else self.server_cpu * self.window / applied * 1000

    @property
    def applied_per_second(self) -> float:
        return (self.after.actions - self.before.actions) / self.window

    @property
    def acked_per_second(self) -> float:
        return self.stats.window_actions / self.window

    @property
    def bytes_per_player(self) -> float | None:
        if self.after.connected <= 0:
            return None
        return (self.rss_loaded_kib - self.rss_idle_kib) * 1024 / self.after.connected


def _collect(queue: Any, workers: int, kind: str, timeout: float,
             procs: Sequence[multiprocessing.process.BaseProcess]) -> dict[int, Any]:
    """Wait for one `kind` message from every worker (a dead worker is an error)."""
    got: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    while len(got) < workers:
        try:
            tag, index, value = queue.get(timeout=0.5)
        except Exception:  # queue.Empty: check that the workers are alive
            if time.monotonic() > deadline:
                raise BenchError(f"client workers did not report {kind!r} in time") from None
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise BenchError(f"a client worker died (exit {dead[0].exitcode})") from None
            continue
        if tag == "result" and kind == "ready":
            failure = value.failure or "stopped early"
            raise BenchError(f"client worker {index} failed during setup: {failure}")
        if tag == kind:
            got[index] = value
    return got


def run_scale(options: Options, admin_url: str, work: Path, tables: int,
              core: int | None) -> ScaleResult:
    seats = options.seats
    name = f"load_{tables}_{os.getpid()}"
    dsn = asyncio.run(prepare_database(admin_url, name, tables * seats))
    server = ServerProcess(dsn, work / f"server-{tables}", core, work / f"server-{tables}.log")
    procs: list[multiprocessing.process.BaseProcess] = []
    try:
        asyncio.run(server.wait_ready())
        time.sleep(1.0)  # let the started server settle before its idle baseline
        rss_idle = rss_kib(server.pid)
        pace = 0.0 if options.rate is None else 1.0 / options.rate
        plan = TablePlan(options.variant, seats, "private", pace, matches=1_000_000)
        rng = random.Random(tables)
        sleeper_count = 0 if options.absent_share <= 0 else max(
            1, round(options.absent_share * tables))
        sleepers = frozenset(rng.sample(range(tables), sleeper_count))
        workers = max(1, min(options.clients, tables))
        # every client logs in from this one address, and a login counts as failed until its
        # password is checked (server/accounts.py): more than MAX_FAILURES_PER_REMOTE logins in
        # flight at once from one address are refused 429, as a password-guessing burst is
        concurrency = max(1, (MAX_FAILURES_PER_REMOTE - 6) // workers)
        lobby = min(options.lobby, tables * seats)  # the players with the lobby open too
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        go, record, stop = context.Event(), context.Event(), context.Event()
        for index in range(workers):
            worker = WorkerPlan(
                base=str(server.base), dsn=dsn, plan=plan,
                tables=tuple(range(index, tables, workers)), sleepers=sleepers,
                start_spread=max(pace, 0.5), setup_concurrency=concurrency,
                seed=tables * 1000 + index,
                lobby=lobby // workers + (index < lobby % workers))
            proc: multiprocessing.process.BaseProcess = context.Process(
                target=_worker, args=(worker, index, queue, go, record, stop),
                name=f"bench-load-client-{index}", daemon=True)
            proc.start()
            procs.append(proc)
        started = time.perf_counter()
        _collect(queue, workers, "ready", timeout=600 + tables * 0.5, procs=procs)
        setup = time.perf_counter() - started
        go.set()
        time.sleep(options.warmup)
        before = asyncio.run(scrape(server.base))
        cpu_before = cpu_seconds(server.pid)
        stall_before = cpu_stall_seconds()
        profiler = None if options.profile is None else start_profile(
            server.pid, options.seconds, options.profile / f"server-{tables}.txt")
        record.set()
        window_start = time.perf_counter()
        time.sleep(options.seconds)
        after = asyncio.run(scrape(server.base))
        cpu_after = cpu_seconds(server.pid)
        stall_after = cpu_stall_seconds()
        rss_loaded = rss_kib(server.pid)
        stop.set()
        window = time.perf_counter() - window_start
        stall = (None if stall_before is None or stall_after is None
                 else (stall_after - stall_before) / window)
        results: dict[int, WorkerResult] = _collect(queue, workers, "result",
                                                    timeout=300 + tables * 0.2, procs=procs)
        if profiler is not None:
            profiler.wait(timeout=60)
        stats = RunStats()
        for result in results.values():
            if result.failure:
                raise BenchError(f"client worker {result.index} failed: {result.failure}")
            stats.merge(result.stats)
        return ScaleResult(tables, tables * seats, setup, window, before, after, rss_idle,
                           rss_loaded, (cpu_after - cpu_before) / window, stats, sleeper_count,
                           stall)
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
        server.stop()


# --- output ---------------------------------------------------------------------------------------

def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if math.isinf(seconds):
        return f"over {LATENCY_BUCKETS[-1] * 1000:.0f} ms (beyond the histogram)"
    return f"{seconds * 1000:.1f} ms"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def report(result: ScaleResult, options: Options) -> None:
    stats = result.stats
    p50 = percentile(stats.latencies, 50)
    p99 = percentile(stats.latencies, 99)
    server_auto, auto_count = histogram_quantile(0.99, result.before.lateness,
                                                 result.after.lateness)
    client_auto = percentile(stats.lateness, 99)
    server_p99, _ = histogram_quantile(0.99, result.before.server_latency,
                                       result.after.server_latency)
    commit_p50, _ = histogram_quantile(0.50, result.before.commit, result.after.commit)
    commit_p99, _ = histogram_quantile(0.99, result.before.commit, result.after.commit)
    per_player = result.bytes_per_player
    batches = result.after.batch_count - result.before.batch_count
    mean_batch = ((result.after.batch_sum - result.before.batch_sum) / batches
                  if batches else 0.0)
    print(f"== {result.tables} tables, {result.players} players ==")
    print(f"setup (logins, tables, sockets): {result.setup_seconds:.1f} s; "
          f"window {result.window:.1f} s")
    line = (f"live tables: {result.after.live_tables:.0f}; connected players: "
            f"{result.after.connected:.0f}")
    if stats.unseated:
        line += (f"; {stats.unseated} of {result.tables} tables could not be seated (the server"
                 f" did not answer in time): the figures below are the other tables'"
                 f"  [target: every table live: MISSED]")
    print(line)
    line = (f"applied actions/s: {result.applied_per_second:.1f} (server counter); durable "
            f"acknowledged actions/s: {result.acked_per_second:.1f} (clients)")
    if options.rate is None:
        line += (f"  [target >= {TARGET_FULL_SPEED:.0f}/s: "
                 f"{_verdict(result.acked_per_second >= TARGET_FULL_SPEED)}]")
    print(line)
    print(f"latency action sent -> event at every seat: p50 {_ms(p50)}, p99 {_ms(p99)} "
          f"({len(stats.latencies)} actions)  [target p99 < {TARGET_P99 * 1000:.0f} ms: "
          f"{_verdict(None if p99 is None else p99 < TARGET_P99)}]")
    print(f"  server side, arrival -> broadcast queued: p99 {_ms(server_p99)} (histogram); "
          f"group commit p50 {_ms(commit_p50)}, p99 {_ms(commit_p99)}")
    worst = None if server_auto is None and client_auto is None else max(
        x for x in (server_auto, client_auto) if x is not None)
    print(f"automatic actions after their deadline: p99 {_ms(server_auto)} applied (server "
          f"histogram, {auto_count}), p99 {_ms(client_auto)} received by the seat "
          f"({len(stats.lateness)}); {result.sleeper_tables} tables with a sleeping seat  "
          f"[target < {TARGET_LATENESS * 1000:.0f} ms: "
          f"{_verdict(None if worst is None else worst < TARGET_LATENESS)}]")
    per_player_text = "n/a" if per_player is None else f"{per_player / 1024:.1f} KiB"
    print(f"server RSS: idle {result.rss_idle_kib / PAGE:.1f} MiB, loaded "
          f"{result.rss_loaded_kib / PAGE:.1f} MiB: {per_player_text} per connected player  "
          f"[target <= 50 KB ({TARGET_BYTES_PER_PLAYER / 1024:.1f} KiB): "
          f"{_verdict(None if per_player is None else per_player <= TARGET_BYTES_PER_PLAYER)}]")
    per_action = result.cpu_ms_per_action
    stall = ("n/a" if result.stall_share is None
             else f"{result.stall_share:.0%} of the time some task waited for a CPU")
    collections = round(result.after.gc_count - result.before.gc_count)
    whole = round(result.after.gc_whole - result.before.gc_whole)
    longest = _longest(result.before.gc_pauses, result.after.gc_pauses)
    print(f"server CPU: {result.server_cpu * 100:.0f}% of its core, "
          f"{'n/a' if per_action is None else f'{per_action:.2f} ms'} per applied action; "
          f"machine: {stall}; group commit: {mean_batch:.1f} jobs per transaction; garbage "
          f"collections: {collections} in the window, {whole} of them whole "
          f"({(result.after.gc_sum - result.before.gc_sum) * 1000:.0f} ms in all, the server "
          f"paused{longest})")
    print(f"errors: {describe_errors(stats.errors)}; refused as out of date: "
          f"{describe_errors(stats.raced)}; applied to the next hand: {stats.stale_applied}; "
          f"reconnects: {stats.reconnects}")
    print(f"lost actions: {stats.lost} of {stats.audited} acknowledged (missing from the "
          f"events {stats.lost_events}, the written rows {stats.lost_durable}, the hand records "
          f"{stats.lost_records}); sent but unanswered at the stop: {stats.unacked}  "
          f"[target 0: {_verdict(stats.lost == 0)}]", flush=True)
    if options.lobby:
        print(f"lobby: {min(options.lobby, result.players)} players with the lobby open beside "
              f"their table, both lists {LOBBY_REFRESH:g} s after the last answer: p50 "
              f"{_ms(percentile(stats.lobby, 50))}, p99 {_ms(percentile(stats.lobby, 99))} "
              f"({len(stats.lobby)} refreshes)", flush=True)


# --- the command line -----------------------------------------------------------------------------

class UsageError(Exception):
    pass


class UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def table_counts(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of table counts: {text!r}") from None
    if not values or any(v < 1 or v > 20_000 for v in values):
        raise argparse.ArgumentTypeError("table counts are 1..20000, comma-separated")
    return values


def number_between(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}")
        return value

    return parse


def _parser() -> UsageParser:
    parser = UsageParser(prog="barajamos bench load",
                     description="Many bot tables against a real server process: throughput, "
                     "latency, automatic-action lateness, memory per player, lost actions.")
    parser.add_argument("--tables", type=table_counts, default=(100,),
                        help="table counts to measure in turn, e.g. 100,500,1000,2500")
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--rate", type=number_between(0.01, 100), default=1.0,
                       help="actions per second per table (default 1)")
    speed.add_argument("--full-speed", action="store_true",
                       help="bots act as soon as they may: durable actions per second")
    parser.add_argument("--seconds", type=number_between(1, 3600), default=40.0,
                        help="measured window per scale (default 40: the first automatic "
                        "actions come 20 s into a match)")
    parser.add_argument("--warmup", type=number_between(0, 600), default=5.0,
                        help="seconds of play before the window (default 5)")
    parser.add_argument("--variant", choices=[v.value for v in Variant], default="paulista")
    parser.add_argument("--seats", type=int, choices=[2, 4], default=4)
    parser.add_argument("--clients", type=int, default=0,
                        help="client processes (default: one per 2,500 players, at least 1)")
    parser.add_argument("--absent-share", type=number_between(0, 1), default=None,
                        help="share of tables with a sleeping seat (default 0.05 paced, 0 at "
                        "full speed)")
    parser.add_argument("--lobby", type=int, default=0,
                        help="of the players, how many also have the lobby page open, asking"
                        f" for its two lists {LOBBY_REFRESH:g} s after each answer as a browser"
                        " does: the time a refresh takes is printed (default 0)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the data (database, server logs) in this new folder")
    parser.add_argument("--profile", type=Path, default=None,
                        help="sample the server with py-spy during the window (it must be "
                        "installed: pip install py-spy); collapsed stacks go to "
                        "PROFILE/server-TABLES.txt, ready for a flame graph")
    return parser


def _options(argv: list[str]) -> Options:
    args = _parser().parse_args(argv)
    if args.clients < 0 or args.clients > 64:
        raise UsageError("--clients is 1..64 (0: automatic)")
    if args.keep is not None and args.keep.exists():
        raise UsageError(f"--keep {args.keep}: the folder already exists")
    if args.lobby < 0:
        raise UsageError("--lobby is a number of players, 0 or more")
    if args.profile is not None and py_spy() is None:
        raise UsageError("--profile needs py-spy (pip install py-spy)")
    rate = None if args.full_speed else args.rate
    share = args.absent_share if args.absent_share is not None else (
        0.0 if rate is None else 0.05)
    players = max(args.tables) * args.seats
    clients = args.clients or max(1, round(players / 2500))
    return Options(args.tables, rate, args.seconds, args.warmup, args.variant, args.seats,
                   clients, share, args.keep, args.profile, args.lobby)


def main(argv: list[str]) -> int:
    try:
        options = _options(argv)
    except UsageError as exc:
        print(f"barajamos bench load: {exc} (see --help)", file=sys.stderr)
        return 2
    available = cores()
    server_core = available[0] if len(available) > 1 else None
    client_cores = [c for c in available if c != server_core]
    print(f"machine: {cpu_model()}, {len(available)} cores, {platform.system()} "
          f"{platform.machine()}")
    print(f"python: {platform.python_implementation()} {platform.python_version()}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before (1/5/15 min, other work on this machine): {load}")
    placement = (f"server pinned to core {server_core}; clients on "
                 f"{','.join(map(str, client_cores))}; PostgreSQL on any core"
                 if server_core is not None
                 else "one core: server, clients and PostgreSQL share it")
    mode = ("full speed" if options.rate is None
            else f"paced, {options.rate:g} action/s per table")
    print(f"{placement}; {mode}; {options.seats}-seat {options.variant} private tables; "
          f"{options.warmup:g} s warm-up, {options.seconds:g} s window; {options.clients} client "
          f"process(es); {options.absent_share:.0%} of tables with a sleeping seat"
          + (f"; {options.lobby} players with the lobby open" if options.lobby else ""),
          flush=True)
    work = options.keep if options.keep is not None else Path(
        tempfile.mkdtemp(prefix="barajamos-load-"))
    work.mkdir(parents=True, exist_ok=True)
    embedded = EmbeddedPostgres(work / "pg")
    try:
        # PostgreSQL starts before this process pins itself, so it may use every core (the
        # server's spare time too); the clients (spawned later) inherit the pin
        admin_url = embedded.start()
        if server_core is not None:
            pin(0, client_cores)
        for tables in options.tables:
            report(run_scale(options, admin_url, work, tables, server_core), options)
    except BenchError as exc:
        print(f"barajamos bench load: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("barajamos bench load: interrupted", file=sys.stderr)
        return 130
    finally:
        embedded.stop()
        if options.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0
