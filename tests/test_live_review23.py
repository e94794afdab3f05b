"""What the twenty-third session's review of the live house found, fixed and kept fixed: a
ranked table whose start or end was written "in doubt" (committed, its answer lost) goes on as
it would have had the answer come: its first deal waits for its players, its end is settled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

import asyncpg
import pytest

from server.app import POOL
from server.clock import VirtualClock
from server.live.model import TableStatus
from server.live.writer import WriteInDoubt, _Committer
from server.ranked import ledger
from tests.conftest import AppFactory
from tests.test_live_helpers import players, start_live
from tests.test_live_write_failures import Fault, contribute, settle, setup, starts
from tests.test_ranked_live import STAKE, _ids, _launch, _movements


async def test_a_ranked_start_in_doubt_still_waits_for_its_players(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # the reload after the doubt dealt hand 1 at once: clocks ran for players who had not been
    # shown the table yet, and two minutes later the match was lost by abandonment
    live = await start_live(make_app, aiohttp_client, vclock)
    people = await players(live.base, "ana", "bia")
    try:
        users = await _ids(live, "ana", "bia")
        fault = Fault(live, starts("INSERT INTO live_matches"), doubt=True)
        tid = await _launch(live, users)
        assert fault.hits  # the start was in doubt, and stood
        actor = live.house.tables[tid]
        await settle(actor)
        assert actor.status is TableStatus.PLAYING
        assert actor.hand is None and actor.start_timer is not None
        assert actor.table_json(None)["first_deal_by_ms"] is not None
        # nobody came: after the grace the match is cancelled, nobody forfeits
        await vclock.advance(live.house.config.start_grace + 1)
        for _ in range(100):  # the cancel closes the table (its actor stops)
            if actor.status is not TableStatus.PLAYING:
                break
            await asyncio.sleep(0.05)
        assert actor.status is TableStatus.CLOSED and actor.forfeit_seat is None
    finally:
        for person in people:
            await person.close()


async def test_a_ranked_end_in_doubt_is_settled(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # the match's end was written but its answer lost: nobody settled it until a restart, its
    # stakes stayed held, and its players could not queue again
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        users = await _ids(live, "ana", "bia")
        tid = await _launch(live, users)
        actor = live.house.tables[tid]
        await settle(actor)
        fault = Fault(live, starts("UPDATE live_matches SET termination"), doubt=True)
        status, body = await bia.post(f"/api/tables/{tid}/leave")
        assert (status, body["error"]) == (503, "in_doubt")
        assert fault.hits
        await settle(actor)
        assert actor.status is not TableStatus.PLAYING
        pool = live.app[POOL]
        assert await pool.fetchval(
            "SELECT termination FROM live_matches WHERE table_id = $1", tid) == "abandonment"
        assert await _movements(live, tid) == ["hold", "payout"]
        assert await ledger.balance(pool, users[0]) == 1000 + STAKE
        assert await ledger.balance(pool, users[1]) == 1000 - STAKE
        assert tid not in live.house.lineups
    finally:
        await ana.close()
        await bia.close()


async def test_the_house_stops_while_the_database_is_away_after_a_broken_commit(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    # a review: a commit cut by the watchdog leaves its committer waiting until the database
    # says the old backend is gone (`_fence`); with the database away the house's stop waited
    # as long, and only SIGKILL ended it
    live, ana, _, actor, conn = await setup(partial(make_app, write_timeout=0.5),
                                            aiohttp_client, vclock)
    admin = await asyncpg.connect(database_url)
    lock = admin.transaction()
    await lock.start()
    await admin.execute("LOCK TABLE live_contributions IN EXCLUSIVE MODE")  # the commit waits
    # each writer task's own connection (`GroupWriter._run`), read from its frame: a scan of
    # `gc.get_objects()` found none in one CI run
    committers = [task.get_coro().cr_frame.f_locals.get("committer")  # type: ignore[union-attr]
                  for task in live.house._writer._tasks]
    assert committers and all(isinstance(c, _Committer) for c in committers), committers

    async def unreachable() -> Any:
        raise OSError(111, "Connection refused")  # the database went away

    for committer in committers:
        committer._connect = unreachable  # type: ignore[method-assign]
    pending = asyncio.create_task(contribute(actor, conn))
    try:
        await asyncio.sleep(1.5)  # the watchdog cut the commit: the fence waits for the database
        await live.house.close_sockets()
        # the house gives up on the batch after twice the commit timeout (1 s here)
        await asyncio.wait_for(live.house.stop(), 15)
        with pytest.raises(WriteInDoubt):
            await pending
    finally:
        await lock.rollback()
        await admin.close()
        await ana.close()
