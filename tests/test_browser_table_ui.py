"""The table and lobby pages' small promises, in a real Chromium against the real server.

Keyboard focus that survives my own moves and the lobby's refresh, a click while the socket is
down that says so, a refused reconnect that is explained instead of retried forever, a way to
leave a finished table, lobby buttons that send one request at a time, and a pt-BR text for every
refusal the table socket can send.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from typing import Any

from playwright.async_api import Browser, Route, WebSocket, WebSocketRoute, expect

from server.live import HOUSE
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    leave_elsewhere,
    live_server_fixture,
    lobby_refreshes,
    new_page,
    play_hand,
    signup,
)
from tests.test_live_house_guards import until
from truco.reasons import Reason

FOCUS_PLACE_JS = """() => {
  const a = document.activeElement;
  const group = a.closest('#my-hand, #actions');
  return group ? group.id : a.tagName;
}"""


async def test_focus_stays_on_the_table_after_my_own_moves(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "ui_focus")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    accept = page.locator('#actions button[data-action="accept"]:not([disabled])')
    await expect(playable.or_(accept).first).to_be_visible()
    moves = 0
    for target in (accept, playable):
        if not await target.count():
            continue
        await target.first.focus()
        await page.keyboard.press("Enter")
        moves += 1
        await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
        # the answer rebuilt the buttons: the focus is still among them, never on <body>
        await page.wait_for_timeout(300)
        assert await page.evaluate(FOCUS_PLACE_JS) in ("my-hand", "actions")
    assert moves >= 1


async def test_a_click_while_the_socket_is_down_says_so(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    routes: list[WebSocketRoute] = []
    allow = {"reconnect": False}
    # what the page sent into a reconnect while the network was down (it must never open)
    leaked: list[str | bytes] = []

    async def route(ws: WebSocketRoute) -> None:
        routes.append(ws)
        if len(routes) > 1 and not allow["reconnect"]:
            # the network is down: the reconnect fails before it opens. It is closed before the
            # handler returns: Playwright opens a mocked socket the handler leaves unclosed, and a
            # click landing while it was open went out into it (the page sends on an open socket)
            ws.on_message(lambda message: leaked.append(message))
            await ws.close(code=4000, reason="test: offline")
            return
        ws.connect_to_server()

    await page.route_web_socket(re.compile(r"/ws/tables/"), route)
    await signup(page, live_server, "ui_offline")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    accept = page.locator('#actions button[data-action="accept"]:not([disabled])')
    # my first decision: a card, or an answer when the robot, mano, asked for truco first
    mine = playable.or_(accept).first
    await expect(mine).to_be_visible()
    await routes[0].close(code=4000, reason="test: connection dropped")
    await expect(page.locator("#conn-status")).not_to_have_attribute("data-state", "connected")
    await until(lambda: len(routes) > 1)  # it has tried to reconnect
    await mine.click()
    await expect(page.locator("#table-error")).to_have_text("Sem conexão; tente de novo.")
    assert leaked == []  # no reconnect got through
    # the click was not queued: nothing is waiting for an answer
    await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    allow["reconnect"] = True
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")


async def test_a_table_gone_while_away_is_explained_not_retried(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    sockets: list[WebSocket] = []
    page.on("websocket", lambda ws: sockets.append(ws))
    routes: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        routes.append(ws)
        ws.connect_to_server()

    await page.route_web_socket(re.compile(r"/ws/tables/"), route)
    await signup(page, live_server, "ui_gone")
    table_id = await create_table(page, "paulista", 2, "training")
    assert len(sockets) == 1
    # the only player leaves from elsewhere (another tab): the table closes and the server
    # stops serving it; when this page's socket then drops, its reconnect is refused (404)
    assert await leave_elsewhere(page, table_id) == 200
    await routes[0].close(code=4000, reason="test: connection dropped")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "closed")
    # no match was played there: "not found", with the way on
    await expect(page.locator("#table-gone")).to_contain_text("Mesa não encontrada")
    tries = len(sockets)
    await page.wait_for_timeout(3000)
    assert len(sockets) == tries  # no more attempts
    assert tries <= 3


async def test_a_tab_over_the_socket_limit_says_so_and_gets_in_once_one_closes(
    live_server: LiveServer, browser: Browser
) -> None:
    # a user may hold so many table sockets (32); the next tab's handshake is refused with a
    # 429 the browser cannot read: it used to retry without a word
    house = live_server.app[HOUSE]
    house.settings = dataclasses.replace(house.settings, max_sockets_per_user=1)
    first = await new_page(browser, live_server)
    await signup(first, live_server, "ui_tabs")
    table_id = await create_table(first, "paulista", 2, "training")
    await expect(first.locator("#conn-status")).to_have_attribute("data-state", "connected")
    second = await first.context.new_page()
    second.on("pageerror", lambda error: live_server.page_errors.append(str(error)))
    await second.goto(live_server.url(f"/t/{table_id}"))
    await expect(second.locator("#table-error")).to_contain_text("conexões demais abertas")
    await expect(second.locator("#conn-status")).to_contain_text("feche outras abas")
    # the same address without the upgrade: the socket would not be let in, and why
    status, body = await second.evaluate(
        """async (id) => {
          const r = await fetch(`/ws/tables/${id}`);
          return [r.status, await r.json()];
        }""",
        table_id,
    )
    assert (status, body["error"]) == (429, "too_many_sockets")
    await first.close()
    await expect(second.locator("#conn-status")).to_have_attribute(
        "data-state", "connected", timeout=15_000)


def _finished_table(table_id: str, *, rematch: list[int]) -> dict[str, Any]:
    return {
        "id": table_id, "variant": "paulista", "seats": 2, "mode": "vote", "kind": "training",
        "status": "finished", "owner": "ui_done",
        "players": [
            {"seat": 0, "name": "ui_done", "bot": False, "connected": True},
            {"seat": 1, "name": "Robô", "bot": True, "connected": True},
        ],
        "score": [12, 7], "match": 1, "hand": 9, "you": 0, "rematch": rematch, "invite": None,
    }


async def test_a_finished_table_can_be_left_and_lobby_buttons_wait(
    live_server: LiveServer, browser: Browser
) -> None:
    table_id = "00000000000000bb"
    page = await new_page(browser, live_server)
    await signup(page, live_server, "ui_done")

    # the table socket: a finished match (its status and nothing else), answered here
    def socket(ws: WebSocketRoute) -> None:
        def on_message(text: str | bytes) -> None:
            if json.loads(text)["type"] != "hello":
                return
            now = int(time.time() * 1000)
            table = _finished_table(table_id, rematch=[])
            ws.send(json.dumps({
                "type": "welcome", "table": table, "seat": 0, "seq": 40, "epoch": 1,
                "server_time_ms": now, "signals": [], "limits": {},
            }))
            ws.send(json.dumps({
                "type": "snapshot", "seq": 40, "epoch": 1, "server_time_ms": now,
                "table": table, "hand": None, "view": None, "pending": [], "absent": [],
            }))

        ws.on_message(on_message)

    # the lobby requests: slow, and counted
    posts: list[str] = []

    async def lobby(route: Route) -> None:
        path = route.request.url.rsplit("/", 1)[1]
        posts.append(path)
        await asyncio.sleep(1)
        if path == "rematch":
            table = _finished_table(table_id, rematch=[0])
        else:
            table = {**_finished_table(table_id, rematch=[]), "status": "open", "you": None}
        await route.fulfill(status=200, content_type="application/json",
                            body=json.dumps({"table": table}))

    await page.route_web_socket(re.compile(r"/ws/tables/"), socket)
    await page.route(re.compile(rf"/api/tables/{table_id}/(rematch|leave)$"), lobby)
    await page.goto(live_server.url(f"/t/{table_id}"))
    over = page.locator("#match-over")
    await expect(over).to_be_visible()
    rematch = over.get_by_role("button", name="Revanche")
    leave = over.get_by_role("button", name="Sair da mesa")
    await expect(rematch).to_be_visible()
    await expect(leave).to_be_visible()
    # the two ways out are told apart where the seat matters, for a rematch
    await expect(over.locator("#leave-hint")).to_have_text(
        "“Sair da mesa” libera o seu lugar; “Voltar às mesas” só volta à lista de mesas, e o"
        " lugar continua seu (para uma revanche).")
    # a double click sends one request; the button waits for its answer
    await page.evaluate(
        "() => { const b = document.getElementById('rematch'); b.click(); b.click(); }"
    )
    await expect(rematch).to_be_disabled()
    await expect(rematch).to_have_text("Revanche pedida: esperando os outros")
    assert posts == ["rematch"]
    await page.evaluate(
        "() => { const b = document.getElementById('leave-finished'); b.click(); b.click(); }"
    )
    await expect(leave).to_be_disabled()
    await page.wait_for_url(live_server.url("/"))
    assert posts == ["rematch", "leave"]


async def test_the_lobby_refresh_keeps_the_focus_in_my_tables(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    refreshes = lobby_refreshes(page)
    await signup(page, live_server, "ui_lobby")
    await create_table(page, "paulista", 2, "training")
    await page.goto(live_server.url("/"))
    link = page.locator("#my-tables a").first
    await expect(link).to_be_visible()
    await link.focus()
    await page.evaluate("() => { document.activeElement.dataset.marked = 'yes'; }")
    begun = len(refreshes)
    await until(lambda: len(refreshes) >= begun + 2, 30)  # a refresh since, shown whole
    assert await page.evaluate("() => document.activeElement.dataset.marked") == "yes"
    # every refusal the table socket can send has its own pt-BR text, the engine's too
    codes = [
        "in_doubt", "unavailable", "shutting_down", "action_limit", "bad_action", "bad_message",
        "hello_first", "internal_error", "bad_form", "too_many_tables", "too_many_matches",
        "too_many_sockets", "too_many_connections", "bad_signal", "no_partner", "too_many_signals",
        "bad_characters", "private_table", *(reason.value for reason in Reason),
    ]
    texts = await page.evaluate(
        """async (codes) => {
          const c = await import("/static/js/common.js");
          return codes.map((code) => c.apiMessage(code, "ENGLISH FALLBACK"));
        }""",
        codes,
    )
    for code, text in zip(codes, texts, strict=True):
        assert text != "ENGLISH FALLBACK", code
    assert texts[0] == (
        "Não foi possível confirmar a jogada; a mesa foi recarregada: confira se ela valeu."
    )
    # private tables are never listed here (they are joined by their invite link): the lobby
    # has no invite code field, by another player's listed table nor anywhere (the private
    # table made first: the list that shows the other is later than both)
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "ui_lobby_c")
    private = await create_table(owner, "paulista", 2, "private")
    other = await new_page(browser, live_server)
    await signup(other, live_server, "ui_lobby_b")
    listed = await create_table(other, "paulista", 2, "training")
    await expect(page.locator(f'#lobby-tables li[data-table="{listed}"]')).to_be_visible()
    await expect(page.locator(f'#lobby-tables li[data-table="{private}"]')).to_have_count(0)
    await expect(page.locator("#lobby-tables input")).to_have_count(0)


async def test_live_checks_pin_the_house_key_from_the_api(
    live_server: LiveServer, browser: Browser
) -> None:
    # a house key that is not the one signing this table's anchors and records: both live
    # checks must fail, not trust the key each statement carries
    page = await new_page(browser, live_server)

    async def other_key(route: Route) -> None:
        await route.fulfill(status=200, content_type="application/json",
                            body=json.dumps({"key_id": "00" * 8, "public_key": "ab" * 32}))

    await page.route(re.compile(r"/api/key$"), other_key)
    await signup(page, live_server, "ui_key")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-chain")).to_have_attribute("data-state", "fail")
    await expect(page.locator("#fair-chain")).to_contain_text("não pela chave publicada da casa")
    await play_hand(page, Policy())
    await expect(page.locator("#fair-last")).to_have_attribute("data-state", "fail")
    await expect(page.locator("#fair-last")).to_contain_text("FALHOU (key)")
