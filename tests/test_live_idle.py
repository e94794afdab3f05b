"""Idle tables close: an open or finished table nobody has had open for
`Config.idle_table_close` (30 min) frees its seats and leaves the house, the lobby and the
per-player table cap; a socket on it, or a player sitting down, keeps it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from server.app import POOL
from server.clock import VirtualClock
from server.config import ConfigError, from_env
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, connect, create_table, players, start_live

DEFAULT = 1800.0  # BARAJAMOS_IDLE_TABLE_MINUTES=30
# the tests' limit: the house sweeps for idle tables every minute whatever the limit, and each
# sweep is a turn of the virtual clock, so a short limit keeps these tests quick
IDLE = 240.0


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(lambda clock: make_app(clock=clock, idle_table_close=IDLE),
                            aiohttp_client, vclock)


async def mine(player: Any) -> list[str]:
    status, body = await player.get("/api/tables?mine=1")
    assert status == 200, body
    return [t["id"] for t in body["tables"]]


async def test_an_unwatched_open_table_closes_and_frees_its_seats(
        live: Live, vclock: VirtualClock) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "paulista", 4, "private")
        tid = table["id"]
        # bia sits down 3 minutes later: the wait starts again from there
        await vclock.advance(180.0)
        assert (await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]}))[0] == 200
        await vclock.advance(IDLE - 60.0)
        assert tid in await mine(ana) and tid in await mine(bia)
        await vclock.advance(125.0)  # the limit, and the next sweep
        assert tid not in await mine(ana) and tid not in await mine(bia)
        status, body = await ana.get(f"/api/tables/{tid}")
        assert (status, body["error"]) == (404, "table_not_found")
        async with live.app[POOL].acquire() as conn:
            row = await conn.fetchrow("SELECT status, closed_at FROM live_tables WHERE id = $1",
                                      tid)
            seated = await conn.fetchval(
                "SELECT count(*) FROM live_seats WHERE table_id = $1 AND user_id IS NOT NULL",
                tid)
        assert row["status"] == "closed" and row["closed_at"] is not None and seated == 0
        assert live.house.metrics.idle_tables_closed._value.get() == 1
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        assert (status, body["error"]) == (404, "table_not_found")
    finally:
        await ana.close()
        await bia.close()


async def test_a_socket_keeps_a_table_and_its_leaving_starts_the_wait(
        live: Live, vclock: VirtualClock) -> None:
    ana, = await players(live.base, "ana")
    try:
        tid = (await create_table(ana, "mineiro", 2, "private"))["id"]
        seat = await connect(ana, tid, 0)
        await vclock.advance(3 * IDLE)  # a tab left open long past the limit
        assert tid in await mine(ana)
        await seat.ws.close()
        await vclock.advance(IDLE - 70.0)
        assert tid in await mine(ana)
        await vclock.advance(135.0)
        assert tid not in await mine(ana)
    finally:
        await ana.close()


async def test_idle_tables_do_not_count_towards_the_table_cap(
        live: Live, vclock: VirtualClock) -> None:
    ana, = await players(live.base, "ana")
    try:
        cap = live.house.settings.max_open_tables
        for _ in range(cap):
            await create_table(ana, "argentino", 2, "private")
        status, body = await ana.post("/api/tables", {"variant": "argentino", "seats": 2,
                                                      "kind": "private"})
        assert (status, body["error"]) == (409, "too_many_tables")
        await vclock.advance(IDLE + 65.0)
        assert await mine(ana) == []
        await create_table(ana, "argentino", 2, "private")
    finally:
        await ana.close()


async def test_a_match_in_play_is_not_idle(make_app: AppFactory,
                                           aiohttp_client: Callable[..., Any],
                                           vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, = await players(live.base, "ana")
    try:
        tid = (await create_table(ana, "paulista", 2, "training"))["id"]
        assert (await ana.post(f"/api/tables/{tid}/start"))[0] == 200
        actor = live.house.tables[tid]
        assert actor.status.value == "playing" and not actor.connections
        # nobody connected: the empty-seat clock ends this match, never the idle sweep
        assert actor.idle_for(vclock.now() + 10 * IDLE) == 0.0
        assert actor.idle_for(vclock.now()) == 0.0
    finally:
        await ana.close()


async def test_a_longer_idle_limit_and_none(make_app: AppFactory,
                                            aiohttp_client: Callable[..., Any],
                                            vclock: VirtualClock) -> None:
    live = await start_live(lambda clock: make_app(clock=clock, idle_table_close=0.0),
                            aiohttp_client, vclock)
    ana, = await players(live.base, "ana")
    try:
        tid = (await create_table(ana, "paulista", 2, "private"))["id"]
        await vclock.advance(2 * DEFAULT)
        assert tid in await mine(ana)  # 0: idle tables are kept
    finally:
        await ana.close()


def test_the_idle_limit_from_the_environment(tmp_path: Path) -> None:
    assert from_env({}, data_dir=tmp_path).idle_table_close == DEFAULT
    assert from_env({"BARAJAMOS_IDLE_TABLE_MINUTES": "45"},
                    data_dir=tmp_path).idle_table_close == 2700.0
    assert from_env({"BARAJAMOS_IDLE_TABLE_MINUTES": "0"},
                    data_dir=tmp_path).idle_table_close == 0.0
    for bad in ("-5", "1.5", "soon", ""):
        with pytest.raises(ConfigError, match="BARAJAMOS_IDLE_TABLE_MINUTES"):
            from_env({"BARAJAMOS_IDLE_TABLE_MINUTES": bad}, data_dir=tmp_path)


async def test_the_sweep_forgets_the_socket_and_invite_limits_of_the_past(
        live: Live, vclock: VirtualClock) -> None:
    # a soak: hundreds of users' socket buckets stayed in memory with no socket open (they were
    # forgotten only every 1,024 sockets opened), as did wrong invite codes
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "paulista", 2, "private")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        await seat.ws.close()
        status, _ = await bia.post(f"/api/tables/{tid}/join", {"invite": "WRNG-C0DE"})
        assert status != 200
        house = live.house
        assert house.connects.buckets and house.invite_guesses.wrong
        settings = house.settings
        passed = max(settings.connect_burst * settings.connect_interval, 600.0)
        await vclock.advance(passed + 61.0)  # both windows passed, and a sweep since
        assert house.connects.buckets == {} and house.invite_guesses.wrong == {}
    finally:
        await ana.close()
        await bia.close()
