"""The house: every live table's actor, the group-commit writer, the signing key, server runs.

Created by `server.live.setup`; started once the database pool exists (rebuilding every live
table from what was written) and stopped after the sockets were closed (flushing writes and
recording a clean stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import secrets
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import asyncpg
from aiohttp import WSCloseCode, web

from server.clock import Clock, Timer
from server.config import Config
from server.db import DATABASE_UNREACHABLE, SERVING_LOCK
from server.live.model import LiveError, LiveSettings, TableKind, TableStatus
from server.live.table import MatchResult, Seat, TableActor, at, ms
from server.live.writer import WRITE_ERRORS, GroupWriter, error_text
from server.metrics import Metrics
from truco import MatchConfig, Variant
from truco.records import key_id_for
from verifier.signing import SigningKey, signing_key_from_seed

if TYPE_CHECKING:
    from server.live.ws import Connection

log = logging.getLogger("barajamos.live")

# seconds before each new attempt at a settlement that failed (the database away)
SETTLE_RETRIES = (5.0, 30.0, 120.0, 600.0)
SWEEP_EVERY = 60.0  # seconds between two looks for idle tables (`House._sweep`)
INVITE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud safely


# seconds a commit may wait before /health says the house cannot save moves
WRITE_STUCK: Final = 5.0
# seconds a stop gives a table or a settlement beyond twice the write timeout (`House.stop`)
STOP_MARGIN: Final = 15.0


def new_invite() -> str:
    chars = "".join(secrets.choice(INVITE_ALPHABET) for _ in range(8))
    return f"{chars[:4]}-{chars[4:]}"


@dataclass(frozen=True, slots=True)
class Lineup:
    """Who plays a competitive table's match, seat by seat, and whether the match has outlived
    a server run (it was rebuilt by this run's recovery, so a restart fell inside it)."""

    users_by_seat: tuple[int, ...]
    restart_overlap: bool


class ConnectLimiter:
    """Sockets each user opens to each table: a bucket of `connect_burst` tokens, one more every
    `connect_interval` seconds (`LiveSettings`). Full buckets are forgotten as they are met, so
    the map holds only users who connected lately."""

    def __init__(self) -> None:
        # (user, table) -> (tokens, when they were counted)
        self.buckets: dict[tuple[int, str], tuple[float, float]] = {}
        self._admitted = 0

    def admit(self, user_id: int, table_id: str, now: float, settings: LiveSettings, *,
              take: bool = True) -> float:
        """0 when a socket may be opened now (and, with `take`, count it); else the seconds
        until one may."""
        key = (user_id, table_id)
        tokens, then = self.buckets.get(key, (float(settings.connect_burst), now))
        tokens = min(float(settings.connect_burst),
                     tokens + max(0.0, now - then) / settings.connect_interval)
        if tokens < 1.0:
            return (1.0 - tokens) * settings.connect_interval
        if take:
            self.buckets[key] = (tokens - 1.0, now)
            self._admitted += 1
            if self._admitted % 1024 == 0:
                self.forget_full(now, settings)
        return 0.0

    def forget_full(self, now: float, settings: LiveSettings) -> None:
        """Forget the buckets full again (every 1,024 admissions, and at the house's minutely
        sweep: a soak found hundreds kept after the sockets had all gone)."""
        full = settings.connect_burst * settings.connect_interval
        for key, (tokens, then) in list(self.buckets.items()):
            if tokens + (now - then) / settings.connect_interval >= settings.connect_burst \
                    or now - then >= full:
                del self.buckets[key]


# wrong invite codes a user may send (to any private tables) in `INVITE_GUESS_WINDOW` seconds;
# then every code they send is refused until the oldest of those leaves the window
INVITE_GUESSES = 20
INVITE_GUESS_WINDOW = 600.0


class InviteGuesses:
    """Wrong private-table invite codes each user sent lately (memory only). A code has 40 bits
    and the table id 64, so guessing was hopeless already; this keeps it so for anyone with
    a table's id (its public chain names it) and makes a guesser stand out (the log)."""

    def __init__(self, limit: int = INVITE_GUESSES, window: float = INVITE_GUESS_WINDOW) -> None:
        self.limit = limit
        self.window = window
        self.wrong: dict[int, deque[float]] = {}
        self._counted = 0

    def wait(self, user_id: int, now: float) -> float:
        """0 when this user may try a code now; else the seconds until they may."""
        times = self.wrong.get(user_id)
        if times is None:
            return 0.0
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self.wrong[user_id]
            return 0.0
        return 0.0 if len(times) < self.limit else times[0] + self.window - now

    def guess(self, user_id: int, invite: object, opens: Callable[[object], bool],
              now: float) -> bool:
        """Whether `invite` (a non-empty code) opens the table: counted when wrong; refused
        (LiveError 429 `too_many_guesses`) when this user sent too many wrong ones lately."""
        wait = self.wait(user_id, now)
        if wait > 0:
            raise LiveError("too_many_guesses",
                            f"Too many wrong invite codes: try again in {math.ceil(wait)} s.", 429,
                            headers={"Retry-After": str(math.ceil(wait))})
        if opens(invite):
            return True
        times = self.wrong.setdefault(user_id, deque())
        times.append(now)
        if len(times) == self.limit:
            log.warning("invite_guesses", extra={"user": user_id, "wrong": len(times)})
        self._counted += 1
        if self._counted % 1024 == 0:  # forget now and then the users whose window passed
            self.forget_passed(now)
        return False

    def forget_passed(self, now: float) -> None:
        """Forget the users whose wrong codes all left the window (every 1,024 wrong codes, and
        at the house's minutely sweep)."""
        for user, kept in list(self.wrong.items()):
            if not kept or now - kept[-1] >= self.window:
                del self.wrong[user]


class HouseBusy(RuntimeError):
    """This house may not serve this database: another house serves it (two would each hold its
    tables in memory and overwrite each other's writes), or `KeysChanged`."""


class KeysChanged(HouseBusy):
    """The house's keys are not the ones the database's sealed seeds or signed records were
    made with (a lost or moved secrets.json, another data folder, a wrong key in the
    environment): serving would lose every hand in play, or sign with an unannounced key."""


def seed_key_id(seed_key: bytes) -> str:
    """A name for the seed key that reveals nothing of it (the database keeps it)."""
    return hashlib.sha256(b"barajamos/seed-key-id\0" + seed_key).hexdigest()[:32]


async def check_keys(pool: asyncpg.Pool, seed_key: bytes, public_key: bytes) -> None:
    """Refuse keys other than the ones this database was served with; record them the first
    time. The seed key decrypts the seeds of hands in play; the signing key is the one players
    pinned (docs/OPERATIONS.md, Keys)."""
    given = {"seed": seed_key_id(seed_key), "signing": public_key.hex()}
    async with pool.acquire() as conn, conn.transaction():
        kept = {row["name"]: row["key_id"]
                for row in await conn.fetch("SELECT name, key_id FROM house_keys FOR UPDATE")}
        for name, what, variable in (
                ("seed", "seed key (it decrypts the seeds of the hands in play)",
                 "BARAJAMOS_SEED_KEY"),
                ("signing", "signing key (the one the players pinned)",
                 "BARAJAMOS_SIGNING_KEY")):
            if name in kept and kept[name] != given[name]:
                raise KeysChanged(
                    f"this database was served with another {what}: restore the house's"
                    f" secrets.json (its data folder) or give {variable}; see"
                    " docs/OPERATIONS.md, Keys")
        await conn.executemany(
            "INSERT INTO house_keys (name, key_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            list(given.items()))


_SERVING_LOCK = SERVING_LOCK  # held by the one house serving a database (server.db)


LOCK_CHECK_EVERY = 5.0  # seconds between two checks that the serving lock is still held
LOCK_TRIES_SAID = 12  # a lock not taken again is logged at the first try, then every 12th


async def serve_alone(dsn: str, tries: int = 50) -> asyncpg.Connection:
    """A connection holding the serving lock for the life of the house (a session lock: it goes
    when the connection does, a killed house's too, once its backend has noticed: hence a few
    tries, 0.2 s apart). Over TCP the database probes the connection (keepalives), so the lock
    of a house whose machine died is freed within about a minute, not the system's two hours."""
    conn = await asyncpg.connect(dsn, timeout=10, server_settings={
        "tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10",
        "tcp_keepalives_count": "3"})
    try:
        for attempt in range(tries):
            if attempt:
                await asyncio.sleep(0.2)
            if await conn.fetchval("SELECT pg_try_advisory_lock($1)", _SERVING_LOCK):
                return conn
    except BaseException:
        conn.terminate()
        raise
    conn.terminate()
    raise HouseBusy("another house is serving this database (the same data folder or"
                    " DATABASE_URL); stop it first")


def stop_this_process(reason: str) -> None:
    """What a house that lost its database to another house does: stop, as SIGTERM would."""
    del reason
    os.kill(os.getpid(), signal.SIGTERM)


class ServingLock:
    """The serving lock, held and watched for the life of the house.

    A session lock goes with its connection, and a connection can go without the house
    stopping: a database restart or failover, an idle-session killer, a proxy, an operator's
    pg_terminate_backend. A second house could then start on the same database, and both would
    deal the same tables. So the lock's connection is checked every `LOCK_CHECK_EVERY` seconds
    (and at once when it closes); a lost lock is taken again on a new connection, and if
    another house holds it by then, this one stops (`on_lost`), leaving the database to it.
    """

    def __init__(self, dsn: str, metrics: Metrics,
                 on_lost: Callable[[str], None] = stop_this_process) -> None:
        self._dsn = dsn
        self._metrics = metrics
        self.on_lost = on_lost
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._tries = 0  # tries to take the lock again since it was lost

    async def take(self) -> None:
        self._hold(await serve_alone(self._dsn))
        self._task = asyncio.create_task(self._watch(), name="serving-lock")

    def _hold(self, conn: asyncpg.Connection) -> None:
        self._conn = conn
        conn.add_termination_listener(lambda _conn: self._wake.set())
        self._metrics.serving_lock.set(1)

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), LOCK_CHECK_EVERY)
            self._wake.clear()
            if await self._held():
                continue
            self._metrics.serving_lock.set(0)
            self._tries += 1
            if self._tries == 1:  # said once an outage (it was said every 5 s through it)
                log.warning("serving lock lost: taking it again")
            try:
                self._hold(await serve_alone(self._dsn, tries=5))
            except HouseBusy:
                log.error("another house took this database: stopping")
                self.on_lost("another house took this database")
                return
            except WRITE_ERRORS as exc:  # the database is away: no other house can take it now
                if self._tries % LOCK_TRIES_SAID == 1:  # the first, then once a minute or so
                    log.warning("serving lock not taken again yet",
                                extra={"error": f"{type(exc).__name__}: {exc}".rstrip(": "),
                                       "tries": self._tries})
                continue
            log.warning("serving lock taken again", extra={"tries": self._tries})
            self._tries = 0

    def check_now(self) -> None:
        """Check the lock at once, not at the next `LOCK_CHECK_EVERY`: the database is back after
        a fault (`House.database_back`), and tables write again; a lock lost with it is taken
        again now, so that no second house could start on the database meanwhile."""
        self._wake.set()

    async def _held(self) -> bool:
        conn = self._conn
        if conn is None or conn.is_closed():
            return False
        try:
            return bool(await conn.fetchval(
                "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory'"
                " AND pid = pg_backend_pid() AND objid = $1 AND granted", _SERVING_LOCK,
                timeout=LOCK_CHECK_EVERY))
        except (*WRITE_ERRORS, TimeoutError):
            conn.terminate()
            return False

    async def release(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._conn is not None:
            self._conn.terminate()  # its session's lock goes with it
            self._conn = None
        self._metrics.serving_lock.set(0)


class House:
    def __init__(self, config: Config, clock: Clock, metrics: Metrics,
                 settings: LiveSettings) -> None:
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.settings = settings
        self.signing_key: SigningKey = signing_key_from_seed(config.signing_key)
        self.public_key = bytes(self.signing_key.verify_key)
        self.key_id = key_id_for(self.public_key)
        # the signed hand-overs from earlier signing keys to this one (`barajamos keys rotate`),
        # oldest first: published with the key and in every chain
        self.handovers: list[dict[str, Any]] = []
        self.tables: dict[str, TableActor] = {}
        # the served tables each user sits at, in the order they came to be served (`serve`):
        # the per-user limits and "my tables" read these, where they scanned every table (at
        # thousands of tables, every lobby refresh and rematch paid for all of them)
        self._seated: dict[int, dict[str, TableActor]] = {}
        self._served = 0
        self.sockets: dict[web.WebSocketResponse, Connection] = {}
        # open table sockets per user (`LiveSettings.max_sockets_per_user`)
        self.user_sockets: dict[int, int] = {}
        # each user's table creations and match starts in flight (`server.live.api`): counted
        # with the tables they sit at against the per-user limits while they wait
        self.creating: dict[int, int] = {}
        self.starting: dict[int, int] = {}
        # sockets opened per user and table, against LiveSettings.connect_burst
        self.connects = ConnectLimiter()
        self.invite_guesses = InviteGuesses()
        self._closing: set[asyncio.Task[None]] = set()
        self._pool: asyncpg.Pool | None = None
        self._writer: GroupWriter | None = None
        self.run_id = 0
        self.run_started_at = 0.0
        # a database fault in progress (the writer lost its connection or a commit's answer):
        # since when; and when the last one ended. Players' clocks restart in full when it ends,
        # a streak of automatic actions begun before then carries no penalty, and the fault is
        # written down as a server fault (`database_back`)
        self.fault_since: float | None = None
        self.faults_ended_at = 0.0
        # settles finished ranked and arena matches (the ranked service, when there is one)
        self.settler: Callable[[MatchResult], Awaitable[None]] | None = None
        self._serving: ServingLock | None = None
        # the players of every competitive table's match in play (table id -> lineup): the
        # settlement pays and rates them even if a seat was emptied before the match ended
        self.lineups: dict[str, Lineup] = {}
        self._retry_timers: dict[str, Timer] = {}
        self._sweep_timer: Timer | None = None  # the idle tables' sweep (`_sweep`)
        # set as the house closes every socket on its way down: the disconnections that follow
        # are the server's, and the evidence says so (`cause: server_shutdown`)
        self.shutting_down = False

    @property
    def pool(self) -> asyncpg.Pool:
        assert self._pool is not None, "the house has not started"
        return self._pool

    @property
    def writer(self) -> GroupWriter:
        assert self._writer is not None, "the house has not started"
        return self._writer

    @property
    def epoch(self) -> int:
        """Event numbers belong to one server run: a client from another run gets a snapshot."""
        return self.run_id

    async def start(self, pool: asyncpg.Pool, dsn: str) -> None:
        from server.live.recovery import restore_tables

        self._serving = ServingLock(dsn, self.metrics)
        await self._serving.take()
        try:
            await check_keys(pool, self.config.seed_key, self.public_key)
        except BaseException:
            await self._serving.release()
            self._serving = None
            raise
        self._pool = pool
        self.handovers = [json.loads(text) for text in await pool.fetchval(
            "SELECT coalesce(array_agg(statement::text ORDER BY id), '{}') FROM key_handovers")]
        self.run_started_at = self.clock.now()
        self.run_id = await pool.fetchval(
            "INSERT INTO server_runs (started_at) VALUES ($1) RETURNING id",
            at(self.run_started_at))
        self._writer = GroupWriter(partial(asyncpg.connect, dsn, timeout=10),
                                   self.metrics, self.config.write_batch_max,
                                   self.config.write_connections, self.config.write_timeout,
                                   on_fault=self.database_fault, on_back=self.database_back)
        self._writer.start()
        unplayed: list[TableActor] = []
        for actor in await restore_tables(self, pool):
            self.serve(actor)
            if actor.kind.competitive and actor.status is TableStatus.PLAYING:
                # rebuilt mid-match: this match spans a restart (its abandonments are exempt);
                # its players as it started (migration 026), not whoever sits there now
                started = await pool.fetchval(
                    "SELECT players FROM live_matches WHERE table_id = $1 AND number = $2",
                    actor.id, actor.match_number)
                users = started if started is not None else [s.user_id for s in actor.seats]
                self.lineups[actor.id] = Lineup(
                    tuple(user or 0 for user in users), restart_overlap=True)
            elif (actor.kind.competitive and actor.status is TableStatus.OPEN
                  and not actor.match_number):
                unplayed.append(actor)
        for actor in unplayed:
            # a launch the process died in before the first deal: a ranked or arena table is
            # never seated by hand, so it closes; a stake held for it is refunded by the ranked
            # service as it starts
            for seat in list(actor.seats):
                if seat.user_id is not None:
                    try:
                        await actor.call(partial(actor.leave, seat.user_id))
                    except LiveError as exc:  # a database blip must not keep the house shut
                        log.error("unplayed table not closed",
                                  extra={"table": actor.id, "error": exc.code})
        self._schedule_sweep()
        log.info("house started", extra={"run": self.run_id, "tables": len(self.tables)})

    @property
    def clocks_restarted_at(self) -> float:
        """When every player's clock last started again in full: this run's start, or the end
        of the last database fault. A streak of automatic actions begun before it carries no
        penalty (the house, not the player, stopped the game)."""
        return max(self.run_started_at, self.faults_ended_at)

    def writes_problem(self) -> str | None:
        """Why moves cannot be saved now, for /health (None: they can): a database fault not
        over, or a commit waiting longer than `WRITE_STUCK` (a lock, a hung database: the
        writer's watchdog cuts it only after `BARAJAMOS_WRITE_TIMEOUT`)."""
        if self.fault_since is not None:
            return (f"The database has taken no write for {self.clock.now() - self.fault_since:.0f}"
                    " s: moves are refused until it does.")
        stuck = self._writer.stuck_for() if self._writer is not None else 0.0
        if stuck > WRITE_STUCK:
            return f"A write has waited {stuck:.0f} s for the database: moves wait with it."
        return None

    def database_fault(self) -> None:
        """The writer lost the database (a connection, or a commit's answer): moves are refused
        (`unavailable`, nothing changed) until it writes again."""
        if self.fault_since is None:
            self.fault_since = self.clock.now()
            log.warning("database fault: moves are refused until it writes again")

    def database_back(self) -> None:
        """The writer wrote again after a fault. A player whose move was refused meanwhile, or
        whose clock ran while nothing could be written, was not at fault: every pending
        decision's clock starts again in full (as after a restart; the tables say so, a
        `clocks` event), streaks begun before now carry no penalty, and the fault is written to
        `server_faults`, so a ranked abandonment in a match it touched is exempt."""
        since = self.fault_since
        if since is None:
            return
        self.fault_since = None
        now = self.faults_ended_at = self.clock.now()
        log.warning("database back", extra={"fault_seconds": round(now - since, 3),
                                            "tables": len(self.tables)})
        if self._serving is not None:
            self._serving.check_now()
        for actor in list(self.tables.values()):
            actor.post(partial(actor.restart_clocks, "database"))
        task = asyncio.create_task(self._record_fault(since, now))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _record_fault(self, since: float, until: float) -> None:
        try:
            await self.pool.execute(
                "INSERT INTO server_faults (kind, started_at, ended_at, note)"
                " VALUES ('fault', $1, $2, $3)", at(since), at(until),
                "database: the house could not write (recorded by the house)")
        except (*DATABASE_UNREACHABLE, asyncpg.PostgresError) as exc:
            log.error("database fault not recorded", extra={
                "started": at(since).isoformat(), "ended": at(until).isoformat(),
                "error": error_text(exc)})

    def _schedule_sweep(self) -> None:
        limit = self.config.idle_table_close
        if limit > 0:
            self._sweep_timer = self.clock.call_at(
                self.clock.now() + min(SWEEP_EVERY, limit / 2), self._sweep)

    def _sweep(self) -> None:
        """Every minute: each table unwatched for `idle_table_close` is told to close (it checks
        again on its own actor, where the decision is its own), and the socket and invite-code
        limits forget what has passed."""
        if self.shutting_down:
            return
        now, limit = self.clock.now(), self.config.idle_table_close
        for actor in list(self.tables.values()):
            if actor.idle_for(now) >= limit:
                actor.post(actor.close_idle)
        # and the per-user limits' memory of what has passed
        self.connects.forget_full(now, self.settings)
        self.invite_guesses.forget_passed(now)
        self._schedule_sweep()

    async def close_sockets(self) -> None:
        """All at once, each within its grace: one client that reads nothing must not hold up
        the shutdown (`Connection.close_soon`). From here on the tables' clocks act for nobody
        (`TableActor._on_deadline`): the house took these connections, not the players."""
        self.shutting_down = True
        conns = list(self.sockets.values())
        for conn in conns:
            conn.close_soon(WSCloseCode.GOING_AWAY, "server shutdown")
        await asyncio.gather(*(conn.close() for conn in conns))

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.stopping()
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        for timer in self._retry_timers.values():
            # an unsettled match stays unsettled until an operator settles it (idempotent)
            timer.cancel()
        self._retry_timers.clear()
        # each bounded: a database that hangs (stopped, not gone) holds a table's pending write
        # (a re-read's try is cut at the write timeout) or a settlement's for as long as it
        # hangs, and a stop waited for ever, its port already closed, saying nothing (a
        # review's drill). What is cut off is rebuilt by the next start from what was written.
        # The bound outlasts the writer's own giving up on a batch in doubt (twice the write
        # timeout, and a connection's 10 s), which answers the tables' writes: a table cut
        # before that would leave its callers unanswered
        grace = 2 * self.config.write_timeout + STOP_MARGIN
        await _bounded("tables", [actor.stop() for actor in list(self.tables.values())], grace)
        if self._closing:
            await _bounded("settlements and records", list(self._closing), grace)
        if self._writer is not None:
            await self._writer.close()
        try:
            if self._pool is not None and self.run_id:
                await self._pool.execute(
                    "UPDATE server_runs SET stopped_at = $2, clean = true WHERE id = $1",
                    self.run_id, at(self.clock.now()), timeout=self.config.write_timeout)
        except WRITE_ERRORS as exc:  # the database went first: the run stays marked unclean
            log.error("run end not saved", extra={"run": self.run_id, "error": error_text(exc)})
        if self._serving is not None:
            await self._serving.release()
            self._serving = None
        log.info("house stopped", extra={"run": self.run_id})

    def get(self, table_id: str) -> TableActor:
        actor = self.tables.get(table_id)
        if actor is None:
            raise LiveError("table_not_found", "No such table (or it is closed).", 404)
        return actor

    def serve(self, actor: TableActor) -> None:
        """Serve `actor`'s table: it takes commands, and its players find it among theirs."""
        self._served += 1
        actor.served = self._served
        self.tables[actor.id] = actor
        self._index(actor, (), actor.seats)

    def reseated(self, actor: TableActor, before: Sequence[Seat]) -> None:
        """`actor`'s seats changed from `before` (`TableActor.seats` tells): follow it in the
        index of who sits where, if it is served (a table being rebuilt is not yet)."""
        if self.tables.get(actor.id) is actor:
            self._index(actor, before, actor.seats)

    def _index(self, actor: TableActor, before: Sequence[Seat], after: Sequence[Seat]) -> None:
        was = {seat.user_id for seat in before if seat.user_id is not None}
        now = {seat.user_id for seat in after if seat.user_id is not None}
        for user_id in was - now:
            mine = self._seated.get(user_id)
            if mine is not None and mine.pop(actor.id, None) is not None and not mine:
                del self._seated[user_id]
        for user_id in now - was:
            self._seated.setdefault(user_id, {})[actor.id] = actor

    def playing_count(self, user_id: int) -> int:
        """The matches `user_id` plays now, with those being started for them."""
        return (sum(1 for actor in self.tables_of(user_id) if actor.status is TableStatus.PLAYING)
                + self.starting.get(user_id, 0))

    def tables_of(self, user_id: int) -> list[TableActor]:
        """The served tables `user_id` sits at, in the order they came to be served."""
        return sorted(self._seated.get(user_id, {}).values(), key=lambda actor: actor.served)

    def seated_users(self) -> list[int]:
        """Everyone who sits at a served table."""
        return list(self._seated)

    def forget(self, actor: TableActor) -> None:
        """A closed table: stop its actor once the command that closed it has returned."""
        served = self.tables.pop(actor.id, None)
        if served is not None:
            self._index(served, served.seats, ())
            task = asyncio.create_task(actor.stop())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def create_table(
        self, owner_id: int, owner_name: str, config: MatchConfig, kind: TableKind
    ) -> TableActor:
        table_id = secrets.token_hex(8)
        invite = new_invite() if kind is TableKind.PRIVATE else None
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO live_tables (id, variant, seats, mode, kind, invite_code, owner_id)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                table_id, config.variant.value, config.seats, config.mode.value, kind.value,
                invite, owner_id)
            await conn.executemany(
                "INSERT INTO live_seats (table_id, seat, user_id) VALUES ($1, $2, $3)",
                [(table_id, s, owner_id if s == 0 else None) for s in range(config.seats)])
        actor = TableActor(self, table_id, config, kind, invite, owner_name, TableStatus.OPEN)
        actor.put_seat(0, Seat(user_id=owner_id, name=owner_name))
        actor.start()
        self.serve(actor)
        log.info("table_created", extra={"table": table_id, "variant": config.variant.value,
                                         "seats": config.seats, "kind": kind.value})
        return actor

    async def launch(
        self, kind: TableKind, variant: Variant, seats: int, users_by_seat: Sequence[int],
        stake: int, *, before_start: Callable[[str], Awaitable[None]] | None = None,
    ) -> str:
        """Open a table for players the house did not seat itself (the ranked service's
        `TableLauncher`): seat them in order, start the match, return the table id. The stake
        is the ranked service's business (held in its ledger); the table does not need it.
        `before_start(table_id)` runs once everybody is seated and before the first deal (the
        service holds the stakes there): if it fails the table closes unplayed and the error
        propagates, so no match is ever played without its stakes."""
        del stake
        config = MatchConfig(variant, seats)
        if len(users_by_seat) != seats or len(set(users_by_seat)) != seats:
            raise LiveError("bad_players", f"A {seats}-seat table needs {seats} different players")
        rows = await self.pool.fetch("SELECT id, name FROM users WHERE id = ANY($1::bigint[])",
                                     list(users_by_seat))
        names = {row["id"]: row["name"] for row in rows}
        if len(names) != seats:
            raise LiveError("unknown_user", "Every seat needs an existing player")
        first = users_by_seat[0]
        actor = await self.create_table(first, names[first], config, kind)
        try:
            for seat, user in enumerate(users_by_seat[1:], start=1):
                await actor.call(partial(actor.join, user, names[user], None, seat))
            if before_start is not None:
                await before_start(actor.id)
        except BaseException:
            await self._close_unplayed(actor, users_by_seat)
            raise
        self.lineups[actor.id] = Lineup(tuple(users_by_seat), restart_overlap=False)
        try:
            await actor.call(partial(actor.start_match, first))
        except Exception:
            # a start saved in part re-read what was written (the table's `_run`, done before
            # this next call runs): a match that stands is played; one that does not closes
            if await self._playing(actor):
                log.warning("launch went on after a failed write", extra={"table": actor.id})
                return actor.id
            self.lineups.pop(actor.id, None)
            await self._close_unplayed(actor, users_by_seat)
            raise
        except BaseException:
            self.lineups.pop(actor.id, None)
            raise
        return actor.id

    async def _close_unplayed(self, actor: TableActor, users: Sequence[int]) -> None:
        """Nothing was dealt: everybody leaves and the table closes, as if never opened (what
        cannot be saved now, a restart closes: `start`)."""
        try:
            for user in users:
                if actor.seat_of(user) is not None:
                    await actor.call(partial(actor.leave, user))
        except LiveError as exc:
            log.error("unplayed table not closed", extra={"table": actor.id, "error": exc.code})

    @staticmethod
    async def _playing(actor: TableActor) -> bool:
        async def status() -> bool:
            return actor.status is TableStatus.PLAYING

        try:
            return await actor.call(status)
        except LiveError:
            return False

    def lineup(self, result: MatchResult) -> Lineup | None:
        """The players a finished competitive match is settled for: the seats as the table
        reports them, an emptied seat (0) filled from the lineup the match started with. None
        when a seat's player is unknown (settling would pay or rate the wrong people)."""
        known = self.lineups.get(result.table_id)
        users = tuple(
            user or (known.users_by_seat[seat] if known is not None else 0)
            for seat, user in enumerate(result.users_by_seat))
        if not all(users):
            return None
        return Lineup(users, known is not None and known.restart_overlap)

    async def settle(self, result: MatchResult) -> None:
        """Hand a finished ranked or arena match to the ranked service (chips, ratings,
        penalties), for the players its lineup names and with the restart overlap the house
        knows. A failure there is logged and retried (`SETTLE_RETRIES`); the table and its
        records stand regardless, and a settlement a crash cut off is made when the ranked
        service starts again (`RankedService.restore`)."""
        lineup = self.lineup(result)
        if lineup is None:
            self.lineups.pop(result.table_id, None)
            log.error("settlement impossible: a seat's player is unknown",
                      extra={"table": result.table_id, "match": result.match_number,
                             "users_by_seat": list(result.users_by_seat)})
            return
        if self.settler is None:
            self.lineups.pop(result.table_id, None)
            log.warning("no ranked service to settle a match",
                        extra={"table": result.table_id, "match": result.match_number})
            return
        await self._settle(replace(result, users_by_seat=lineup.users_by_seat), attempt=0)

    async def _settle(self, result: MatchResult, attempt: int) -> None:
        """One attempt; a failure (the database away) is retried later, the table playing on.
        The settlement is idempotent (one reference per match), so a retry that follows an
        attempt which did commit changes nothing."""
        assert self.settler is not None
        extra = {"table": result.table_id, "match": result.match_number, "attempt": attempt}
        try:
            await self.settler(result)
        except Exception:
            if attempt >= len(SETTLE_RETRIES):
                self.lineups.pop(result.table_id, None)
                log.exception("settlement failed for good", extra=extra)
                return
            log.exception("settlement failed, will retry", extra=extra)

            def retry() -> None:
                self._retry_timers.pop(result.table_id, None)
                task = asyncio.create_task(self._settle(result, attempt + 1))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

            self._retry_timers[result.table_id] = self.clock.call_at(
                self.clock.now() + SETTLE_RETRIES[attempt], retry)
            return
        self.lineups.pop(result.table_id, None)

    async def evidence(
        self, table_id: str, match_number: int, seat: int
    ) -> list[dict[str, Any]]:
        """What an abandonment review needs: the seat's clock and connection events of the whole
        match (every missed deadline, automatic action and return to play, not only the last
        streak's: a player who left after missing decisions, or whose streaks came and went,
        shows it) and the server restarts and faults after the match began."""
        rows = await self.pool.fetch(
            "SELECT kind, at, detail FROM seat_events WHERE table_id = $1 AND match_number = $2"
            " AND seat = $3 ORDER BY id",
            table_id, match_number, seat)
        items: list[tuple[datetime, dict[str, Any]]] = []
        for row in rows:
            detail = _json(row["detail"])
            items.append((row["at"], {**detail, "kind": row["kind"],
                                      "at_ms": ms(row["at"].timestamp()), "seat": seat}))
        runs = await self.pool.fetch(
            "SELECT id, started_at FROM server_runs WHERE started_at > (SELECT started_at FROM"
            " live_matches WHERE table_id = $1 AND number = $2) ORDER BY id",
            table_id, match_number)
        for run in runs:
            items.append((run["started_at"], {"kind": "server_restart", "run": run["id"],
                                              "at_ms": ms(run["started_at"].timestamp()),
                                              "seat": None}))
        # the faults written down since (a database the house could not write to: its
        # players' clocks started again in full when it ended, `database_back`)
        faults = await self.pool.fetch(
            "SELECT id, started_at, ended_at, note FROM server_faults WHERE ended_at >="
            " (SELECT started_at FROM live_matches WHERE table_id = $1 AND number = $2)"
            " ORDER BY id", table_id, match_number)
        for fault in faults:
            items.append((fault["started_at"], {
                "kind": "server_fault", "fault": fault["id"], "note": fault["note"],
                "at_ms": ms(fault["started_at"].timestamp()),
                "ended_ms": ms(fault["ended_at"].timestamp()), "seat": None}))
        items.sort(key=lambda item: item[0])
        return [item for _, item in items]


async def _bounded(what: str, work: Sequence[Awaitable[Any]], seconds: float) -> None:
    """Wait for `work` at most `seconds`; then cancel what is left, saying so."""
    tasks = [asyncio.ensure_future(item) for item in work]
    if not tasks:
        return
    _, stuck = await asyncio.wait(tasks, timeout=seconds)
    if stuck:
        log.error("stop gave up waiting: the database does not answer", extra={
            "what": what, "left": len(stuck), "seconds": seconds})
        for task in stuck:
            task.cancel()
        await asyncio.wait(stuck, timeout=5.0)
    for task in tasks:
        if task.done() and not task.cancelled() and (error := task.exception()) is not None:
            log.error("stop failed", extra={"what": what, "error": repr(error)})


def _json(value: object) -> dict[str, Any]:
    import json

    if isinstance(value, str):
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}
    return value if isinstance(value, dict) else {}
