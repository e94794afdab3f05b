"""Fixes from an operator's review of a live house, on a real PostgreSQL: a decision form that
names the state it showed, so that a stale page neither answers an appeal nobody read nor
overrides another operator's decision (forms and JSON, two decisions at once); what
`restart_overlap` means on each kind of record, and `match_spanned_restart`; `next` on the JSON
lists; exempt records and how each player abandoned in the list; pt-BR decimals in the audit;
messages that name the note, the restart and the accepted dates, with the filters kept."""

from __future__ import annotations

import asyncio
import html
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.live import api as live_api
from server.ranked import http as ranked_http
from server.ranked import ledger, penalties, review
from server.ranked.penalties import Decision, RecordStatus, ReviewError, ReviewState
from tests.test_ranked_http import TABLE, House, Player, settle_abandonment
from tests.test_ranked_http import house as house  # the fixture
from truco import Variant

STALE_PT = "O registro mudou desde que você abriu a página: leia de novo antes de decidir."


def _state_shown(text: str) -> str:
    """The state a record page's decision form sends back."""
    found = re.search(r'name="expected_state" value="([^"]*)"', text)
    assert found is not None, "the decision form names the state it shows"
    return found.group(1)


async def _open(op: Player, record_id: int) -> str:
    resp = await op.get(f"/operator/abandonments/{record_id}")
    assert resp.status == 200
    return _state_shown(await resp.text())


async def _decisions(house: House, record_id: int) -> list[str]:
    return [a.action for a in await review.audit_log(house.pool, record_id=record_id)
            if a.action in ("uphold", "overturn")]


# --- 1, 2: the state a decision was taken on -----------------------------------------------------


def test_the_state_token_changes_with_every_step_and_a_stale_one_is_refused() -> None:
    pending = ReviewState(RecordStatus.PENDING, False, False)
    assert pending.token == "pending:none"
    assert ReviewState(RecordStatus.PENDING, True, False).token == "pending:open"
    assert ReviewState(RecordStatus.UPHELD, True, True).token == "upheld:answered"
    assert len(penalties.STATE_TOKENS) == len(RecordStatus) * 3
    # the same state: decided; another state (an appeal came in): refused before anything else
    ruling, _ = penalties.decide(pending, Decision.UPHOLD, "ok", "pending:none")
    assert ruling.state.status is RecordStatus.UPHELD
    appealed = ReviewState(RecordStatus.PENDING, True, False)
    with pytest.raises(ReviewError) as refused:
        penalties.decide(appealed, Decision.UPHOLD, "ok", "pending:none")
    assert refused.value.code == "stale"
    with pytest.raises(ReviewError) as refused:
        penalties.decide(appealed, Decision.UPHOLD, " ", "pending:none")  # a blank note too
    assert refused.value.code == "stale"
    for bad in ("pending", "nope:none", 3):
        with pytest.raises(ReviewError) as refused:
            penalties.decide(pending, Decision.UPHOLD, "ok", bad)
        assert refused.value.code == "bad_state"
    # without a state named, as before
    assert penalties.decide(appealed, Decision.UPHOLD, "ok")[0].state.appeal_answered


async def test_a_stale_form_does_not_answer_an_appeal_the_operator_never_saw(
        house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    # the operator opens the record: pending, no appeal
    shown = await _open(op, record.id)
    assert shown == "pending:none"
    # meanwhile the player appeals from her page
    await bia.json(f"/api/me/abandonments/{record.id}/appeal", {"text": "Caiu a luz aqui."})
    # the page still open upholds: refused, the page shows the record as it is now
    resp = await op.post(f"/operator/abandonments/{record.id}/decision",
                         form={"decision": "uphold", "note": "Abandono claro.",
                               "expected_state": shown})
    assert resp.status == 409
    text = html.unescape(await resp.text())
    assert STALE_PT in text and 'id="decision-error"' in text
    assert "Caiu a luz aqui." in text  # the appeal, to be read now
    assert _state_shown(text) == "pending:open"
    assert ">Abandono claro.</textarea>" in text  # the note typed is not lost
    stored = await review.get_record(house.pool, record.id)
    assert stored.status is RecordStatus.PENDING and not stored.appeal_answered
    assert await _decisions(house, record.id) == []
    # read again, the decision answers the appeal
    resp = await op.post(f"/operator/abandonments/{record.id}/decision",
                         form={"decision": "uphold", "note": "Lido o recurso; mantido.",
                               "expected_state": await _open(op, record.id)})
    assert resp.status == 303
    stored = await review.get_record(house.pool, record.id)
    assert stored.status is RecordStatus.UPHELD and stored.appeal_answered


async def test_a_stale_form_does_not_override_another_operators_decision(house: House) -> None:
    olga, rui = await house.player("olga", operator=True), await house.player("rui",
                                                                              operator=True)
    ana, bia = await house.players("ana", "bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    tab_a, tab_b = await _open(olga, record.id), await _open(rui, record.id)
    resp = await rui.post(f"/operator/abandonments/{record.id}/decision",
                          form={"decision": "uphold", "note": "Mantido.",
                                "expected_state": tab_b})
    assert resp.status == 303
    resp = await olga.post(f"/operator/abandonments/{record.id}/decision",
                           form={"decision": "overturn", "note": "Revertido.",
                                 "expected_state": tab_a})
    assert resp.status == 409 and STALE_PT in html.unescape(await resp.text())
    assert (await review.get_record(house.pool, record.id)).status is RecordStatus.UPHELD
    assert await _decisions(house, record.id) == ["uphold"]
    assert await ledger.balance(house.pool, bia.id) == 950  # nothing given back


async def test_the_api_names_the_state_and_refuses_a_stale_decision(house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    path = f"/api/ranked/operator/abandonments/{record.id}"
    read = (await op.json(path))["abandonment"]["review_state"]
    assert read == "pending:none"
    listed = (await op.json("/api/ranked/operator/abandonments"))["abandonments"]
    assert listed[0]["review_state"] == "pending:none"
    resp = await op.post(path + "/decision", {"decision": "uphold", "note": "x",
                                              "expected_state": "pending"})
    assert resp.status == 400 and (await resp.json())["error"] == "bad_state"
    # a form with a made-up state is not told the record changed (it did not)
    resp = await op.post(f"/operator/abandonments/{record.id}/decision",
                         form={"decision": "uphold", "note": "x", "expected_state": "garbage"})
    text = html.unescape(await resp.text())
    assert resp.status == 400 and STALE_PT not in text
    assert "O formulário não traz o estado do registro desta página" in text
    # a note or an appeal that is no text is told so, not that it is empty
    resp = await op.post(path + "/decision", {"decision": "uphold", "note": 5})
    assert (await resp.json())["message"] == "The note is a text (a JSON string)."
    resp = await bia.post(f"/api/me/abandonments/{record.id}/appeal", {"text": ["x"]})
    assert (await resp.json())["message"] == "The appeal is a text (a JSON string)."
    assert await _decisions(house, record.id) == []
    await bia.json(f"/api/me/abandonments/{record.id}/appeal", {"text": "Caiu a luz."})
    resp = await op.post(path + "/decision", {"decision": "uphold", "note": "x",
                                              "expected_state": read})
    assert resp.status == 409 and (await resp.json())["error"] == "stale"
    assert await _decisions(house, record.id) == []
    # two decisions on the same reading, at once: one is taken, the other refused
    read = (await op.json(path))["abandonment"]["review_state"]
    assert read == "pending:open"
    first, second = await asyncio.gather(
        op.post(path + "/decision", {"decision": "uphold", "note": "a", "expected_state": read}),
        op.post(path + "/decision", {"decision": "overturn", "note": "b",
                                     "expected_state": read}))
    assert sorted([first.status, second.status]) == [200, 409]
    assert len(await _decisions(house, record.id)) == 1
    body = await op.json(path)
    assert body["abandonment"]["review_state"] in ("upheld:answered", "overturned:answered")


# --- 3: restart_overlap, and whether the match spanned a restart ----------------------------------


MATCH_START = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


async def _live_record(house: House, table: str, user: int, *, trigger: str = "left",
                       minutes: int = 10, seats: int = 2, kind: str = "ranked") -> int:
    """A live match on `table` and the live record of `user` leaving it `minutes` later."""
    pool = house.pool
    await pool.execute(
        "INSERT INTO live_tables (id, variant, seats, mode, kind, status) "
        "VALUES ($1, 'paulista', $2, 'vote', $3, 'finished') ON CONFLICT DO NOTHING",
        table, seats, kind)
    await pool.execute(
        "INSERT INTO live_matches (table_id, number, termination, winner, started_at, ended_at) "
        "VALUES ($1, 1, 'abandonment', 0, $2, $3) ON CONFLICT DO NOTHING",
        table, MATCH_START, MATCH_START + timedelta(minutes=minutes))
    value = await pool.fetchval(
        "INSERT INTO abandonments (table_id, match_number, seat, user_id, team, variant, kind, "
        "trigger, consequence, restart_overlap, evidence, created_at) VALUES ($1, 1, 1, $2, 1, "
        "'paulista', $3, $4, 'forfeit', false, '[]', $5) RETURNING id",
        table, user, kind, trigger, MATCH_START + timedelta(minutes=minutes))
    assert isinstance(value, int)
    return value


async def test_a_leave_in_a_match_that_spanned_a_restart_says_so_apart_from_the_streak(
        house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    table = "00000000000000f1"
    live_id = await _live_record(house, table, bia.id, seats=4)
    # a server run began in the middle of the match
    await house.pool.execute("INSERT INTO server_runs (started_at, stopped_at, clean) "
                             "VALUES ($1, $1, true)", MATCH_START + timedelta(minutes=4))
    record = await review.record_abandonment(
        house.pool, user_id=bia.id, match_ref=f"ranked:{table}:1", variant=Variant.PAULISTA,
        seats=2, match_started_at=MATCH_START, abandoned_at=MATCH_START + timedelta(minutes=10),
        source_ref=f"live:{table}:1:1", fault_overlap=True)
    assert record.status is RecordStatus.EXEMPT

    body = await op.json(f"/api/operator/abandonments/{live_id}")
    # a leave has no streak: its restart_overlap is false; the match did span a restart
    assert body["restart_overlap"] is False and body["match_spanned_restart"] is True
    listed = (await op.json("/api/operator/abandonments"))["abandonments"]
    assert [(a["id"], a["match_spanned_restart"]) for a in listed] == [(live_id, True)]
    detail = (await op.json(f"/api/ranked/operator/abandonments/{record.id}"))["abandonment"]
    assert detail["restart_overlap"] is True and detail["match_spanned_restart"] is True
    [live] = detail["live_records"]
    assert live["restart_overlap"] is False and live["match_spanned_restart"] is True

    text = html.unescape(await (await op.get(f"/operator/live-abandonments/{live_id}")).text())
    assert "durante a sequência" not in text  # a leave: no streak to speak of
    assert 'id="live-match-restart">sim' in text
    assert "Paulista 2x2" in text  # the Mesa line says the format

    # a match without a restart, left: "não", and 1x1
    other = await _live_record(house, "00000000000000f2", ana.id, minutes=1)
    await house.pool.execute("UPDATE live_matches SET started_at = $1 WHERE table_id = $2",
                             MATCH_START + timedelta(minutes=5), "00000000000000f2")
    await house.pool.execute("UPDATE abandonments SET created_at = $1 WHERE id = $2",
                             MATCH_START + timedelta(minutes=6), other)
    assert (await op.json(f"/api/operator/abandonments/{other}"))[
        "match_spanned_restart"] is False
    text = html.unescape(await (await op.get(f"/operator/live-abandonments/{other}")).text())
    assert 'id="live-match-restart">não' in text and "Paulista 1x1" in text


# --- 4: the JSON lists say whether more pages follow ----------------------------------------------


async def test_the_live_list_pages_with_before_and_next(house: House,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    op = await house.player("judge", operator=True)
    (bia,) = await house.players("bia")
    # (a match has one forfeit: five matches, at five tables)
    ids = [await _live_record(house, f"{0xf30 + m:016x}", bia.id, minutes=m, kind="training")
           for m in range(1, 6)]
    newest_first = ids[::-1]
    monkeypatch.setattr(live_api, "MAX_LISTED", 2)
    seen: list[int] = []
    query = ""
    pages = 0
    while True:
        body = await op.json("/api/operator/abandonments" + query)
        seen += [a["id"] for a in body["abandonments"]]
        pages += 1
        if body["next"] is None:
            break
        assert body["next"] == seen[-1]
        query = f"?before={body['next']}"
    assert seen == newest_first and pages == 3
    # `before` alone works too, with the other filters
    body = await op.json(f"/api/operator/abandonments?before={ids[1]}&penalty=none")
    assert [a["id"] for a in body["abandonments"]] == [ids[0]] and body["next"] is None
    resp = await op.get("/api/operator/abandonments?before=x")
    assert resp.status == 400 and (await resp.json())["error"] == "bad_filter"


async def test_the_review_list_pages_with_next(house: House,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    for n in range(3):
        await settle_abandonment(house, f"00000000000000c{n}", [ana.id, bia.id], 1)
    monkeypatch.setattr(ranked_http, "PAGE", 2)
    body = await op.json("/api/ranked/operator/abandonments")
    assert [r["id"] for r in body["abandonments"]] == [3, 2] and body["next"] == 2
    body = await op.json("/api/ranked/operator/abandonments?before=2")
    assert [r["id"] for r in body["abandonments"]] == [1] and body["next"] is None
    # exactly a page: no link to an empty next page
    text = await (await op.get("/operator/abandonments?before=3")).text()
    assert "Registros mais antigos" not in text
    first = await (await op.get("/operator/abandonments")).text()
    assert "Registros mais antigos" in first and "Registros mais recentes" not in first
    # a later page leads back to the newest, with its filters (a review found no way back)
    text = await (await op.get("/operator/abandonments?status=pending&before=3")).text()
    assert ('href="/operator/abandonments?status=pending" class="target">Registros mais recentes'
            in text)
    # a range that ends before it starts is refused, not an empty list
    resp = await op.get("/api/ranked/operator/abandonments?since=2026-03-02&until=2026-03-01")
    assert resp.status == 400 and (await resp.json())["error"] == "bad_filter"
    text = await (await op.get("/operator/abandonments?since=2026-03-02&until=2026-03-01")).text()
    assert "A data final vem antes da inicial" in text
    audit = await op.json("/api/ranked/operator/audit")
    assert len(audit["audit"]) == 2 and audit["next"] == audit["audit"][-1]["id"]


# --- 5, 8: what a list row says -------------------------------------------------------------------


async def test_list_rows_say_exempt_how_they_abandoned_and_open_appeals_filter(
        house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia, caio = await house.players("ana", "bia", "caio")
    answered = (await settle_abandonment(house, "00000000000000d1", [ana.id, bia.id], 1)).record
    await house.clock.advance(60)
    waiting = (await settle_abandonment(house, "00000000000000d2", [ana.id, caio.id], 1)).record
    # the live house's record of that forfeit says how (the other two: their evidence, or none)
    await _live_record(house, "00000000000000d2", caio.id, trigger="automatic_actions")
    at = house.now()
    exempt = await review.record_abandonment(
        house.pool, user_id=ana.id, match_ref="ranked:00000000000000d3:1",
        variant=Variant.PAULISTA, seats=2, match_started_at=at - timedelta(minutes=5),
        abandoned_at=at, fault_overlap=True,
        evidence=[{"kind": "left", "at_ms": int(at.timestamp() * 1000), "seat": 0,
                   "abandonment": "forfeit"}])
    for player, record in ((bia, answered), (caio, waiting)):
        await player.json(f"/api/me/abandonments/{record.id}/appeal", {"text": "caiu a luz"})
    await op.json(f"/api/ranked/operator/abandonments/{answered.id}/decision",
                  {"decision": "uphold", "note": "mantido"})

    text = html.unescape(await (await op.get("/operator/abandonments")).text())
    rows = {int(m.group(1)): m.group(2) for m in re.finditer(
        r'<a href="/operator/abandonments/(\d+)">(.*?)</li>', text, re.S)}
    assert "0º abandono" not in rows[exempt.id]
    assert "isento: não conta como abandono" in rows[exempt.id]
    assert "saiu da mesa durante a partida" in rows[exempt.id]
    assert "ações automáticas seguidas" in rows[waiting.id]
    assert "1º abandono em 7 dias" in rows[waiting.id]

    async def ids(query: str) -> list[int]:
        body = await op.json("/api/ranked/operator/abandonments" + query)
        return [r["id"] for r in body["abandonments"]]

    assert await ids("?appealed=yes") == [waiting.id, answered.id]
    assert await ids("?appealed=open") == [waiting.id]
    text = await (await op.get("/operator/abandonments?appealed=open")).text()
    assert f'href="/operator/abandonments/{waiting.id}"' in text
    assert f'href="/operator/abandonments/{answered.id}"' not in text
    assert '<option value="open" selected>' in text
    # 1x1 / 2x2 is a field of the form (it was taken from the address only, and dropped by the
    # next "Filtrar")
    text = await (await op.get("/operator/abandonments?seats=4")).text()
    assert '<select id="f-seats" name="seats">' in text and '<option value="4" selected>' in text
    assert f'href="/operator/abandonments/{waiting.id}"' not in text  # a 1x1 record


# --- 6, 7: numbers and messages -------------------------------------------------------------------


def test_the_audit_writes_returned_points_with_a_decimal_comma() -> None:
    entry = review.AuditEntry(1, 1, 1, "judge", "overturn", "ok",
                              {"chips_returned": 50, "rating_returned": 88.2,
                               "pause_lifted": True}, datetime.now(UTC))
    effects = ranked_http._audit_effects(entry)
    assert "+88,2 pontos devolvidos" in effects and "88.2" not in effects


async def test_a_blank_note_is_said_at_the_note(house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    resp = await op.post(f"/operator/abandonments/{record.id}/decision",
                         form={"decision": "uphold", "note": "  ",
                               "expected_state": await _open(op, record.id)})
    assert resp.status == 400
    text = html.unescape(await resp.text())
    assert 'id="decision-note-error"' in text and "nota da decisão" in text
    assert 'aria-describedby="decision-note-error"' in text


async def test_a_decision_on_an_exempt_record_names_its_reason(house: House) -> None:
    op = await house.player("judge", operator=True)
    (bia,) = await house.players("bia")
    at = house.now()
    restart = await review.record_abandonment(
        house.pool, user_id=bia.id, match_ref="ranked:00000000000000e7:1",
        variant=Variant.PAULISTA, seats=2, match_started_at=at - timedelta(minutes=5),
        abandoned_at=at, fault_overlap=True)
    await review.record_fault(house.pool, "fault", at - timedelta(minutes=20),
                              at - timedelta(minutes=15))
    fault = await review.record_abandonment(
        house.pool, user_id=bia.id, match_ref="ranked:00000000000000e8:1",
        variant=Variant.PAULISTA, seats=2, match_started_at=at - timedelta(minutes=30),
        abandoned_at=at - timedelta(minutes=10))
    messages: dict[int, str] = {}
    for record in (restart, fault):
        assert record.status is RecordStatus.EXEMPT
        resp = await op.post(f"/api/ranked/operator/abandonments/{record.id}/decision",
                             {"decision": "overturn", "note": "x"})
        body: dict[str, Any] = await resp.json()
        assert resp.status == 409 and body["error"] == "exempt"
        messages[record.id] = body["message"]
    assert "restart" in messages[restart.id] and "fault" not in messages[restart.id]
    assert "fault" in messages[fault.id] and "restart" not in messages[fault.id]


async def test_a_bad_date_filter_keeps_the_filters_and_says_what_is_accepted(
        house: House) -> None:
    op = await house.player("judge", operator=True)
    for query, field in (("?player=bia&status=pending&since=banana", "since"),
                         ("?list=free&player=bia&until=2020-13-01", "until"),
                         ("?player=bia&status=lost", "status")):
        resp = await op.get("/operator/abandonments" + query)
        assert resp.status == 400, query
        text = html.unescape(await resp.text())
        assert "Voltar às mesas" not in text  # the list itself, not an error page
        assert f'id="f-{field}-error"' in text, query
        assert 'id="f-player" name="player" value="bia"' in text
        if field != "status":
            assert "AAAA-MM-DDTHH:MM" in text and 'aria-invalid="true"' in text
    text = html.unescape(await (await op.get(
        "/operator/abandonments?player=bia&status=pending&since=banana")).text())
    assert '<option value="pending" selected>' in text and 'value="banana"' in text
    # a time is kept as typed (a date field cannot show it)
    text = await (await op.get("/operator/abandonments?since=2030-01-01T10:00")).text()
    assert 'type="text" value="2030-01-01T10:00"' in text


# --- notices that agree with the record; refusals that say so (an operator review) ------------


async def test_the_decision_notice_is_shown_only_while_the_record_shows_that_decision(
        house: House) -> None:
    olga, rui = await house.player("olga", operator=True), await house.player("rui",
                                                                              operator=True)
    ana, bia = await house.players("ana", "bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    # a typed `done` on an undecided record claims no decision
    for done in ("overturn", "uphold", "nonsense"):
        text = await (await olga.get(f"/operator/abandonments/{record.id}?done={done}")).text()
        assert 'id="decision-done"' not in text and "Decisão registrada" not in text, done
    resp = await olga.post(f"/operator/abandonments/{record.id}/decision",
                           form={"decision": "uphold", "note": "Mantido.",
                                 "expected_state": await _open(olga, record.id)})
    assert resp.status == 303
    assert resp.headers["Location"] == f"/operator/abandonments/{record.id}?done=uphold"
    text = html.unescape(await (await olga.get(resp.headers["Location"])).text())
    assert "Decisão registrada: registro mantido." in text
    # the address claims an overturn the record does not show: no notice
    text = await (await olga.get(f"/operator/abandonments/{record.id}?done=overturn")).text()
    assert "Decisão registrada" not in text
    # another operator overturns it; the first tab reloaded no longer says "mantido"
    resp = await rui.post(f"/operator/abandonments/{record.id}/decision",
                          form={"decision": "overturn", "note": "Revertido.",
                                "expected_state": await _open(rui, record.id)})
    assert resp.status == 303
    text = html.unescape(await (await olga.get(f"/operator/abandonments/{record.id}"
                                               "?done=uphold")).text())
    assert "Decisão registrada" not in text and "registro mantido" not in text
    assert 'data-status="overturned"' in text
    text = html.unescape(await (await rui.get(resp.headers["Location"])).text())
    assert "Decisão registrada: registro revertido." in text


async def test_a_refused_filter_does_not_say_nothing_matches(house: House) -> None:
    op = await house.player("judge", operator=True)
    for query in ("?status=bogus", "?since=banana", "?list=free&until=2020-13-01",
                  "?since=2026-12-08&until=2026-12-07", "?list=bogus"):
        resp = await op.get("/operator/abandonments" + query)
        assert resp.status == 400, query
        text = await resp.text()
        assert "com esses filtros" not in text, query
        assert 'class="error" role="alert"' in text, query
    # filters accepted and nothing found: said, on both lists
    assert "Nenhum registro com esses filtros." in await (
        await op.get("/operator/abandonments?status=pending")).text()
    assert "Nenhum abandono sem penalidade com esses filtros." in await (
        await op.get("/operator/abandonments?list=free")).text()


async def test_an_appeal_is_confirmed_only_on_the_record_that_shows_it(house: House) -> None:
    ana, bia = await house.players("ana", "bia")
    first = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    await house.clock.advance(60)
    second = (await settle_abandonment(house, "00000000000000e1", [ana.id, bia.id], 1)).record
    assert first.user_id == second.user_id == bia.id
    # typed in the address, before any appeal: nothing confirmed
    text = await (await bia.get(f"/me?appealed={first.id}")).text()
    assert "Recurso enviado" not in text
    resp = await bia.post(f"/me/abandonments/{first.id}/appeal", form={"text": "caiu a luz"})
    assert resp.status == 303
    assert resp.headers["Location"] == f"/me?appealed={first.id}#record-{first.id}"
    text = html.unescape(await (await bia.get(resp.headers["Location"].split("#")[0])).text())
    assert f'<p class="notice" role="status" id="appeal-done-{first.id}">' in text
    assert "Recurso enviado: a operação da casa vai lê-lo e decidir sobre este registro." in text
    assert text.count("Recurso enviado") == 1
    # the other record was not appealed: the address naming it claims nothing
    for query in (f"?appealed={second.id}", "?appealed=abc", "?appealed=999"):
        assert "Recurso enviado" not in await (await bia.get("/me" + query)).text(), query
    # answered since: still sent, and said as answered
    op = await house.player("judge", operator=True)
    await op.json(f"/api/ranked/operator/abandonments/{first.id}/decision",
                  {"decision": "uphold", "note": "mantido"})
    text = html.unescape(await (await bia.get(f"/me?appealed={first.id}")).text())
    assert "Recurso enviado e já respondido: veja a decisão abaixo." in text


async def test_the_live_list_refuses_a_range_that_ends_before_it_starts(house: House) -> None:
    op = await house.player("judge", operator=True)
    resp = await op.get("/api/operator/abandonments?since=2026-12-08&until=2026-12-07")
    assert resp.status == 400
    body = await resp.json()
    assert body["error"] == "bad_filter" and "comes before its start" in body["message"]
    # one day (since = until) is a range
    resp = await op.get("/api/operator/abandonments?since=2026-12-08&until=2026-12-08")
    assert resp.status == 200 and (await resp.json())["abandonments"] == []


async def test_the_audit_page_refuses_a_bad_before_and_links_older_only_when_there_are(
        house: House, monkeypatch: pytest.MonkeyPatch) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.players("ana", "bia")
    for n in range(2):
        await settle_abandonment(house, f"00000000000000f{n}", [ana.id, bia.id], 1)
    monkeypatch.setattr(ranked_http, "PAGE", 2)
    events = await review.audit_log(house.pool)
    assert len(events) == 2
    # exactly a page and nothing older: no link to an empty page
    text = await (await op.get("/operator/audit")).text()
    assert text.count("<li class=\"table-item\">") == 2 and "Eventos mais antigos" not in text
    await settle_abandonment(house, "00000000000000f2", [ana.id, bia.id], 1)
    text = await (await op.get("/operator/audit")).text()
    older = re.search(r'href="/operator/audit\?before=(\d+)" class="target">Eventos mais antigos',
                      text)
    assert older is not None and int(older.group(1)) == events[0].id
    text = await (await op.get(f"/operator/audit?before={older.group(1)}")).text()
    assert text.count("<li class=\"table-item\">") == 1 and "Eventos mais antigos" not in text
    for bad in ("abc", "0", "-1", "1.5"):
        resp = await op.get(f"/operator/audit?before={bad}")
        assert resp.status == 400, bad
        text = html.unescape(await resp.text())
        assert "Essa página do registro de auditoria não existe" in text, bad
        assert 'id="audit"' not in text
    body = await (await op.get("/api/ranked/operator/audit?before=abc")).json()
    assert body["error"] == "bad_filter"
