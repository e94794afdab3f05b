"""The table client on hands a quick live match rarely reaches: mão de ferro, mão de onze, envido.

The page is the real one, served by the real app; its WebSocket is answered by a small table run
in the test on the real engine (`truco`), speaking docs/PROTOCOL.md: `welcome` and `snapshot` on
`hello`, then for every action the client sends, the engine's transition as an `update` with the
seat's `view`, and the other seats' scripted answers. What the page shows and sends is checked
against what the engine says is legal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page, WebSocketRoute, expect

from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    live_server_fixture,
    new_page,
    screenshot,
    signup,
)
from truco import (
    Action,
    ActionKind,
    Deal,
    MatchConfig,
    MatchState,
    Variant,
    action_from_json,
    action_to_json,
    apply,
    new_match,
    parse_card,
    pending,
    start_hand,
    view,
)

TABLE_ID = "00000000000000aa"


def dealt(dealer: int, hands: list[list[str]], vira: str | None = None) -> Deal:
    return Deal(
        dealer=dealer,
        hands=tuple(tuple(parse_card(card) for card in hand) for hand in hands),
        vira=None if vira is None else parse_card(vira),
    )


@dataclass
class EngineTable:
    """One table on the real engine, answering one seat's page over the protocol."""

    state: MatchState
    seat: int
    names: list[str]
    # what the other seats do after each of mine: a list of actions per action I send
    script: list[list[Action]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 1
    # the table's hand number, and its match (a rematch numbers its hands on from the table's)
    number: int = 1
    match: int = 1
    match_first_hand: int = 1

    def table_json(self) -> dict[str, Any]:
        config = self.state.config
        return {
            "id": TABLE_ID, "variant": config.variant.value, "seats": config.seats,
            "mode": config.mode.value, "kind": "training", "status": "playing",
            "owner": self.names[0],
            "players": [
                {"seat": s, "name": name, "bot": s != self.seat, "connected": True}
                for s, name in enumerate(self.names)
            ],
            "score": list(self.state.score), "match": self.match, "hand": self.number,
            "match_first_hand": self.match_first_hand, "you": self.seat,
            "rematch": [], "invite": None,
        }

    def deadlines(self) -> list[dict[str, Any]]:
        due = int(time.time() * 1000) + 20_000
        return [
            {"seat": p.seat, "kind": p.kind.value, "team_vote": p.team_vote, "deadline_ms": due}
            for p in pending(self.state)
        ]

    def on_message(self, ws: WebSocketRoute, text: str | bytes) -> None:
        message = json.loads(text)
        now_ms = int(time.time() * 1000)
        if message["type"] == "hello":
            ws.send(json.dumps({
                "type": "welcome", "table": self.table_json(), "seat": self.seat,
                "seq": self.seq, "server_time_ms": now_ms, "signals": [],
                "limits": {"max_message_bytes": 4096, "rate_per_second": 20},
            }))
            ws.send(json.dumps({
                "type": "snapshot", "seq": self.seq, "server_time_ms": now_ms,
                "table": self.table_json(),
                "hand": {"hand": self.number, "phase": "playing", "commitment": "ab" * 32,
                         "chain_start": 1, "entropy_deadline_ms": None,
                         "entropy_from": [self.seat]},
                "view": view(self.state, self.seat), "pending": self.deadlines(), "absent": [],
            }))
        elif message["type"] == "action":
            self.received.append(message["action"])
            self.play(ws, action_from_json({"seat": self.seat, **message["action"]}))
            ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": self.seq}))
            for answer in self.script.pop(0) if self.script else []:
                self.play(ws, answer)

    def play(self, ws: WebSocketRoute, action: Action) -> None:
        self.state, events = apply(self.state, action)
        self.seq += 1
        ws.send(json.dumps({
            "type": "update", "seq": self.seq, "hand": self.number,
            "events": [event.to_json() for event in events],
            "view": view(self.state, self.seat), "pending": self.deadlines(), "absent": [],
        }))


async def open_table(
    live: LiveServer, browser: Browser, table: EngineTable, user: str,
    viewport: dict[str, int] | None = None,
) -> Page:
    page = await new_page(browser, live, viewport)
    await signup(page, live, user)
    handler: Callable[[WebSocketRoute], None] = lambda ws: ws.on_message(  # noqa: E731
        lambda text: table.on_message(ws, text)
    )
    await page.route_web_socket("**/ws/tables/**", handler)
    await page.goto(live.url(f"/t/{TABLE_ID}"))
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(page.locator("#board")).to_be_visible()
    return page


async def button_actions(page: Page) -> list[str]:
    return list(await page.eval_on_selector_all(
        "#actions button", "(nodes) => nodes.map((n) => n.dataset.action)"
    ))


async def test_mao_de_ferro_is_played_blind_by_position(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=1, score=(11, 11))
    state, _ = start_hand(state, dealt(1, [["3C", "4D", "5S"], ["2H", "6D", "7S"]], "KH"))
    # the bot takes the first round with 2H and leads the second with 7S
    reply = [Action(1, ActionKind.PLAY, position=0), Action(1, ActionKind.PLAY, position=2)]
    table = EngineTable(state, seat=0, names=["ferro_0", "bot"], script=[reply])
    page = await open_table(live_server, browser, table, "ferro_0")
    await expect(page.locator("#blind-note")).to_be_visible()
    await expect(page.locator("#hand-info")).to_contain_text("mão de ferro")
    # three face-down positions, no face anywhere in my hand, no raise
    await expect(page.locator("#my-hand button[data-position]")).to_have_count(3)
    await expect(page.locator("#my-hand .card[data-card]")).to_have_count(0)
    assert await button_actions(page) == []
    await page.get_by_role("button", name="Jogar a carta virada da posição 2").click()
    assert table.received == [{"seat": 0, "do": "play", "position": 1}]
    # the card is turned when played: the engine resolved position 2 to 4D
    await expect(page.locator('#rounds .play .card[data-card="4D"]')).to_be_visible()
    await expect(page.locator('#rounds .play .card[data-card="2H"]')).to_be_visible()
    await expect(page.locator("#my-hand button[data-position]")).to_have_count(2)
    # 5S loses the second round to 7S: the hand and the match are over with my 3C unplayed. It
    # stays face down, offered no more, and "Escolha uma posição" is said no more
    await page.get_by_role("button", name="Jogar a carta virada da posição 3").click()
    await expect(page.locator('#rounds .play .card[data-card="7S"]')).to_be_visible()
    await expect(page.locator("#my-hand button")).to_have_count(0)
    await expect(page.get_by_role("img", name="carta não jogada, virada")).to_have_count(1)
    await expect(page.locator("#blind-note")).to_be_hidden()


async def test_mao_de_onze_shows_the_partner_and_asks_play_or_run(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.PAULISTA, 4), first_dealer=3, score=(11, 5))
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    state, _ = start_hand(state, dealt(3, hands, "7C"))
    partner_votes = Action(2, ActionKind.ACCEPT)
    table = EngineTable(state, seat=0, names=["onze_0", "b1", "b2", "b3"],
                        script=[[partner_votes]])
    page = await open_table(live_server, browser, table, "onze_0")
    await expect(page.locator("#request")).to_contain_text("Mão de onze: a nossa dupla decide")
    # the team at onze sees the partner's cards, and only then
    await expect(page.locator("#partner-box")).to_be_visible()
    for card in hands[2]:
        await expect(page.locator(f'#partner-cards .card[data-card="{card}"]')).to_be_visible()
    assert await button_actions(page) == ["accept", "decline"]
    await expect(page.locator("#actions")).to_contain_text("Jogar a mão de onze (vale 3)")
    await expect(page.locator("#actions")).to_contain_text("Correr da mão de onze")
    # what the hand is worth is what playing it makes it (it said "Vale 1")
    await expect(page.locator("#hand-info")).to_contain_text("Vale 3 se for jogada")
    await screenshot(page, "table-mao-de-onze")
    await page.get_by_role("button", name="Jogar a mão de onze (vale 3)").click()
    assert table.received == [{"seat": 0, "do": "accept"}]
    # both partners said play: the hand is worth 3, my turn, and nobody may raise
    await expect(page.locator("#hand-value")).to_have_text("3")
    await expect(page.locator("#hand-info")).not_to_contain_text("se for jogada")
    # called by its name, not "mão especial"
    await expect(page.locator("#log")).to_contain_text("Nossa dupla vai jogar a mão de onze.")
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    await expect(playable).to_have_count(3)
    assert "raise" not in await button_actions(page)


async def test_argentino_envido_and_mazo_with_the_tantos_in_the_summary(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1, score=(14, 3))
    # my tanto: 7 and 6 of swords = 33; the bot's: 5 and 4 of cups = 29
    state, _ = start_hand(state, dealt(1, [["7S", "6S", "AD"], ["5H", "4H", "KC"]]))
    table = EngineTable(state, seat=0, names=["tango_0", "bot"],
                        script=[[Action(1, ActionKind.ACCEPT)], []])
    page = await open_table(live_server, browser, table, "tango_0")
    await expect(page.locator("#scoreboard")).to_contain_text("14 malas")
    await expect(page.locator("#scoreboard")).to_contain_text("3 malas")
    legal = sorted(a["do"] for a in view(state, 0)["legal"] if a["do"] != "play")
    assert sorted(await button_actions(page)) == legal
    await expect(page.locator("#actions")).to_contain_text("Truco! (vale 2)")
    await page.get_by_role("button", name="Envido (vale 2)", exact=True).click()
    await expect(page.locator("#log")).to_contain_text("Envido querido")
    await expect(page.locator("#scoreboard")).to_contain_text("(1 buena)")  # 14 + 2 = 16
    await page.get_by_role("button", name="Ir al mazo").click()
    assert [a["do"] for a in table.received] == ["envido", "fold"]
    summary = page.locator("#summary-body")
    # 33 is sung; the bot's 29 does not beat it ("son buenas") and is never shown
    await expect(summary).to_contain_text("Envido — querido: você com 33")
    await expect(summary).not_to_contain_text("29")
    # the envido winner's cards are shown at the end of the hand, said whose on screen too
    await expect(summary.locator("#summary-envido-cards")).to_have_text("As suas cartas no envido:")
    for card in ("7S", "6S", "AD"):
        await expect(summary.locator(f'.card[data-card="{card}"]')).to_be_visible()
    assert table.received[1] == action_to_json(Action(0, ActionKind.FOLD))
