"""What a player's review of the table and hand pages found, fixed and kept fixed.

Most tests answer the real table page's WebSocket with a small table on the real engine (as
tests/test_browser_views.py does), so a hand can be put exactly where the review saw the defect:
a match ended by abandonment in the middle of a hand, a raise button the focus could jump to, an
Argentino envido chain, 2x2 tables of bots. The bots' entropy on the hand page needs a real hand
at a real training table.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Dialog, Page, Route, WebSocketRoute, expect

from server.accounts import register
from server.app import PASSWORD_COST, POOL
from server.ranked import ledger, ratings
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    STEP_TIMEOUT_MS,
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    play_hand,
    screenshot,
    signup,
)
from tests.test_browser_views import TABLE_ID, EngineTable, dealt, open_table
from tests.test_live_house_guards import until
from truco import (
    Action,
    ActionKind,
    MatchConfig,
    MatchState,
    Termination,
    Variant,
    apply,
    forfeit,
    new_match,
    parse_card,
    start_hand,
    view,
)

PHONE = {"width": 390, "height": 844}
ABANDONED = "abandono (ações automáticas demais ou saída no meio da partida)"
VECTORS = Path(__file__).resolve().parent.parent / "verifier" / "vectors"


def paulista_1x1(score: tuple[int, int] = (0, 0)) -> MatchState:
    """A Paulista 1x1 dealt by seat 1 (3C 4D 5S to me at seat 0, 2H 6D 7S to seat 1, vira KH)."""
    state = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=1, score=score)
    return start_hand(state, dealt(1, [["3C", "4D", "5S"], ["2H", "6D", "7S"]], "KH"))[0]


def paulista_2x2() -> MatchState:
    """A Paulista 2x2 dealt by seat 3 (3C 4D 5S to me at seat 0, vira 7C)."""
    state = new_match(MatchConfig(Variant.PAULISTA, 4), first_dealer=3)
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    return start_hand(state, dealt(3, hands, "7C"))[0]


@dataclass
class ReviewTable(EngineTable):
    """The engine table of test_browser_views, with the table's kind and status, absent seats,
    people (not bots) at other seats, partner signals, and events pushed by the test."""

    kind: str = "training"
    status: str = "playing"
    absent: list[int] = field(default_factory=list)
    automatic: list[int] = field(default_factory=list)
    # seats whose player left the table since the match began (the server's `played_by`)
    gone: set[int] = field(default_factory=set)
    people: set[int] = field(default_factory=set)
    signals: list[dict[str, str]] = field(default_factory=list)
    forfeit_seat: int | None = None
    forfeit_trigger: str | None = None
    ws: WebSocketRoute | None = None

    def table_json(self) -> dict[str, Any]:
        out = super().table_json()
        out.update(kind=self.kind, status=self.status, forfeit_seat=self.forfeit_seat,
                   forfeit_trigger=self.forfeit_trigger,
                   abandon_limit=6 if self.kind in ("ranked", "arena") else 10)
        for player in out["players"]:
            player["bot"] = player["seat"] != self.seat and player["seat"] not in self.people
            player["played_by"] = None if player["bot"] else player["name"]
            if player["seat"] in self.gone:
                player.update(name=None, connected=False)
        return out

    def on_message(self, ws: WebSocketRoute, text: str | bytes) -> None:
        self.ws = ws
        message = json.loads(text)
        now_ms = int(time.time() * 1000)
        if message["type"] == "hello":
            over = self.state.outcome is not None
            ws.send(json.dumps({
                "type": "welcome", "table": self.table_json(), "seat": self.seat,
                "seq": self.seq, "epoch": 1, "server_time_ms": now_ms, "signals": self.signals,
                "limits": {"max_message_bytes": 4096, "rate_per_second": 20},
            }))
            # a finished match has no hand in play (the table's `hand` numbers its last one)
            ws.send(json.dumps({
                "type": "snapshot", "seq": self.seq, "epoch": 1, "server_time_ms": now_ms,
                "table": self.table_json(),
                "hand": None if over else {
                    "hand": self.number, "phase": "playing", "commitment": "ab" * 32,
                    "chain_start": 1,
                    "entropy_deadline_ms": None, "entropy_from": [self.seat]},
                "view": self.my_view(), "pending": [] if over else self.deadlines(),
                "absent": [] if over else self.absent,
                "automatic": [] if over else self.automatic,
            }))
        elif message["type"] == "signal":
            ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": None}))
        else:
            super().on_message(ws, text)

    def my_view(self) -> dict[str, Any]:
        return view(self.state, self.seat)

    def push(self, message: dict[str, Any]) -> None:
        """A numbered table event, as the server sends it."""
        assert self.ws is not None
        self.seq += 1
        self.ws.send(json.dumps({**message, "seq": self.seq}))

    async def taken_in(self, page: Page, seat: int = 1) -> None:
        """Everything sent to the page so far has been taken in: a message sent after it (the
        socket keeps their order), marking `seat` absent, is shown."""
        self.push({"type": "absent", "seat": seat, "absent": True, "automatic": 1})
        await expect(page.locator(f'#players li[data-seat="{seat}"]')).to_contain_text("ausente")

    def abandon(self, team: int, seat: int | None = None, trigger: str | None = None) -> None:
        """The server's end of a match by abandonment mid-hand (`seat`'s, of `team`, by
        `trigger`): the hand's record, match_over and the table (no `update`: the hand just
        stops, docs/PROTOCOL.md)."""
        self.state = forfeit(self.state, team, Termination.ABANDONMENT)
        self.forfeit_seat = team if seat is None else seat
        self.forfeit_trigger = trigger
        self.push({"type": "hand_record", "hand": 1, "id": f"{TABLE_ID}-1",
                   "url": f"/hands/{TABLE_ID}-1"})
        self.push({"type": "match_over", "termination": "abandonment", "winner": 1 - team,
                   "score": list(self.state.score), "forfeit_team": team,
                   "forfeit_seat": self.forfeit_seat, "forfeit_trigger": trigger})
        self.status = "finished"
        self.push({"type": "table", "table": {**self.table_json(), "you": None}})


async def usable_buttons(page: Page) -> list[str]:
    return list(await page.eval_on_selector_all(
        "#my-hand button, #actions button",
        "(nodes) => nodes.filter((n) => !n.disabled).map((n) => n.textContent)",
    ))


async def assert_match_over_mid_hand(page: Page) -> None:
    """No turn, no clock, nothing to click, nobody absent: the match is over."""
    await expect(page.locator("#turn")).to_have_text("Partida encerrada.")
    await expect(page.locator("#my-clock")).to_have_count(0)
    await expect(page.locator("#players .clock")).to_have_count(0)
    assert await usable_buttons(page) == []
    await expect(page.locator("#notice")).to_be_hidden()
    await expect(page.locator("#request")).to_be_hidden()
    await expect(page.locator("#resign")).to_be_hidden()
    assert not (await page.title()).startswith("(Sua vez)")
    await expect(page.locator("#match-over-text")).to_contain_text("Derrota.")
    log = page.locator("#log")
    await expect(log).to_contain_text("Fim da mão 1: mão interrompida: você abandonou a partida")
    await expect(log).to_contain_text("Fim da partida por abandono: Robô 2 venceu.")
    await expect(page.locator("#summary-title")).to_have_text("Resumo da mão 1")
    await expect(page.locator("#summary-result")).to_have_text(
        "Ninguém marcou nesta mão (mão interrompida: você abandonou a partida)."
    )


async def test_a_match_ended_by_abandonment_mid_hand_leaves_no_live_table(
    live_server: LiveServer, browser: Browser
) -> None:
    state = paulista_1x1(score=(3, 5))
    # my turn, my clock running, and the clock already acted for me (absent)
    table = ReviewTable(state, seat=0, names=["aban_0", "bot"], absent=[0])
    page = await open_table(live_server, browser, table, "aban_0", PHONE)
    await expect(page.locator("#my-clock")).to_be_visible()
    await expect(page.locator("#notice")).to_be_visible()
    assert (await page.title()).startswith("(Sua vez)")
    assert "Truco! (vale 3)" in await usable_buttons(page)
    table.abandon(0)
    await assert_match_over_mid_hand(page)
    # on a phone the end of the match is the first thing on the page, not below the board
    over = await page.locator("#match-over").bounding_box()
    board = await page.locator("#board").bounding_box()
    assert over is not None and board is not None
    assert over["y"] < board["y"] and over["y"] + over["height"] <= PHONE["height"]
    await expect(page.get_by_role("button", name="Revanche")).to_be_in_viewport()
    await screenshot(page, "table-abandoned-phone")
    # a reload shows the same: the snapshot of a finished table has the view's outcome
    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await assert_match_over_mid_hand(page)


async def test_a_request_cut_short_by_the_end_of_the_match_is_not_left_on_screen(
    live_server: LiveServer, browser: Browser
) -> None:
    # the bot asks truco; I abandon with its request before me
    table = ReviewTable(paulista_1x1(score=(3, 5)), seat=0, names=["aban_r", "bot"],
                        script=[[Action(1, ActionKind.RAISE)]])
    page = await open_table(live_server, browser, table, "aban_r", PHONE)
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await expect(page.locator("#request")).to_contain_text("Robô 2 pediu truco!")
    table.abandon(0)
    await assert_match_over_mid_hand(page)


async def test_the_event_log_is_unnumbered_newest_first(
    live_server: LiveServer, browser: Browser
) -> None:
    state = paulista_1x1()
    table = ReviewTable(state, seat=0, names=["log_0", "bot"],
                        script=[[Action(1, ActionKind.PLAY, card=parse_card("2H"))]])
    page = await open_table(live_server, browser, table, "log_0")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await expect(page.locator("#log li")).not_to_have_count(0)
    style = await page.eval_on_selector("#log", """(log) => ({
        tag: log.tagName, reversed: log.reversed ?? false,
        type: getComputedStyle(log).listStyleType,
        position: getComputedStyle(log).listStylePosition})""")
    # no ascending numbers on a newest-first list, and markers the scroll box cannot clip
    assert style["tag"] == "UL" or style["reversed"], style
    assert style["position"] == "inside", style


async def test_check_rows_marked_skip_are_shown_on_the_hand_page(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await page.goto(live_server.url("/verify"))
    hand = json.loads((VECTORS / "hand.json").read_text())
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(hand["record"]))
    await page.get_by_label("Chave pública da casa").fill(hand["public_key"])
    await page.get_by_role("button", name="Verificar").click()
    replay = page.locator('#checks [data-check="replay"]')
    await expect(replay).to_have_attribute("data-status", "skip")
    # in the list, below the header: not thrown off the page by the skip link's rule
    row = await replay.bounding_box()
    checks = await page.locator("#checks").bounding_box()
    header = await page.locator("header.site").bounding_box()
    assert row is not None and checks is not None and header is not None
    assert row["x"] >= checks["x"] and row["y"] >= header["y"] + header["height"]
    await expect(replay).to_be_in_viewport()
    # the skip link itself still hides until focused
    skip = page.locator('a[href="#main"]').first
    box = await skip.bounding_box()
    assert box is not None and box["x"] < 0
    await skip.focus()
    box = await skip.bounding_box()
    assert box is not None and box["x"] >= 0


async def test_the_focus_never_moves_by_itself_onto_a_raise(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.MINEIRO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["4C", "5D", "6S"], ["3H", "2C", "KS"]]))
    # I lead the zap; the bot asks for truco before its card
    table = ReviewTable(state, seat=0, names=["foco_0", "bot"],
                        script=[[Action(1, ActionKind.RAISE)], []])
    page = await open_table(live_server, browser, table, "foco_0")
    await page.get_by_role("button", name="Jogar 4 de paus").focus()
    await page.keyboard.press("Enter")
    accept = page.locator('#actions button[data-action="accept"]')
    await expect(accept).to_be_visible()
    await accept.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    await expect(page.locator("#hand-value")).to_have_text("4")
    await expect(page.locator("#my-hand")).to_be_focused()
    # the bot plays; I won the round and lead again, with "Seis!" among my buttons
    assert table.ws is not None
    table.play(table.ws, Action(1, ActionKind.PLAY, card=parse_card("3H")))
    raise_button = page.locator('#actions button[data-action="raise"]')
    await expect(raise_button).to_have_text("Seis! (vale 6)")
    await page.wait_for_timeout(200)
    # the focus is on the cards group: an Enter now raises nothing
    assert await page.evaluate("() => document.activeElement.id") == "my-hand"


async def test_argentino_envido_by_name_with_its_worth_and_totals(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1, score=(14, 0))
    # my tanto: 7 and 6 of swords = 33; the bot's: 5 and 4 of cups = 29
    state, _ = start_hand(state, dealt(1, [["7S", "6S", "AD"], ["5H", "4H", "KC"]]))
    table = ReviewTable(state, seat=0, names=["nombre_0", "bot"],
                        script=[[Action(1, ActionKind.ENVIDO)], [], []])
    page = await open_table(live_server, browser, table, "nombre_0")
    # each call says what it makes the chain worth (14 x 0: the falta is 30 - 14 = 16)
    for name in ("Envido (vale 2)", "Real envido (vale 3)", "Falta envido (vale 16)"):
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
    await page.get_by_role("button", name="Envido (vale 2)", exact=True).click()
    request = page.locator("#request")
    await expect(request).to_contain_text("Robô 2 cantou envido (envido, envido).")
    await expect(request).to_contain_text(
        "Quiero: 4 pontos para o melhor tanto. No quiero: 2 pontos para Robô 2."
    )
    # the answers that raise the chain: envido, envido, real envido (7); falta (16)
    for name in ("Real envido (vale 7)", "Falta envido (vale 16)"):
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
    log = page.locator("#log")
    await expect(log).to_contain_text("Você cantou envido!")
    await expect(log).to_contain_text("Robô 2 cantou envido! (envido, envido)")
    await page.get_by_role("button", name="Quiero (envido)", exact=True).click()
    await expect(log).to_contain_text("Envido querido (envido, envido): você com 33")
    await page.get_by_role("button", name="Ir al mazo").click()
    summary = page.locator("#summary-body")
    await expect(page.locator("#summary-result")).to_have_text(
        "Você marcou 4 pontos nesta mão: 4 no envido."
        " Robô 2 marcou 1 ponto nesta mão: 1 na mão (você foi al mazo)."
    )
    await expect(summary).to_contain_text(
        "Envido, envido — querido: você com 33; o tanto de Robô 2 não foi cantado (son buenas)."
    )
    await expect(page.locator("#scoreboard")).to_contain_text("(1 mala)")
    # no engine codes, no Brazilian vote words in an Argentino 1x1 log
    text = await log.text_content() or ""
    assert not re.search(r"\((E|EE|R|F)\)", text) and "votou" not in text, text


async def test_an_argentino_mazo_says_the_point_for_the_envido_that_could_be_called(
    live_server: LiveServer, browser: Browser
) -> None:
    # the hand worth 1 on screen, the other side scored 2: nothing said where the 2nd came from
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["7S", "6S", "AD"], ["5H", "4H", "KC"]]))
    table = ReviewTable(state, seat=0, names=["mazo_0", "bot"])
    page = await open_table(live_server, browser, table, "mazo_0")
    await page.get_by_role("button", name="Ir al mazo").click()
    await expect(page.locator("#summary-result")).to_have_text(
        "Robô 2 marcou 2 pontos: você foi al mazo; 1 ponto a mais porque o envido ainda podia"
        " ser cantado.")


async def test_the_last_round_stays_on_the_board_until_the_next_hands_first_card(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player's review: the next hand is dealt a moment after the last card, and the round that
    # decided the hand vanished from the board (the summary that keeps it is below, off a phone's
    # screen)
    state = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["3C", "3D", "3S"], ["4H", "4D", "5S"]], "KH"))
    table = ReviewTable(state, seat=0, names=["rodada_0", "bot"],
                        script=[[Action(1, ActionKind.PLAY, card=parse_card("4H"))],
                                [Action(1, ActionKind.PLAY, card=parse_card("4D"))]])
    page = await open_table(live_server, browser, table, "rodada_0")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await page.get_by_role("button", name="Jogar 3 de ouros").click()
    await expect(page.locator("#summary-result")).to_have_text("Você marcou 1 ponto nas rodadas.")
    # the server deals hand 2
    table.state, events = start_hand(
        table.state, dealt(0, [["2C", "5D", "6S"], ["7H", "QD", "JS"]], "4C"))
    table.push({"type": "update", "hand": 2, "events": [e.to_json() for e in events],
                "view": view(table.state, 0), "pending": table.deadlines(), "absent": []})
    previous = page.locator("#rounds .round.previous")
    await expect(previous.locator(".round-title")).to_have_text("Mão 1 — 2ª rodada: Você ganhou")
    await expect(previous.locator('.card[data-card="3D"]')).to_be_visible()
    await expect(previous.locator('.card[data-card="4D"]')).to_be_visible()
    await expect(page.locator("#rounds .round.current")).to_contain_text("1ª rodada (na mesa)")
    # gone with the next hand's first card (the robot is mão)
    table.state, events = apply(table.state, Action(1, ActionKind.PLAY, card=parse_card("7H")))
    table.push({"type": "update", "hand": 2, "events": [e.to_json() for e in events],
                "view": view(table.state, 0), "pending": table.deadlines(), "absent": []})
    await expect(page.locator('#rounds .round.current .card')).to_have_count(1)
    await expect(previous).to_have_count(0)


async def test_a_brazilian_decline_names_the_step_run_from(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player's review: "você correu do pedido" named no call, a truco asked said the hand
    # "passa a valer" what it is worth only if accepted, and Mineiro's 10 was "dez" (players
    # call it "nove")
    state = new_match(MatchConfig(Variant.MINEIRO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["3C", "3D", "3S"], ["5H", "5D", "6S"]]))
    table = ReviewTable(state, seat=0, names=["nove_0", "bot"],
                        script=[[Action(1, ActionKind.RAISE)], [Action(1, ActionKind.DECLINE)]])
    page = await open_table(live_server, browser, table, "nove_0")
    await page.get_by_role("button", name="Truco! (vale 4)").click()
    await expect(page.locator("#request-ask")).to_have_text(
        "Robô 2 pediu seis! Se for aceito, a mão passa a valer 6.")
    await page.get_by_role("button", name="Nove! (aumentar para 10)").click()
    await expect(page.locator("#summary-result")).to_have_text(
        "Você marcou 6 pontos: Robô 2 correu do nove.")
    await expect(page.locator("#log")).to_contain_text(
        "Fim da mão: você marca 6 pontos (Robô 2 correu do nove).")


async def test_argentino_words_for_a_declined_truco(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["7S", "6S", "AD"], ["5H", "4H", "KC"]]))
    table = ReviewTable(state, seat=0, names=["palabra_0", "bot"],
                        script=[[Action(1, ActionKind.DECLINE)]])
    page = await open_table(live_server, browser, table, "palabra_0")
    await page.get_by_role("button", name="Truco! (vale 2)").click()
    await expect(page.locator("#log")).to_contain_text(
        "Robô 2 disse no quiero: você marca 1 ponto."
    )
    await expect(page.locator("#summary-result")).to_have_text(
        "Você marcou 1 ponto: Robô 2 disse no quiero."
    )
    # the log's reason is in parentheses: it holds none of its own (it said "(… (no quiero))")
    await expect(page.locator("#log")).to_contain_text(
        "Fim da mão: você marca 1 ponto (Robô 2 disse no quiero)."
    )
    text = await page.locator("#log").text_content() or ""
    assert not re.search(r"\([^()]*\(", text), text
    await expect(page.locator("#log")).not_to_contain_text("correu")


async def test_bots_are_told_apart_by_seat_in_a_2v2(
    live_server: LiveServer, browser: Browser
) -> None:
    state = paulista_2x2()
    table = ReviewTable(state, seat=0, names=["quatro_0", "bot", "bot", "bot"], script=[[]])
    page = await open_table(live_server, browser, table, "quatro_0")
    players = page.locator("#players")
    for name in ("Robô 2", "Robô 3 (parceiro)", "Robô 4"):
        await expect(players).to_contain_text(name)
    await expect(players).not_to_contain_text("bot")
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    await expect(page.locator("#turn")).to_have_text("Esperando a resposta da dupla adversária.")
    await expect(page.locator("#log")).to_contain_text("Você pediu truco!")


async def test_the_absent_notice_says_when_the_match_is_lost(
    live_server: LiveServer, browser: Browser
) -> None:
    for kind, limit, user in (("training", 10, "aus_treino"), ("ranked", 6, "aus_rank")):
        state = paulista_2x2()
        table = ReviewTable(state, seat=0, names=[user, "b1", "b2", "b3"], kind=kind,
                            absent=[0], automatic=[0, 0, 0, 0])
        page = await open_table(live_server, browser, table, user)
        notice = page.locator("#notice")
        await expect(notice).to_contain_text(
            f"Se o relógio agir por você {limit} vezes seguidas, a sua dupla perde a partida"
            " por abandono."
        )
        # each automatic action comes with the streak so far: the notice counts down
        table.push({"type": "absent", "seat": 0, "absent": True, "automatic": 2})
        await expect(notice).to_contain_text(
            f"O relógio já agiu por você 2 vezes seguidas; se o tempo se esgotar mais {limit - 2}"
            " vezes seguidas, a sua dupla perde a partida por abandono."
        )
        me = page.locator('#players li[data-seat="0"]')
        await expect(me).to_contain_text(f"ausente (2 de {limit} ações automáticas)")
        table.push({"type": "absent", "seat": 0, "absent": True, "automatic": limit - 1})
        await expect(notice).to_contain_text(
            f"O relógio já agiu por você {limit - 1} vezes seguidas: no próximo tempo esgotado,"
            " a sua dupla perde a partida por abandono."
        )
        # another seat's absence is said once in the log, not at every automatic action
        for count in (1, 2):
            table.push({"type": "absent", "seat": 2, "absent": True, "automatic": count})
        await expect(page.locator('#players li[data-seat="2"]')).to_contain_text(
            f"ausente (2 de {limit} ações automáticas)")
        await expect(page.locator("#log li", has_text="está ausente")).to_have_count(1)
        table.push({"type": "absent", "seat": 0, "absent": False, "automatic": 0})
        await expect(notice).to_be_hidden()
        await expect(me).not_to_contain_text("ausente")
        await page.context.close()


async def test_a_partner_signal_sent_is_confirmed(
    live_server: LiveServer, browser: Browser
) -> None:
    state = paulista_2x2()
    # a person as partner: a bot partner is offered no signals (it ignores them)
    table = ReviewTable(state, seat=0, names=["sinal_0", "b1", "par_0", "b3"], people={2},
                        signals=[{"code": "tres", "label": "Tenho três"}])
    page = await open_table(live_server, browser, table, "sinal_0")
    # the signal shows nowhere else on my page: once the server took it, it is said so
    await page.get_by_role("button", name="Tenho três").click()
    await expect(page.locator("#signal-sent")).to_have_text(
        "Sinal enviado ao parceiro: “Tenho três”."
    )
    await expect(page.locator("#log")).to_contain_text(
        "Você sinalizou ao parceiro: “Tenho três” (mão 1).")


async def test_names_under_the_cards_wrap_and_the_mazo_drops_my_cards(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.ARGENTINO, 4), first_dealer=1)
    hands = [["7S", "6S", "AD"], ["5H", "4H", "KC"], ["AC", "QD", "KS"], ["2C", "JD", "4C"]]
    state, _ = start_hand(state, dealt(1, hands))
    partner = "bartolomeu_de_gusmao_24"
    # my partner (a person with a long name) leads, seat 3 plays, then I go to the mazo
    table = ReviewTable(state, seat=0, names=["mazo_0", "b1", partner, "b3"], people={2},
                        script=[[Action(1, ActionKind.PLAY, card=parse_card("5H"))]])
    page = await open_table(live_server, browser, table, "mazo_0")
    assert table.ws is not None
    table.play(table.ws, Action(2, ActionKind.PLAY, card=parse_card("AC")))
    table.play(table.ws, Action(3, ActionKind.PLAY, card=parse_card("2C")))
    # the partner's whole name under the card, wrapped rather than cut
    await expect(page.locator("#rounds")).to_contain_text(f"{partner} (parceiro)")
    clipped = await page.eval_on_selector_all(
        "#rounds .play small", "(nodes) => nodes.filter((n) => n.scrollWidth > n.clientWidth)"
        ".map((n) => n.textContent)",
    )
    assert clipped == []
    await page.get_by_role("button", name="Ir al mazo").click()
    # my dropped cards are gone from "Suas cartas", and it says why
    await expect(page.locator("#folded-note")).to_be_visible()
    await expect(page.locator("#folded-note")).to_have_text(
        "Você foi al mazo: suas cartas foram descartadas nesta mão."
    )
    await expect(page.locator("#my-hand .card")).to_have_count(0)
    await expect(page.locator("#players")).to_contain_text("foi al mazo")
    # my player line holds no cards either (it said "3 carta(s)")
    me = page.locator('#players li[data-seat="0"]')
    await expect(me).to_contain_text("Você · sem cartas")
    await expect(me).not_to_contain_text("carta(s)")
    await expect(page.locator('#players li[data-seat="2"]')).to_contain_text("2 cartas")


async def test_a_1x1_table_has_no_teams_in_its_seats(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "sozinho_1")
    await create_table(page, "mineiro", 2, "private")
    await expect(page.locator("#seat-list")).to_contain_text("Lugar 2: livre")
    await expect(page.locator("#seat-list")).not_to_contain_text("dupla")


async def test_a_training_hand_names_the_bot_and_its_missing_entropy(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "robo_1")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#players")).to_contain_text("Robô 2")
    hand = await play_hand(page, Policy())
    await page.goto(live_server.url(f"/h/{table_id}/{hand}"))
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    bot = page.locator('#rec-contributions li[data-seat="1"]')
    await expect(bot).to_have_text("Lugar 2: robô: não envia entropia")
    await expect(page.locator('#rec-contributions li[data-seat="0"]')).to_contain_text("a minha")


async def _fake_leave(page: Page, table: ReviewTable) -> None:
    """The scripted table's `leave` answer (the real server does not know it): a 200 with the
    table as the leaver sees it."""
    async def answer(route: Route) -> None:
        table.status = "finished"
        body = {"table": {**table.table_json(), "you": None}}
        await route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    await page.route(f"**/api/tables/{TABLE_ID}/leave", answer)


async def _resign_warning(page: Page, *, accept: bool) -> str:
    """Click `Desistir e sair da mesa`; the confirmation's words (accepted or dismissed)."""
    said: list[str] = []

    async def on_dialog(dialog: Dialog) -> None:
        said.append(dialog.message)
        await (dialog.accept() if accept else dialog.dismiss())

    page.once("dialog", on_dialog)
    await page.get_by_role("button", name="Desistir e sair da mesa").click()
    for _ in range(100):
        if said:
            break
        await page.wait_for_timeout(50)
    assert len(said) == 1, said
    return said[0]


async def test_the_resign_warning_says_what_is_lost_and_the_lobby_says_it_was(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player review: at a 1x1 ranked table it said "a sua dupla perde a partida" and nothing
    # of the stake, the rating or the abandonment record; confirmed, the lobby said nothing
    state = paulista_1x1()
    ranked = ReviewTable(state, seat=0, names=["desiste_r", "rival_r"], people={1},
                         kind="ranked")
    page = await open_table(live_server, browser, ranked, "desiste_r")
    text = await _resign_warning(page, accept=False)
    assert text.startswith("Sair agora é desistir: você perde a partida."), text
    assert "dupla" not in text
    assert "as 50 fichas apostadas e pontos na classificação" in text, text
    assert "registro de abandono" in text and "7 dias" in text and "24 h" in text, text
    await expect(page.locator("#resign")).to_be_visible()  # dismissed: still at the table
    await _fake_leave(page, ranked)
    await _resign_warning(page, accept=True)
    await page.wait_for_url(re.compile(r"/\?left=ranked$"))
    notice = page.locator("#left-notice")
    await expect(notice).to_contain_text("Você saiu da mesa; a partida foi dada como perdida.")
    await expect(notice.get_by_role("link", name="Voltar à fila ranqueada")).to_have_attribute(
        "href", "/ranked")
    await expect(notice.get_by_role("link", name="Ver pontos e fichas")).to_have_attribute(
        "href", "/me")
    await page.context.close()

    # a 2x2 arena: the team loses, no chips or rating but the arena's own stakes
    state4 = paulista_2x2()
    arena = ReviewTable(state4, seat=0, names=["desiste_a", "b1", "b2", "b3"], people={1, 2, 3},
                        kind="arena")
    page = await open_table(live_server, browser, arena, "desiste_a")
    text = await _resign_warning(page, accept=False)
    assert text.startswith("Sair agora é desistir: a sua dupla perde a partida."), text
    assert "Na arena" in text and "fichas" not in text and "registro de abandono" in text, text
    await page.context.close()

    # a training table: only the match is lost; the lobby says so, with no queue to go back to
    training = ReviewTable(state, seat=0, names=["desiste_t", "bot"])
    page = await open_table(live_server, browser, training, "desiste_t")
    text = await _resign_warning(page, accept=False)
    assert text == "Sair agora é desistir: você perde a partida. Sair mesmo?", text
    await _fake_leave(page, training)
    await _resign_warning(page, accept=True)
    await page.wait_for_url(re.compile(r"/\?left=1$"))
    await expect(page.locator("#left-notice")).to_have_text(
        "Você saiu da mesa; a partida foi dada como perdida.")
    await page.context.close()


async def test_the_end_of_a_ranked_match_is_told_from_my_side_with_the_way_back(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player review: on team 1, "Vitória! … Placar final: 0 x 12", unlabelled, team 0 first;
    # only "Voltar às mesas" (the casual lobby); no rating or chips
    state = paulista_1x1(score=(3, 9))
    table = ReviewTable(state, seat=1, names=["rival_f", "fim_1"], people={0}, kind="ranked")
    page = await open_table(live_server, browser, table, "fim_1")
    # the match as the ranked service settles it: stakes held, paid to the winner, both rated
    pool = live_server.app[POOL]
    rival = await register(pool, "rival_f", "correct horse 42", live_server.app[PASSWORD_COST])
    me = await pool.fetchval("SELECT id FROM users WHERE name = 'fim_1'")
    ref = f"ranked:{TABLE_ID}:1"
    await ledger.hold_stakes(pool, ref, [rival.id, me], 50)
    table.abandon(0)  # the rival's team forfeits: I win
    await ledger.pay_winners(pool, ref, [me])
    changes = await ratings.rate_match(pool, ref, Variant.PAULISTA, 2, ([rival.id], [me]), 1,
                                       datetime.now(UTC))
    mine = next(c for c in changes if c.user_id == me)
    score = table.state.score
    text = page.locator("#match-over-text")
    await expect(text).to_contain_text("Vitória! rival_f abandonou a partida")
    # my side first, each side named
    await expect(text).to_contain_text(f"Placar final: Você {score[1]} x {score[0]} rival_f.")
    box = page.locator("#match-over")
    await expect(box.get_by_role("link", name="Voltar à fila ranqueada")).to_have_attribute(
        "href", "/ranked")
    await expect(box.get_by_role("link", name="Ver pontos e fichas")).to_have_attribute(
        "href", "/me")
    await expect(box.get_by_role("link", name="Voltar à arena")).to_be_hidden()
    # the finished table is shown (its leave button), with no rematch at a ranked table
    await expect(box.get_by_role("button", name="Sair da mesa")).to_be_visible()
    await expect(box.get_by_role("button", name="Revanche")).to_be_hidden()
    def pt(value: float) -> str:
        return f"{value:.1f}".replace(".", ",")

    delta = mine.after.rating - mine.before
    await expect(page.locator("#match-over-standing")).to_have_text(
        f"Classificação: {pt(mine.before)} → {pt(mine.after.rating)} (+{pt(delta)})."
        " Fichas: +50 (saldo 1050).")
    # the log's final score is told from my side too
    await expect(page.locator("#log")).to_contain_text(
        f"Placar final: Você {score[1]} x {score[0]} rival_f.")
    # the rival leaves the finished table; after a reload the result still names them (it
    # said "Lugar 1": the page had only remembered the name while open)
    table.gone.add(0)
    await page.reload()
    await expect(text).to_contain_text(f"Placar final: Você {score[1]} x {score[0]} rival_f.")
    await expect(page.locator("#match-over")).not_to_contain_text("Lugar 1")
    await page.context.close()


async def test_the_end_of_a_2x2_abandonment_names_who_left(
    live_server: LiveServer, browser: Browser
) -> None:
    # "Derrota. Nossa dupla abandonou a partida" left the player to guess which of the two
    quit = "abandonou a partida (ações automáticas demais ou saída no meio dela)."
    names = ["eu_2x2", "rival_2x2", "dupla_2x2", "outro_2x2"]
    table = ReviewTable(paulista_2x2(), seat=0, names=names, people={1, 2, 3})
    page = await open_table(live_server, browser, table, "eu_2x2")
    table.abandon(0, seat=2)  # my partner
    text = page.locator("#match-over-text")
    await expect(text).to_contain_text(f"Derrota. dupla_2x2 (parceiro) {quit}")
    # after a reload the table says who it was (`forfeit_seat`); their name stays after they left
    table.gone.add(2)
    await page.reload()
    await expect(text).to_contain_text(f"Derrota. dupla_2x2 (parceiro) {quit}")
    await page.context.close()

    table = ReviewTable(paulista_2x2(), seat=0, names=["eu_b", *names[1:]], people={1, 2, 3})
    page = await open_table(live_server, browser, table, "eu_b")
    table.abandon(1, seat=3)  # an opponent
    await expect(page.locator("#match-over-text")).to_contain_text(
        f"Vitória! outro_2x2, da dupla adversária, {quit}")
    await page.context.close()

    # how they abandoned, when the server says (the review's winner could not tell a player
    # who walked away from one whose connection died): left, or the clock's limit; a reload too
    for trigger, said in (
            ("left", "desistiu da partida e saiu da mesa."),
            ("automatic_actions",
             "abandonou a partida: o relógio agiu 10 vezes seguidas sem resposta.")):
        table = ReviewTable(paulista_2x2(), seat=0, names=[f"eu_{trigger}", *names[1:]],
                            people={1, 2, 3})
        page = await open_table(live_server, browser, table, f"eu_{trigger}")
        table.abandon(1, seat=3, trigger=trigger)
        text = page.locator("#match-over-text")
        await expect(text).to_contain_text(f"Vitória! outro_2x2, da dupla adversária, {said}")
        await page.reload()
        await expect(text).to_contain_text(f"Vitória! outro_2x2, da dupla adversária, {said}")
        await page.context.close()


async def test_an_arena_end_box_leads_back_to_the_arena_and_spectators_see_names_at_1x1(
    live_server: LiveServer, browser: Browser
) -> None:
    state = paulista_1x1(score=(3, 9))
    table = ReviewTable(state, seat=0, names=["arena_0", "rival_a"], people={1}, kind="arena")
    page = await open_table(live_server, browser, table, "arena_0")
    standing_asked: list[str] = []
    page.on("request",
            lambda r: standing_asked.append(r.url) if "/api/me/standing" in r.url else None)
    table.abandon(1)
    box = page.locator("#match-over")
    await expect(page.locator("#match-over-text")).to_contain_text(
        f"Placar final: Você {table.state.score[0]} x {table.state.score[1]} rival_a.")
    await expect(box.get_by_role("link", name="Voltar à arena")).to_have_attribute(
        "href", "/arena")
    await expect(box.get_by_role("link", name="Voltar à fila ranqueada")).to_be_hidden()
    await expect(page.locator("#match-over-standing")).to_be_hidden()
    # (that line would come from a ranked standing, which an arena table's page never asks)
    assert standing_asked == [], standing_asked
    await page.context.close()

    # the arena pairs me again at once: the finished table's page takes me there (I sat on
    # it reading the end while the next table's clock ran, and abandoned it unseen)
    nxt = "fedcba9876543210"
    arenas: dict[str, Any] = {"arenas": [{"id": "a1", "state": "running", "joined": True,
                                          "table": TABLE_ID, "standings": []}]}
    table = ReviewTable(state, seat=0, names=["arena_1", "rival_b"], people={1}, kind="arena")
    page = await open_table(live_server, browser, table, "arena_1")
    polls: list[str] = []

    async def arenas_answer(route: Route) -> None:
        polls.append(route.request.url)
        await route.fulfill(status=200, content_type="application/json", body=json.dumps(arenas))

    await page.route(re.compile(r"/api/ranked/arenas$"), arenas_answer)
    await page.route(re.compile(rf"/t/{nxt}$"), lambda route: route.fulfill(
        status=200, content_type="text/html", body="<h1>next</h1>"))
    await page.evaluate("() => { window.notReloaded = true; }")
    table.abandon(1)
    await expect(page.locator("#match-over")).to_be_visible()
    # the page polls again only after an answer that named no other table (else it goes there)
    await until(lambda: len(polls) >= 2, seconds=10)
    await expect(page.locator("#arena-next")).to_be_empty()
    # the same document polled twice: it neither went elsewhere nor reloaded this table
    assert await page.evaluate("() => window.notReloaded === true")
    assert page.url.endswith(f"/t/{TABLE_ID}")
    arenas["arenas"][0]["table"] = nxt
    await expect(page.locator("#arena-next")).to_contain_text(
        "Sua próxima partida da arena começou", timeout=STEP_TIMEOUT_MS)
    await page.wait_for_url(re.compile(rf"/t/{nxt}$"))
    await page.context.close()

    # a spectator of a 1x1 (the review saw "Dupla A / Dupla B"): the players by name
    watched = ReviewTable(state, seat=None, names=["ana_v", "bia_v"],  # type: ignore[arg-type]
                          people={0, 1}, kind="ranked")
    page = await open_table(live_server, browser, watched, "olho_v")
    board = page.locator("#scoreboard")
    await expect(board).to_contain_text("ana_v: 3")
    await expect(board).to_contain_text("bia_v: 9")
    await expect(board).not_to_contain_text("Dupla")
    watched.abandon(0)
    await expect(page.locator("#match-over-text")).to_have_text(
        "bia_v venceu: ana_v abandonou a partida (ações automáticas demais ou saída no meio"
        f" dela). Placar final: ana_v {watched.state.score[0]}"
        f" x {watched.state.score[1]} bia_v.")
    await expect(page.locator("#match-over")).not_to_contain_text("Dupla")
    await page.context.close()
