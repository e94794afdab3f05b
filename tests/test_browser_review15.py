"""What the 15th review of the browser pages found, fixed and kept fixed.

Most tables are the engine tables of tests/test_browser_table_ux.py (`ReviewTable`: the real
page, its WebSocket answered in the test on the real engine), put where the reviewers saw each
defect; the lobby, `/me/hands` and `/me` are the real pages of a live server.
"""

from __future__ import annotations

import json

from playwright.async_api import Browser, Page, expect

from tests.test_browser_table_ux import ReviewTable, paulista_1x1
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    DESKTOP,
    LiveServer,
    browser_fixture,
    live_server_fixture,
    screenshot,
)
from tests.test_browser_views import open_table

PHONE = {"width": 390, "height": 844}


async def in_sight(page: Page, selector: str) -> None:
    """Wholly on the screen, and not under the actions bar stuck to its bottom."""
    await expect(page.locator(selector)).to_be_in_viewport(ratio=1)
    box = await page.locator(selector).bounding_box()
    bar = await page.locator("#actions").bounding_box()
    assert box is not None
    if bar is not None and bar["height"]:
        below, above = box["y"] + box["height"] <= bar["y"], box["y"] >= bar["y"] + bar["height"]
        assert below or above, (box, bar)


# --- 1. on a phone, my absence, the way back and an error are where I look ----------------------


async def test_on_a_phone_the_absence_notice_the_way_back_and_errors_are_in_sight(
    live_server: LiveServer, browser: Browser
) -> None:
    # a training 1x1 at 390 x 844: the first clock ran out, the page sits at my cards
    table = ReviewTable(paulista_1x1(), seat=0, names=["longe_eu", "bot"], absent=[0],
                        automatic=[1, 0])
    page = await open_table(live_server, browser, table, "longe_eu", PHONE)
    await expect(page.locator("#notice")).to_contain_text("Seu tempo acabou")
    await expect(page.locator("#my-hand")).to_be_focused()
    await page.evaluate("() => document.getElementById('my-hand').scrollIntoView({block: 'end'})")
    await page.wait_for_timeout(200)
    assert await page.evaluate("() => window.scrollY") > 300
    await in_sight(page, "#notice")
    await in_sight(page, "#back")
    await expect(page.locator("#my-hand button").first).to_be_in_viewport()
    # the cards are not under the notice: a card focused with the keyboard is scrolled clear
    last = page.locator("#my-hand button").last
    await last.focus()
    await page.wait_for_timeout(200)
    card = await last.bounding_box()
    alerts = await page.locator("#table-alerts").bounding_box()
    assert card is not None and alerts is not None
    assert card["y"] >= alerts["y"] + alerts["height"] - 1, (card, alerts)
    await screenshot(page, "table-absent-phone")
    # a refusal while I look at my cards is said where I look
    assert table.ws is not None
    table.ws.send(json.dumps({"type": "error", "id": None, "error": "nothing_to_answer",
                              "message": "x"}))
    await expect(page.locator("#table-error")).to_have_text("Não há pedido para responder.")
    await in_sight(page, "#table-error")
    # back: the notice and the button go, the focus goes on to my cards
    await page.get_by_role("button", name="Estou de volta").click()
    table.push({"type": "absent", "seat": 0, "absent": False, "automatic": 1,
                "pending": table.deadlines()})
    await expect(page.locator("#notice")).to_be_hidden()
    await expect(page.locator("#my-hand")).to_be_focused()
    await page.context.close()

    # on a wide screen nothing sticks: the notice stays above the board, in the page's flow
    table = ReviewTable(paulista_1x1(), seat=0, names=["longe_pc", "bot"], absent=[0])
    page = await open_table(live_server, browser, table, "longe_pc", DESKTOP)
    await expect(page.locator("#notice")).to_be_visible()
    assert await page.eval_on_selector(
        "#table-alerts", "(node) => getComputedStyle(node).position") == "static"
    notice = await page.locator("#notice").bounding_box()
    board = await page.locator("#board").bounding_box()
    assert notice is not None and board is not None and notice["y"] < board["y"]
    await page.context.close()
