"""Ranked and arena tables, opened through the house's launcher (the ranked service's way in):
the short clock, the stricter abandonment limit, no empty-seat cancel, and the finished match
handed over for settlement."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from server.app import POOL
from server.clock import VirtualClock
from server.live.model import LiveError, TableKind
from server.live.table import MatchResult, ms
from server.ranked.service import LAUNCHER
from tests.conftest import AppFactory
from tests.test_live_clocks import drain, run_clock
from tests.test_live_helpers import (
    Live,
    SeatClient,
    connect,
    fetch_chain,
    hand_records,
    players,
    start_live,
    verify_chain,
)
from truco import Termination, Variant


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def _user_ids(live: Live, *names: str) -> list[int]:
    rows = await live.app[POOL].fetch(
        "SELECT id, name FROM users WHERE name = ANY($1::text[])", list(names))
    ids = {row["name"]: row["id"] for row in rows}
    return [ids[name] for name in names]


def _collecting(settled: list[MatchResult]) -> Callable[[MatchResult], Awaitable[None]]:
    """A house's settler that keeps each finished match's result in `settled`."""
    async def settle(result: MatchResult) -> None:
        settled.append(result)
    return settle


async def _settled_after(vclock: VirtualClock, settled: list[MatchResult],
                         seconds: float) -> None:
    """Move the clock `seconds` on, then a little at a time until a match is settled."""
    await vclock.advance(seconds)
    for _ in range(50):
        if settled:
            return
        await vclock.advance(0.1)


async def test_ranked_clock_abandonment_and_settlement(live: Live,
                                                      vclock: VirtualClock) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    settled: list[MatchResult] = []
    live.house.settler = _collecting(settled)
    try:
        assert live.app[LAUNCHER] is live.house
        users = await _user_ids(live, "ana", "bia")
        tid = await live.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, stake=50)
        status, body = await ana.get(f"/api/tables/{tid}")
        assert status == 200
        table = body["table"]
        assert table["kind"] == "ranked" and table["status"] == "playing"
        assert [p["name"] for p in table["players"]] == ["ana", "bia"]
        client = await connect(ana, tid, 0)
        client.autoplay = True
        await drain(client, react=True)
        # the first deal waits for bia (she may be on her way from the queue's page), 15 s
        assert table["first_deal_by_ms"] == ms(vclock.now() + 15.0)
        await vclock.advance(14.5)
        await drain(client, react=True)
        assert not [m for m in client.received if m["type"] == "commitment"]
        await vclock.advance(0.5)
        await drain(client, react=True)
        assert [m["hand"] for m in client.received if m["type"] == "commitment"] == [1]
        status, body = await ana.get(f"/api/tables/{tid}")
        assert body["table"]["first_deal_by_ms"] is None
        await vclock.advance(3.0)  # bia never comes: no entropy from her
        await drain(client, react=True)
        dealt = vclock.now()
        bia_deadlines = [p["deadline_ms"] for m in client.received if m["type"] == "update"
                         for p in m["pending"] if p["seat"] == 1]
        assert bia_deadlines and bia_deadlines[0] == ms(dealt + 10.0)  # ranked: 10 s, not 20
        # well past a minute with bia's seat empty: no cancel at ranked tables, she abandons
        await run_clock(vclock, client, 30.0, lambda: client.over is not None, react=True)
        assert client.over is not None and client.over["termination"] == "abandonment"
        assert client.over["forfeit_team"] == 1
        automatic = [e for m in client.received if m["type"] == "update" for e in m["events"]
                     if e.get("automatic") and e.get("seat") == 1]
        assert len(automatic) == 5  # the 6th deadline is the forfeit
        chain = await fetch_chain(ana, tid)
        assert hand_records(chain)[-1]["end"] == "abandonment"
        verify_chain(chain, live.key)
        # "my tables" keeps the latest finished ranked or arena table only (an arena's player
        # found 133 finished tables there)
        status, body = await ana.get("/api/tables?mine=1")
        assert [t["id"] for t in body["tables"]] == [tid]
        await vclock.advance(1.0)
        later = await live.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, stake=0)
        status, _ = await bia.post(f"/api/tables/{later}/leave")
        assert status == 200
        status, body = await ana.get("/api/tables?mine=1")
        assert [t["id"] for t in body["tables"]] == [later]
        status, body = await ana.get(f"/api/tables/{tid}")
        assert status == 200 and body["table"]["status"] == "finished"
        result = settled[0]
        assert (result.table_id, result.kind, result.users_by_seat) == (
            tid, TableKind.RANKED, tuple(users))
        assert result.termination is Termination.ABANDONMENT and result.winner_team == 0
        assert result.forfeit_seat == 1
        assert [e["kind"] for e in result.evidence].count("automatic") == 5
    finally:
        await ana.close()
        await bia.close()


async def test_a_ranked_match_deals_once_its_players_are_here(live: Live,
                                                               vclock: VirtualClock) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    live.house.settler = _ignore
    try:
        users = await _user_ids(live, "ana", "bia")
        tid = await live.house.launch(TableKind.ARENA, Variant.MINEIRO, 2, users, stake=0)
        first = await connect(ana, tid, 0)
        await drain(first)
        await vclock.advance(6.0)  # bia comes from the queue's page 6 s later
        await drain(first)
        assert not [m for m in first.received if m["type"] == "commitment"]
        second = await connect(bia, tid, 1)
        first.autoplay = second.autoplay = False  # entropy only: nobody moves

        def dealt(client: SeatClient) -> bool:
            return any(e["type"] == "hand_started" for m in client.received
                       if m["type"] == "update" for e in m["events"])

        for _ in range(100):  # the commitment, both entropies, the deal: no clock moves
            if dealt(first) and dealt(second):
                break
            for client in (first, second):
                await drain(client, react=True)
        # both here: committed at once (not at the 15 s), dealt with the entropy of both and
        # the full 10 s clock
        started = vclock.now()
        # (bia's hello came after the commitment: her snapshot carries it)
        assert [m["hand"] for m in first.received if m["type"] == "commitment"] == [1]
        for client in (first, second):
            deals = [m for m in client.received if m["type"] == "update"
                     and any(e["type"] == "hand_started" for e in m["events"])]
            assert deals and deals[0]["pending"][0]["deadline_ms"] == ms(started + 10.0)
        hand = live.house.tables[tid].hand
        assert hand is not None and hand.contributions.keys() == {0, 1}
    finally:
        await ana.close()
        await bia.close()


async def _ignore(result: MatchResult) -> None:
    del result


async def test_launch_refusals(live: Live) -> None:
    ana, = await players(live.base, "ana")
    try:
        (user,) = await _user_ids(live, "ana")
        with pytest.raises(LiveError) as refused:
            await live.house.launch(TableKind.ARENA, Variant.MINEIRO, 2, [user, user], stake=0)
        assert refused.value.code == "bad_players"
        with pytest.raises(LiveError) as refused:
            await live.house.launch(TableKind.ARENA, Variant.MINEIRO, 2, [user, 999999], stake=0)
        assert refused.value.code == "unknown_user"
        assert live.house.tables == {}
    finally:
        await ana.close()


async def test_a_ranked_match_nobody_came_to_is_cancelled(live: Live,
                                                          vclock: VirtualClock) -> None:
    # a review queued two players who never opened their table: the clocks ran for both, and
    # the second seat reached its limit first and lost its rating points and stake to a player
    # who never came either
    ana, bia = await players(live.base, "ana", "bia")
    settled: list[MatchResult] = []
    live.house.settler = _collecting(settled)
    try:
        users = await _user_ids(live, "ana", "bia")
        tid = await live.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, stake=50)
        await _settled_after(vclock, settled, 15.0)
        (result,) = settled
        assert result.termination is Termination.CANCELLED and result.winner_team is None
        assert result.forfeit_seat is None
        # the chain stays whole: the hand committed to is dealt and recorded, cancelled
        chain = await fetch_chain(ana, tid)
        assert [r["end"] for r in hand_records(chain)] == ["cancelled"]
        verify_chain(chain, live.key)
        assert await live.app[POOL].fetchval("SELECT count(*) FROM abandonments") == 0
    finally:
        await ana.close()
        await bia.close()


async def test_a_restart_while_a_ranked_match_waits_for_its_players_waits_again(
        make_app: AppFactory, aiohttp_client: Callable[..., Any],
        vclock: VirtualClock) -> None:
    # the wait for the players was in memory only: after a restart the first hand was dealt at
    # once, the clocks ran for seats nobody had open, and nobody coming no longer cancelled it
    first = await start_live(make_app, aiohttp_client, vclock)
    first.house.settler = _ignore
    ana, bia = await players(first.base, "ana", "bia")
    await ana.close()
    await bia.close()
    users = await _user_ids(first, "ana", "bia")
    tid = await first.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, stake=0)
    await vclock.advance(5.0)
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    settled: list[MatchResult] = []
    second.house.settler = _collecting(settled)
    actor = second.house.tables[tid]
    assert actor.hand is None and actor.start_timer is not None
    assert actor.table_json(None)["first_deal_by_ms"] == ms(vclock.now() + 15.0)
    await _settled_after(vclock, settled, 15.0)
    (result,) = settled
    assert result.termination is Termination.CANCELLED and set(result.no_show) == set(users)
