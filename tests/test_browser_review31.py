"""What the thirty-first session's review of a new player's first evening found, fixed and kept
fixed: the lobby brought back by the Back button refreshes at once, a mão de ferro's end asks
for nothing more (tests/test_browser_views.py), leaving a match in play is warned of and the
lobby says what it costs, and the rules are on the site."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
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
