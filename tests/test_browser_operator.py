"""An operator reviews an abandonment in a real Chromium against the real server (real TCP port,
real clock): the record comes from `settle_match` as the live house will report it, the player
appeals it on their page, the operator finds it with the filters, reads the evidence timeline
and overturns it with a note; the stake, the rating points and the pause come back once. The
pages are checked at 375 px and at desktop width (screens under `artifacts/`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Browser, expect

from server.accounts import MINIMUM, Role, register, set_role
from server.app import POOL
from server.live.model import TableKind
from server.ranked import ledger, ratings, review
from server.ranked.service import settle_match
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PHONE,
    LiveServer,
    browser_fixture,
    new_page,
    no_horizontal_scroll,
    screenshot,
    signup,
)
from tests.test_ranked_http import EVIDENCE, ranked_app
from truco.outcome import Termination
from truco.variants import Variant

pytestmark = pytest.mark.timeout(180)
TABLE = "00000000000000e1"


@pytest.fixture(name="ranked_server")
async def ranked_server_fixture(
    make_app: Callable[..., web.Application], aiohttp_server: Callable[..., Awaitable[Any]]
) -> AsyncIterator[LiveServer]:
    server = await aiohttp_server(ranked_app(make_app, None))
    live = LiveServer(str(server.make_url("/")).rstrip("/"), server.app)
    try:
        yield live
    finally:
        await server.close()
    assert not live.page_errors, f"JavaScript errors in the pages: {live.page_errors}"


async def test_an_operator_overturns_an_appealed_abandonment(
    ranked_server: LiveServer, browser: Browser
) -> None:
    live = ranked_server
    pool = live.app[POOL]
    player = await new_page(browser, live, PHONE)
    await signup(player, live, "bia")
    judge = await new_page(browser, live)
    await signup(judge, live, "judge")
    assert await set_role(pool, "judge", Role.OPERATOR)
    ana = await register(pool, "ana", "truco na praia 42", MINIMUM)
    bia = await pool.fetchval("SELECT id FROM users WHERE name = 'bia'")
    # two abandonments by bia within the hour: the second pauses her for 15 minutes
    now = datetime.now(UTC)
    evidence = [dict(item, at_ms=int((now - timedelta(minutes=9)).timestamp() * 1000) + i * 2000)
                for i, item in enumerate(EVIDENCE)]
    for number, table in enumerate((TABLE, "00000000000000e2"), start=1):
        await ledger.hold_stakes(pool, f"ranked:{table}:1", [ana.id, bia], 50)
        await settle_match(
            pool, table_id=table, match_number=1, kind=TableKind.RANKED,
            variant=Variant.PAULISTA, seats=2, users_by_seat=[ana.id, bia],
            termination=Termination.ABANDONMENT, winner_team=0, forfeit_seat=1,
            restart_overlap=False, evidence=evidence,
            started_at=now - timedelta(minutes=30 - number), ended_at=now - timedelta(
                minutes=10 - number))
    lost = await ratings.rating_of(pool, bia, Variant.PAULISTA, 2)
    assert await ledger.balance(pool, bia) == 900

    # the player appeals the latest record from her page, on a phone
    await player.goto(live.url("/me"))
    await expect(player.locator("#pause")).to_contain_text("Suspenso")
    await player.get_by_label("Contestar este registro").first.fill(
        "A luz acabou no bairro inteiro.")
    await player.get_by_role("button", name="Enviar recurso").first.click()
    await expect(player.get_by_text("A luz acabou no bairro inteiro.")).to_be_visible()
    # the appeal is confirmed on the record it was sent for (it said nothing)
    done = player.get_by_role("status").filter(has_text="Recurso enviado")
    await expect(done).to_have_count(1)
    await expect(done).to_be_in_viewport()
    assert await no_horizontal_scroll(player)

    # the operator filters the queue by player and opens the appealed record
    await judge.goto(live.url("/operator/abandonments"))
    await judge.get_by_label("Jogador").fill("bia")
    await judge.get_by_label("Recurso").select_option("yes")
    await judge.get_by_role("button", name="Filtrar").click()
    records = judge.locator("#records li")
    await expect(records).to_have_count(1)
    await records.get_by_role("link").click()
    await expect(judge.get_by_role("heading", name="Registro de abandono 2")).to_be_visible()
    await expect(judge.locator("#appeal-text")).to_have_text("A luz acabou no bairro inteiro.")
    # what was typed keeps its line breaks (they were shown as one line)
    assert await judge.locator("#appeal-text").evaluate(
        "(n) => getComputedStyle(n).whiteSpace") == "pre-line"
    timeline = judge.locator("#timeline li")
    await expect(timeline).to_have_count(len(EVIDENCE))
    await expect(timeline.nth(0)).to_contain_text("Desconectou")
    await expect(timeline.nth(2)).to_contain_text("Ação automática")
    hand = judge.locator("#hands").get_by_role("link", name="Registro assinado da mão "
                                                            "00000000000000e2-3")
    await expect(hand).to_have_attribute("href", "/hands/00000000000000e2-3")
    await screenshot(judge, "operator-abandonment")

    # overturn it from the keyboard: the decision and the note are labelled fields
    await judge.get_by_label("O que fazer com o registro").select_option("overturn")
    await judge.get_by_label("Nota da decisão").fill("Queda de energia confirmada.")
    await judge.get_by_role("button", name="Registrar decisão").focus()
    await judge.keyboard.press("Enter")
    await expect(judge.locator("#decision-done")).to_contain_text("revertido")
    await expect(judge.locator("#record-status")).to_have_text("Revertido")
    await expect(judge.locator("#record-audit")).to_contain_text("Queda de energia confirmada.")
    await expect(judge.get_by_role("button", name="Registrar decisão")).to_have_count(0)

    assert await ledger.balance(pool, bia) == 950
    back = await ratings.rating_of(pool, bia, Variant.PAULISTA, 2)
    history = await ratings.history(pool, bia, Variant.PAULISTA, 2)
    assert history[0].reason == "reversal"
    assert back.rating == pytest.approx(lost.rating - (history[1].rating_after
                                                       - history[1].rating_before))
    assert await review.pause_remaining(pool, bia, datetime.now(UTC)) == timedelta(0)

    # the audit log page, and the phone width for the operator's pages
    await judge.set_viewport_size({"width": PHONE["width"], "height": PHONE["height"]})
    await judge.goto(live.url("/operator/audit"))
    await expect(judge.locator("#audit li").first).to_contain_text("Revertido")
    assert await no_horizontal_scroll(judge)
    await judge.goto(live.url("/operator/abandonments/2"))
    assert await no_horizontal_scroll(judge)
    await screenshot(judge, "operator-abandonment-phone")
    await player.reload()
    await expect(player.locator("#pause")).to_contain_text("Sem suspensão")
    await expect(player.locator("#chips-balance")).to_have_text("950")
    # her page says the decision: what it means, the operator's note, what came back, and the
    # annulled match
    await expect(player.locator("#record-2-meaning")).to_contain_text("Revertido: a operação")
    await expect(player.locator("#record-2-decision-1")).to_contain_text(
        "Queda de energia confirmada.")
    await expect(player.locator("#record-2-returned")).to_contain_text(
        "50 fichas e +")
    await expect(player.locator("#record-2-returned")).to_contain_text("suspensão retirada")
    await expect(player.locator('li[data-match="ranked:00000000000000e2:1"]')).to_contain_text(
        "anulada na revisão: pontos devolvidos")
    assert await no_horizontal_scroll(player)
    for path in ("/ranked", "/leaderboard", "/arena", "/me"):
        await player.goto(live.url(path))
        await expect(player.get_by_role("navigation", name="Ranqueadas")).to_be_visible()
        assert await no_horizontal_scroll(player), path
    await judge.goto(live.url("/operator/abandonments"))
    assert await no_horizontal_scroll(judge)
    # on a phone the filters fold (they filled the first screen): the list shows at once, and
    # the filters open from their heading; in use, they come open and say how many
    filters = judge.locator("#filters")
    await expect(filters).not_to_have_attribute("open", "")
    await expect(judge.locator("#records li").first).to_be_in_viewport()
    await judge.locator("#filters summary").click()
    await expect(judge.get_by_label("Recurso (só revisão)")).to_be_visible()
    await judge.goto(live.url("/operator/abandonments?status=overturned&player=bia"))
    await expect(filters).to_have_attribute("open", "")
    await expect(judge.locator("#filters-title")).to_have_text("Filtros (2 em uso)")
    await screenshot(player, "ranked-me-phone")


async def test_a_player_queues_from_the_page_with_the_keyboard(
    ranked_server: LiveServer, browser: Browser
) -> None:
    live = ranked_server
    page = await new_page(browser, live, PHONE)
    await signup(page, live, "caio")
    await page.goto(live.url("/ranked"))
    await expect(page.locator("#queue-state")).to_have_attribute("data-state", "idle")
    await page.get_by_label("Variante").select_option("argentino")
    await page.get_by_label("Formato").select_option("2")
    await page.get_by_role("button", name="Entrar na fila").focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#queue-state")).to_have_attribute("data-state", "queued")
    await expect(page.get_by_text("Argentino 1x1", exact=True)).to_be_visible()
    assert await no_horizontal_scroll(page)
    await screenshot(page, "ranked-queue-phone")
    await page.get_by_role("button", name="Sair da fila").click()
    await expect(page.locator("#queue-state")).to_have_attribute("data-state", "idle")


async def test_a_page_left_open_cannot_decide_on_a_record_that_changed(
    ranked_server: LiveServer, browser: Browser
) -> None:
    """Two tabs on the same pending record: the one decided in the other tab is refused, says
    why, and shows the record as it is now (the other decision, in the audit)."""
    live = ranked_server
    pool = live.app[POOL]
    tab_a = await new_page(browser, live)
    await signup(tab_a, live, "judge")
    assert await set_role(pool, "judge", Role.OPERATOR)
    tab_b = await tab_a.context.new_page()
    ana = await register(pool, "ana", "truco na praia 42", MINIMUM)
    bia = await register(pool, "bia", "truco na praia 42", MINIMUM)
    now = datetime.now(UTC)
    await ledger.hold_stakes(pool, f"ranked:{TABLE}:1", [ana.id, bia.id], 50)
    await settle_match(
        pool, table_id=TABLE, match_number=1, kind=TableKind.RANKED, variant=Variant.PAULISTA,
        seats=2, users_by_seat=[ana.id, bia.id], termination=Termination.ABANDONMENT,
        winner_team=0, forfeit_seat=1, restart_overlap=False, evidence=EVIDENCE,
        started_at=now - timedelta(minutes=10), ended_at=now - timedelta(minutes=1))
    for tab in (tab_a, tab_b):
        await tab.goto(live.url("/operator/abandonments/1"))
    await tab_b.get_by_label("O que fazer com o registro").select_option("uphold")
    await tab_b.get_by_label("Nota da decisão").fill("Mantido na outra aba.")
    await tab_b.get_by_role("button", name="Registrar decisão").click()
    await expect(tab_b.locator("#decision-done")).to_contain_text("mantido")

    await tab_a.get_by_label("O que fazer com o registro").select_option("overturn")
    await tab_a.get_by_label("Nota da decisão").fill("Revertido numa página velha.")
    await tab_a.get_by_role("button", name="Registrar decisão").click()
    await expect(tab_a.locator("#decision-error")).to_have_text(
        "O registro mudou desde que você abriu a página: leia de novo antes de decidir.")
    await expect(tab_a.locator("#record-status")).to_have_text("Mantido")
    await expect(tab_a.locator("#record-audit")).to_contain_text("Mantido na outra aba.")
    await expect(tab_a.get_by_label("Nota da decisão")).to_have_value(
        "Revertido numa página velha.")
    assert (await review.get_record(pool, 1)).status.value == "upheld"
    assert await ledger.balance(pool, bia.id) == 950
