"""A shared computer (an internet café, a family's): what the pages keep in the browser is kept
per account, so the next player to sign in sees none of the last one's tables, hands or
entropy (a privacy review: /me/hands listed the tables of the player before)."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from tests.test_browser_fairness_review import serve_chain
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PASSWORD,
    LiveServer,
    browser_fixture,
    kept_js,
    live_server_fixture,
    new_page,
    signup,
)
from truco.variants import MatchConfig, Variant
from verifier.samples import sample_table

TABLE = "00000000000000c4"


async def test_the_next_player_on_this_browser_sees_nothing_of_the_last_one(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    page = await new_page(browser, live)
    sample = sample_table(table_id=TABLE, config=MatchConfig(Variant.PAULISTA, 2), hands=2,
                          seed=4)
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    await signup(page, live, "cafe_ana")
    # ana played here (as table.js keeps a played hand and her entropy)
    await page.evaluate(kept_js("t", "localStorage.setItem(kept('hands'), JSON.stringify("
                                     "[{table: t, hand: 1, variant: 'paulista', seat: 0}]));"
                                     " localStorage.setItem(kept(`mine:${t}-1`), 'aa')"), TABLE)
    await page.goto(live.url("/me/hands"))
    await expect(page.locator(f'#hands-list section[data-table="{TABLE}"]')).to_be_visible()
    await page.get_by_role("button", name="Sair").click()
    await signup(page, live, "cafe_bia")
    await page.goto(live.url("/me/hands"))
    await expect(page.locator("#hands-status")).to_contain_text("Nenhuma mão ainda")
    await expect(page.locator(f'#hands-list section[data-table="{TABLE}"]')).to_have_count(0)
    # the same on the hand's page: bia's browser kept no entropy of hers there
    assert await page.evaluate(kept_js("t", "return localStorage.getItem(kept(`mine:${t}-1`))"),
                               TABLE) is None
    # and ana finds hers again when she comes back
    await page.get_by_role("button", name="Sair").click()
    await page.goto(live.url("/"))
    await page.locator("#login-name").fill("cafe_ana")
    await page.locator("#login-password").fill(PASSWORD)
    await page.get_by_role("button", name="Entrar", exact=True).click()
    await page.goto(live.url("/me/hands"))
    await expect(page.locator(f'#hands-list section[data-table="{TABLE}"]')).to_be_visible()
