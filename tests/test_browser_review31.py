"""What the thirty-first session's review of a new player's first evening found, fixed and kept
fixed: the lobby brought back by the Back button refreshes at once, a mão de ferro's end asks
for nothing more (tests/test_browser_views.py), leaving a match in play is warned of and the
lobby says what it costs, and the rules are on the site."""

from __future__ import annotations

import re

from playwright.async_api import Browser, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PASSWORD,
    LiveServer,
    browser_fixture,
    create_table,
    live_server_fixture,
    lobby_refreshes,
    new_page,
    signup,
)


async def test_the_lobby_brought_back_from_the_cache_refreshes_at_once(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "volta_0")
    begun = lobby_refreshes(page)
    await expect(page.locator("#my-tables")).to_contain_text("Você não está em nenhuma mesa.")
    await page.wait_for_timeout(300)
    before = len(begun)
    # as the browser does when Back restores the page from its back/forward cache
    await page.evaluate("""() => window.dispatchEvent(
        new PageTransitionEvent("pageshow", {persisted: true}))""")
    await page.wait_for_timeout(500)  # (the lobby's own refresh is 4 s after the last)
    assert len(begun) == before + 1
    # a page shown for the first time (not from the cache) is not asked for twice
    await page.evaluate("""() => window.dispatchEvent(
        new PageTransitionEvent("pageshow", {persisted: false}))""")
    await page.wait_for_timeout(500)
    assert len(begun) == before + 1


async def test_the_lobby_says_what_leaving_a_match_in_play_costs(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "saiu_0")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await page.get_by_role("link", name="Mesas", exact=True).first.click()
    item = page.locator(f'#my-tables .table-item[data-table="{table_id}"]')
    note = item.locator("p.away")
    await expect(note).to_contain_text(re.compile(
        r"Você saiu desta mesa com a partida em jogo: se não voltar em (\d+) s, a partida é"
        r" cancelada \(sem pontos\)"))
    seconds = int(re.search(r"em (\d+) s", await note.inner_text()).group(1))  # type: ignore[union-attr]
    assert 40 <= seconds <= 60
    await note.get_by_role("link", name="Voltar à mesa").click()
    await page.wait_for_url(f"**/t/{table_id}")
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")


async def test_the_table_links_its_variants_rules_in_another_tab(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "regras_0")
    await create_table(page, "argentino", 2, "training")
    link = page.get_by_role("link", name="Regras do Argentino (abre em outra aba)")
    await expect(link).to_have_attribute("href", "/regras#argentino")
    await expect(link).to_have_attribute("target", "_blank")
    async with page.context.expect_page() as opened:
        await link.click()
    rules = await opened.value
    await expect(rules.locator("#argentino")).to_be_in_viewport()
    # the table stays open, its seat taken, in the first tab
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")


async def test_a_2x2_seat_says_whose_partner_it_makes(
    live_server: LiveServer, browser: Browser
) -> None:
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "anfitria")
    table_id = await create_table(owner, "mineiro", 4, "training")
    # on the table page: the free seat opposite me is my partner's
    seats = owner.locator("#seat-list li")
    await expect(seats.nth(2)).to_contain_text("Lugar 3 (dupla A, seu parceiro): livre")
    await expect(seats.nth(1)).to_contain_text("Lugar 2 (dupla B): livre")
    guest = await new_page(browser, live_server)
    await signup(guest, live_server, "amiga")
    item = guest.locator(f'#lobby-tables li[data-table="{table_id}"]')
    await expect(item.get_by_role("button")).to_have_text([
        "Sentar no lugar 2 (dupla B)", "Sentar no lugar 3 (dupla A, parceiro de anfitria)",
        "Sentar no lugar 4 (dupla B)"])
    await item.get_by_role(
        "button", name="Sentar no lugar 3 (dupla A, parceiro de anfitria)").click()
    await guest.wait_for_url(f"**/t/{table_id}")
    await expect(owner.locator("#seat-list li").nth(2)).to_contain_text("Lugar 3 (dupla A): amiga")
    await expect(guest.locator("#seat-list li").nth(0)).to_contain_text(
        "Lugar 1 (dupla A): anfitria")
    await owner.context.close()
    await guest.context.close()


async def test_the_away_note_stays_true_while_the_keyboard_is_on_it(
    live_server: LiveServer, browser: Browser
) -> None:
    """The lobby leaves a list holding the focus alone, and the away note's seconds stood still
    under a keyboard user's focus, then outlived the match (an accessibility review): its words
    are updated in place, the focused link kept."""
    page = await new_page(browser, live_server)
    await signup(page, live_server, "foco_0")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await page.get_by_role("link", name="Mesas", exact=True).first.click()
    note = page.locator(f'#my-tables .table-item[data-table="{table_id}"] p.away')
    link = note.get_by_role("link", name="Voltar à mesa")
    await expect(link).to_be_visible()
    await link.focus()
    first = int(re.search(r"em (\d+) s", await note.inner_text()).group(1))  # type: ignore[union-attr]
    await page.wait_for_timeout(9000)  # two refreshes of the lists, the link focused
    later = int(re.search(r"em (\d+) s", await note.inner_text()).group(1))  # type: ignore[union-attr]
    assert later <= first - 5, (first, later)
    await expect(link).to_be_focused()


async def test_the_account_pages_answers_are_where_the_focus_goes(
    live_server: LiveServer, browser: Browser
) -> None:
    """After "Encerrar as outras sessões" the page's answer was below a phone's screen, the
    focus at the top (an accessibility review): it takes the focus. A second download within
    the limit failed silently (the link's `download` turned the refusal into a failed file):
    the refusal's page is shown."""
    page = await new_page(browser, live_server, {"width": 360, "height": 640})
    await signup(page, live_server, "sessoes_0")
    other = await new_page(browser, live_server)
    await other.goto(live_server.url("/"))
    await other.locator("#login-name").fill("sessoes_0")
    await other.locator("#login-password").fill(PASSWORD)
    await other.get_by_role("button", name="Entrar").click()
    await page.goto(live_server.url("/account"))
    await page.get_by_role("button", name="Encerrar as outras sessões").click()
    ended = page.locator("#sessions-ended")
    await expect(ended).to_have_text(re.compile("A outra sessão foi encerrada"))
    await expect(ended).to_be_focused()
    await expect(ended).to_be_in_viewport()
    async with page.expect_download() as downloading:
        await page.get_by_role("link", name="Baixar os meus dados").click()
    assert (await downloading.value).suggested_filename.startswith("barajamos-sessoes_0-")
    await page.get_by_role("link", name="Baixar os meus dados").click()
    await expect(page.get_by_role("alert")).to_contain_text("acabaram de ser baixados")


async def test_at_a_table_every_rules_link_opens_another_tab(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "abas_0")
    await create_table(page, "paulista", 2, "training")
    for where in ("header.site", "footer.site"):
        link = page.locator(where).get_by_role("link", name="Regras (abre em outra aba)")
        await expect(link).to_have_attribute("target", "_blank")
    # elsewhere the rules open in place
    await page.goto(live_server.url("/"))
    await expect(page.locator("header.site").get_by_role(
        "link", name="Regras", exact=True)).not_to_have_attribute("target", "_blank")
