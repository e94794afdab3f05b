"""Reconnecting around the entropy window, in a real Chromium against the real server.

A dropped socket is reconnected by the page; what it must then do with its entropy depends on what
the catch-up (a replay up to the welcome's `seq`, or a snapshot) shows: a hand still collecting
entropy without mine gets my stored contribution again, unchanged; a hand already dealt gets none
(a new one would be refused, `entropy_closed`, and later read as a failed `mine` check). A
contribution that never reached the table in time is said so, not called a failure.

Every table socket goes through Playwright's `route_web_socket`, so a test can cut it, hold
what the page sends, or delay one message, as a bad network would.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page, WebSocketRoute, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    play_hand,
    signup,
)


@dataclass
class Conn:
    """One table socket as the route saw it."""

    route: WebSocketRoute
    from_page: list[dict[str, Any]] = field(default_factory=list)
    from_server: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Network:
    """Every table socket of a page, with hooks to drop, hold or cut.

    `to_page(conn_index, message) -> bool` says whether a message reaches the page (False:
    dropped); `to_server(conn_index, message)` whether one reaches the server: True, False
    (dropped) or a number of seconds it is delayed. `hold_s[conn_index]` holds everything the
    page sends on that socket for so many seconds before letting it through.
    """

    conns: list[Conn] = field(default_factory=list)
    to_page: Callable[[int, dict[str, Any]], bool] = lambda index, message: True
    to_server: Callable[[int, dict[str, Any]], bool | float] = lambda index, message: True
    hold_s: dict[int, float] = field(default_factory=dict)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def route(self, ws: WebSocketRoute) -> None:
        index = len(self.conns)
        conn = Conn(ws)
        self.conns.append(conn)
        server = ws.connect_to_server()
        held: list[str | bytes] | None = [] if self.hold_s.get(index) else None

        def from_server(message: str | bytes) -> None:
            data = json.loads(message)
            conn.from_server.append(data)
            if self.to_page(index, data):
                ws.send(message)

        def from_page(message: str | bytes) -> None:
            data = json.loads(message)
            conn.from_page.append(data)
            verdict = self.to_server(index, data)
            if verdict is False:
                return
            if verdict is not True:
                self.spawn(self.later(float(verdict), lambda: server.send(message)))
            elif held is not None:
                held.append(message)
            else:
                server.send(message)

        async def release() -> None:
            nonlocal held
            await asyncio.sleep(self.hold_s[index])
            waiting, held = held or [], None
            for message in waiting:
                server.send(message)

        server.on_message(from_server)
        ws.on_message(from_page)
        if held is not None:
            self.spawn(release())

    @staticmethod
    async def later(delay_s: float, then: Callable[[], None]) -> None:
        await asyncio.sleep(delay_s)
        then()

    def cut(self, index: int) -> None:
        self.spawn(self.conns[index].route.close(code=4000, reason="test: network cut"))

    def entropy_sent(self, index: int) -> list[dict[str, Any]]:
        return [m for m in self.conns[index].from_page if m.get("type") == "entropy"]

    def errors(self, index: int) -> list[str]:
        return [m["error"] for m in self.conns[index].from_server if m.get("type") == "error"]


async def start_training(page: Page, live: LiveServer, net: Network, name: str) -> str:
    await page.route_web_socket(re.compile(r"/ws/tables/"), net.route)
    await signup(page, live, name)
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    return table_id


async def record_of(page: Page, table_id: str, hand: int) -> dict[str, Any]:
    text = await page.evaluate("async (u) => (await fetch(u)).text()", f"/hands/{table_id}-{hand}")
    return dict(json.loads(text))


async def until(check: Callable[[], bool], page: Page, timeout_s: float = 20) -> None:
    for _ in range(int(timeout_s * 10)):
        if check():
            return
        await page.wait_for_timeout(100)
    raise AssertionError("timed out waiting for the network condition")


async def check_of_hand(page: Page, hand: int) -> tuple[str, str]:
    """The table's own verdict on the finished hand `hand` (`#fair-last`), once it is there."""
    last = page.locator("#fair-last")
    await expect(last).to_contain_text(f"mão {hand}:", timeout=30_000)
    return (await last.get_attribute("data-state") or "", await last.text_content() or "")


async def test_a_replay_that_crosses_the_deal_sends_no_entropy(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    state = {"cut": False}

    def to_page(index: int, message: dict[str, Any]) -> bool:
        # the first socket dies just as hand 2 is committed: the page never sees it live
        if index == 0 and not state["cut"] and message.get("type") == "commitment" \
                and message["hand"] >= 2:
            state["cut"] = True
            net.cut(0)
        return not (index == 0 and state["cut"])

    # the reconnect is slow (6 s): by then the entropy window (3 s) closed and the hand was dealt
    net = Network(to_page=to_page, hold_s={1: 6.0})
    await start_training(page, live_server, net, "rec_a1")
    await play_hand(page, Policy())
    await until(lambda: len(net.conns) >= 2 and any(
        m.get("type") == "update" and m.get("hand") == 2 for m in net.conns[1].from_server
    ), page)
    # the catch-up replayed hand 2's commitment and then its deal: no entropy for a dealt hand
    replay = [m.get("type") for m in net.conns[1].from_server]
    assert "commitment" in replay and replay.index("commitment") < replay.index("update")
    # shown once the page took in the catch-up (before it, hand 1's contribution is shown)
    await expect(page.locator("#fair-mine")).to_have_text("(nenhuma guardada neste navegador)")
    # and the finished hand 2 is checked, not failed for a contribution it never had
    await play_hand(page, Policy())
    # my moves went out on socket 1 after anything the catch-up made the page send
    assert [m for m in net.entropy_sent(1) if m["hand"] == 2] == []
    assert "entropy_closed" not in net.errors(1)
    verdict, text = await check_of_hand(page, 2)
    assert verdict == "ok", text
    assert "FALHOU" not in text


async def test_entropy_lost_in_flight_is_sent_again_unchanged(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    state = {"cut": False}

    def to_server(index: int, message: dict[str, Any]) -> bool:
        # the socket dies with hand 2's entropy on its way: the server never gets it
        if index == 0 and not state["cut"] and message.get("type") == "entropy" \
                and message["hand"] >= 2:
            state["cut"] = True
            net.cut(0)
            return False
        return not (index == 0 and state["cut"])

    net = Network(to_server=to_server)
    table_id = await start_training(page, live_server, net, "rec_b1")
    await play_hand(page, Policy())
    await until(lambda: state["cut"] and len(net.conns) >= 2 and bool(net.entropy_sent(1)), page)
    [lost] = [m for m in net.entropy_sent(0) if m["hand"] >= 2]
    [again] = net.entropy_sent(1)
    # the same contribution, byte for byte, for the same hand
    assert again == lost
    await until(lambda: any(
        m.get("type") == "ack" and m.get("id") == lost["id"] for m in net.conns[1].from_server
    ), page)
    await expect(page.locator("#fair-mine")).to_have_text(lost["hex"])
    await expect(page.locator("#fair-mine-note")).to_have_text("(recebida pela mesa)")
    await play_hand(page, Policy())
    verdict, text = await check_of_hand(page, lost["hand"])
    assert verdict == "ok", text
    assert "não chegou" not in text
    # the record has it, at my seat
    record = await record_of(page, table_id, lost["hand"])
    assert record["contributions"][0] == lost["hex"]


async def test_entropy_that_arrives_too_late_is_said_so_not_failed(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    state = {"delayed": 0}

    def to_server(index: int, message: dict[str, Any]) -> bool | float:
        # hand 2's entropy is stuck in the network for 4.5 s: past the 3 s window the hand is
        # dealt without it, and the server answers it with `entropy_closed`
        if not state["delayed"] and message.get("type") == "entropy" and message["hand"] >= 2:
            state["delayed"] = message["hand"]
            return 4.5
        return True

    net = Network(to_server=to_server)
    table_id = await start_training(page, live_server, net, "rec_c1")
    await play_hand(page, Policy())
    await until(lambda: "entropy_closed" in net.errors(0), page)
    hand = state["delayed"]
    [late] = [m for m in net.entropy_sent(0) if m["hand"] == hand]
    # not a table error in red: a plain note that it did not make it
    await expect(page.locator("#table-error")).to_contain_text(
        f"Sua entropia da mão {hand} não chegou a tempo"
    )
    await expect(page.locator("#fair-mine")).to_have_text(late["hex"])
    await expect(page.locator("#fair-mine-note")).to_contain_text("não chegou a tempo")
    await play_hand(page, Policy())
    verdict, text = await check_of_hand(page, hand)
    assert verdict == "ok", text
    assert "FALHOU" not in text and "não chegou a tempo" in text
    record = await record_of(page, table_id, hand)
    assert record["contributions"][0] is None
    # the hand page agrees: a warning for `mine`, not a failure
    await page.goto(live_server.url(f"/h/{table_id}/{hand}"))
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    await expect(page.locator('#checks [data-check="mine"]')).to_have_attribute(
        "data-status", "warn"
    )


async def test_a_slow_reconnect_after_a_lost_entropy_is_said_so_not_failed(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    state = {"cut": 0}

    def to_server(index: int, message: dict[str, Any]) -> bool:
        if index == 0 and not state["cut"] and message.get("type") == "entropy" \
                and message["hand"] >= 2:
            state["cut"] = message["hand"]
            net.cut(0)
            return False
        return not (index == 0 and state["cut"])

    # the entropy is lost with the socket, and the reconnect takes 6 s: the hand is dealt
    # without it; the catch-up shows that, so nothing is re-sent and nothing is called failed
    net = Network(to_server=to_server, hold_s={1: 6.0})
    await start_training(page, live_server, net, "rec_d1")
    await play_hand(page, Policy())
    await until(lambda: len(net.conns) >= 2 and any(
        m.get("type") == "update" and m.get("hand") == state["cut"]
        for m in net.conns[1].from_server
    ), page)
    await expect(page.locator("#fair-mine-note")).to_contain_text("não chegou a tempo")
    await play_hand(page, Policy())
    assert [m for m in net.entropy_sent(1) if m["hand"] == state["cut"]] == []
    verdict, text = await check_of_hand(page, state["cut"])
    assert verdict == "ok", text
    assert "FALHOU" not in text and "não chegou a tempo" in text
