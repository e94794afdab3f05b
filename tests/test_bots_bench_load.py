"""The load benchmark's logic, not its timing: a client worker against a real server (accounts
made in the database beforehand, tables set up over the protocol, a recorded window, the audit of
every acknowledged action against the written rows and records, a table that could not be
seated left out and counted), the /metrics reading and its
histogram quantiles, and the command line's bad usage."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from aiohttp.test_utils import TestServer

from server.app import METRICS
from server.bench_load import (
    WorkerPlan,
    WorkerResult,
    _longest,
    _worker_main,
    histogram_quantile,
    main,
    parse_metrics,
    prepare_database,
    scrape,
)
from server.botclient import TablePlan
from server.clock import VirtualClock
from server.metrics import Metrics
from tests.conftest import AppFactory

ServerFactory = Callable[..., Awaitable[TestServer]]


async def _until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.02)


async def test_a_worker_plays_records_and_audits(make_app: AppFactory,
                                                 aiohttp_server: ServerFactory,
                                                 pg_admin_url: str) -> None:
    name = "load_smoke_" + uuid.uuid4().hex[:12]
    dsn = await prepare_database(pg_admin_url, name, accounts=2 * 4)
    server: TestServer | None = None
    try:
        # the virtual clock never moves: no deadline fires, so every action is a bot's own
        app = make_app(clock=VirtualClock(), database_url=dsn)
        server = await aiohttp_server(app)
        base = server.make_url("/")
        plan = TablePlan("paulista", 4, "private", pace=0.0, matches=1_000_000)
        # table 2's accounts were never made: its logins fail as a seating at overload would,
        # and the worker goes on with the other two, reporting it
        worker = WorkerPlan(str(base), dsn, plan, tables=(0, 1, 2), sleepers=frozenset(),
                            start_spread=0.05, setup_concurrency=2, seed=3, lobby=2)
        result = WorkerResult(0)
        ready: list[int] = []
        go, record, stop = multiprocessing.Event(), multiprocessing.Event(), multiprocessing.Event()
        task = asyncio.create_task(_worker_main(worker, result, ready.append, go, record, stop))
        await _until(lambda: bool(ready) or task.done())
        assert ready == [2]
        before = await scrape(base)
        assert before.connected == 8 and before.actions == 0
        go.set()
        record.set()
        # two of the players also have the lobby open (each refreshes within 4 s)
        await _until(lambda: (result.stats.window_actions >= 40 and len(result.stats.lobby) >= 2)
                     or task.done())
        # both seated tables play (the gauge counts tables with a match in play: a scrape that
        # lands between one match's end and the next one's start reads 1, as CI once saw)
        for _ in range(100):
            during = await scrape(base)
            if during.live_tables == 2:
                break
            await asyncio.sleep(0.05)
        assert during.live_tables == 2
        stop.set()
        await asyncio.wait_for(task, timeout=60)
        after = await scrape(base)
        stats = result.stats
        assert result.tables == 2 and stats.unseated == 1
        assert stats.errors == {"setup_ProtocolError_bad_credentials": 1}, stats.errors
        assert stats.audited == stats.actions >= 40
        assert stats.lost == 0 and stats.unacked == 0
        # every action the server applied was acknowledged to a bot, and none twice; but for
        # the declines the server casts itself when the bots close their sockets while a vote
        # waits for them (a disconnected player's pending vote counts as decline: RULES.md)
        # (both read at once: a decline the server casts as it handles a socket's close may come
        # after the scrape above, and counted in one read but not the other they differed by 1)
        applied = {labels["kind"]: value for metric in app[METRICS].registry.collect()
                   if metric.name == "barajamos_actions"
                   for name, labels, value, *_ in metric.samples if name.endswith("_total")}
        assert sum(applied.values()) - applied.get("timeout", 0.0) == stats.actions
        assert after.connected == 0  # the bots closed their sockets
        assert 0 < len(stats.latencies) <= stats.window_actions <= stats.actions
        assert len(stats.lobby) >= 2 and all(0 < took < 10 for took in stats.lobby)
        assert after.batch_count > 0 and after.batch_sum >= after.batch_count
    finally:
        if server is not None:
            await server.close()  # before its database goes
        conn = await asyncpg.connect(pg_admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def test_histogram_quantiles_between_two_scrapes() -> None:
    metrics = Metrics()
    for _ in range(98):
        metrics.automatic_lateness.observe(0.001)
    before = parse_metrics(metrics.render().decode())
    metrics.automatic_lateness.observe(0.2)
    metrics.automatic_lateness.observe(0.3)
    after = parse_metrics(metrics.render().decode())
    # all 100: 98 in the first bucket, the 99th in (0.1, 0.25]
    p99, count = histogram_quantile(0.99, (), after.lateness)
    assert count == 100 and p99 == pytest.approx(0.25)
    p50, _ = histogram_quantile(0.5, (), after.lateness)
    assert p50 == pytest.approx(0.001 * 50 / 98)
    # only what happened between the scrapes: the two late ones
    late, count = histogram_quantile(0.5, before.lateness, after.lateness)
    assert count == 2 and late == pytest.approx(0.25)
    assert histogram_quantile(0.99, after.lateness, after.lateness) == (None, 0)
    metrics.automatic_lateness.observe(30.0)  # past the last bucket: only "over 2.5 s" known
    beyond, count = histogram_quantile(0.99, after.lateness,
                                       parse_metrics(metrics.render().decode()).lateness)
    assert count == 1 and math.isinf(beyond or 0.0)


def test_garbage_collections_between_two_scrapes() -> None:
    """Both kinds of collection are counted and summed, the whole ones apart, and the report
    says how long the longest was at most."""
    metrics = Metrics()
    metrics.gc_seconds.labels("young").observe(0.3)  # before the window
    before = parse_metrics(metrics.render().decode())
    metrics.gc_seconds.labels("young").observe(0.004)
    metrics.gc_seconds.labels("young").observe(0.02)
    metrics.gc_seconds.labels("whole").observe(0.2)
    after = parse_metrics(metrics.render().decode())
    assert after.gc_count - before.gc_count == 3 and after.gc_whole - before.gc_whole == 1
    assert after.gc_sum - before.gc_sum == pytest.approx(0.224)
    assert _longest(before.gc_pauses, after.gc_pauses) == "; each at most 250 ms"
    assert _longest(after.gc_pauses, after.gc_pauses) == ""  # none in the window
    metrics.gc_seconds.labels("whole").observe(12.0)  # past the last bucket
    beyond = parse_metrics(metrics.render().decode())
    assert _longest(after.gc_pauses, beyond.gc_pauses) == "; the longest over 10000 ms"


@pytest.mark.parametrize("argv", [
    ["--tables", "0"],
    ["--tables", "10,x"],
    ["--rate", "1", "--full-speed"],
    ["--seconds", "0"],
    ["--clients", "99"],
    ["--absent-share", "2"],
    ["--seats", "3"],
    ["--lobby", "-1"],
])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1
    assert lines[0].startswith("barajamos bench load: ")
