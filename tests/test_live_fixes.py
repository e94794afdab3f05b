"""Fixes in the live house: a server bot follows its human partner's vote at once (whatever the
seats), a move that crossed the end of its hand is refused as stale (and the browser names the
hand of its moves, and resumes by its epoch), and refusals of the rate limiter (and of
unparseable nesting) answer as the protocol says."""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Browser, WebSocketRoute, expect

from server.bots import NothingToDo, choose_action
from server.clock import VirtualClock
from server.live import table as live_table
from tests.conftest import AppFactory
from tests.test_browser_tables import (  # noqa: F401  (the fixtures are used by name)
    LiveServer,
    Policy,
    browser_fixture,
    live_server_fixture,
    new_page,
    play_step,
    signup,
)
from tests.test_browser_tables import create_table as open_browser_table
from tests.test_live_helpers import (
    Player,
    SeatClient,
    connect,
    create_table,
    players,
    start_live,
)
from truco import (
    CANONICAL_DECK,
    Deal,
    MatchConfig,
    Variant,
    action_from_json,
    apply,
    new_match,
    start_hand,
    view,
)

BOT_THINK = 0.8  # the production think time, on the virtual clock


async def drain(client: SeatClient) -> list[dict[str, Any]]:
    """Every message already sent to this client (entropy is sent as it is asked for)."""
    got: list[dict[str, Any]] = []
    while True:
        try:
            data = await client.recv(timeout=0.02)
        except TimeoutError:
            return got
        got.append(data)
        await client.react(data)


async def answers(client: SeatClient) -> list[dict[str, Any]]:
    """What `client` receives until each move it sent is answered (however long a loaded machine
    takes), and whatever follows at once."""
    got: list[dict[str, Any]] = []
    while any(m["type"] == "action" for m in client.unanswered.values()):
        got.append(await client.recv())
        await client.react(got[-1])
    return got + await drain(client)


def events(client: SeatClient) -> list[tuple[float, dict[str, Any]]]:
    return [(m["_at"], e) for m in client.received if m["type"] == "update"
            for e in m["events"]]


async def act(client: SeatClient, action: dict[str, Any]) -> None:
    client.acted_at = client.last_seq
    client.next_id += 1
    await client.send({"type": "action", "id": client.next_id, "hand": client.view_hand,
                       "last_seq": client.last_seq,
                       "action": action})


async def play_policy(client: SeatClient) -> None:
    """The bots' policy's move on `client`'s view, if it has one to make now."""
    assert client.view is not None
    with contextlib.suppress(NothingToDo):
        await act(client, choose_action(client.view, client.rng))


async def seated_pair(ana: Player, bia: Player, mode: str = "vote",
                      human_seat: int = 0) -> tuple[SeatClient, SeatClient]:
    """A 2x2 training table: ana at `human_seat` with a bot partner, bia across at seat 1, both
    connected and moving by hand; started."""
    table = await create_table(ana, "paulista", 4, "training", mode=mode)
    tid = table["id"]
    if human_seat != 0:
        status, body = await ana.post(f"/api/tables/{tid}/seat", {"seat": human_seat})
        assert status == 200, body
    status, body = await bia.post(f"/api/tables/{tid}/join", {"seat": 1})
    assert status == 200, body
    a = await connect(ana, tid, human_seat)
    b = await connect(bia, tid, 1)
    a.autoplay = b.autoplay = False
    await ana.post(f"/api/tables/{tid}/start")
    return a, b


@pytest.mark.parametrize("human_seat", [0, 2], ids=["bot-partner-higher", "bot-partner-lower"])
async def test_bot_partner_adopts_a_disagreeing_human_vote(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        human_seat: int) -> None:
    live = await start_live(make_app, aiohttp_client, vclock, bot_think=BOT_THINK)
    ana, bia = await players(live.base, "ana", "bia")
    partner = (human_seat + 2) % 4
    try:
        # bia sits on the other team and raises at her first turn: ana's team must answer
        a, b = await seated_pair(ana, bia, human_seat=human_seat)
        # when ana voted, how many events she had seen then, the bot's vote and hers
        voted: tuple[float, int, str, str] | None = None
        for _ in range(300):
            # straight to the next timer (a bot's think time, a clock), at most 0.5 s at once
            due = vclock.next_deadline
            await vclock.advance(0.5 if due is None else min(0.5, max(0.0, due - vclock.now())))
            for client in (a, b):
                for message in await drain(client):
                    message["_at"] = vclock.now()
            if voted is not None and vclock.now() >= voted[0] + 2 * BOT_THINK:
                break
            for client in (a, b):
                view = client.view
                if not view or not view["legal"] or client.acted_at == client.last_seq:
                    continue
                hand = view["hand"]
                request, votes = hand["request"], hand["votes"]
                if client is a and request:
                    # ana waits for her bot partner's vote, then votes something else
                    if voted is not None or str(partner) not in votes:
                        continue
                    mine = next(x for x in view["legal"] if x["do"] != votes[str(partner)])
                    await act(a, mine)
                    voted = (vclock.now(), len(events(a)), votes[str(partner)], mine["do"])
                    continue
                raise_ = next((x for x in view["legal"] if x["do"] == "raise"), None)
                if client is b and raise_ is not None and not request:
                    await act(b, raise_)
                    continue
                await play_policy(client)
        assert voted is not None, "ana's team was never asked"
        at, seen, bot_vote, human_vote = voted
        assert bot_vote != human_vote
        after = events(a)[seen:]
        # the bot re-voted ana's vote after its think time, and the team answered at once:
        # not at the end of the 10 s to agree
        adopted = next(((t, e) for t, e in after
                        if e["type"] == "vote_cast" and e["seat"] == partner), None)
        assert adopted is not None, "the bot never voted again"
        assert adopted[1]["vote"] == human_vote and not adopted[1]["automatic"]
        assert adopted[0] <= at + BOT_THINK
        answered = {"accept": "raise_accepted", "decline": "raise_declined",
                    "raise": "raise_requested"}[human_vote]
        assert any(e["type"] == answered and e["team"] == human_seat % 2 for _, e in after)
        assert not any(e["type"] == "vote_expired" for _, e in events(a))
        assert not a.errors and not b.errors
    finally:
        await ana.close()
        await bia.close()


async def test_a_partner_changing_their_vote_does_not_hold_off_the_bots_vote(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    """A bot's think is not restarted by each vote of its human partner: a partner who keeps
    changing their vote (every 0.3 s, under the 0.8 s think) used to hold the bot's vote off
    until the team's 10 s clock declined for both."""
    live = await start_live(make_app, aiohttp_client, vclock, bot_think=BOT_THINK)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        a, b = await seated_pair(ana, bia)
        first_vote: tuple[float, int] | None = None  # when ana first voted, events seen then
        last_vote = -1.0
        answered: tuple[float, dict[str, Any]] | None = None
        for _ in range(600):
            await vclock.advance(0.1)
            for client in (a, b):
                for message in await drain(client):
                    message["_at"] = vclock.now()
            if first_vote is not None:
                answered = next(((t, e) for t, e in events(a)[first_vote[1]:]
                                 if e["type"] in ("raise_accepted", "raise_declined")
                                 and e["team"] == 0), None)
                if answered is not None or vclock.now() > first_vote[0] + 12:
                    break
            for client in (a, b):
                view = client.view
                if not view or not view["legal"]:
                    continue
                request = view["hand"]["request"]
                if client is a and request:
                    if vclock.now() - last_vote < 0.3:
                        continue
                    mine = view["hand"]["votes"].get("0")
                    verb = "decline" if mine == "accept" else "accept"
                    choice = next((x for x in view["legal"] if x["do"] == verb), None)
                    if choice is None:
                        continue
                    await act(a, choice)
                    last_vote = vclock.now()
                    if first_vote is None:
                        first_vote = (last_vote, len(events(a)))
                    continue
                if client.acted_at == client.last_seq:
                    continue
                raise_ = next((x for x in view["legal"] if x["do"] == "raise"), None)
                if client is b and raise_ is not None and not request:
                    await act(b, raise_)
                    continue
                if client is a and first_vote is not None:
                    continue  # after the vote: nothing more of ana's is needed
                await play_policy(client)
        assert first_vote is not None, "ana's team was never asked"
        assert answered is not None, "the team never answered"
        votes = [e for _, e in events(a)[first_vote[1]:]
                 if e["type"] == "vote_cast" and e["seat"] == 2]
        assert votes and not votes[0]["automatic"], votes
        # the bot voted at the end of the think it began at the raise, ana still changing hers
        assert answered[0] <= first_vote[0] + BOT_THINK + 0.15, (answered, first_vote)
        assert not any(e["type"] == "vote_expired" for _, e in events(a))
        assert not a.errors and not b.errors
    finally:
        await ana.close()
        await bia.close()


async def test_in_first_answer_mode_a_bot_leaves_the_answer_to_its_human_partner(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    """"Primeira resposta vale": the bot partner answered every request 0.8 s after it came,
    before the person could (a review: 6 of 6, a raise made for them among them). While the
    person is here it leaves the answer to them; without them, it answers."""
    live = await start_live(make_app, aiohttp_client, vclock, bot_think=BOT_THINK)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        a, b = await seated_pair(ana, bia, mode="first")
        asked: float | None = None
        answered: list[tuple[float, dict[str, Any]]] = []
        for _ in range(400):
            due = vclock.next_deadline
            await vclock.advance(0.5 if due is None else min(0.5, max(0.0, due - vclock.now())))
            for client in (a, b):
                for message in await drain(client):
                    message["_at"] = vclock.now()
            # from the request on (before it, the bot may have raised on its own turn)
            answered = [(t, e) for t, e in events(a) if asked is not None and t >= asked
                        and e["type"] in ("raise_accepted", "raise_declined", "raise_requested")
                        and e["team"] == 0]
            if answered or (asked is not None and vclock.now() > asked + 5.0):
                break
            for client in (a, b):
                view = client.view
                if not view or not view["legal"] or client.acted_at == client.last_seq:
                    continue
                request = view["hand"]["request"]
                if client is a and request:
                    asked = asked or vclock.now()
                    continue  # ana thinks it over (her clock is 20 s)
                raise_ = next((x for x in view["legal"] if x["do"] == "raise"), None)
                if client is b and raise_ is not None and not request and asked is None:
                    await act(b, raise_)
                    continue
                await play_policy(client)
        assert asked is not None, "ana's team was never asked"
        assert not answered, "the bot answered for its human partner"
        # ana answers herself
        choice = next(x for x in a.view["legal"] if x["do"] == "accept")
        await act(a, choice)
        for message in await answers(a):
            message["_at"] = vclock.now()
        assert any(e["type"] == "raise_accepted" and e["team"] == 0 for _, e in events(a))
        assert not any(e.get("seat") == 2 for t, e in events(a) if t >= asked
                       and e["type"] in ("raise_accepted", "raise_requested", "vote_cast"))
        assert not a.errors and not b.errors
    finally:
        await ana.close()
        await bia.close()


@pytest.mark.parametrize("human_seat", [0, 2], ids=["bot-partner-higher", "bot-partner-lower"])
async def test_in_first_answer_mode_the_partner_who_lets_the_clock_run_out_is_absent(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        human_seat: int) -> None:
    """A review: the bot that leaves the answer to its person kept a clock of its own, as long
    as hers and at a lower seat, so it ran out first and declined for the team: she, who let
    her clock run out, was never marked absent nor counted an automatic action. Her clock alone
    covers the team's answer: at its end the automatic decline is hers, and she is absent."""
    live = await start_live(make_app, aiohttp_client, vclock, bot_think=BOT_THINK)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        a, b = await seated_pair(ana, bia, mode="first", human_seat=human_seat)
        [actor] = live.house.tables.values()
        asked: float | None = None
        for _ in range(400):
            due = vclock.next_deadline
            await vclock.advance(0.5 if due is None else min(0.5, max(0.0, due - vclock.now())))
            for client in (a, b):
                await drain(client)
            view = a.view
            if asked is None and view and view["legal"] and view["hand"]["request"]:
                asked = vclock.now()
                break
            for client in (a, b):
                view = client.view
                if not view or not view["legal"] or client.acted_at == client.last_seq:
                    continue
                raise_ = next((x for x in view["legal"] if x["do"] == "raise"), None)
                if client is b and raise_ is not None and not view["hand"]["request"]:
                    await act(b, raise_)
                    continue
                await play_policy(client)
        assert asked is not None, "ana's team was never asked"
        assert a.seat is not None
        partner = (a.seat + 2) % 4
        assert ("answer", partner) not in actor.deadlines
        assert ("answer", a.seat) in actor.deadlines
        await vclock.advance(21.0)  # ana says nothing
        await actor.call(_nothing)
        await drain(a)
        votes = [e for m in a.received if m["type"] == "update" for e in m["events"]
                 if e["type"] == "vote_cast" and e["automatic"]]
        assert [e["seat"] for e in votes] == [a.seat]
        assert a.seat in actor.absent and actor.automatic_streak(a.seat) == 1
    finally:
        await ana.close()
        await bia.close()


async def _nothing() -> None:
    return None


async def test_in_first_answer_mode_a_bot_answers_when_its_human_partner_is_away(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    """The bot leaves a request to its human partner only while they are here: with their
    page closed, it answers after its think time (not at the end of the partner's clock)."""
    live = await start_live(make_app, aiohttp_client, vclock, bot_think=BOT_THINK)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        a, b = await seated_pair(ana, bia, mode="first")
        raised: float | None = None
        gone: float | None = None
        for _ in range(400):
            due = vclock.next_deadline
            await vclock.advance(0.5 if due is None else min(0.5, max(0.0, due - vclock.now())))
            for client in (b,) if gone is not None else (a, b):
                for message in await drain(client):
                    message["_at"] = vclock.now()
            if gone is not None and (any(e["type"] in ("raise_accepted", "raise_declined")
                                         and e["team"] == 0 for _, e in events(b))
                                     or vclock.now() > gone + 5.0):
                break
            if gone is None and raised is not None and a.view and a.view["hand"]["request"]:
                await a.ws.close()  # ana's page goes: the bot must answer for the team
                gone = vclock.now()
                continue
            for client in (a, b) if gone is None else (b,):
                view = client.view
                if not view or not view["legal"] or client.acted_at == client.last_seq:
                    continue
                request = view["hand"]["request"]
                raise_ = next((x for x in view["legal"] if x["do"] == "raise"), None)
                if client is b and raise_ is not None and not request and raised is None:
                    await act(b, raise_)
                    raised = vclock.now()
                    continue
                if client is a and request:
                    continue
                await play_policy(client)
        assert gone is not None, "ana's team was never asked"
        answered = [(t, e) for t, e in events(b) if e["type"] in (
            "raise_accepted", "raise_declined") and e["team"] == 0]
        assert answered, "nobody answered for ana's team"
        assert answered[0][0] <= gone + BOT_THINK + 0.5, (answered[0], gone)
    finally:
        await ana.close()
        await bia.close()


def test_policy_gives_in_to_a_person_partner_whatever_the_seats() -> None:
    state = new_match(MatchConfig(Variant.PAULISTA, 4), first_dealer=0)
    deck = list(CANONICAL_DECK)
    state, _ = start_hand(state, Deal(dealer=0, hands=tuple(
        tuple(deck[3 * s:3 * s + 3]) for s in range(4)), vira=deck[12]))
    state, _ = apply(state, action_from_json({"seat": 1, "do": "raise"}))
    state, _ = apply(state, action_from_json({"seat": 0, "do": "accept"}))
    rng = random.Random(1)
    # having voted, a seat waits for its partner instead of changing its own vote
    for partner_is_person in (False, True):
        with pytest.raises(NothingToDo):
            choose_action(view(state, 0), rng, partner_is_person=partner_is_person)
    state, _ = apply(state, action_from_json({"seat": 2, "do": "decline"}))
    # two policy players: the higher seat gives in, the lower one waits
    with pytest.raises(NothingToDo):
        choose_action(view(state, 0), rng)
    assert choose_action(view(state, 2), rng) == {"seat": 2, "do": "accept"}
    # next to a person, the bot adopts the person's vote, lower seat or not
    assert choose_action(view(state, 0), rng, partner_is_person=True) == \
        {"seat": 0, "do": "decline"}
    assert choose_action(view(state, 2), rng, partner_is_person=True) == \
        {"seat": 2, "do": "accept"}


async def test_a_move_for_another_hand_is_refused_as_stale(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        seat.autoplay = False
        seat.send_entropy = False
        await drain(seat)
        await ana.post(f"/api/tables/{tid}/start")
        commitment = await seat.until("commitment", react=False)
        assert commitment["hand"] == 1

        async def refused(message: dict[str, Any]) -> dict[str, Any]:
            """Send `message`: it is refused and nothing else happens at the table."""
            before = seat.last_seq
            await seat.send(message)
            (answer,) = await answers(seat)
            assert answer["type"] == "error" and answer["id"] == message["id"], answer
            assert seat.last_seq == before
            return answer

        # hand 1 is still collecting entropy: no move belongs to it yet
        answer = await refused({"type": "action", "id": "early", "hand": 1,
                                "action": {"do": "raise"}})
        assert answer["error"] == "stale" and "hand 1 is not dealt yet" in answer["message"]
        # counted with the engine's refusals (only those were: a review's bots saw 8 stale, 0)
        refusals = live.house.metrics.refused_actions
        assert refusals.labels("stale")._value.get() == 1
        answer = await refused({"type": "action", "id": "early", "action": {"do": "raise"}})
        assert answer["error"] == "no_hand"
        assert refusals.labels("no_hand")._value.get() == 1
        for bad in (-1, "1", True, 1.0):
            answer = await refused({"type": "action", "id": "bad", "hand": bad,
                                    "action": {"do": "raise"}})
            assert answer["error"] == "bad_message" and "hand" in answer["message"]
        # play hand 1 to its end (ana's entropy goes in now: each deal is at once)
        seat.send_entropy = True
        await seat.react(commitment)
        hand_one: dict[str, Any] | None = None
        for _ in range(200):
            await vclock.advance(0.1)
            await drain(seat)
            view = seat.view
            if view and view["legal"] and seat.acted_at != seat.last_seq:
                if seat.view_hand == 2:
                    break
                if hand_one is None:
                    hand_one = view
                try:
                    choice = choose_action(view, seat.rng)
                except NothingToDo:
                    continue
                if choice["do"] == "raise":
                    # ana never raises: the hand is then worth 3 points at most, so it cannot
                    # win the match and a hand 2 always follows
                    choice = next(a for a in view["legal"] if a["do"] != "raise")
                await act(seat, choice)
        assert seat.view is not None and seat.view_hand == 2 and hand_one is not None
        # the hand page's status says what its record says: hand 1's is public, hand 2 in play
        for number, status in ((1, 200), (2, 404), (3, 404)):
            page = await live.client.get(f"/h/{tid}/{number}")
            assert page.status == status, number
            assert 'id="rec-score"' in await page.text()  # the page, which says the rest
        legal = seat.view["legal"]
        # a move chosen on hand 1 arrives while hand 2 is in play, where it is legal too:
        # refused, not applied to hand 2
        answer = await refused({"type": "action", "id": "late", "hand": 1, "action": legal[0]})
        assert answer["error"] == "stale"
        assert answer["message"] == "That move was for hand 1; hand 2 is in play now."
        assert seat.view["legal"] == legal
        # named with the hand in play, the same move is applied
        await seat.send({"type": "action", "id": "now", "hand": 2, "action": legal[0]})
        got = await answers(seat)
        assert [m["type"] for m in got][:2] == ["update", "ack"]
        assert got[1]["id"] == "now" and got[1]["seq"] == got[0]["seq"]
        assert got[0]["hand"] == 2
    finally:
        await ana.close()


async def test_a_move_chosen_before_the_clock_acted_for_the_seat_is_stale(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a card sent into a stalled link, the clock playing another for the seat meanwhile: when
    # the link came back the old message was applied at the seat's next decision of the same
    # hand, as the player's own move (an outside review). Its `last_seq` now says it is stale
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        seat.autoplay = False
        await drain(seat)
        await ana.post(f"/api/tables/{tid}/start")
        actor = live.house.tables[tid]
        for _ in range(200):  # a card of ana's to play in hand 1 (any bet accepted first)
            await drain(seat)
            view = seat.view
            if view and view["legal"] and seat.view_hand == 1:
                if any(a["do"] == "play" for a in view["legal"]):
                    break
                if seat.acted_at != seat.last_seq:
                    await act(seat, next((a for a in view["legal"] if a["do"] == "accept"),
                                         view["legal"][0]))
            await vclock.advance(0.1)
        assert seat.view is not None and any(a["do"] == "play" for a in seat.view["legal"])
        chosen_on, hand = seat.last_seq, seat.view_hand
        for _ in range(400):  # her link stalls: the clock acts for her, the bot plays on
            await vclock.advance(0.1)
            await drain(seat)
            if actor.automatic_streak(0) and seat.view and seat.view["legal"]:
                break
        assert seat.view_hand == hand  # (the clock played a card: the hand goes on)
        assert actor.automatic_streak(0) == 1 and actor.acted_seq[0] > chosen_on
        legal = seat.view["legal"]
        before = seat.last_seq
        # the move she chose before arrives now, where a move of hers is legal again
        await seat.send({"type": "action", "id": "old", "hand": hand, "last_seq": chosen_on,
                         "action": legal[0]})
        (answer,) = await answers(seat)
        assert (answer["type"], answer["id"], answer["error"]) == ("error", "old", "stale")
        assert answer["message"].startswith(f"That move was chosen on event {chosen_on},")
        assert seat.last_seq == before and actor.automatic_streak(0) == 1  # nothing changed
        # one chosen on events this table never sent (another server run's) is stale too,
        # even the very next one
        for ahead in (actor.seq + 5, actor.seq + 1):
            await seat.send({"type": "action", "id": "ahead", "hand": hand,
                             "last_seq": ahead, "action": legal[0]})
            (answer,) = await answers(seat)
            assert (answer["id"], answer["error"]) == ("ahead", "stale")
        assert seat.last_seq == before and actor.automatic_streak(0) == 1  # nothing changed
        for bad in (-1, "3", True, 2.5):
            await seat.send({"type": "action", "id": "bad", "hand": hand, "last_seq": bad,
                             "action": legal[0]})
            (answer,) = await answers(seat)
            assert answer["error"] == "bad_message" and "last_seq" in answer["message"]
        # chosen on what she sees now, the same move is hers
        await seat.send({"type": "action", "id": "now", "hand": hand,
                         "last_seq": seat.last_seq, "action": legal[0]})
        got = await answers(seat)
        assert got[0]["type"] == "update" and got[0]["events"][0]["automatic"] is False
        assert next(m["id"] for m in got if m["type"] == "ack") == "now"  # (then entropy)
        assert actor.automatic_streak(0) == 0
    finally:
        await ana.close()


async def test_a_hand_at_its_action_cap_leaves_the_rest_to_the_clock(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a record holds at most MAX_ACTIONS: the players' moves stop CLOCK_RESERVE short of it
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        seat.autoplay = False
        await drain(seat)
        await ana.post(f"/api/tables/{tid}/start")
        actor = live.house.tables[tid]
        for _ in range(200):  # a move of ana's to make in hand 1
            await drain(seat)
            if seat.view and seat.view["legal"] and seat.view_hand == 1:
                break
            await vclock.advance(0.1)
        assert seat.view is not None and seat.view["legal"] and actor.hand is not None
        move, done = seat.view["legal"][0], len(actor.hand.actions)
        before = (actor.seq, actor.state)
        # the hand has had as many actions as a player may make in it
        monkeypatch.setattr(live_table, "MAX_ACTIONS", done + live_table.CLOCK_RESERVE)
        await act(seat, move)
        (answer,) = await answers(seat)
        assert (answer["type"], answer["error"]) == ("error", "action_limit")
        assert (actor.seq, actor.state, len(actor.hand.actions)) == (*before, done)
        # one action short of that, the same move is hers
        monkeypatch.setattr(live_table, "MAX_ACTIONS", done + live_table.CLOCK_RESERVE + 1)
        await act(seat, move)
        got = await answers(seat)
        assert [m["type"] for m in got][:2] == ["update", "ack"]
        assert got[0]["events"][0]["seat"] == 0 and got[0]["events"][0]["automatic"] is False
    finally:
        await ana.close()


async def test_rate_limited_refusals_name_the_refused_message(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock, rate_per_second=0.001,
                            rate_burst=2.0, flood_close_after=50)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        ws = await ana.ws(table["id"])
        sent = [
            json.dumps({"type": "ping", "id": "p1"}),
            json.dumps({"type": "ping", "id": 2}),
            # refused from here on: each error names the message it refuses, when it can
            json.dumps({"type": "action", "id": "a7", "hand": 1, "action": {"do": "raise"}}),
            json.dumps({"type": "ping", "id": 99}),
            json.dumps({"type": "ping"}),
            json.dumps({"type": "ping", "id": "x" * 65}),  # not a valid id
            json.dumps({"type": "ping", "id": [1]}),
            "not json",
            "[1, 2]",
            "[" * 3000 + "]" * 3000,
            json.dumps({"type": "ping", "id": "big", "pad": "y" * 5000}),  # over the size limit
        ]
        for text in sent:
            await ws.send_str(text)
        answers = [json.loads((await ws.receive(timeout=5)).data) for _ in sent]
        assert [(a["type"], a["id"]) for a in answers[:2]] == [("pong", "p1"), ("pong", 2)]
        assert all(a["type"] == "error" and a["error"] == "rate_limited" for a in answers[2:])
        assert [a["id"] for a in answers[2:]] == ["a7", 99] + [None] * 7
    finally:
        await ana.close()


async def test_deeply_nested_json_is_bad_json(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        ws = await ana.ws(table["id"])
        await ws.send_str("[" * 2000 + "]" * 2000)
        answer = json.loads((await ws.receive(timeout=5)).data)
        assert (answer["type"], answer["error"], answer["id"]) == ("error", "bad_json", None)
        # the socket is still served
        await ws.send_str(json.dumps({"type": "ping", "id": 1}))
        assert json.loads((await ws.receive(timeout=5)).data)["type"] == "pong"
    finally:
        await ana.close()


@pytest.mark.timeout(180)
async def test_the_browser_names_the_hand_and_resumes_by_epoch(
        live_server: LiveServer, browser: Browser) -> None:
    page = await new_page(browser, live_server)
    frames: list[tuple[str, dict[str, Any]]] = []  # ("page" | "server", message), in order
    routes: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            if isinstance(message, str):
                frames.append(("page", json.loads(message)))
            server.send(message)

        def from_server(message: str | bytes) -> None:
            if isinstance(message, str):
                frames.append(("server", json.loads(message)))
            ws.send(message)

        ws.on_message(from_page)
        server.on_message(from_server)
        routes.append(ws)

    await page.route_web_socket(re.compile(r"/ws/tables/"), route)
    await signup(page, live_server, "fix_ana")
    await open_browser_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()

    async def one_move() -> None:
        for _ in range(200):
            if await play_step(page, Policy()):
                return
            await page.wait_for_timeout(100)
        raise AssertionError("no move came up")

    def named_actions() -> int:
        """Check that every action names the hand of the latest update before it."""
        hand, actions = None, 0
        for source, message in frames:
            if source == "server" and message["type"] == "update":
                hand = message["hand"]
            elif source == "page" and message["type"] == "action":
                assert hand is not None and message["hand"] == hand, message
                actions += 1
        return actions

    await one_move()
    assert named_actions() == 1
    (welcome,) = [m for s, m in frames if s == "server" and m["type"] == "welcome"]
    mark = len(frames)
    await routes[0].close(code=4000, reason="test: connection dropped")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    hello = next(m for s, m in frames[mark:] if s == "page" and m["type"] == "hello")
    assert hello["epoch"] == welcome["epoch"] and hello["last_seq"] > 0
    await one_move()
    # same server run: what was missed is replayed, never replaced by a snapshot
    assert [m for s, m in frames[mark:] if s == "server" and m["type"] == "snapshot"] == []
    assert named_actions() == 2
