"""A table whose writes fail twice in a row (the write that sets its next clock, then the same
write once more as the table re-reads what was written) must not stand still for good, and
must not end a match on a hand it has not recorded as the rules ended it.

- It goes on by itself a little later, from what was written (`TableActor._retry_later`).
- A resignation or the empty-seat cancel that comes first brings it up to date before ending
  the match: a hand the rules finished is recorded as `completed`, never as abandoned (the
  verifier fails that), and a match with no hand begun ends in a hand of its own.

The database is real; the failures are injected where the table hands its rows to the writer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from server.clock import VirtualClock
from server.live.model import HandPhase, TableStatus
from server.live.table import RETRY_FIRST, TableActor
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, Player, fetch_chain, hand_records, verify_chain
from tests.test_live_write_failures import (
    FakeConn,
    Fault,
    contribute,
    play_until,
    settle,
    setup,
    starts,
)


async def _stall_on(live: Live, actor: TableActor, conn: FakeConn, prefix: str) -> Fault:
    """Play until the write starting with `prefix` is refused twice: the hand's last move made
    it, the reload after it made it again; the table then has no clock."""
    await contribute(actor, conn)
    fault = Fault(live, starts(prefix), times=2)
    await play_until(actor, conn, random.Random(5), lambda: len(fault.hits) == 2, 300)
    await settle(actor)
    assert actor.status is TableStatus.PLAYING
    assert not actor.deadlines and not actor.bot_timers and actor.entropy_timer is None
    return fault


async def _records(ana: Player, tid: str, live: Live) -> list[dict[str, Any]]:
    chain = await fetch_chain(ana, tid)
    status, key = await ana.get("/api/key")
    assert status == 200
    verify_chain(chain, key["public_key"])
    return hand_records(chain)


async def test_a_table_whose_record_is_refused_twice_goes_on_by_itself(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await _stall_on(live, actor, conn, "UPDATE live_hands SET record")
        assert actor.hand is not None and actor.hand.number == 1 and actor.last_hand == 0
        # an operator's alert can watch for it
        assert live.house.metrics.registry.get_sample_value("barajamos_table_stalls_total") == 1
        await vclock.advance(RETRY_FIRST)
        await settle(actor)
        # hand 1 recorded as the rules ended it; hand 2 begun, its entropy window open
        assert actor.last_hand == 1
        assert actor.hand is not None and actor.hand.number == 2
        assert actor.hand.phase is HandPhase.ENTROPY and actor.entropy_timer is not None
        assert [r["end"] for r in await _records(ana, tid, live)] == ["completed"]
    finally:
        await ana.close()


async def test_a_resignation_at_a_stalled_table_records_the_finished_hand_as_completed(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await _stall_on(live, actor, conn, "UPDATE live_hands SET record")
        assert actor.state is not None and actor.state.hand_over
        await actor.call(lambda: actor.leave(conn.user_id))  # before the table tries again
        records = await _records(ana, tid, live)
        # the hand the rules ended is completed; the resignation ends the match in the next
        assert [(r["hand"], r["end"]) for r in records] == [(1, "completed"), (2, "abandonment")]
        assert records[1]["forfeit_team"] == 0
        consequences = [row["consequence"] for row in await live.house.pool.fetch(
            "SELECT consequence FROM abandonments WHERE table_id = $1", tid)]
        assert consequences == ["forfeit"]
    finally:
        await ana.close()


async def test_a_resignation_before_the_next_hand_began_ends_the_match_in_a_hand(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        # hand 1 is recorded; committing to hand 2 is refused twice: no hand is in play
        await _stall_on(live, actor, conn, "INSERT INTO live_hands")
        assert actor.hand is None and actor.last_hand == 1
        await actor.call(lambda: actor.leave(conn.user_id))
        assert actor.state is not None and actor.state.outcome is not None
        assert actor.status is not TableStatus.PLAYING
        records = await _records(ana, tid, live)
        assert [(r["hand"], r["end"]) for r in records] == [(1, "completed"), (2, "abandonment")]
        status = await live.house.pool.fetchval(
            "SELECT termination FROM live_matches WHERE table_id = $1", tid)
        assert status == "abandonment"
    finally:
        await ana.close()
