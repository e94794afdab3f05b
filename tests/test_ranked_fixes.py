"""What a ranked player's review of the live house found, each fixed where the ranked service and
its pages own it: an arena table that no longer counts costs no strike, a paused (or broke)
partner cannot be invited, a seated player's status names their queue, no internal user ids in
messages, no second table while a match is in play elsewhere, and the pages (the arena's join
form during a pause, "em chamas" after the end, the section menu, the statement's minus)."""

from __future__ import annotations

import re

import pytest

from server.live.model import TableKind
from server.pages import JINJA
from server.ranked import ledger
from server.ranked.arena import Arena, ArenaError
from server.ranked.matchmaking import Matchmaker, MatchmakingError, QueueKey
from server.ranked.service import RANKED, RankedError, queue_key
from tests.test_ranked_http import (  # noqa: F401  (the fixtures)
    House,
    P,
    house,
    settle_abandonment,
    staffed,
)
from truco.outcome import Termination
from truco.variants import Variant

DUO = {"variant": "paulista", "seats": 4}


async def _pause(where: House, player_id: int, *others: int) -> None:
    """Two abandonments in a week: a 15-minute pause."""
    await settle_abandonment(where, "00000000000000c1", [player_id, others[0]], 0)
    await settle_abandonment(where, "00000000000000c2", [player_id, others[1]], 0)


# --- 1. an arena table still playing at the end counts for nothing, a strike included ---------


async def test_walking_away_from_an_arena_table_that_no_longer_counts_is_no_strike(
        staffed: House) -> None:  # noqa: F811
    op = await staffed.player("judge", operator=True)
    ana, bia, caio, dora = await staffed.players("ana", "bia", "caio", "dora")
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                     "minutes": 10}, status=201))["arena"]["id"]
    for player in (ana, bia, caio, dora):
        await player.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await staffed.clock.advance(1)
    assert staffed.launcher is not None
    (_, _, _, first, _), (_, _, _, second, _) = staffed.launcher.launched
    service = staffed.app[RANKED]

    async def abandon(table: str, seating: tuple[int, ...]) -> object:
        return (await service.match_ended(
            table_id=table, match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
            users_by_seat=seating, termination=Termination.ABANDONMENT, winner_team=1,
            forfeit_seat=0, restart_overlap=False, evidence=(), started_at=staffed.now(),
            ended_at=staffed.now())).record

    # while the arena runs, walking away loses and is a strike, as anywhere
    counted = await abandon(f"{1:016x}", first)
    assert counted is not None and counted.status.value == "pending"
    # the second table is still playing when the arena ends: it does not count, so the
    # abandonment that ends it afterwards costs nothing either (no record, no strike, no pause)
    await staffed.clock.advance(10 * 60)
    [event] = (await ana.json("/api/ranked/arenas"))["arenas"]
    assert event["state"] == "closed"
    void = await abandon(f"{2:016x}", second)
    assert void is not None and void.status.value == "exempt" and void.strikes == 0
    assert void.paused_until is None
    [item] = [e for e in void.evidence if e.get("kind") == "exempt"]
    assert item["reasons"] == ["arena_over"]
    # a retried settlement of that match finds the same record
    again = await abandon(f"{2:016x}", second)
    assert again is not None and again.id == void.id
    refused = await op.post(f"/api/ranked/operator/abandonments/{void.id}/decision",
                            {"decision": "uphold", "note": "walked away"})
    body = await refused.json()
    assert refused.status == 409 and body["error"] == "exempt"
    assert "arena ended" in body["message"]


def test_a_result_counts_before_the_end_only() -> None:
    arena = Arena(0.0, 600.0)
    assert arena.counts(599.9) and not arena.counts(600.0)
    assert not arena.close(600.0).counts(1.0)


# --- 2. a paused partner is refused when invited ---------------------------------------------


async def test_a_paused_or_broke_partner_cannot_be_invited(house: House) -> None:  # noqa: F811
    davi, otto, x, y = await house.players("davi", "otto", "xavi", "yara")
    await _pause(house, otto.id, x.id, y.id)
    resp = await davi.post("/api/ranked/queue", DUO | {"partner": "otto"})
    assert resp.status == 409 and (await resp.json())["error"] == "partner_paused"
    assert (await davi.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    assert (await otto.json("/api/ranked/queue"))["queue"]["invitations"] == []
    # the page says it next to the partner field, the form kept
    page = await davi.post("/ranked/queue", form={"variant": "paulista", "seats": "4",
                                                  "partner": "otto"})
    text = await page.text()
    assert page.status == 409 and 'id="queue-partner-error"' in text
    assert "A sua dupla está suspensa" in text and 'aria-invalid="true"' in text
    # short of chips (stakes held elsewhere): refused as well, the partner could not accept
    await ledger.hold_stakes(house.pool, "ranked:00000000000000c3:1", [x.id, y.id], 1010)
    resp = await davi.post("/api/ranked/queue", DUO | {"partner": "xavi"})
    assert resp.status == 409 and (await resp.json())["error"] == "partner_insufficient_chips"


async def test_an_invited_player_paused_since_is_told_the_pause_is_why(
        house: House) -> None:  # noqa: F811
    davi, otto, x, y = await house.players("davi", "otto", "xavi", "yara")
    await davi.json("/api/ranked/queue", DUO | {"partner": "otto"})
    await _pause(house, otto.id, x.id, y.id)  # after the invitation
    page = await (await otto.get("/ranked")).text()
    assert "davi convidou você para uma dupla" in page
    assert "Aceitar o convite" not in page
    assert "Para aceitar, saia antes da fila" not in page  # otto is in no queue
    assert "poderá aceitar quando a suspensão acabar" in page


# --- 4. seat counts: typed in a JSON body -----------------------------------------------------


def test_a_json_seat_count_is_a_number_not_text() -> None:
    assert queue_key("paulista", "2") == QueueKey(Variant.PAULISTA, 2)  # a form's field
    assert queue_key("paulista", 4, strings=False) == QueueKey(Variant.PAULISTA, 4)
    for seats in ("2", "4", 2.0):
        with pytest.raises(RankedError) as refused:
            queue_key("paulista", seats, strings=False)
        assert refused.value.code == "bad_queue"


# --- 6. no internal ids in messages -----------------------------------------------------------


async def test_leaving_an_arena_one_is_not_in_names_no_user_id(
        house: House) -> None:  # noqa: F811
    op = await house.player("judge", operator=True)
    ana = await house.player("ana")
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                              status=201))["arena"]["id"]
    resp = await ana.post(f"/api/ranked/arenas/{arena_id}/leave", {})
    body = await resp.json()
    assert resp.status == 409 and body["error"] == "not_joined"
    assert not re.search(r"\d", body["message"]), body["message"]
    await ana.json(f"/api/ranked/arenas/{arena_id}/join", {})
    body = await (await ana.post(f"/api/ranked/arenas/{arena_id}/join", {})).json()
    assert body["error"] == "already_joined" and not re.search(r"\d", body["message"])


def test_the_pure_rules_name_no_player_in_their_messages() -> None:
    arena = Arena(0.0, 600.0).join(18, 1500.0, 1.0)
    for act in (lambda: Arena(0.0, 600.0).leave(18), lambda: arena.join(18, 1500.0, 2.0)):
        with pytest.raises(ArenaError) as refused:
            act()
        assert "18" not in str(refused.value)
    queue = Matchmaker().enqueue(QueueKey(Variant.PAULISTA, 2), [(18, 1500.0)], 0.0)
    for call in (lambda: queue.enqueue(QueueKey(Variant.PAULISTA, 2), [(18, 1500.0)], 1.0),
                 lambda: Matchmaker().leave(18)):
        with pytest.raises(MatchmakingError) as failed:
            call()
        assert "18" not in str(failed.value)


# --- 8. a seated player's status still names the queue ----------------------------------------


async def test_a_seated_players_status_names_the_queue_of_the_match(
        staffed: House) -> None:  # noqa: F811
    ana, bia = await staffed.players("ana", "bia")
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "mineiro", "seats": 2})
    await staffed.clock.advance(1)
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "seated" and status["table"] is not None
    assert (status["variant"], status["seats"]) == ("mineiro", 2)
    page = await (await ana.get("/ranked")).text()
    assert "Mineiro 1x1" in page


# --- 9. one table in play at a time -----------------------------------------------------------


async def seat_at_a_training_match(house: House, user_id: int) -> None:  # noqa: F811
    """`user_id` seated at a training table whose match is in play (as the database has it)."""
    await house.pool.execute(
        "INSERT INTO live_tables (id, variant, seats, mode, kind, status) "
        "VALUES ('00000000000000e9', 'paulista', 2, 'vote', 'training', 'playing')")
    await house.pool.execute(
        "INSERT INTO live_seats (table_id, seat, user_id) VALUES ('00000000000000e9', 0, $1)",
        user_id)


async def test_no_ranked_queue_or_arena_while_playing_at_another_table(
        house: House) -> None:  # noqa: F811
    ana, bia = await house.players("ana", "bia")
    op = await house.player("judge", operator=True)
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                              status=201))["arena"]["id"]
    await seat_at_a_training_match(house, ana.id)
    service = house.app[RANKED]
    for attempt in (lambda: service.join(ana.id, QueueKey(Variant.PAULISTA, 2)),
                    lambda: service.join_arena(ana.id, arena_id)):
        with pytest.raises(RankedError) as refused:
            await attempt()
        assert refused.value.code == "at_table"
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    # the match over (the table finished), she may queue; bia never sat there
    await house.pool.execute(
        "UPDATE live_tables SET status = 'finished' WHERE id = '00000000000000e9'")
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await bia.json(f"/api/ranked/arenas/{arena_id}/join", {})


async def test_a_queued_player_who_sat_down_elsewhere_is_not_seated_at_a_ranked_table(
        staffed: House) -> None:  # noqa: F811
    ana, bia = await staffed.players("ana", "bia")
    assert staffed.launcher is not None
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    # queued, she starts a training match (the lobby does not ask the ranked queue)
    await seat_at_a_training_match(staffed, ana.id)
    await bia.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await staffed.clock.advance(1)
    assert staffed.launcher.launched == []  # no second clock for ana
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    assert (await bia.json("/api/ranked/queue"))["queue"]["state"] == "queued"
    # her match over, she queues again and the two are paired
    await staffed.pool.execute(
        "UPDATE live_tables SET status = 'finished' WHERE id = '00000000000000e9'")
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await staffed.clock.advance(1)
    [(_, _, _, seating, _)] = staffed.launcher.launched
    assert sorted(seating) == sorted([ana.id, bia.id])


async def test_an_arena_entrant_playing_elsewhere_waits_for_that_match_to_end(
        staffed: House) -> None:  # noqa: F811
    op = await staffed.player("judge", operator=True)
    ana, bia, caio = await staffed.players("ana", "bia", "caio")
    assert staffed.launcher is not None
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                     "minutes": 10}, status=201))["arena"]["id"]
    for player in (ana, bia, caio):
        await player.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await seat_at_a_training_match(staffed, ana.id)
    await staffed.clock.advance(1)
    [(_, _, _, seating, _)] = staffed.launcher.launched
    assert ana.id not in seating and sorted(seating) == sorted([bia.id, caio.id])
    # still an entrant, not at a table: she waits for her other match
    [event] = (await ana.json("/api/ranked/arenas"))["arenas"]
    assert event["joined"] and event["table"] is None
    await staffed.pool.execute(
        "UPDATE live_tables SET status = 'finished' WHERE id = '00000000000000e9'")
    dora = await staffed.player("dora")
    await dora.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await staffed.clock.advance(1)
    assert sorted(staffed.launcher.launched[1][3]) == sorted([ana.id, dora.id])


# --- 3, 10. the pages -------------------------------------------------------------------------


def _arena_page(where: House, **context: object) -> str:
    arena = {"id": "arena-1", "variant": "paulista", "seats": 2, "state": "running",
             "joined": False, "table": None, "starts": "", "ends": "", "podium": [],
             "standings": [{"rank": 1, "player": "ana", "points": 8, "wins": 3, "games": 3,
                            "on_fire": True}],
             "now_text": "Agora: 1 jogador esperando mesa, 0 mesas em jogo.", "left": False}
    values: dict[str, object] = {
        "user": None, "csrf": "x", "path": "/arena", "error": None, "arenas": [arena],
        "variants": {"paulista": "Paulista"}, "my_table": None, "following": False,
        "watching": True, "refresh": 3}
    values.update(context)
    return where.app[JINJA].get_template("ranked/arena.html").render(**values)


class _Player:
    id = 1
    name = "ana"
    is_operator = False


async def test_the_arena_page_hides_the_join_form_during_a_pause(
        house: House) -> None:  # noqa: F811
    free = _arena_page(house, user=_Player())
    assert "Entrar na arena" in free and 'id="arena-pause"' not in free
    paused = _arena_page(house, user=_Player(), pause="14 min 58 s")
    assert "Entrar na arena" not in paused
    assert "faltam 14 min 58 s" in paused and 'id="arena-pause"' in paused


async def test_a_closed_arena_has_nobody_on_fire(house: House) -> None:  # noqa: F811
    assert "em chamas" in _arena_page(house, user=_Player())
    closed = {"id": "arena-2", "variant": "paulista", "seats": 2, "state": "closed",
              "joined": False, "table": None, "starts": "", "ends": "", "podium": ["ana"],
              # a recorded arena's standings carry no streak at all
              "standings": [{"rank": 1, "player": "ana", "points": 8, "wins": 3, "games": 3}]}
    page = _arena_page(house, user=_Player(), arenas=[closed])
    assert "em chamas" not in page and "Pódio: ana" in page


async def test_the_section_menu_marks_the_page_and_the_statement_uses_a_minus(
        house: House) -> None:  # noqa: F811
    ana, bia = await house.players("ana", "bia")
    page = await (await ana.get("/leaderboard")).text()
    nav = page[page.index('aria-label="Ranqueadas"'):]
    nav = nav[:nav.index("</nav>")]
    assert "card-box" not in nav and "<ul" not in nav  # one line, no box above the title
    assert '<strong><a href="/leaderboard" aria-current="page">Classificação</a></strong>' in nav
    # the page a refused arena form answers at (/arena/{id}/join) is the arena's
    answered = await (await ana.post("/arena/arena-nope/join", form={})).text()
    nav = answered[answered.index('aria-label="Ranqueadas"'):]
    assert '<a href="/arena" aria-current="page">' in nav[:nav.index("</nav>")]
    # the chips statement writes a loss with the minus sign, as the ratings do
    await settle_abandonment(house, "00000000000000c4", [ana.id, bia.id], 0)
    me = await (await ana.get("/me")).text()
    assert "<strong>\u221250</strong>" in me and "<strong>-50</strong>" not in me
