"""A live table whose writes fail (the database refuses one, or its answer is lost): what the
table holds always comes back to what was written. A command refused before anything was saved
changes nothing; one that had saved part of its change, or had moved its memory ahead of the
write that failed, makes the table re-read what was written, as a restart would, and go on.

Also: entropy messages queued together are written, received and acknowledged together.

The database is real; the failures are injected where the table hands its rows to the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from server.bots import NothingToDo, choose_action
from server.clock import VirtualClock
from server.live.model import HandPhase, LiveError, TableStatus
from server.live.recovery import reread
from server.live.table import TableActor
from server.live.writer import WriteInDoubt, WriteRefused
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, Player, create_table, modest, players, start_live
from truco import view

Statements = Sequence[tuple[str, tuple[Any, ...]]]


class FakeConn:
    """The side of a socket a table uses: what it was sent."""

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.out: list[dict[str, Any]] = []
        self.writes = 0  # sends: the table's messages, before a real socket coalesces them

    def send(self, text: bytes) -> None:
        self.out.append(json.loads(text))

    def send_json(self, message: dict[str, Any]) -> None:
        self.out.append(message)

    def ack(self, msg_id: str | int | None, seq: int | None) -> None:
        self.send_json({"type": "ack", "id": msg_id, "seq": seq})

    def close_soon(self, code: int, reason: str) -> None:
        self.out.append({"type": "closed", "code": code})


class Fault:
    """Fail the next `times` writes that `match` picks: refused (nothing written), or written
    with the answer lost (in doubt)."""

    def __init__(self, live: Live, match: Callable[[Statements], bool], *, doubt: bool = False,
                 times: int = 1) -> None:
        self.writer = live.house.writer
        self.original = self.writer.write
        self.match, self.doubt, self.left = match, doubt, times
        self.hits: list[Statements] = []
        self.seen: list[Statements] = []
        self.writer.write = self._write  # type: ignore[method-assign]

    async def _write(self, statements: Statements) -> None:
        self.seen.append(statements)
        if self.left > 0 and self.match(statements):
            self.left -= 1
            self.hits.append(statements)
            if not self.doubt:
                raise WriteRefused()
            await self.original(statements)
            raise WriteInDoubt()
        await self.original(statements)


def starts(prefix: str) -> Callable[[Statements], bool]:
    return lambda statements: any(sql.startswith(prefix) for sql, _ in statements)


async def settle(actor: TableActor) -> None:
    async def nothing() -> None:
        return None

    for _ in range(5):
        await actor.call(nothing)


async def setup(make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
                ) -> tuple[Live, Player, str, TableActor, FakeConn]:
    """ana against a bot at a Paulista training table, started: hand 1 wants her entropy."""
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    tid = (await create_table(ana, "paulista", 2, "training"))["id"]
    actor = live.house.tables[tid]
    user_id = actor.seats[0].user_id
    assert user_id is not None
    conn = FakeConn(user_id)
    await actor.call(lambda: actor.open_connection(conn))  # type: ignore[arg-type]
    status, body = await ana.post(f"/api/tables/{tid}/start")
    assert status == 200, body
    await settle(actor)
    assert actor.hand is not None and actor.hand.phase is HandPhase.ENTROPY
    return live, ana, tid, actor, conn


async def contribute(actor: TableActor, conn: FakeConn, hex_text: str = "ab" * 16,
                     msg_id: str = "e") -> None:
    assert actor.hand is not None
    await actor.contribute(conn, msg_id, actor.hand.number, hex_text)  # type: ignore[arg-type]


async def ana_moves(actor: TableActor, conn: FakeConn, rng: random.Random) -> bool:
    """One move of ana's if she has one (False otherwise)."""
    if actor.state is None or actor.hand is None or actor.hand.phase is not HandPhase.PLAYING:
        return False
    seat_view = view(actor.state, 0)
    if not seat_view.get("legal"):
        return False
    try:
        choice = choose_action(modest(seat_view), rng)  # a hand 2 follows hand 1
    except NothingToDo:
        return False
    number = actor.hand.number
    await actor.call(lambda: actor.act(conn, choice, time.perf_counter(),  # type: ignore[arg-type]
                                       number))
    await settle(actor)
    return True


async def play_until(actor: TableActor, conn: FakeConn, rng: random.Random,
                     done: Callable[[], bool], steps: int) -> list[str]:
    """ana plays (and the clock runs when she has nothing to do) until `done`; the codes of
    the refusals she got on the way."""
    refusals = []
    for _ in range(steps):
        if done():
            break
        try:
            if not await ana_moves(actor, conn, rng):
                await vclock_of(actor).advance(0.5)
                await settle(actor)
        except LiveError as exc:
            refusals.append(exc.code)
    assert done(), "never got there"
    return refusals


def vclock_of(actor: TableActor) -> VirtualClock:
    clock = actor.house.clock
    assert isinstance(clock, VirtualClock)
    return clock


async def written_actions(live: Live, tid: str, hand: int) -> int:
    count: int = await live.house.pool.fetchval(
        "SELECT count(*) FROM live_actions WHERE table_id = $1 AND hand = $2", tid, hand)
    return count


def reloads(live: Live) -> float:
    return live.house.metrics.registry.get_sample_value("barajamos_table_reloads_total") or 0.0


async def test_a_refused_contribution_changes_nothing_and_the_window_still_ends(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        # her contribution completes the hand's entropy: it is written with the deal, so the
        # database refusing that write leaves neither
        fault = Fault(live, starts("UPDATE live_hands SET dealt"))
        with pytest.raises(LiveError) as refused:
            await contribute(actor, conn)
        assert refused.value.code == "unavailable" and fault.hits
        assert fault.hits[0][0][0].startswith("INSERT INTO live_contributions")
        assert not await live.house.pool.fetchval(
            "SELECT count(*) FROM live_contributions WHERE table_id = $1", tid)
        assert actor.hand is not None and not actor.hand.contributions
        assert actor.hand.phase is HandPhase.ENTROPY and actor.entropy_timer is not None
        assert reloads(live) == 0
        await contribute(actor, conn)  # sent again: taken
        assert actor.hand.phase is HandPhase.PLAYING and actor.hand.contributions
    finally:
        await ana.close()


async def test_a_refused_deal_at_the_window_end_goes_on_in_a_new_window(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a review let the entropy window of hand 1 run out (ana sends nothing) while the database
    # refused the deal: the fired window's timer was still held, so the table looked as if it
    # had a clock (`_stalled` said no) and stood in the entropy phase for good
    live, ana, _, actor, _ = await setup(make_app, aiohttp_client, vclock)
    try:
        fault = Fault(live, starts("UPDATE live_hands SET dealt"))
        assert actor.hand is not None
        committed = actor.hand.commitment
        await vclock.advance(actor.hand.entropy_deadline - vclock.now() + 0.01)
        await settle(actor)
        assert fault.hits and actor.hand.phase is HandPhase.ENTROPY
        assert actor.entropy_timer is None and actor._stalled()
        # it goes on later from what was written: a new window, which ends in a deal
        for _ in range(40):
            await vclock.advance(0.5)
            await settle(actor)
            if actor.hand.phase is HandPhase.PLAYING:
                break
        assert actor.hand.phase is HandPhase.PLAYING and actor.hand.number == 1
        assert actor.hand.commitment == committed  # the same seed, as committed
        assert actor.entropy_timer is None and not actor._stalled()
    finally:
        await ana.close()


async def test_a_refused_empty_seat_cancel_is_tried_again_not_turned_into_a_forfeit(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a review had the database refuse the 60 s empty-seat cancel once: the seat's watch was
    # gone, so the limit of automatic actions no longer spared the empty seat and the match
    # ended as ana's abandonment 20 s later
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await actor.call(lambda: actor.close_connection(conn))  # type: ignore[arg-type]
        cancel_at = actor.empty_deadlines[0]
        Fault(live, starts("UPDATE live_matches"))
        for _ in range(200):
            await vclock.advance(0.5 if vclock.now() > cancel_at - 5 else 5.0)
            if actor.status is not TableStatus.PLAYING:
                break
            with contextlib.suppress(LiveError):  # the table closes with the cancel
                await settle(actor)
        assert vclock.now() < cancel_at + 5
        row = await live.house.pool.fetchrow(
            "SELECT termination FROM live_matches WHERE table_id = $1", tid)
        assert row is not None and row["termination"] == "cancelled"
        assert not await live.house.pool.fetchval(
            "SELECT count(*) FROM abandonments WHERE table_id = $1", tid)
    finally:
        await ana.close()


async def test_a_bot_move_in_doubt_reloads_the_table(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await contribute(actor, conn)
        fault = Fault(live, lambda s: s[0][0].startswith("INSERT INTO live_actions")
                      and json.loads(s[0][1][3])["seat"] == 1, doubt=True)
        rng = random.Random(3)
        await play_until(actor, conn, rng, lambda: bool(fault.hits), 100)
        await settle(actor)
        assert reloads(live) == 1
        assert actor.hand is not None
        number = actor.hand.number
        assert len(actor.hand.actions) == await written_actions(live, tid, number)
        # and play goes on from what was written: the table is not wedged on a used index
        await play_until(actor, conn, rng, lambda: actor.last_hand >= number, 400)
    finally:
        await ana.close()


async def test_a_refused_record_after_the_last_move_reloads_and_records_the_hand(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await contribute(actor, conn)
        fault = Fault(live, starts("UPDATE live_hands SET record"))
        errors = await play_until(actor, conn, random.Random(5), lambda: bool(fault.hits), 200)
        await settle(actor)
        # the hand's last move was saved before its record was refused: whoever made it hears
        # that part of it was saved (ana's move), and the table re-read what was written,
        # which records the hand and begins the next one
        assert errors in ([], ["in_doubt"])
        assert reloads(live) == 1
        assert actor.last_hand == 1
        assert actor.hand is not None and actor.hand.number == 2
        record = await live.house.pool.fetchval(
            "SELECT record FROM live_hands WHERE table_id = $1 AND hand = 1", tid)
        assert record is not None
    finally:
        await ana.close()


async def test_an_abandonment_is_written_with_the_end_it_causes(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await contribute(actor, conn)
        Fault(live, starts("UPDATE live_hands SET record"))
        with pytest.raises(LiveError) as refused:
            await actor.call(lambda: actor.leave(conn.user_id))
        assert refused.value.code == "unavailable"
        await settle(actor)

        async def consequences() -> list[str]:
            return [row["consequence"] for row in await live.house.pool.fetch(
                "SELECT consequence FROM abandonments WHERE table_id = $1", tid)]

        assert await consequences() == []  # nothing of it, as for a crash at that moment
        written = await reread(live.house, tid)
        assert written.status is TableStatus.PLAYING
        assert actor.status is TableStatus.PLAYING and actor.state is not None
        assert actor.state.outcome is None  # re-read: the memory is what was written
        assert reloads(live) == 1
        await actor.call(lambda: actor.leave(conn.user_id))  # once more, with the database
        assert await consequences() == ["forfeit"]
        assert actor.state.outcome is not None
    finally:
        await ana.close()


async def test_a_failed_evidence_read_keeps_the_clock(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, tid, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        await contribute(actor, conn)
        house = live.house
        evidence = house.evidence

        async def away(*args: Any, **kwargs: Any) -> Any:
            raise OSError("database away (injected)")

        house.evidence = away  # type: ignore[method-assign]

        async def step(most: float) -> None:
            """On to the next timer (the bot's move, a deadline), `most` seconds at most."""
            due = vclock.next_deadline
            wait = most if due is None else min(most, max(0.0, due - vclock.now()))
            await vclock.advance(wait)
            await settle(actor)

        for _ in range(600):  # ana never acts: her clock runs out until she would abandon
            await step(1.0)
            streak = actor.streaks.get(0)
            if streak is not None and streak.count >= 9:
                break
        until = vclock.now() + 60.0
        while vclock.now() < until:
            await step(until - vclock.now())
        # the abandonment could not be decided: her streak and a clock are still there
        assert actor.status is TableStatus.PLAYING
        assert actor.streaks[0].count >= 9 and actor.deadlines
        house.evidence = evidence  # type: ignore[method-assign]
        until = vclock.now() + 120.0
        while actor.status is TableStatus.PLAYING and vclock.now() < until:
            await step(until - vclock.now())
        rows = await house.pool.fetch(
            "SELECT trigger, consequence FROM abandonments WHERE table_id = $1", tid)
        assert [(r["trigger"], r["consequence"]) for r in rows] == [
            ("automatic_actions", "forfeit")]
    finally:
        await ana.close()


async def test_an_entropy_window_replaced_by_a_reload_does_not_deal(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live, ana, _, actor, conn = await setup(make_app, aiohttp_client, vclock)
    try:
        writer = live.house.writer
        original = writer.write

        async def stalled(statements: Statements) -> None:
            if statements[0][0].startswith("INSERT INTO live_contributions"):
                writer.write = original  # type: ignore[method-assign]
                await vclock.advance(5)  # the write outlives the 3 s window...
                raise WriteInDoubt()  # ...then its connection breaks (nothing committed)
            await original(statements)

        writer.write = stalled  # type: ignore[method-assign]
        with pytest.raises(LiveError) as doubt:
            await contribute(actor, conn)
        assert doubt.value.code == "in_doubt"
        await settle(actor)
        assert reloads(live) == 1
        # the old window's deadline was queued before the reload: it deals nothing, and the
        # new window is there in full
        assert actor.hand is not None and actor.hand.phase is HandPhase.ENTROPY
        assert actor.hand.entropy_deadline is not None
        assert actor.hand.entropy_deadline - vclock.now() == pytest.approx(3.0)
        await contribute(actor, conn)
        assert actor.hand.phase is HandPhase.PLAYING and 0 in actor.hand.contributions
    finally:
        await ana.close()


async def started_four(live: Live, people: Sequence[Player]) -> tuple[TableActor, list[FakeConn]]:
    """A Paulista 2x2 private table of `people` (the first its owner), each on a FakeConn that
    said hello, started and settled: its first hand collects entropy."""
    tid = (await create_table(people[0], "paulista", 4, "private"))["id"]
    actor = live.house.tables[tid]
    for index, person in enumerate(people[1:], start=1):
        status, body = await person.post(f"/api/tables/{tid}/join",
                                         {"invite": actor.invite, "seat": index})
        assert status == 200, body
    conns = []
    for seat in actor.seats:
        assert seat.user_id is not None
        conns.append(FakeConn(seat.user_id))
        await actor.call(lambda c=conns[-1]: actor.open_connection(c))  # type: ignore
        await actor.call(lambda c=conns[-1]: actor.hello(c, 0, None))  # type: ignore
    status, body = await people[0].post(f"/api/tables/{tid}/start")
    assert status == 200, body
    await settle(actor)
    return actor, conns


async def test_contributions_queued_together_are_taken_together(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    people = await players(live.base, "ana", "bia", "cris", "duda")
    try:
        actor, conns = await started_four(live, people)
        tid = actor.id
        assert actor.hand is not None and actor.hand.phase is HandPhase.ENTROPY
        fault = Fault(live, lambda s: False)
        for conn in conns:
            conn.out.clear()
        answers = await asyncio.gather(
            contribute(actor, conns[0], msg_id="a"),
            contribute(actor, conns[1], hex_text="not hex", msg_id="b"),
            contribute(actor, conns[2], msg_id="c"),
            contribute(actor, conns[2], msg_id="c2"),  # the same seat twice in one batch
            return_exceptions=True)
        assert [getattr(a, "code", None) for a in answers] == [
            None, "bad_entropy", None, "entropy_duplicate"]
        # the two good ones: one write, two receipts each seat sees, and their acks
        assert [[sql.split(" (")[0] for sql, _ in s] for s in fault.seen] == [
            ["INSERT INTO live_contributions"] * 2]
        receipts = [m["seat"] for m in conns[3].out if m["type"] == "entropy"]
        assert receipts == [0, 2]
        assert [m for m in conns[0].out if m["type"] == "ack"] == [
            {"type": "ack", "id": "a", "seq": conns[3].out[0]["seq"]}]
        assert actor.hand.phase is HandPhase.ENTROPY
        # the last two complete it: written with the deal, which follows the receipts
        fault.seen.clear()
        await asyncio.gather(contribute(actor, conns[1], msg_id="b"),
                             contribute(actor, conns[3], msg_id="d"))
        assert [[sql.split(" SET")[0].split(" (")[0] for sql, _ in s] for s in fault.seen] == [
            ["INSERT INTO live_contributions"] * 2 + ["UPDATE live_hands"]]
        assert actor.hand.phase is HandPhase.PLAYING
        kinds = [m["type"] for m in conns[1].out[-4:]]
        assert kinds == ["entropy", "entropy", "update", "ack"]
        assert set(actor.hand.contributions) == {0, 1, 2, 3}
        rows = await live.house.pool.fetch(
            "SELECT seat FROM live_contributions WHERE table_id = $1 ORDER BY seat", tid)
        assert [r["seat"] for r in rows] == [0, 1, 2, 3]
    finally:
        for person in people:
            await person.close()


async def test_a_refused_signal_never_reaches_the_partner(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # written before it is delivered: one the database refused is no signal the partner saw
    live = await start_live(make_app, aiohttp_client, vclock)
    people = await players(live.base, "ana", "bia", "cris", "duda")
    try:
        actor, conns = await started_four(live, people)
        tid = actor.id
        assert actor.status is TableStatus.PLAYING and actor.hand is not None
        fault = Fault(live, starts("INSERT INTO live_signals"))
        conns[2].out.clear()
        with pytest.raises(LiveError) as refused:
            await actor.call(lambda: actor.signal(conns[0], "zap"))  # type: ignore[arg-type]
        assert refused.value.code == "unavailable" and fault.hits
        assert [m for m in conns[2].out if m["type"] == "signal"] == []
        assert not await live.house.pool.fetchval(
            "SELECT count(*) FROM live_signals WHERE table_id = $1", tid)
        await actor.call(lambda: actor.signal(conns[0], "zap"))  # type: ignore[arg-type]
        assert [m["code"] for m in conns[2].out if m["type"] == "signal"] == ["zap"]
    finally:
        for person in people:
            await person.close()


async def test_a_refused_join_leaves_the_seat_free(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # the seat is written before it is shown: one the database refused is nobody's
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        tid = (await create_table(ana, "paulista", 2, "private"))["id"]
        actor = live.house.tables[tid]
        fault = Fault(live, starts("UPDATE live_seats"))
        status, body = await bia.post(f"/api/tables/{tid}/join",
                                      {"invite": actor.invite, "seat": 1})
        assert (status, body["error"]) == (503, "unavailable") and fault.hits
        bia_id = await live.house.pool.fetchval("SELECT id FROM users WHERE name = 'bia'")
        assert actor.seat_of(bia_id) is None and actor.seats[1].free and reloads(live) == 0
        status, body = await ana.get(f"/api/tables/{tid}")
        assert status == 200, body
        assert body["table"]["players"][1]["name"] is None
        status, body = await bia.post(f"/api/tables/{tid}/join",
                                      {"invite": actor.invite, "seat": 1})
        assert status == 200, body  # once more, with the database
    finally:
        await ana.close()
        await bia.close()
