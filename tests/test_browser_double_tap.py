"""A double tap on a phone makes one move, and the keyboard is never held back (a phone review:
the first tap played a card and won the round, the buttons were laid out again at once for my
lead, and the second tap played the card that came under the finger)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from playwright.async_api import Browser, WebSocketRoute, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PHONE,
    LiveServer,
    browser_fixture,
    live_server_fixture,
    signup,
)
from tests.test_browser_views import TABLE_ID, EngineTable, dealt
from truco import Action, ActionKind, MatchConfig, Variant, apply, new_match, parse_card, start_hand


async def test_a_double_tap_makes_one_move(live_server: LiveServer, browser: Browser) -> None:
    # seat 1 leads a 4; my 3 wins the round and I lead again at once
    state = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=0)
    state, _ = start_hand(state, dealt(0, [["3C", "4D", "5S"], ["4H", "6D", "7S"]], "KH"))
    state, _ = apply(state, Action(1, ActionKind.PLAY, card=parse_card("4H")))
    table = EngineTable(state, seat=0, names=["toque_duplo", "bot"])
    context = await browser.new_context(viewport=PHONE, has_touch=True,  # type: ignore[arg-type]
                                        is_mobile=True)
    page = await context.new_page()
    page.on("pageerror", lambda error: live_server.page_errors.append(str(error)))
    await signup(page, live_server, "toque_duplo")
    handler: Callable[[WebSocketRoute], None] = lambda ws: ws.on_message(  # noqa: E731
        lambda text: table.on_message(ws, text))
    await page.route_web_socket("**/ws/tables/**", handler)
    await page.goto(live_server.url(f"/t/{TABLE_ID}"))
    three = page.get_by_role("button", name="Jogar 3 de paus")
    await expect(three).to_be_enabled()
    await three.scroll_into_view_if_needed()
    box = await three.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    await page.touchscreen.tap(x, y)
    four = page.get_by_role("button", name="Jogar 4 de ouros")
    await expect(four).to_be_enabled()  # laid out again for my lead, a little lower
    moved = await four.bounding_box()
    assert moved is not None
    # the finger's second tap: where its first was, on the card laid out under it (or as near
    # to it as the card reaches: the nearest point of the card 6 px inside its edge)
    near = (x, min(max(y, moved["y"] + 6), moved["y"] + moved["height"] - 6))
    assert abs(near[1] - y) < 40
    await asyncio.sleep(0.1)
    await page.touchscreen.tap(*near)
    await page.wait_for_timeout(300)
    assert table.received == [{"seat": 0, "do": "play", "card": "3C"}]
    # the keyboard, right after those touches, is never held back (a review: a keyboard move
    # after a touch was taken for the touch's second tap)
    await four.focus()
    await page.keyboard.press("Enter")
    for _ in range(50):
        if len(table.received) == 2:
            break
        await asyncio.sleep(0.1)
    assert table.received[1] == {"seat": 0, "do": "play", "card": "4D"}
    await context.close()
