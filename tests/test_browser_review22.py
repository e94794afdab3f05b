"""What the 22nd session's review of the hand pages found, fixed and kept fixed.

- The hand page of a hand that ended its match by an abandonment or a cancellation said nothing
  of it: "0 x 0 → 0 x 0 (partida ganha pela dupla B)" read as an ordinary hand.
- `/me/hands?before=...` said "Nenhuma mão ainda" to a player whose list did not load (a cursor
  the page took and the API refused, or any failure on an older page).
The records and the API's answers are served through Playwright routes; the pages are real.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, expect

from tests.test_browser_a11y import RECORDER, A11yTable, heard, open_recorded
from tests.test_browser_fairness_review import house_key, open_hand, serve_chain
from tests.test_browser_hand_source import json_route
from tests.test_browser_table_ux import ReviewTable, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    kept_js,
    live_server_fixture,
    lobby_refreshes,
    new_page,
    signup,
)
from tests.test_browser_views import dealt, open_table
from tests.test_live_house_guards import until
from truco import Action, ActionKind, new_match, start_hand
from truco.records import RecordEnd
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import sample_signing_key, sample_table

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"


@pytest.mark.parametrize("seats", [2, 4])
async def test_the_hand_page_says_how_a_hand_ended_its_match(
    live_server: LiveServer, browser: Browser, seats: int
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, sample_signing_key())
    config = MatchConfig(Variant.PAULISTA, seats, TeamMode.VOTE)
    for end, note in (
        (RecordEnd.ABANDONMENT, "abandono"),
        (RecordEnd.CANCELLED, "partida cancelada: ninguém ganha"),
    ):
        sample = sample_table(table_id=TABLE, config=config, hands=3, seed=5, last_end=end)
        await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
        # an ordinary hand says nothing of an end
        ordinary = next(r for r in sample.records if r["match_winner"] is None)
        await open_hand(page, live_server, ordinary)
        score = page.locator("#rec-score")
        sides = ("Lugar 1 x Lugar 2: " if seats == 2
                 else "Dupla A (lugares 1 e 3) x Dupla B (lugares 2 e 4): ")
        await expect(score).to_have_text(
            re.compile(rf"^{re.escape(sides)}\d+ x \d+ → \d+ x \d+$"))
        last = sample.records[-1]
        assert last["end"] == end.value
        await open_hand(page, live_server, last)
        before, after = last["score_before"], last["score_after"]
        head = f"{sides}{before[0]} x {before[1]} → {after[0]} x {after[1]} ("
        if end is RecordEnd.ABANDONMENT:
            team, won = last["forfeit_team"], last["match_winner"]
            if seats == 4:
                who = f"abandono da dupla {'AB'[team]}; partida ganha pela dupla {'AB'[won]}"
            else:
                who = f"abandono do lugar {team + 1}; partida ganha pelo lugar {won + 1}"
            await expect(score).to_have_text(f"{head}{who})")
        else:
            await expect(score).to_have_text(f"{head}{note})")
        await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")


async def test_my_hands_say_when_an_older_page_cannot_be_loaded(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "revisao_22")
    status = page.locator("#hands-status")
    first = page.get_by_role("link", name="Ir para a primeira página")
    # a cursor the API would refuse (a leading zero) is said, never sent
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/me/tables" in r.url else None)
    await page.goto(live_server.url(f"/me/hands?before=01-{TABLE}"))
    await expect(status).to_have_text("Essa página da lista não existe. Ir para a primeira página")
    await expect(first).to_have_attribute("href", "/me/hands")
    assert asked == []
    # one of the page's form that the API refuses (a year past 9999): its error, in pt-BR
    await page.goto(live_server.url(f"/me/hands?before=999999999999999999-{TABLE}"))
    await expect(status).to_have_text(
        "Não foi possível carregar suas mesas: Essa página da lista não existe. "
        "Ir para a primeira página")
    # any other failure of an older page is said too, not "no hands yet"
    await page.route(re.compile(r"/api/me/tables\?before="),
                     json_route({"error": "unavailable", "message": "x"}, status=503))
    await page.goto(live_server.url(f"/me/hands?before=1-{TABLE}"))
    await expect(status).to_contain_text("Não foi possível carregar suas mesas:")
    await expect(status).not_to_contain_text("Nenhuma mão")
    # the first page's failure keeps the hands this browser kept, and says it
    sample = sample_table(table_id=TABLE, config=MatchConfig(Variant.MINEIRO, 2, TeamMode.VOTE),
                          hands=2, seed=3)
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    await page.route(re.compile(r"/api/me/tables$"),
                     json_route({"error": "unavailable", "message": "x"}, status=503))
    await page.evaluate(
        kept_js("t", "localStorage.setItem(kept('hands'), JSON.stringify([{table: t, hand: 1}]))"),
        TABLE)
    await page.goto(live_server.url("/me/hands"))
    await expect(status).to_contain_text("Não foi possível carregar suas mesas:")
    await expect(status).to_contain_text("só as mesas que este navegador guardou")
    await expect(page.locator(f'#hands-list section[data-table="{TABLE}"]')).to_be_visible()


# --- what the accessibility review found (axe-core 4.14, WCAG 2.1 AA; a screen reader's ear) ---


async def test_a_card_control_is_named_by_what_its_corner_prints(
    live_server: LiveServer, browser: Browser
) -> None:
    # "Jogar cavalo de espadas" on a card printed "11": a voice-control user saying "11" hit
    # nothing (WCAG 2.5.3, Label in Name)
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["QC", "JD", "AS"], ["5H", "4H", "KC"]]))
    table = ReviewTable(state, seat=0, names=["rotulo_0", "bot"])
    page = await open_table(live_server, browser, table, "rotulo_0")
    for name in ("Jogar 10 de bastos (sota)", "Jogar 11 de oros (caballo)",
                 "Jogar A de espadas (as)"):
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
    # the logs scroll: a keyboard reaches them (they hold nothing focusable themselves)
    for log in ("#log", "#fair-log"):
        await expect(page.locator(log)).to_have_attribute("tabindex", "0")
    await page.context.close()


async def test_a_vote_is_heard_without_the_question_again(
    live_server: LiveServer, browser: Browser
) -> None:
    # each vote rewrote the whole request region: "Você pediu truco!" was read at every vote
    table = A11yTable(paulista_2x2(), seat=0, names=["ouvido_22", "b1", "b2", "b3"],
                      script=[[Action(1, ActionKind.ACCEPT)]])
    page = await open_recorded(live_server, browser, table, "ouvido_22")
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    await expect(page.locator("#request-votes")).to_contain_text("Votos: Robô 2 votou")
    await page.wait_for_timeout(500)
    asked = [t for t in await heard(page, "request-ask") if "pediu truco" in t]
    assert asked == ["Você pediu truco! Se for aceito, a mão passa a valer 3."], asked
    assert [t for t in await heard(page, "request-votes") if "Votos" in t] == [
        "Votos: Robô 2 votou"]
    await page.context.close()


async def test_the_lobby_says_its_status_once_not_at_every_refresh(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    refreshes = lobby_refreshes(page)
    await page.add_init_script(RECORDER)
    await signup(page, live_server, "ouvido_lobby")
    status = page.locator("#lobby-status")
    await expect(status).not_to_have_text("Carregando as mesas…")
    said = await status.text_content()
    begun = len(refreshes)
    await until(lambda: len(refreshes) >= begun + 3, 40)  # two refreshes since, shown whole
    assert [t for t in await heard(page, "lobby-status") if t != "Carregando as mesas…"] == [said]
    await page.context.close()


# --- what a new player's journey found ------------------------------------------------------


async def test_cards_left_when_a_hand_ends_are_not_offered_and_a_rematch_is_told(
    live_server: LiveServer, browser: Browser
) -> None:
    from tests.test_browser_table_ux import paulista_1x1

    # the truco is refused: the hand is over with my three cards still in hand
    table = ReviewTable(paulista_1x1(), seat=0, names=["jornada_0", "bot"],
                        script=[[Action(1, ActionKind.DECLINE)]])
    page = await open_table(live_server, browser, table, "jornada_0")
    await expect(page.get_by_role("button", name="Jogar 3 de paus")).to_be_visible()
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    await expect(page.locator("#my-hand .card")).to_have_count(3)
    # they were buttons saying "Jogar ..." (disabled) that a screen reader offered
    await expect(page.locator("#my-hand button")).to_have_count(0)
    # a rematch starts a new match: the log says so (it went straight on from the last end)
    table.push({"type": "table", "table": {**table.table_json(), "match": 2}})
    await expect(page.locator("#log")).to_contain_text("Revanche: começa a partida 2.")
    await page.context.close()


# --- what the ranked and operator review found ----------------------------------------------


async def test_a_ranked_tables_end_says_what_the_match_moved_however_old_and_if_overturned(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review: after an overturn the box summed the refund into the match's chips but showed
    # the rating without it, never saying the match was annulled; and an older match's chips
    # read "Fichas: 0" once newer lines pushed its own off /api/me/standing's page
    from datetime import UTC, datetime

    from server.accounts import register
    from server.app import PASSWORD_COST, POOL
    from server.ranked import ledger, ratings
    from tests.test_browser_table_ux import paulista_1x1
    from tests.test_browser_views import TABLE_ID

    table = ReviewTable(paulista_1x1(score=(3, 9)), seat=1, names=["rival_22", "anulada"],
                        people={0}, kind="ranked")
    page = await open_table(live_server, browser, table, "anulada")
    pool = live_server.app[POOL]
    rival = await register(pool, "rival_22", "correct horse 42", live_server.app[PASSWORD_COST])
    me = await pool.fetchval("SELECT id FROM users WHERE name = 'anulada'")
    ref = f"ranked:{TABLE_ID}:1"
    await ledger.hold_stakes(pool, ref, [rival.id, me], 50)
    await ledger.pay_winners(pool, ref, [rival.id])  # I abandoned: rival_22 takes the pot
    [lost] = [c for c in await ratings.rate_match(
        pool, ref, Variant.PAULISTA, 2, ([rival.id], [me]), 0, datetime.now(UTC))
        if c.user_id == me]
    # the operator overturns my abandonment: the stake and the points come back
    await ledger.reverse_forfeit(pool, ref, me)
    await ratings.reverse_match(pool, "abandonment:1", me, ref, datetime.now(UTC))
    # and 30 later matches (refunded) fill the newest page of my statement
    for n in range(30):
        later = f"ranked:{n:016x}:1"
        await ledger.hold_stakes(pool, later, [rival.id, me], 10)
        await ledger.refund(pool, later)
    table.abandon(1)

    def pt(value: float) -> str:
        return f"{value:.1f}".replace(".", ",")

    delta = lost.before - lost.after.rating
    await expect(page.locator("#match-over-standing")).to_have_text(
        f"Classificação: {pt(lost.before)} → {pt(lost.after.rating)} (−{pt(delta)})."
        f" Fichas: −50. Anulada na revisão do abandono: 50 fichas devolvidas e +{pt(delta)}"
        " pontos devolvidos (saldo 1000).", timeout=15_000)
    await page.context.close()
