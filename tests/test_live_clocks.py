"""Server clocks in virtual time: deadlines, automatic actions, absence, abandonment (with the
operators' evidence), a restart that overlaps a streak, and the empty-seat cancel."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from yarl import URL

from server.accounts import Role, set_role
from server.app import POOL
from server.bots import choose_action
from server.clock import VirtualClock
from server.live import table as live_table
from server.live.model import TableKind, abandon_limit
from server.live.recovery import reread
from server.live.table import TableActor, ms
from tests import test_live_helpers as live_helpers
from tests.conftest import AppFactory
from tests.test_live_fixes import act
from tests.test_live_helpers import (
    Live,
    Player,
    SeatClient,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    modest,
    players,
    start_live,
    verify_chain,
)


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def drain(client: SeatClient, react: bool = False) -> list[dict[str, Any]]:
    """Every message already sent to this client."""
    got: list[dict[str, Any]] = []
    while True:
        try:
            data = await client.recv(timeout=0.1)
        except TimeoutError:
            return got
        got.append(data)
        if react:
            await client.react(data)


async def drain_until(clients: list[SeatClient], check: Callable[[], bool],
                      seconds: float = 15.0) -> None:
    """Read every client's messages until `check()` holds: on a loaded machine what the server
    sends may come later than one quiet `drain` window."""
    for _ in range(int(seconds / 0.1)):
        for client in clients:
            await drain(client)
        if check():
            return
    raise AssertionError("the expected messages did not come")


async def dealt(clients: list[SeatClient], seconds: float = 15.0) -> SeatClient:
    """Each client sends its entropy as asked; once the hand is dealt (however long a loaded
    machine takes to write the contributions), the one client with a move to make."""
    for _ in range(int(seconds / 0.1)):
        for client in clients:
            await drain(client, react=True)
        movers = [c for c in clients if c.view and c.view["legal"]]
        if movers:
            (mover,) = movers
            return mover
    raise AssertionError("the hand was not dealt")


async def run_clock(vclock: VirtualClock, client: SeatClient, step: float,
                    until: Callable[[], bool], limit: int = 400, react: bool = False) -> None:
    """Move virtual time (straight to the next timer, at most `step` at once) until `until`."""
    for _ in range(limit):
        if until():
            return
        due = vclock.next_deadline
        await vclock.advance(step if due is None else min(step, max(0.0, due - vclock.now())))
        await drain(client, react)
        # a move or entropy in flight is answered before time moves on: a durable write slower
        # than the drain's quiet window let the clock jump to the next deadline first, and the
        # move was applied there, or refused as late
        while any(m["type"] in ("action", "entropy") for m in client.unanswered.values()):
            data = await client.recv()
            if react:
                await client.react(data)
    raise AssertionError("the clock ran out before the expected event")


async def idle_at_training(player: Player, vclock: VirtualClock) -> tuple[str, SeatClient]:
    """A Paulista 1x1 training match started, `player` at seat 0 never acting nor sending
    entropy (its window over, the hand dealt): the table's id and the player's client."""
    table = await create_table(player, "paulista", 2, "training")
    tid = table["id"]
    idle = await connect(player, tid, 0)
    idle.send_entropy = False
    await player.post(f"/api/tables/{tid}/start")
    await vclock.advance(3.0)
    await drain(idle)
    return tid, idle


async def gone_from_training(player: Player, watcher: Player,
                             live: Live) -> tuple[str, TableActor, SeatClient]:
    """A Paulista 1x1 training match of `player` (seat 0) started, their connection lost right
    after it (the bot plays on, the clock acts for them), `watcher` a spectator reading the
    table's events: the table's id, its actor and the spectator's client."""
    table = await create_table(player, "paulista", 2, "training")
    tid = table["id"]
    seat = await connect(player, tid, 0)
    seat.send_entropy = False
    await drain(seat)
    await player.post(f"/api/tables/{tid}/start")
    await drain(seat)
    await seat.ws.close()
    return tid, live.house.tables[tid], await connect(watcher, tid, None)


async def come_back(player: Player, table_id: str) -> SeatClient:
    """`player` opens their seat 0 again, and does nothing (no move, no entropy)."""
    back = await connect(player, table_id, 0)
    back.send_entropy = back.autoplay = False
    await drain(back)
    return back


def pending_of(actor: TableActor, seat: int = 0) -> list[float]:
    """When the clocks of `seat`'s own pending decisions run out (a team's vote left out)."""
    return [d.at for d in actor.deadlines.values() if d.seat == seat and not d.team_vote]


def automatic_of(client: SeatClient, seat: int = 0) -> int:
    """The automatic actions of `seat` the client was sent."""
    return len([e for m in client.received if m["type"] == "update" for e in m["events"]
                if e.get("automatic") and e.get("seat") == seat])


def plays_a_card(view: dict[str, Any], rng: Any) -> dict[str, Any]:
    """A policy that plays its first card whenever it may, and otherwise does the first legal
    thing (no call of its own)."""
    legal = view["legal"]
    return dict(next((action for action in legal if action["do"] == "play"), legal[0]))


def seat_deadlines(client: SeatClient, seat: int) -> list[int]:
    return [p["deadline_ms"] for m in client.received if m["type"] == "update"
            for p in m["pending"] if p["seat"] == seat]


async def test_absence_and_abandonment(live: Live, vclock: VirtualClock) -> None:
    ana, olga = await players(live.base, "ana", "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        idle = await connect(ana, tid, 0)
        idle.send_entropy = False
        await drain(idle)
        await ana.post(f"/api/tables/{tid}/start")
        commitment = (await drain(idle))[-1]
        assert commitment["type"] == "commitment"
        # nobody sends entropy: the deal waits for the entropy window, then records ana absent
        assert commitment["entropy_deadline_ms"] == ms(vclock.now() + 3.0)
        await vclock.advance(3.0)
        await drain(idle)
        dealt_at = vclock.now()
        assert seat_deadlines(idle, 0)[0] == ms(dealt_at + 20.0)
        await run_clock(vclock, idle, 30.0, lambda: idle.over is not None)
        assert idle.over is not None
        assert idle.over["termination"] == "abandonment"
        assert idle.over["forfeit_team"] == 0 and idle.over["winner"] == 1
        assert idle.over["forfeit_seat"] == 0
        assert idle.over["forfeit_trigger"] == "automatic_actions"
        # the table names the seat that abandoned and how, also rebuilt from what was written
        table_info = (await ana.get(f"/api/tables/{tid}"))[1]["table"]
        assert (table_info["forfeit_seat"], table_info["forfeit_trigger"]) == (
            0, "automatic_actions")
        rebuilt = await reread(live.house, tid)
        assert (rebuilt.forfeit_seat, rebuilt.forfeit_trigger) == (0, "automatic_actions")
        absents = [m for m in idle.received if m["type"] == "absent"]
        # every automatic action is said with the streak so far, up to the forfeit
        assert [(m["seat"], m["absent"], m["automatic"]) for m in absents] == [
            (0, True, n) for n in range(1, 10)]
        welcome = next(m for m in idle.received if m["type"] == "welcome")
        assert welcome["table"]["abandon_limit"] == 10
        automatic = [e for m in idle.received if m["type"] == "update" for e in m["events"]
                     if e.get("automatic") and e.get("seat") == 0]
        assert len(automatic) == 9  # the 10th deadline is the forfeit itself
        # once absent, each decision is taken 2 s after it comes up
        deadlines = sorted(set(seat_deadlines(idle, 0)))
        assert deadlines[0] == ms(dealt_at + 20.0)
        chain = await fetch_chain(ana, tid)
        records = hand_records(chain)
        assert records[-1]["end"] == "abandonment"
        assert all(c is None for r in records for c in r["contributions"])
        timeouts = [a for r in records for a in r["actions"] if a["do"] == "timeout"]
        assert len(timeouts) == 9 and all(a["seat"] == 0 for a in timeouts)
        verify_chain(chain, live.key)

        status, body = await olga.get("/api/operator/abandonments?variant=paulista&kind=training")
        assert status == 200
        (summary,) = body["abandonments"]
        assert summary["player"] == "ana" and summary["trigger"] == "automatic_actions"
        assert summary["consequence"] == "forfeit" and summary["restart_overlap"] is False
        status, detail = await olga.get(f"/api/operator/abandonments/{summary['id']}")
        assert status == 200
        kinds = [item["kind"] for item in detail["evidence"]]
        assert kinds.count("automatic") == 9
        assert kinds.count("deadline") == 10
        assert "connected" in kinds and "server_restart" not in kinds
        assert [i["at_ms"] for i in detail["evidence"]] == sorted(
            i["at_ms"] for i in detail["evidence"])
    finally:
        await ana.close()
        await olga.close()


async def watched_training_seat(ana: Player, variant: str) -> tuple[str, SeatClient]:
    """A new 1x1 training table for `ana`, its match not started, and her seat connected
    with nothing played for her (the test plays, or lets the clock play)."""
    table = await create_table(ana, variant, 2, "training")
    seat = await connect(ana, table["id"], 0)
    seat.autoplay = False
    await drain(seat)
    return table["id"], seat


async def test_acting_again_clears_absence(live: Live, vclock: VirtualClock) -> None:
    ana, = await players(live.base, "ana")
    try:
        tid, seat = await watched_training_seat(ana, "mineiro")
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)  # entropy sent: dealt at once
        await run_clock(vclock, seat, 30.0,
                        lambda: any(m["type"] == "absent" for m in seat.received))
        # two more automatic actions (2 s each once absent): each one said with the streak
        await run_clock(vclock, seat, 10.0,
                        lambda: sum(m["type"] == "absent" for m in seat.received) == 3)
        assert [m["automatic"] for m in seat.received if m["type"] == "absent"] == [1, 2, 3]
        # a client that comes (back) now reads the streak in its snapshot
        other = await connect(ana, tid, 0)
        try:
            snapshot = await other.until("snapshot", react=False)
            assert snapshot["absent"] == [0] and snapshot["automatic"] == [3, 0]
            assert snapshot["table"]["abandon_limit"] == 10
        finally:
            await other.ws.close()
        assert seat.view is not None
        while not seat.view["legal"]:
            await vclock.advance(0.5)
            await drain(seat, react=True)
        # back at the table: a move of her own ends the absence
        seat.autoplay = True
        acted_at = vclock.now()
        mark = len(seat.received)
        await seat.react({"type": "update"})
        seat.autoplay = False
        back = await seat.until("absent", react=False)
        assert back == {**back, "seat": 0, "absent": False, "automatic": 0}

        def next_deadlines() -> list[int]:
            return [p["deadline_ms"] for m in seat.received[mark:] if m["type"] == "update"
                    for p in m["pending"] if p["seat"] == 0]

        # her next decision has the full 20 s again, not the absent 2 s
        await run_clock(vclock, seat, 30.0, lambda: bool(next_deadlines()))
        assert next_deadlines()[0] >= ms(acted_at + 20.0)
        # she leaves: the record's evidence is the whole match's, her missed decisions and her
        # return included (it kept only the last streak's, none for a leave: an operator saw a
        # connect and a leave, and `acted` could never be there)
        assert (await ana.post(f"/api/tables/{tid}/leave"))[0] == 200
        evidence = json.loads(await live.app[POOL].fetchval(
            "SELECT evidence FROM abandonments WHERE table_id = $1", tid))
        kinds = [item["kind"] for item in evidence if item["kind"] != "disconnected"]
        returned = kinds.index("acted")
        assert kinds[:returned + 1] == ["connected", *["deadline", "automatic"] * 3, "acted"]
        assert kinds[-1] == "left", kinds  # (her clock may have run out since: a new streak)
        assert [i["streak"] for i in evidence if i["kind"] == "automatic"][:3] == [1, 2, 3]
        assert [i["at_ms"] for i in evidence] == sorted(i["at_ms"] for i in evidence)
    finally:
        await ana.close()


async def test_saying_back_restores_the_full_clock(live: Live, vclock: VirtualClock) -> None:
    ana, = await players(live.base, "ana")
    try:
        tid, seat = await watched_training_seat(ana, "paulista")
        # not absent: nothing to do, nothing happens
        await seat.send({"type": "back", "id": "early"})
        assert (await seat.until("ack", react=False)) == {"type": "ack", "id": "early",
                                                         "seq": None}
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        await run_clock(vclock, seat, 30.0,
                        lambda: sum(m["type"] == "absent" for m in seat.received) == 2)
        # absent, two automatic actions in a row; her decision now has 2 s
        assert seat.view is not None
        while not seat.view["legal"]:
            await vclock.advance(0.25)
            await drain(seat)
        pending = [m for m in seat.received if m["type"] == "update"][-1]["pending"]
        mine = [p["deadline_ms"] for p in pending if p["seat"] == 0]
        assert mine and mine[0] <= ms(vclock.now() + 2.0)
        said_at = vclock.now()
        await seat.send({"type": "back", "id": "b"})
        event = await seat.until("absent", react=False)
        assert {k: event[k] for k in ("seat", "absent", "automatic")} == {
            "seat": 0, "absent": False, "automatic": 2}  # the streak stands until she acts
        assert [p["deadline_ms"] for p in event["pending"] if p["seat"] == 0] == [
            ms(said_at + 20.0)]
        ack = await seat.until("ack", react=False)
        assert ack == {"type": "ack", "id": "b", "seq": event["seq"]}
        await vclock.advance(10.0)  # the old 2 s clock is gone: nothing was played for her
        await drain(seat)
        assert sum(m["type"] == "absent" for m in seat.received) == 3
        actor = live.house.tables[tid]
        assert 0 not in actor.absent and actor.automatic_streak(0) == 2
        async with live.app[POOL].acquire() as conn:
            kinds = [r["kind"] for r in await conn.fetch(
                "SELECT kind FROM seat_events WHERE table_id = $1 ORDER BY id", tid)]
        assert kinds[-1] == "back"
        # a spectator is never absent
        (bia,) = await players(live.base, "bia")
        try:
            watcher = await connect(bia, tid, None)
            await drain(watcher)
            await watcher.send({"type": "back", "id": "w"})
            refused = await watcher.until("error", react=False)
            assert (refused["id"], refused["error"]) == ("w", "not_seated")
        finally:
            await bia.close()
    finally:
        await ana.close()


async def test_empty_seat_cancels_private_match(make_app: AppFactory,
                                                aiohttp_client: Callable[..., Any],
                                                vclock: VirtualClock) -> None:
    # long decision clocks, so that the empty seat (not its clocks) ends the match
    live = await start_live(lambda clock: make_app(clock=clock, clock_casual=500.0),
                            aiohttp_client, vclock)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "argentino", 2, "private")
        tid = table["id"]
        await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        seat = await connect(ana, tid, 0)
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        await vclock.advance(3.0)  # bia sends no entropy
        await drain(seat, react=True)
        # bia comes for a moment at 30 s: the 60 s start again when she goes
        await vclock.advance(27.0)
        visit = await connect(bia, tid, 1)
        await drain(visit)
        await visit.ws.close()
        await drain(seat, react=True)
        left_at = vclock.now()
        await vclock.advance(59.0)
        await drain(seat, react=True)
        assert seat.over is None
        await vclock.advance(1.5)
        await drain(seat, react=True)
        assert seat.over is not None, vclock.now() - left_at
        assert seat.over["termination"] == "cancelled" and seat.over["winner"] is None
        status, body = await ana.get(f"/api/tables/{tid}")
        assert (status, body["error"]) == (404, "table_not_found")  # closed: back to the lobby
        chain = await fetch_chain(ana, tid)
        record = hand_records(chain)[-1]
        assert record["end"] == "cancelled" and record["match_winner"] is None
        verify_chain(chain, live.key)
    finally:
        await ana.close()
        await bia.close()


async def test_a_lost_connection_cancels_a_private_match_before_its_clocks_forfeit_it(
        live: Live, vclock: VirtualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    # the ordinary clocks: 20 s, then 2 s a decision once absent. Ten automatic actions came
    # within about 45 s, so the player whose connection was lost always lost by abandonment
    # while the table promised a cancellation at 60 s (RULES.md, Clocks)
    # ana only plays cards (no truco for bia's clock to decline, ending a hand at her first
    # decision): each hand then asks bia for two moves at least, so her 60 s hold well over
    # ten decisions whatever the deals
    monkeypatch.setattr(live_helpers, "choose_action", plays_a_card)
    ana, bia, olga = await players(live.base, "ana", "bia", "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        table = await create_table(ana, "paulista", 2, "private")
        tid = table["id"]
        await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        seat = await connect(ana, tid, 0)
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        emptied = vclock.now()  # bia never opened the table: her seat is empty from the start
        await run_clock(vclock, seat, 30.0, lambda: seat.over is not None, react=True)
        assert seat.over is not None
        assert seat.over["termination"] == "cancelled" and seat.over["winner"] is None
        assert vclock.now() - emptied == pytest.approx(60.0, abs=1.0)
        streaks = [m["automatic"] for m in seat.received
                   if m["type"] == "absent" and m["seat"] == 1]
        # a seat kept by the clock forfeits at its 10th deadline: 10 automatic actions and
        # no forfeit is the clock acting past the limit (about 12 in these 60 s)
        assert max(streaks) >= abandon_limit(TableKind.PRIVATE) == 10
        status, body = await olga.get("/api/operator/abandonments?kind=private")
        assert status == 200 and body["abandonments"] == []
        verify_chain(await fetch_chain(ana, tid), live.key)
    finally:
        await ana.close()
        await bia.close()
        await olga.close()


async def test_back_after_the_limit_the_next_automatic_action_forfeits(
        live: Live, vclock: VirtualClock) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    try:
        # Paulista: each automatic action brings the bot at most 1 point (a declined raise, or
        # a hand played out over two of ana's cards), so ana's 10th comes before its 12th. A
        # Mineiro hand is worth 2: the bot won once at 14-0 after 6 hands, before her 10th
        tid, _, watcher = await gone_from_training(ana, bia, live)

        def streak() -> int:
            return max([m["automatic"] for m in watcher.received
                        if m["type"] == "absent" and m["seat"] == 0], default=0)

        await run_clock(vclock, watcher, 30.0, lambda: streak() >= 10)
        assert watcher.over is None  # at the limit, and still playing
        back = await connect(ana, tid, 0)  # back, and does nothing: the next one forfeits
        back.send_entropy = False
        await run_clock(vclock, back, 30.0, lambda: back.over is not None)
        assert back.over is not None and back.over["termination"] == "abandonment"
        assert back.over["forfeit_seat"] == 0
    finally:
        await ana.close()
        await bia.close()


async def test_back_in_an_empty_seat_the_pending_decision_has_the_full_clock(
        live: Live, vclock: VirtualClock) -> None:
    # an absent player whose connection was lost came back to a 2 s clock: at the limit (or
    # one short of it) the clock forfeited the match before their page showed their cards,
    # where staying away would have let the 60 s cancel it (an outside review: a 50 s stall, a
    # reconnect, the forfeit 2 s later). Their pending decision now gets the full clock, once
    ana, bia = await players(live.base, "ana", "bia")
    try:
        tid, actor, watcher = await gone_from_training(ana, bia, live)
        # past the limit, with a decision of hers pending (on its 2 s clock)
        await run_clock(vclock, watcher, 0.5,
                        lambda: actor.automatic_streak(0) >= 10 and bool(pending_of(actor)))
        assert watcher.over is None and pending_of(actor)[0] <= vclock.now() + 2.0
        returned_at = vclock.now()
        back = await come_back(ana, tid)
        assert pending_of(actor) == [returned_at + 20.0]  # the full clock, once
        clocks = await watcher.until("clocks", react=False)
        assert (clocks["reason"], clocks["seat"]) == ("returned", 0)
        assert [p["deadline_ms"] for p in clocks["pending"] if p["seat"] == 0] == [
            ms(returned_at + 20.0)]
        assert 0 in actor.absent  # absent until she acts (RULES.md)
        await vclock.advance(19.0)  # the old 2 s clock is gone: nothing played for her
        await drain(back)
        assert back.over is None and actor.automatic_streak(0) >= 10
        assert back.view is not None and back.view["legal"]
        await act(back, back.view["legal"][0])  # she acts in time: the streak ends
        await back.until("ack", react=False)
        assert actor.automatic_streak(0) == 0 and 0 not in actor.absent
        assert back.over is None
    finally:
        await ana.close()
        await bia.close()


async def test_coming_back_again_and_again_is_one_full_clock_until_the_seat_acts(
        live: Live, vclock: VirtualClock) -> None:
    # a review: an absent player who reconnected every 19 s had the full clock started again at
    # each return, the clock never acted, and the table waited for ever (at ranked no empty-seat
    # rule ends it). One full clock per absence: the next return gives nothing more until an
    # action is taken for the seat, which counts toward the limit as ever
    ana, bia = await players(live.base, "ana", "bia")
    try:
        tid, actor, watcher = await gone_from_training(ana, bia, live)
        await run_clock(vclock, watcher, 0.5,
                        lambda: actor.automatic_streak(0) >= 1 and bool(pending_of(actor)))
        streak = actor.automatic_streak(0)
        first = await come_back(ana, tid)
        granted = vclock.now() + 20.0
        assert pending_of(actor) == [granted]
        await vclock.advance(19.0)
        await drain(watcher)
        await first.ws.close()
        await drain(watcher)
        again = await come_back(ana, tid)  # back again before her clock ran out
        assert pending_of(actor) == [granted]  # not started again
        await vclock.advance(1.5)  # the clock acts at the granted deadline
        await drain(again)
        assert actor.automatic_streak(0) == streak + 1
    finally:
        await ana.close()
        await bia.close()


async def test_operator_listing_access(live: Live) -> None:
    ana, olga = await players(live.base, "ana", "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        status, body = await ana.get("/api/operator/abandonments")
        assert (status, body["error"]) == (403, "forbidden")
        status, body = await ana.get("/api/operator/abandonments/1")
        assert status == 403
        async with aiohttp.ClientSession() as anon, anon.get(
                live.base / "api/operator/abandonments") as resp:
            assert resp.status == 401
        # a bound outside years 1-9999 once in UTC is a bad filter too, not a 500
        for query, code in [("since=yesterday", "bad_filter"), ("variant=x", "bad_filter"),
                            ("kind=casino", "bad_filter"),
                            ("since=0001-01-01T00:00:00%2B14:00", "bad_filter"),
                            ("until=9999-12-31T23:59:59-14:00", "bad_filter")]:
            status, body = await olga.get(f"/api/operator/abandonments?{query}")
            assert (status, body["error"]) == (400, code)
        status, body = await olga.get(
            "/api/operator/abandonments?since=2020-01-01&until=2020-01-02T00:00:00%2B00:00")
        assert (status, body) == (200, {"abandonments": [], "next": None})
        for bad in ("999", "x", "-1"):
            status, body = await olga.get(f"/api/operator/abandonments/{bad}")
            assert (status, body["error"]) == (404, "abandonment_not_found")
    finally:
        await ana.close()
        await olga.close()


async def test_restart_overlapping_a_streak_is_not_penalised(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the bot never raises: a hand it wins then takes two of ana's automatic plays, and it has
    # ten points at most when her second streak of ten ends the match (raising every hand,
    # each raise declined for her, it could reach twelve first and win the match on points)
    monkeypatch.setattr(live_table, "choose_action",
                        lambda view, rng, **kw: choose_action(modest(view), rng, **kw))
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, olga = await players(first.base, "ana", "olga")
    await set_role(first.app[POOL], "olga", Role.OPERATOR)
    tid, idle = await idle_at_training(ana, vclock)
    await run_clock(vclock, idle, 30.0, lambda: automatic_of(idle) >= 6)
    await ana.close()
    await olga.close()
    await first.client.close()  # a clean stop; the streak is on record

    await vclock.advance(30.0)
    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    olga = await Player(second.base, "olga").login()
    try:
        watch = await connect(ana, tid, 0)
        watch.send_entropy = False
        await drain(watch)
        assert watch.received[1]["type"] == "snapshot"  # another server run: a snapshot
        # reading the evidence takes the database a moment, in which the clock moves on (a
        # rebuild counted the automatic action after the exemption in the old streak, and lost
        # it: the count went 1, 2, 3, 3 after the next restart)
        evidence = second.house.evidence

        async def slow_evidence(*args: Any) -> list[dict[str, Any]]:
            items = await evidence(*args)
            vclock._now += 0.005
            return items

        monkeypatch.setattr(second.house, "evidence", slow_evidence)

        # 3 more automatic actions make 9; the 10th deadline is reviewed, not penalised
        await run_clock(vclock, watch, 30.0, lambda: automatic_of(watch) >= 4)
        assert watch.over is None
        _, body = await olga.get("/api/operator/abandonments?player=ana")
        (entry,) = body["abandonments"]
        assert entry["consequence"] == "none_restart" and entry["restart_overlap"] is True
        # the exempted abandonment ended the streak; a rebuild from the rows (a restart, a
        # reload) counts only what came after it, as the live table does
        live_streaks = {seat: s.count for seat, s in second.house.tables[tid].streaks.items()}
        rebuilt = await reread(second.house, tid)
        assert {seat: s.count for seat, s in rebuilt.streaks.items()} == live_streaks
        assert live_streaks[0] < 10
        _, detail = await olga.get(f"/api/operator/abandonments/{entry['id']}")
        assert "server_restart" in [i["kind"] for i in detail["evidence"]]
        # a streak that starts after the restart is penalised as usual
        await run_clock(vclock, watch, 30.0, lambda: watch.over is not None)
        assert watch.over is not None and watch.over["termination"] == "abandonment"
        _, body = await olga.get("/api/operator/abandonments?player=ana")
        assert [e["consequence"] for e in body["abandonments"]] == ["forfeit", "none_restart"]
        verify_chain(await fetch_chain(ana, tid), second.key)
    finally:
        await ana.close()
        await olga.close()


async def test_team_vote_runs_out(live: Live, vclock: VirtualClock) -> None:
    people = await players(live.base, "ana", "bia", "caio", "davi")
    try:
        table = await create_table(people[0], "paulista", 4, "private")
        tid = table["id"]
        for index, person in enumerate(people[1:], start=1):
            await person.post(f"/api/tables/{tid}/join", {"invite": table["invite"],
                                                           "seat": index})
        clients = [await connect(p, tid, i) for i, p in enumerate(people)]
        for client in clients:
            client.autoplay = False
        await people[0].post(f"/api/tables/{tid}/start")
        mover = await dealt(clients)
        assert mover.seat is not None
        first, second = ((mover.seat + 1) % 4, (mover.seat + 3) % 4)
        # each move's ack, however late it comes on a loaded machine (one quiet `drain` window
        # was not always enough)
        await mover.send({"type": "action", "id": "t", "action": {"do": "raise"}})
        await mover.until("ack", react=False)
        await clients[first].send({"type": "action", "id": 1, "action": {"do": "accept"}})
        await clients[first].until("ack", react=False)
        await clients[second].send({"type": "action", "id": 2, "action": {"do": "decline"}})
        await clients[second].until("ack", react=False)
        # the update of the decline, which its ack follows in the same write
        split = [m for m in clients[second].received if m["type"] == "update"][-1]
        assert {p["seat"] for p in split["view"]["pending"]} == {first, second}
        assert all(p["team_vote"] for p in split["pending"])
        assert split["pending"][0]["deadline_ms"] == ms(vclock.now() + 10.0)
        # one clock for the team, and it names both partners: each may still change their vote
        # (it named only the lower seat, and the other partner was never told it was their turn)
        assert [sorted(p["seats"]) for p in split["pending"]] == [sorted([first, second])]
        await vclock.advance(10.0)
        for client in clients:
            await drain(client)
        events = [e for m in clients[0].received if m["type"] == "update" for e in m["events"]]
        assert {"type": "vote_expired", "team": first % 2} in events
        ended = [e for e in events if e["type"] == "hand_ended"]
        assert ended and ended[0]["winner_team"] == mover.seat % 2 and ended[0]["points"] == 1
        # running out of time to agree is nobody's absence
        assert not [m for m in clients[0].received if m["type"] == "absent"]
    finally:
        for person in people:
            await person.close()


async def _four_at_a_raise(live: Live) -> tuple[list[Player], str, list[SeatClient], int, int]:
    """A 2v2 Paulista private table in vote mode, dealt, and its first player asking truco:
    the people, the table id, their clients, and the two seats that must answer."""
    people = await players(live.base, "ana", "bia", "caio", "davi")
    table = await create_table(people[0], "paulista", 4, "private")
    tid = table["id"]
    for seat, person in enumerate(people[1:], start=1):
        await person.post(f"/api/tables/{tid}/join", {"invite": table["invite"], "seat": seat})
    clients = [await connect(person, tid, seat) for seat, person in enumerate(people)]
    for client in clients:
        client.autoplay = False
    await people[0].post(f"/api/tables/{tid}/start")
    mover = await dealt(clients)
    await mover.send({"type": "action", "id": "t", "action": {"do": "raise"}})
    for client in clients:
        await drain(client)
    return people, tid, clients, (mover.seat + 1) % 4, (mover.seat + 3) % 4


async def test_acting_after_back_says_the_count_is_cleared(live: Live,
                                                          vclock: VirtualClock) -> None:
    # a review: after `back` (absence over, the count standing at 2), her own move cleared the
    # count silently: the table kept showing 2 automatic actions in a row until a snapshot
    ana, = await players(live.base, "ana")
    try:
        tid, seat = await watched_training_seat(ana, "paulista")
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        await run_clock(vclock, seat, 30.0,
                        lambda: sum(m["type"] == "absent" for m in seat.received) == 2)
        while not seat.view or not seat.view["legal"]:
            await vclock.advance(0.25)
            await drain(seat)
        await seat.send({"type": "back", "id": "b"})
        await seat.until("ack", react=False)
        actor = live.house.tables[tid]
        assert 0 not in actor.absent and actor.automatic_streak(0) == 2
        mark = len(seat.received)
        seat.autoplay = True
        await seat.react({"type": "update"})
        seat.autoplay = False
        await seat.until("ack", react=False)
        await drain(seat)
        assert actor.automatic_streak(0) == 0
        said = [(m["seat"], m["absent"], m["automatic"]) for m in seat.received[mark:]
                if m["type"] == "absent"]
        assert said == [(0, False, 0)]
    finally:
        await ana.close()


async def _automatic_moves(live: Live, tid: str) -> list[str]:
    """The verbs of the automatic actions written at the table: a hand in play's rows, and a
    finished hand's record (its rows are dropped with the record, which keeps a `timeout`)."""
    rows = await live.app[POOL].fetch(
        "SELECT action FROM live_actions WHERE table_id = $1 AND automatic ORDER BY hand, idx",
        tid)
    recorded = await live.app[POOL].fetch(
        "SELECT a->>'do' AS verb FROM live_hands, jsonb_array_elements(record->'actions') a"
        " WHERE table_id = $1 AND a->>'do' = 'timeout' ORDER BY hand", tid)
    return [r["verb"] for r in recorded] + [json.loads(r["action"])["do"] for r in rows]


@pytest.mark.parametrize("stop", ["crash", "shutdown"])
async def test_a_restart_does_not_cast_pending_votes(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        stop: str) -> None:
    # a review stopped the house while a truco waited for a 2v2 team's votes: at a clean
    # shutdown, the house's own closing of the sockets cast them as declines; after a crash,
    # the rebuilt table, whose players had not come back yet, declined them at once. The
    # server took those connections: the votes stay the players' to cast, on full clocks
    first = await start_live(make_app, aiohttp_client, vclock)
    people, tid, _, a, b = await _four_at_a_raise(first)
    if stop == "crash":
        await first.house.tables[tid].stop()  # nothing more of this run reaches the table
    # the house stops with the players' sockets open (closed first, a socket the table saw
    # close before the shutdown was a player's own loss, its vote declined: a race in this test)
    await first.client.close()
    for person in people:
        await person.close()
    second = await start_live(make_app, aiohttp_client, vclock)
    actor = second.house.tables[tid]
    await actor.call(_nothing)
    await actor.call(_nothing)
    assert await _automatic_moves(second, tid) == []
    pending = {d.seat: d.at - vclock.now() for d in actor.deadlines.values()}
    assert set(pending) == {a, b} and all(left > 9 for left in pending.values()), pending
    # nobody comes: the team's clock runs out, then the automatic declines, as for anyone
    await vclock.advance(max(pending.values()) + 0.5)
    await actor.call(_nothing)
    assert await _automatic_moves(second, tid)


async def test_a_stopping_house_acts_for_nobody(live: Live, vclock: VirtualClock) -> None:
    # a review: the house closed every socket at SIGINT, then waited up to 5 s for clients that
    # did not answer the close; meanwhile its clocks acted for the players it had disconnected
    # (an automatic move, a ranked forfeit with a strike, a hand dealt without their entropy)
    people = await players(live.base, "ana", "bia")
    table = await create_table(people[0], "paulista", 2, "private")
    tid = table["id"]
    await people[1].post(f"/api/tables/{tid}/join", {"invite": table["invite"], "seat": 1})
    clients = [await connect(person, tid, seat) for seat, person in enumerate(people)]
    for client in clients:
        client.autoplay = False
    await people[0].post(f"/api/tables/{tid}/start")
    await dealt(clients)
    actor = live.house.tables[tid]
    assert actor.deadlines
    try:
        # the sockets are closed (here the clients answer at once; a frozen tab holds the
        # shutdown up to its grace), the tables are not stopped yet
        await live.house.close_sockets()
        await vclock.advance(25.0)  # past the move's 20 s clock
        await actor.call(_nothing)
        await actor.call(_nothing)
        assert await _automatic_moves(live, tid) == []
        await vclock.advance(60.0)  # past the empty seats' 60 s: no cancel either
        await actor.call(_nothing)
        assert actor.hand is not None and actor.status.value == "playing"
    finally:
        for person in people:
            await person.close()


async def _nothing() -> None:
    return None


def _votes(client: SeatClient) -> list[tuple[int, str, bool]]:
    return [(e["seat"], e["vote"], e["automatic"]) for m in client.received
            if m["type"] == "update" for e in m["events"] if e["type"] == "vote_cast"]


async def test_a_vote_is_read_by_the_partner_alone(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    people, tid, clients, first, second = await _four_at_a_raise(live)
    try:
        seq = clients[first].last_seq
        await clients[first].send({"type": "action", "id": 1, "action": {"do": "decline"}})
        await drain_until(clients, lambda: all(_votes(c) for c in clients))
        askers = [c for c in clients if c.seat is not None and c.seat % 2 != first % 2]
        # the partner reads the verb, in the event and in the view, as the voter does
        for client in (clients[first], clients[second]):
            assert _votes(client) == [(first, "decline", False)]
            assert client.view is not None
            assert client.view["hand"]["votes"] == {str(first): "decline"}
        # the team asking, and an observer, learn that a vote was cast, not what it was
        _, body = await people[0].get(f"/api/tables/{tid}")
        (eva,) = await players(live.base, "eva")
        people.append(eva)
        watcher = SeatClient(await eva.session.ws_connect(
            live.base.join(URL(f"/ws/tables/{tid}?invite={body['table']['invite']}"))), None)
        await watcher.hello()
        for client in askers:
            assert _votes(client) == [(first, None, False)]
            assert client.view is not None
            assert client.view["hand"]["votes"] == {str(first): None}
        await drain(watcher)
        snapshot = next(m for m in watcher.received if m["type"] == "snapshot")
        assert snapshot["view"]["hand"]["votes"] == {str(first): None}
        # and a catch-up replays each its own way
        for client, verb in ((askers[0], None), (clients[second], "decline")):
            again = SeatClient(await people[client.seat].ws(tid), client.seat,
                               last_seq=seq, epoch=client.epoch)
            await again.hello()
            await drain(again)
            assert _votes(again) == [(first, verb, False)], client.seat
            await again.ws.close()
    finally:
        for person in people:
            await person.close()


async def test_a_disconnected_players_pending_vote_counts_as_decline(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    people, tid, clients, first, second = await _four_at_a_raise(live)
    actor = live.house.tables[tid]
    try:
        await clients[second].ws.close()  # gone while the vote waits for them
        others = [c for c in clients if c.seat != second]
        await drain_until(others, lambda: bool(_votes(clients[first])))
        # their vote is a decline at once (no clock ran out: no absence, no streak)
        assert _votes(clients[first]) == [(second, "decline", True)]
        assert not actor.absent and not actor.streaks
        await clients[first].send({"type": "action", "id": 1, "action": {"do": "decline"}})

        def ended() -> list[dict[str, Any]]:
            return [e for m in clients[first].received if m["type"] == "update"
                    for e in m["events"] if e["type"] == "hand_ended"]

        await drain_until(others, lambda: bool(ended()), seconds=5.0)
        assert ended()[0]["reason"] == "declined"  # decided then, not 20 s later
    finally:
        for person in people:
            await person.close()


async def test_an_entropy_window_open_at_a_restart_waits_for_the_pages_to_come_back(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a hostile review restarted the house in a hand's entropy window: it opened again for 3 s
    # at start, before any page had found the house back (they retry backing off to 5 s), and
    # the hand was dealt with their contributions recorded as absent
    first = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(first.base, "ana")
    tid = (await create_table(ana, "paulista", 2, "training"))["id"]
    seat = await connect(ana, tid, 0)
    seat.send_entropy = False
    await ana.post(f"/api/tables/{tid}/start")
    await drain(seat)
    assert first.house.tables[tid].hand is not None
    await ana.close()
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    try:
        hand = second.house.tables[tid].hand
        assert hand is not None and hand.entropy_deadline == vclock.now() + 3.0 + 6.0
        await vclock.advance(5.0)  # the page's reconnect, at its longest backoff
        back = await connect(ana, tid, 0)
        back.autoplay = False
        await drain(back, react=True)  # its contribution, sent on the snapshot
        await drain(back, react=True)
        (snapshot,) = [m for m in back.received if m["type"] == "snapshot"]
        assert snapshot["hand"]["phase"] == "entropy" and 0 not in snapshot["hand"]["entropy_from"]
        contributions = await second.app[POOL].fetch(
            "SELECT seat FROM live_contributions WHERE table_id = $1", tid)
        assert [c["seat"] for c in contributions] == [0]
        # the grace is for the window open at the restart only: the next hand's is 3 s
        actor = second.house.tables[tid]
        windows: list[tuple[int, float]] = []
        opened = actor._open_entropy

        def watched() -> None:
            opened()
            assert actor.hand is not None and actor.hand.entropy_deadline is not None
            windows.append((actor.hand.number, actor.hand.entropy_deadline - vclock.now()))

        monkeypatch.setattr(actor, "_open_entropy", watched)
        back.autoplay = back.modest = True  # a raise to twelve would end the match here
        await run_clock(vclock, back, 1.0, lambda: bool(windows), react=True)
        assert windows[0] == (2, 3.0) and {w for _, w in windows} == {3.0}
    finally:
        await ana.close()


async def test_a_reloaded_tables_snapshot_shows_its_clocks(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        tid = (await create_table(ana, "paulista", 2, "training"))["id"]
        seat = await connect(ana, tid, 0)
        seat.autoplay = False
        await drain(seat)
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        actor = live.house.tables[tid]
        while not any(d.seat == 0 for d in actor.deadlines.values()):
            await vclock.advance(0.1)
            await drain(seat)
        mark = len(seat.received)
        await actor.call(actor._reload)  # what a write in doubt makes the table do
        await drain(seat)
        (snapshot,) = [m for m in seat.received[mark:] if m["type"] == "snapshot"]
        # every clock restarts in full, and the snapshot says when each runs out
        assert [(d["seat"], d["deadline_ms"]) for d in snapshot["pending"]] == [
            (d.seat, ms(d.at)) for d in actor.deadlines.values()]
        assert snapshot["pending"] and all(
            d.at == vclock.now() + 20.0 for d in actor.deadlines.values())
    finally:
        await ana.close()


async def test_a_reload_keeps_the_streaks_first_deadline_in_the_evidence(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    writer = live.house.writer
    real_write = writer.write

    async def slow(statements: Any) -> None:  # a commit takes 5 ms of the table's clock
        await real_write(statements)
        await vclock.advance(0.005)

    writer.write = slow  # type: ignore[method-assign]
    (ana,) = await players(live.base, "ana")
    try:
        tid = (await create_table(ana, "paulista", 2, "training"))["id"]
        idle = await connect(ana, tid, 0)
        idle.send_entropy = False
        await drain(idle)
        await ana.post(f"/api/tables/{tid}/start")
        actor = live.house.tables[tid]
        await run_clock(vclock, idle, 30.0,
                        lambda: 0 in actor.streaks and actor.streaks[0].count >= 3)
        await actor.call(actor._reload)  # the streak is rebuilt from the rows
        await run_clock(vclock, idle, 30.0, lambda: idle.over is not None)
        evidence = await live.app[POOL].fetchval("SELECT evidence FROM abandonments")
        kinds = [item["kind"] for item in json.loads(evidence)]
        # ten missed deadlines: nine automatic actions, and the tenth deadline is the forfeit
        assert (kinds.count("deadline"), kinds.count("automatic")) == (10, 9)
    finally:
        await ana.close()


async def test_a_rebuild_ends_the_streak_where_the_seat_acted(
        live: Live, vclock: VirtualClock) -> None:
    # a rebuild (a restart, a reload) replays the seat's events: her own move after her
    # automatic actions ended their streak, in memory and from the rows alike
    ana, = await players(live.base, "ana")
    try:
        tid, seat = await watched_training_seat(ana, "paulista")
        await ana.post(f"/api/tables/{tid}/start")
        await drain(seat, react=True)
        actor = live.house.tables[tid]
        await run_clock(vclock, seat, 30.0, lambda: actor.automatic_streak(0) >= 2)
        assert seat.view is not None
        while not seat.view["legal"]:
            await vclock.advance(0.25)
            await drain(seat)
        await act(seat, seat.view["legal"][0])
        await seat.until("ack", react=False)
        assert actor.automatic_streak(0) == 0
        rebuilt = await reread(live.house, tid)
        assert rebuilt.automatic_streak(0) == 0
    finally:
        await ana.close()


async def test_a_database_fault_restarts_the_clocks_and_exempts_the_streak(
        live: Live, vclock: VirtualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database fault is the house's: once the writer writes again, every pending decision's
    clock starts again in full (a `clocks` event), the fault is written to `server_faults`, and
    a streak of automatic actions begun before it ended carries no penalty."""
    monkeypatch.setattr(live_table, "choose_action",
                        lambda view, rng, **kw: choose_action(modest(view), rng, **kw))
    ana, olga = await players(live.base, "ana", "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        tid, idle = await idle_at_training(ana, vclock)
        house = live.house

        def ana_pending() -> bool:
            return any(d.seat == 0 for d in house.tables[tid].deadlines.values())

        # a streak of 4 automatic actions or more, then a decision of ana's pending
        await run_clock(vclock, idle, 30.0, lambda: automatic_of(idle) >= 4)
        await run_clock(vclock, idle, 0.5, ana_pending)
        fault_at = vclock.now()
        house.database_fault()
        await vclock.advance(1.0)
        # the database answers a read, but the house saves no move: /health says so
        resp = await live.client.get("/health")
        assert resp.status == 503 and (await resp.json())["error"] == "writes_failing"
        house.database_back()
        back_at = vclock.now()
        assert (await live.client.get("/health")).status == 200
        await drain_until([idle], lambda: any(m["type"] == "clocks" for m in idle.received))
        clocks = next(m for m in idle.received if m["type"] == "clocks")
        assert clocks["reason"] == "database"
        # ana is absent (2 s a decision): her clock starts again from now, in full for her
        assert [p["deadline_ms"] for p in clocks["pending"] if p["seat"] == 0] == [
            ms(back_at + 2.0)]
        # the fault is on record, with its start and end
        row = await live.app[POOL].fetchrow(
            "SELECT kind, started_at, ended_at, note FROM server_faults ORDER BY id DESC LIMIT 1")
        assert (row["kind"], row["started_at"].timestamp(), row["ended_at"].timestamp()) == (
            "fault", pytest.approx(fault_at, abs=1e-3), pytest.approx(back_at, abs=1e-3))
        # the streak that began before the fault ended reaches the limit: no penalty, the match
        # goes on; the evidence shows the fault
        await run_clock(vclock, idle, 30.0,
                        lambda: automatic_of(idle) >= abandon_limit(TableKind.TRAINING))
        await drain(idle)
        assert idle.over is None
        _, body = await olga.get("/api/operator/abandonments?player=ana")
        (entry,) = body["abandonments"]
        assert entry["consequence"] == "none_restart"
        _, detail = await olga.get(f"/api/operator/abandonments/{entry['id']}")
        assert "server_fault" in [i["kind"] for i in detail["evidence"]]
        # a streak that starts after it is penalised as usual
        await run_clock(vclock, idle, 30.0, lambda: idle.over is not None)
        assert idle.over is not None and idle.over["termination"] == "abandonment"
    finally:
        await ana.close()
        await olga.close()
