"""A player whose network goes away (a phone review: 8 s and then 45 s offline, the page said
"Conectado" the whole time, a tapped card stayed busy without a word, and the match was lost
by abandonment while it waited): the page says so at once, and is back at the table by itself
when the network is.

The silent kind (no `offline` from the browser: a radio asleep, a connection the network
dropped) is the page's own watch: it asks the server (`ping`) after 10 s of silence and gives
the socket up after 20 s; a test holds every answer of a socket to see it."""

from __future__ import annotations

import asyncio
import json
import re

from playwright.async_api import Browser, WebSocketRoute, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PHONE,
    LiveServer,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    signup,
)


async def test_the_page_says_it_is_offline_and_comes_back_by_itself(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "sem_rede")
    await create_table(page, "paulista", 2, "training")
    status = page.locator("#conn-status")
    await page.context.set_offline(True)
    await expect(status).to_have_attribute("data-state", "reconnecting")
    await expect(status).to_have_text(
        "Sem internet: a mesa volta sozinha quando a conexão voltar.")
    await page.context.set_offline(False)
    await expect(status).to_have_attribute("data-state", "connected", timeout=10_000)


async def test_a_silent_socket_is_pinged_then_given_up(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "rede_muda")
    sockets: list[WebSocketRoute] = []
    silenced: set[int] = set()  # sockets whose server falls silent (nothing reaches the page)
    pings: list[int] = []

    def route(ws: WebSocketRoute) -> None:
        index = len(sockets)
        sockets.append(ws)
        server = ws.connect_to_server()

        def from_page(text: str | bytes) -> None:
            if json.loads(text)["type"] == "ping":
                pings.append(index)
            server.send(text)

        def from_server(text: str | bytes) -> None:
            if index not in silenced:
                ws.send(text)

        ws.on_message(from_page)
        server.on_message(from_server)

    await page.route_web_socket("**/ws/tables/**", route)
    await create_table(page, "paulista", 2, "private")
    status = page.locator("#conn-status")
    await expect(status).to_have_attribute("data-state", "connected")
    # the status's every state, kept by the page (a state may last a quarter of a second)
    await page.evaluate("""() => { window.seenStates = [];
      new MutationObserver(() => window.seenStates.push(
        document.getElementById("conn-status").dataset.state)).observe(
        document.getElementById("conn-status"), { attributes: true }); }""")
    # every socket open now falls silent: pinged after 10 s, given up 10 s later, and a new
    # socket (not silenced) is welcomed as ever
    silenced.update(range(len(sockets)))
    for _ in range(450):
        if len(sockets) > len(silenced):
            break
        await asyncio.sleep(0.1)
    await expect(status).to_have_attribute("data-state", "connected", timeout=15_000)
    assert any(i in silenced for i in pings) and len(sockets) > len(silenced)
    assert "reconnecting" in await page.evaluate("() => window.seenStates")


async def test_a_move_into_a_stalled_link_says_the_link_is_slow(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review's stalled link: the card tapped stayed busy and the page said "Conectado" for
    # 22 s (a ping only after 10 s of silence, the socket given up 10 s later) while the clock
    # ran out. A move unanswered for 3 s now asks at once, and the page says the link is slow
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "rede_lenta")
    silent = asyncio.Event()
    pinged: list[float] = []
    moved: list[float] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(text: str | bytes) -> None:
            kind = json.loads(text)["type"]
            now = asyncio.get_running_loop().time()
            if kind == "action" and not moved:
                moved.append(now)
                silent.set()  # from this move on, the link stalls: nothing reaches the page
            elif kind == "ping" and silent.is_set():
                pinged.append(now)
            server.send(text)

        def from_server(text: str | bytes) -> None:
            if not silent.is_set():
                ws.send(text)

        ws.on_message(from_page)
        server.on_message(from_server)

    await page.route_web_socket("**/ws/tables/**", route)
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    accept = page.locator('#actions button[data-action="accept"]:not([disabled])')
    await expect(playable.or_(accept).first).to_be_visible(timeout=15_000)
    await playable.or_(accept).first.click()
    status = page.locator("#conn-status")
    await expect(status).to_have_attribute("data-state", "slow", timeout=6_000)
    await expect(status).to_have_text("Conexão lenta: a sua jogada ainda não teve resposta…")
    assert moved and pinged and pinged[0] - moved[0] < 6.0  # asked at once, not after 10 s
    # still silent: given up 20 s after the move (the house answers a ping only after a move
    # that waits on its database), and back on a new socket, as ever
    # ("reconnecting" lasts until the next try, a quarter of a second later: "connecting")
    await expect(status).to_have_attribute("data-state", re.compile("^(reconnecting|connecting)$"),
                                           timeout=25_000)
    assert asyncio.get_running_loop().time() - moved[0] > 19.0


async def test_a_move_the_clock_overtook_says_so(
    live_server: LiveServer, browser: Browser
) -> None:
    # a move refused because the seat acted after the page's `last_seq` (the clock, while the
    # link stalled) said "A mão mudou antes da sua jogada chegar", though the hand had not
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "relogio_antes")
    moves: list[dict[str, object]] = []
    seen: list[int] = []  # the highest seq of a table event the page was sent, at each move
    seqs = [0]

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(text: str | bytes) -> None:
            message = json.loads(text)
            if message["type"] == "action":
                moves.append(message)
                seen.append(max(seqs))
                if len(moves) == 2:  # as if chosen before the first: the seat acted since
                    message["last_seq"] = 1
                    text = json.dumps(message)
            server.send(text)

        def from_server(text: str | bytes) -> None:
            message = json.loads(text)
            if message["type"] not in ("welcome", "ack") and isinstance(message.get("seq"), int):
                seqs.append(message["seq"])
            ws.send(text)

        ws.on_message(from_page)
        server.on_message(from_server)

    await page.route_web_socket("**/ws/tables/**", route)
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    accept = page.locator('#actions button[data-action="accept"]:not([disabled])')
    move = playable.or_(accept).first
    await expect(move).to_be_visible(timeout=15_000)
    await move.click()
    await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    await expect(move).to_be_visible(timeout=15_000)
    await move.click()
    await expect(page.locator("#table-error")).to_have_text(
        "A mesa já tinha agido por você (o relógio) antes desta jogada chegar: nada foi feito,"
        " escolha de novo.")
    assert len(moves) == 2 and moves[0]["hand"] == moves[1]["hand"]
    # a move says the table as the page saw it: the highest seq it was sent (a mutation audit)
    assert moves[0].get("last_seq") == seen[0] > 0, (moves[0], seen)
