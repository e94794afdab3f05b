"""What a 2v2 players' review of the table page found, fixed and kept fixed.

The tables are the engine tables of tests/test_browser_table_ux.py (`ReviewTable`: the real
page, its WebSocket answered in the test on the real engine), put exactly where the review saw
each defect: a team vote whose 10 s never counted down, a partner signal left on screen into
later hands, card corners printing the engine's letters, signals offered to a bot partner, a
rematch nobody could see asked for, dupla B reading "Eles" first, and votes that did not say
which raise or which answer to the mão de dez.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from playwright.async_api import Browser, Locator, Page, expect

from tests.test_browser_table_ux import ReviewTable, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    live_server_fixture,
)
from tests.test_browser_views import dealt, open_table
from truco import (
    Action,
    ActionKind,
    MatchConfig,
    MatchState,
    Variant,
    new_match,
    start_hand,
    view,
)


async def seconds(clock: Locator) -> int:
    text = await clock.text_content() or ""
    match = re.fullmatch(r"(\d+) s", text.strip())
    assert match, text
    return int(match.group(1))


async def assert_counts_down(page: Page, clock: Locator) -> None:
    """The clock's text goes down by itself, with no message from the server."""
    before = await seconds(clock)
    await page.wait_for_timeout(2300)
    after = await seconds(clock)
    assert after < before, (before, after)


def dealt_2x2(
    dealer: int, score: tuple[int, int] = (0, 0)
) -> tuple[MatchState, list[dict[str, Any]]]:
    state = new_match(MatchConfig(Variant.PAULISTA, 4), first_dealer=dealer, score=score)
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    state, events = start_hand(state, dealt(dealer, hands, "7C"))
    return state, [e.to_json() for e in events]


def deal(table: ReviewTable, number: int, score: tuple[int, int] = (0, 0)) -> None:
    """The server deals hand `number` of a fresh 2x2 match state: an `update` with its
    `hand_started`."""
    table.state, events = dealt_2x2(0, score)
    table.push({
        "type": "update", "hand": number, "events": events,
        "view": view(table.state, table.seat), "pending": table.deadlines(), "absent": [],
    })


async def test_a_team_vote_counts_down_and_names_the_raise(
    live_server: LiveServer, browser: Browser
) -> None:
    # A and I: the partners disagree (I raise back, my partner accepts)
    state = paulista_2x2()
    table = ReviewTable(state, seat=0, names=["voto_0", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.RAISE)], [Action(2, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "voto_0")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await page.get_by_role("button", name="Seis! (aumentar para 6)").click()
    votes = page.locator("#votes")
    await expect(votes).to_contain_text(
        "Votos: Você: aumentar para seis; Robô 3 (parceiro): aceitar — a dupla discorda: ")
    await expect(votes).to_contain_text(" s para combinar")
    await assert_counts_down(page, votes.locator(".clock"))
    # my vote is in: the turn line said "Sua vez" still (an Argentine player's review)
    await expect(page.locator("#turn")).to_contain_text("A sua dupla discorda: combinem o voto — ")
    log = page.locator("#log")
    await expect(log).to_contain_text("Você votou: aumentar para seis.")
    await expect(log).to_contain_text("Robô 3 (parceiro) votou: aceitar.")
    await expect(log).not_to_contain_text("aumentar.")
    await page.context.close()

    # the other side sees the opponents' disagreement count down too
    state = paulista_2x2()
    table = ReviewTable(state, seat=0, names=["voto_1", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.ACCEPT), Action(3, ActionKind.DECLINE)]])
    page = await open_table(live_server, browser, table, "voto_1")
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    votes = page.locator("#votes")
    await expect(votes).to_contain_text(" — a dupla adversária discorda: ")
    await assert_counts_down(page, votes.locator(".clock"))
    await page.context.close()


class PartnerAway(ReviewTable):
    """A review table whose seat 2 (my partner, a person) has lost their connection."""

    def table_json(self) -> dict[str, Any]:
        out = super().table_json()
        out["players"][2]["connected"] = False
        return out


async def test_a_vote_against_a_disconnected_partner_says_so(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player's review: my partner's connection went, their vote counted as correr, and the
    # page asked us to "combinem o voto" with nobody there to agree with
    table = PartnerAway(paulista_2x2(), seat=0, names=["longe_0", "b1", "ausente", "b3"],
                        people={2},
                        script=[[Action(1, ActionKind.RAISE)], [Action(2, ActionKind.DECLINE)]])
    page = await open_table(live_server, browser, table, "longe_0")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await page.get_by_role("button", name="Aceitar").click()
    turn = page.locator("#turn")
    await expect(turn).to_contain_text(
        "ausente (parceiro) está desconectado e o voto dele conta como correr: se ele não voltar"
        " e votar como você, a dupla corre em ")
    await assert_counts_down(page, turn.locator(".clock"))
    await page.context.close()


async def test_a_raise_the_team_voted_for_is_the_teams(
    live_server: LiveServer, browser: Browser
) -> None:
    # I vote to raise, then my partner does: the log credited the raise to the last voter
    state = paulista_2x2()
    table = ReviewTable(state, seat=0, names=["voto_2", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.RAISE)], [Action(2, ActionKind.RAISE)]])
    page = await open_table(live_server, browser, table, "voto_2")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    ask = page.locator("#request-ask")
    await expect(ask).to_contain_text("Robô 2 pediu truco!")  # a seat's own raise is its own
    await page.get_by_role("button", name="Seis! (aumentar para 6)").click()
    log = page.locator("#log")
    await expect(log).to_contain_text("Nossa dupla pediu seis! (vale 6)")
    await expect(log).not_to_contain_text("(parceiro) pediu seis")
    await expect(log).to_contain_text("pediu truco! (vale 3)")  # a seat's own raise is its own
    # the request box says it as the log does (a review: it credited my raise to my partner)
    await expect(ask).to_have_text("Nossa dupla pediu seis! Se for aceito, a mão passa a valer 6.")
    # and so after a reload, from the view alone (the votes' events are not replayed)
    await page.reload()
    await expect(ask).to_have_text("Nossa dupla pediu seis! Se for aceito, a mão passa a valer 6.")
    await page.context.close()


def mao_de_dez() -> MatchState:
    """A Mineiro 2x2 hand dealt at 10 x 5: my team (seats 0 and 2) decides the mão de dez."""
    state = new_match(MatchConfig(Variant.MINEIRO, 4), first_dealer=3, score=(10, 5))
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    return start_hand(state, dealt(3, hands))[0]


async def test_mao_de_dez_votes_use_the_buttons_words(
    live_server: LiveServer, browser: Browser
) -> None:
    # I: "aceitar/correr" under buttons saying "Jogar a mão de dez" / "Correr da mão de dez"
    table = ReviewTable(mao_de_dez(), seat=0, names=["dez_0", "b1", "b2", "b3"],
                        script=[[Action(2, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "dez_0")
    # what running gives the other side (RULES.md, Mineiro: 2 points)
    await expect(page.locator("#request .ask")).to_have_text(
        "Mão de dez: a nossa dupla decide se joga (vale 4) ou corre;"
        " se correr, a dupla adversária marca 2 pontos.")
    await page.get_by_role("button", name="Correr da mão de dez").click()
    await expect(page.locator("#votes")).to_contain_text(
        "Votos: Você: correr da mão de dez; Robô 3 (parceiro): jogar a mão de dez")
    log = page.locator("#log")
    await expect(log).to_contain_text("Você votou: correr da mão de dez.")
    await expect(log).to_contain_text("Robô 3 (parceiro) votou: jogar a mão de dez.")
    await expect(page.locator("#request")).not_to_contain_text("aceitar")


async def test_buttons_left_after_my_vote_say_they_change_it(
    live_server: LiveServer, browser: Browser
) -> None:
    # A player review: after "Jogar a mão de dez" the one button left was "Correr da mão de
    # dez", my vote only a line of text above it; a stray tap on it ran from the hand
    table = ReviewTable(mao_de_dez(), seat=0, names=["mudo_0", "b1", "b2", "b3"])
    page = await open_table(live_server, browser, table, "mudo_0")
    await page.get_by_role("button", name="Jogar a mão de dez (vale 4)").click()
    actions = page.locator("#actions")
    mine = page.locator("#my-vote")
    await expect(mine).to_have_text(
        "Seu voto: jogar a mão de dez. Os botões abaixo mudam o seu voto.")
    await expect(mine).to_be_visible()
    change = page.get_by_role("button", name="Mudar meu voto: correr da mão de dez", exact=True)
    await expect(change).to_have_accessible_description(
        "Seu voto: jogar a mão de dez. Os botões abaixo mudam o seu voto.")
    await expect(actions.get_by_role("button")).to_have_count(1)
    # changing it is still one tap, and said the same way the other way round
    await change.click()
    await expect(mine).to_contain_text("Seu voto: correr da mão de dez.")
    await expect(page.get_by_role(
        "button", name="Mudar meu voto: jogar a mão de dez (vale 4)", exact=True)).to_be_visible()
    await page.context.close()

    # a truco: after "Aceitar" the raise left is a change of my vote too, naming its stake
    table = ReviewTable(paulista_2x2(), seat=0, names=["mudo_1", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.RAISE)]])
    page = await open_table(live_server, browser, table, "mudo_1")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await page.get_by_role("button", name="Aceitar (vale 3)").click()
    await expect(page.locator("#my-vote")).to_contain_text("Seu voto: aceitar.")
    names = await page.locator("#actions button").all_text_contents()
    assert names == ["Mudar meu voto: correr", "Mudar meu voto: seis! (aumentar para 6)"], names
    await page.context.close()


async def test_signals_are_for_a_person_and_for_their_hand(
    live_server: LiveServer, browser: Browser
) -> None:
    signals = [{"code": "tres", "label": "Tenho três"}]
    # D: a bot partner ignores signals: none offered
    table = ReviewTable(paulista_2x2(), seat=0, names=["sinal_b", "b1", "b2", "b3"],
                        signals=signals)
    page = await open_table(live_server, browser, table, "sinal_b")
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await expect(page.locator("#signals-box")).to_be_hidden()
    await expect(page.get_by_role("button", name="Tenho três")).to_have_count(0)
    await page.context.close()

    # B: a person's signal is logged with its hand, and gone from the screen at the next deal
    table = ReviewTable(paulista_2x2(), seat=0, names=["sinal_p", "b1", "par_2", "b3"],
                        people={2}, signals=signals)
    page = await open_table(live_server, browser, table, "sinal_p")
    await expect(page.locator("#signals-box")).to_be_visible()
    assert table.ws is not None
    table.ws.send(json.dumps({"type": "signal", "from": 2, "code": "tres", "label": "Tenho três",
                              "at_ms": int(time.time() * 1000)}))
    received = page.locator("#signal-received")
    await expect(received).to_have_text("Parceiro: “Tenho três”")
    log = page.locator("#log")
    await expect(log).to_contain_text("par_2 (parceiro) sinalizou: “Tenho três” (mão 1).")
    deal(table, 2)
    await expect(log).to_contain_text("Mão 2: Você deu as cartas")
    await expect(received).to_have_text("")
    await expect(log).to_contain_text("par_2 (parceiro) sinalizou: “Tenho três” (mão 1).")


async def test_card_corners_print_the_numbers_of_the_deck(
    live_server: LiveServer, browser: Browser
) -> None:
    # C: the engine's Q / J / K are the valete (sota), cavalo (caballo) and rei (rey): their
    # corners print 10 / 11 / 12, never a "J" a Brazilian reads as valete
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["QC", "JD", "KS"], ["5H", "4H", "AD"]]))
    table = ReviewTable(state, seat=0, names=["canto_a", "bot"])
    page = await open_table(live_server, browser, table, "canto_a")
    for card, corner, name in (("QC", "10♣", "sota de bastos"), ("JD", "11♦", "caballo de oros"),
                               ("KS", "12♠", "rey de espadas")):
        face = page.locator(f'#my-hand .card[data-card="{card}"]')
        await expect(face).to_have_text(corner)
        await expect(face).to_have_attribute("aria-label", name)
    await page.context.close()

    # Paulista: vira 7, so the manilhas are the four valetes
    table = ReviewTable(paulista_2x2(), seat=0, names=["canto_p", "b1", "b2", "b3"])
    page = await open_table(live_server, browser, table, "canto_p")
    manilhas = page.locator("#hand-info .manilhas .card")
    await expect(manilhas).to_have_count(4)
    assert sorted(await manilhas.all_text_contents()) == sorted(["10♣", "10♥", "10♠", "10♦"])
    await expect(manilhas.first).to_have_attribute("aria-label", "valete de paus")
    corners = await page.eval_on_selector_all(
        ".card[data-card]", "(nodes) => nodes.map((n) => n.firstChild.textContent)")
    assert corners and not {"Q", "J", "K"} & set(corners), corners


async def test_dupla_b_reads_its_score_first_and_a_rematch_is_counted(
    live_server: LiveServer, browser: Browser
) -> None:
    # H: on team 1 the scoreboard said "Eles: 3 Nós: 9"
    state, _ = dealt_2x2(3, score=(3, 9))
    table = ReviewTable(state, seat=1, names=["ana_r", "revan_1", "bia_r", "caio_r"],
                        people={0, 2, 3}, kind="private")
    page = await open_table(live_server, browser, table, "revan_1")
    board = page.locator("#scoreboard")
    await expect(board).to_have_text(re.compile(r"^Nós: 9\s*Eles: 3\s*até 12$"))
    assert await board.locator(".team").first.get_attribute("data-team") == "1"
    table.abandon(0)  # the other dupla forfeits: the match is over, its last hand summed up
    summary = page.locator("#summary")
    await expect(page.locator("#summary-score")).to_contain_text("Placar: Nós")
    # E: who asked for a rematch, for everybody to see
    rematch = page.locator("#rematch-status")
    # the finished table is shown (its rematch button), and nobody asked yet: nothing said
    await expect(page.get_by_role("button", name="Revanche", exact=True)).to_be_visible()
    await expect(rematch).to_be_hidden()
    finished = {**table.table_json(), "you": None}
    table.push({"type": "table", "table": {**finished, "rematch": [0]}})
    await expect(rematch).to_have_text("1 de 4 pediu revanche: ana_r.")
    table.push({"type": "table", "table": {**finished, "rematch": [0, 3]}})
    await expect(rematch).to_have_text("2 de 4 pediram revanche: ana_r, caio_r (parceiro).")
    await expect(page.get_by_role("button", name="Revanche", exact=True)).to_be_visible()
    # the rematch starts: the last match's summary (its final score) is not this match's
    table.status = "playing"
    table.push({"type": "table",
                "table": {**table.table_json(), "you": None, "match": 2, "rematch": []}})
    await expect(page.locator("#match-over")).to_be_hidden()
    await expect(summary).to_be_hidden()
    deal(table, 2)
    await expect(board).to_have_text(re.compile(r"^Nós: 0\s*Eles: 0\s*até 12$"))
    await expect(summary).to_be_hidden()
    await expect(page.locator("#summary-score")).to_have_count(0)
