"""What a player review of a private 2x2 table and a phone training table found, fixed and kept
fixed (the table page, `table.js`).

Most tests answer the real page's WebSocket with a table on the real engine (`ReviewTable` of
tests/test_browser_table_ux.py), extended here with what the review needed: a `back` answered as
the server answers it, seats whose person is disconnected with the server time at which the match
is cancelled (TableJson `players[s].cancel_at_ms`), a server clock ahead of the page's, and the
snapshot's `partner_signals`. The start button is checked on the real server.

1. After `Estou de volta` the streak of automatic actions still stands: its count stays on
   screen until I act myself (and my own move, not an automatic one, zeroes it).
2. Partner signals: a snapshot (a reload, a reconnect) brings back those of the hand in play,
   logged once; one sent while the partner is disconnected is said to be kept for them.
3. A disconnected person at a private table: the countdown to the match's cancellation.
4. A player leaving a finished table is logged, and so is the rematch it called off.
5. `Começar a partida` only at a full private table; before, how many players are missing.
6. On a phone (390 x 844) a pending answer's buttons and the Truco! at a hand's start are in
   sight without scrolling.
7. The header's touch targets are 44 x 44 px at least on a phone.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Locator, Page, WebSocketRoute, expect

from tests.test_browser_table_ux import ReviewTable, paulista_1x1, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    signup,
)
from tests.test_browser_views import open_table
from truco import Action, ActionKind, MatchState, apply, parse_card, pending

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@dataclass
class PlayerTable(ReviewTable):
    """The review table, with disconnected people and their cancellation time, a server clock
    `skew_ms` ahead of the page's, the snapshot's `partner_signals`, and `back` answered as the
    server does (docs/PROTOCOL.md: the absence ends, the streak stands)."""

    offline: set[int] = field(default_factory=set)
    # seat -> server time (ms) at which the match is cancelled if that seat's player stays away
    cancel_at: dict[int, int] = field(default_factory=dict)
    skew_ms: int = 0
    partner_signals: list[dict[str, Any]] = field(default_factory=list)
    sent_signals: list[str] = field(default_factory=list)

    def server_ms(self) -> int:
        return int(time.time() * 1000) + self.skew_ms

    def table_json(self) -> dict[str, Any]:
        out = super().table_json()
        for player in out["players"]:
            seat = player["seat"]
            if seat in self.offline:
                player["connected"] = False
            player["cancel_at_ms"] = self.cancel_at.get(seat)
        return out

    def deadlines(self) -> list[dict[str, Any]]:
        due = self.server_ms() + 20_000
        return [
            {"seat": p.seat, "seats": [p.seat], "kind": p.kind.value, "team_vote": p.team_vote,
             "deadline_ms": due}
            for p in pending(self.state)
        ]

    def snapshot(self) -> dict[str, Any]:
        over = self.state.outcome is not None
        return {
            "type": "snapshot", "seq": self.seq, "epoch": 1, "server_time_ms": self.server_ms(),
            "table": self.table_json(),
            "hand": None if over else {
                "hand": 1, "phase": "playing", "commitment": "ab" * 32, "chain_start": 1,
                "entropy_deadline_ms": None, "entropy_from": [self.seat]},
            "view": self.my_view(), "pending": [] if over else self.deadlines(),
            "absent": [] if over else self.absent,
            "automatic": [] if over else self.automatic,
            "partner_signals": list(self.partner_signals),
        }

    def on_message(self, ws: WebSocketRoute, text: str | bytes) -> None:
        self.ws = ws
        message = json.loads(text)
        if message["type"] == "hello":
            ws.send(json.dumps({
                "type": "welcome", "table": self.table_json(), "seat": self.seat,
                "seq": self.seq, "epoch": 1, "server_time_ms": self.server_ms(),
                "signals": self.signals,
                "limits": {"max_message_bytes": 4096, "rate_per_second": 20},
            }))
            ws.send(json.dumps(self.snapshot()))
        elif message["type"] == "back":
            self.absent = [s for s in self.absent if s != self.seat]
            streak = self.automatic[self.seat] if self.automatic else 0
            self.push({"type": "absent", "seat": self.seat, "absent": False,
                       "automatic": streak, "pending": self.deadlines()})
            ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": self.seq}))
        elif message["type"] == "signal":
            self.sent_signals.append(message["code"])
            ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": None}))
        else:
            super().on_message(ws, text)

    def send_snapshot(self) -> None:
        """A snapshot at any time (an `in_doubt` re-read): the page must take it whole."""
        assert self.ws is not None
        self.ws.send(json.dumps(self.snapshot()))

    def table_event(self, **changes: Any) -> None:
        self.push({"type": "table", "table": {**self.table_json(), "you": None, **changes}})


def signal(code: str, label: str, at_ms: int, seat: int = 2) -> dict[str, Any]:
    return {"type": "signal", "from": seat, "code": code, "label": label, "at_ms": at_ms}


async def log_lines(page: Page, text: str) -> int:
    return int(await page.locator("#log li", has_text=text).count())


# --- 1. the streak after "Estou de volta" ------------------------------------------------------


async def test_the_streak_stays_in_sight_after_back_until_i_act_myself(
    live_server: LiveServer, browser: Browser
) -> None:
    # my turn (I am mano), the clock has acted for me once: the singular is right
    table = PlayerTable(paulista_1x1(), seat=0, names=["volta_eu", "bot"], absent=[0],
                        automatic=[1, 0])
    page = await open_table(live_server, browser, table, "volta_eu", PHONE)
    notice = page.locator("#notice")
    streak = page.locator("#streak-notice")
    me = page.locator('#players li[data-seat="0"]')
    await expect(notice).to_contain_text(
        "O relógio já agiu por você 1 vez seguida; se o tempo se esgotar mais 9 vezes seguidas,"
        " você perde a partida por abandono.")
    await expect(notice).not_to_contain_text("1 vez seguidas")
    # the review: 8 automatic actions, then "Estou de volta"
    table.push({"type": "absent", "seat": 0, "absent": True, "automatic": 8})
    table.automatic = [8, 0]
    await expect(me).to_contain_text("ausente (8 de 10 ações automáticas)")
    await page.get_by_role("button", name="Estou de volta").click()
    await expect(notice).to_be_hidden()
    await expect(page.get_by_role("button", name="Estou de volta")).to_be_hidden()
    # the streak stands until I act: said, with what zeroes it, and on my player line
    await expect(streak).to_be_visible()
    await expect(streak).to_have_text(
        "O relógio agiu por você 8 vezes seguidas: mais 2 tempos esgotados e você perde a"
        " partida por abandono. Jogue você mesmo para zerar a contagem.")
    await expect(streak).to_have_attribute("role", "status")
    await expect(me).to_contain_text("8 de 10 ações automáticas seguidas")
    await expect(me).not_to_contain_text("ausente")
    await expect(page.locator("#log")).to_contain_text(
        "Você voltou: suas decisões têm de novo o tempo inteiro do relógio. A contagem de ações"
        " automáticas seguidas (8 de 10) só zera quando você jogar.")
    # the clock acts again (an automatic move of mine is no reset), and I am absent again
    assert table.ws is not None
    table.play(table.ws, Action(0, ActionKind.TIMEOUT))
    await expect(page.locator("#log")).to_contain_text("Você jogou 4 de ouros (automático).")
    await expect(streak).to_contain_text("8 vezes seguidas")
    table.push({"type": "absent", "seat": 0, "absent": True, "automatic": 9})
    table.automatic = [9, 0]
    await expect(notice).to_contain_text(
        "O relógio já agiu por você 9 vezes seguidas: no próximo tempo esgotado, você perde a"
        " partida por abandono.")
    await expect(streak).to_be_hidden()  # the absence notice says the count meanwhile
    await page.get_by_role("button", name="Estou de volta").click()
    await expect(streak).to_contain_text(
        "O relógio agiu por você 9 vezes seguidas: mais 1 tempo esgotado e você perde")
    # the bot wins the round and leads: another player's move changes nothing of my count
    table.play(table.ws, Action(1, ActionKind.PLAY, card=parse_card("6D")))
    table.play(table.ws, Action(1, ActionKind.PLAY, card=parse_card("2H")))
    await expect(page.get_by_role("button", name="Jogar 3 de paus")).to_be_enabled()
    await expect(streak).to_contain_text("9 vezes seguidas")
    await expect(me).to_contain_text("9 de 10 ações automáticas seguidas")
    # I play myself: the server's streak is gone (no `absent` event comes: I was not absent),
    # and so is the page's
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await expect(page.locator("#log")).to_contain_text("Você jogou 3 de paus.")
    await expect(streak).to_be_hidden()
    await expect(me).not_to_contain_text("ações automáticas")
    await expect(notice).to_be_hidden()


async def test_an_empty_seats_streak_past_the_limit_is_said_as_it_is(
    live_server: LiveServer, browser: Browser
) -> None:
    # a private table: the rival's connection is lost, the clock acts for them past the limit
    # (the empty seat cancels the match there, not the limit: docs/RULE_DECISIONS.md, 21)
    state = apply(paulista_1x1(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0]
    table = PlayerTable(state, seat=0, names=["dono_vazio", "rival_vz"], people={1},
                        offline={1}, absent=[1], automatic=[0, 12])
    table.cancel_at = {1: table.server_ms() + 14_000}
    page = await open_table(live_server, browser, table, "dono_vazio")
    rival = page.locator('#players li[data-seat="1"]')
    await expect(rival).to_contain_text(
        "ausente (12 ações automáticas seguidas, além do limite de 10)")
    await expect(rival).to_contain_text("desconectado — a partida é cancelada em")
    await expect(rival).not_to_contain_text("12 de 10")


async def test_back_past_the_limit_the_next_time_out_is_said_to_forfeit(
    live_server: LiveServer, browser: Browser
) -> None:
    table = PlayerTable(paulista_1x1(), seat=0, names=["volta_tarde", "bot"], absent=[0],
                        automatic=[13, 0])
    page = await open_table(live_server, browser, table, "volta_tarde")
    await expect(page.locator("#notice")).to_contain_text(
        "O relógio já agiu por você 13 vezes seguidas: no próximo tempo esgotado, você perde a"
        " partida por abandono.")
    await page.get_by_role("button", name="Estou de volta").click()
    await expect(page.locator("#streak-notice")).to_contain_text(
        "O relógio agiu por você 13 vezes seguidas: mais 1 tempo esgotado e você perde")
    await expect(page.locator('#players li[data-seat="0"]')).to_contain_text(
        "13 ações automáticas seguidas, além do limite de 10")


async def test_another_seats_standing_streak_is_shown_until_it_acts(
    live_server: LiveServer, browser: Browser
) -> None:
    # seat 1 (a person) came back with a streak of 4: its line keeps the count until it acts
    state = apply(paulista_1x1(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0]
    table = PlayerTable(state, seat=0, names=["outro_eu", "rival_st"], people={1},
                        automatic=[0, 4])
    page = await open_table(live_server, browser, table, "outro_eu")
    rival = page.locator('#players li[data-seat="1"]')
    await expect(rival).to_contain_text("4 de 10 ações automáticas seguidas")
    await expect(page.locator("#streak-notice")).to_be_hidden()  # not my streak
    assert table.ws is not None
    table.play(table.ws, Action(1, ActionKind.PLAY, card=parse_card("2H")))
    await expect(page.locator("#log")).to_contain_text("rival_st jogou")
    await expect(rival).not_to_contain_text("ações automáticas")


# --- 2. partner signals ------------------------------------------------------------------------


async def test_partner_signals_come_back_with_a_snapshot_logged_once(
    live_server: LiveServer, browser: Browser
) -> None:
    now = int(time.time() * 1000)
    three = signal("tres", "Tenho três", now - 9000)
    weak = signal("fraco", "Tô fraco", now - 5000)
    ask = signal("pede", "Pede truco!", now)
    # a reload (or a reconnect) in the hand: the signals my partner sent me are in the snapshot
    table = PlayerTable(paulista_2x2(), seat=0, names=["sinal_volta", "b1", "par_volta", "b3"],
                        people={2}, partner_signals=[three, weak],
                        signals=[{"code": "tres", "label": "Tenho três"}])
    page = await open_table(live_server, browser, table, "sinal_volta")
    received = page.locator("#signal-received")
    await expect(received).to_have_text("Parceiro: “Tô fraco”")
    log = page.locator("#log")
    await expect(log).to_contain_text("par_volta (parceiro) sinalizou: “Tenho três” (mão 1).")
    await expect(log).to_contain_text("par_volta (parceiro) sinalizou: “Tô fraco” (mão 1).")
    # oldest first in the snapshot, so the newest is on top of the newest-first log
    first = await log.locator("li").first.text_content()
    assert first is not None and "Tô fraco" in first, first
    # one more, live; then a snapshot listing all three: nothing is logged twice
    assert table.ws is not None
    table.ws.send(json.dumps(ask))
    await expect(received).to_have_text("Parceiro: “Pede truco!”")
    table.partner_signals = [three, weak, ask]
    table.send_snapshot()
    await table.taken_in(page)
    await expect(received).to_have_text("Parceiro: “Pede truco!”")
    for label in ("Tenho três", "Tô fraco", "Pede truco!"):
        assert await log_lines(page, f"sinalizou: “{label}”") == 1, label
    # a reload: the whole hand's signals again, once each
    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(received).to_have_text("Parceiro: “Pede truco!”")
    for label in ("Tenho três", "Tô fraco", "Pede truco!"):
        await expect(page.locator("#log li", has_text=f"sinalizou: “{label}”")).to_have_count(1)


async def test_a_signal_to_a_disconnected_partner_is_said_to_be_kept(
    live_server: LiveServer, browser: Browser
) -> None:
    table = PlayerTable(paulista_2x2(), seat=0, names=["sinal_guarda", "b1", "par_fora", "b3"],
                        people={2}, offline={2}, cancel_at={},
                        signals=[{"code": "tres", "label": "Tenho três"}])
    page = await open_table(live_server, browser, table, "sinal_guarda")
    await expect(page.locator('#players li[data-seat="2"]')).to_contain_text("desconectado")
    await page.get_by_role("button", name="Tenho três").click()
    sent = page.locator("#signal-sent")
    await expect(sent).to_have_text(
        "Sinal guardado: “Tenho três”. O parceiro está desconectado e o verá se voltar ainda"
        " nesta mão.")
    await expect(page.locator("#log")).to_contain_text(
        "Você sinalizou ao parceiro: “Tenho três” (mão 1); o parceiro está desconectado e o verá"
        " se voltar ainda nesta mão.")
    assert table.sent_signals == ["tres"]
    # the partner is back: a signal now reaches them at once
    table.offline.clear()
    table.table_event()
    await expect(page.locator('#players li[data-seat="2"]')).not_to_contain_text("desconectado")
    await page.get_by_role("button", name="Tenho três").click()
    await expect(sent).to_have_text("Sinal enviado ao parceiro: “Tenho três”.")


# --- 3. the countdown to a cancellation --------------------------------------------------------


async def seconds_in(locator: Locator) -> int:
    text = await locator.text_content() or ""
    match = re.fullmatch(r"(\d+) s", text.strip())
    assert match, text
    return int(match.group(1))


async def seconds_left(table: PlayerTable, seat: int, clock: Locator) -> int:
    """The seat's countdown as shown, checked against the seconds left to its cancellation by the
    server's clock while it was read (give or take the rounding and the page's once-a-second
    tick)."""
    start = table.server_ms()
    shown = await seconds_in(clock)
    end = table.server_ms()
    due = table.cancel_at[seat]
    assert (due - end) / 1000 - 1.5 <= shown <= (due - start) / 1000 + 1.5, (shown, due - end)
    return shown


async def test_a_disconnected_seat_counts_down_to_the_cancellation(
    live_server: LiveServer, browser: Browser
) -> None:
    # the server's clock is 100 s ahead of the page's: the countdown is the server's
    skew = 100_000
    server_now = int(time.time() * 1000) + skew
    names = ["cancela_eu", "rival_c", "par_c", "outro_c"]
    table = PlayerTable(paulista_2x2(), seat=0, names=names, people={1, 2, 3}, kind="private",
                        offline={2}, cancel_at={2: server_now + 42_000}, skew_ms=skew)
    page = await open_table(live_server, browser, table, "cancela_eu")
    partner = page.locator('#players li[data-seat="2"]')
    await expect(partner).to_contain_text(
        re.compile(r"desconectado — a partida é cancelada em \d+ s se não voltar"))
    clock = partner.locator(".clock")
    # the seconds left by the server's clock (by the page's own, 100 s behind, it would say
    # 140 or so), however long the page took to open on a busy machine (a fixed 40-42 s failed
    # when it took over 3 s)
    before = await seconds_left(table, 2, clock)
    assert before <= 42
    await page.wait_for_timeout(2300)
    after = await seconds_left(table, 2, clock)
    assert after < before, (before, after)
    # another one drops: told in the log too, with the time left (a minute, less the time the
    # news took to arrive)
    table.offline.add(3)
    table.cancel_at[3] = table.server_ms() + 60_000
    table.table_event()
    await expect(page.locator("#log")).to_contain_text(
        re.compile(r"outro_c se desconectou: se não voltar em (5[5-9]|60) s,"
                   r" a partida é cancelada\."))
    await expect(page.locator('#players li[data-seat="3"]')).to_contain_text(
        re.compile(r"a partida é cancelada em (5[5-9]|60) s se não voltar"))
    # back in time: no countdown any more
    table.offline.discard(2)
    del table.cancel_at[2]
    table.table_event()
    await expect(page.locator("#log")).to_contain_text("par_c voltou à mesa.")
    await expect(partner).not_to_contain_text("desconectado")
    await expect(partner.locator(".clock")).to_have_count(0)


async def test_a_disconnected_seats_turn_clock_is_told_from_its_cancellation(
    live_server: LiveServer, browser: Browser
) -> None:
    # A review read "fabi (parceiro) · 3 cartas · desconectado — a partida é cancelada em 46 s se
    # não voltar · 11 s": the seat's turn clock, bare, read as part of that sentence
    state = paulista_2x2()
    state, _ = apply(state, Action(0, ActionKind.PLAY, card=parse_card("3C")))
    state, _ = apply(state, Action(1, ActionKind.PLAY, card=parse_card("2H")))
    table = PlayerTable(state, seat=0, names=["vez_eu", "rival_v", "par_v", "outro_v"],
                        people={1, 2, 3}, offline={2})
    table.cancel_at = {2: table.server_ms() + 46_000}
    page = await open_table(live_server, browser, table, "vez_eu")
    partner = page.locator('#players li[data-seat="2"]')
    await expect(partner).to_have_text(re.compile(
        r"par_v \(parceiro\) · 3 cartas · desconectado — a partida é cancelada em \d+ s se não"
        r" voltar · vez de jogar: \d+ s"))
    await page.context.close()


async def test_covering_a_card_says_it_is_public_after_the_hand(
    live_server: LiveServer, browser: Browser
) -> None:
    # the seed is revealed after the hand (docs/FAIRNESS.md, section 12): a covered card's face is
    # in the hand's public record; the Cobrir button said only "jogar virada, não vale nada"
    table = PlayerTable(paulista_1x1(), seat=0, names=["cobre_eu", "b1"],
                        script=[[Action(1, ActionKind.PLAY, card=parse_card("2H"))]])
    page = await open_table(live_server, browser, table, "cobre_eu")
    note = page.locator("#cover-note")
    await expect(note).to_be_hidden()  # round 1: nothing can be covered
    await expect(page.get_by_role("button", name="Jogar 3 de paus")).to_be_enabled()
    await expect(page.locator('#my-hand button[data-action="cover"]')).to_have_count(0)
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    cover = page.get_by_role("button", name="Cobrir 4 de ouros (jogar virada, não vale nada)")
    words = ("Carta coberta: fica escondida durante a mão, mas aparece no registro público da mão"
             " quando ela termina.")
    await expect(note).to_have_text(words)
    await expect(note).to_be_visible()
    await expect(cover).to_have_accessible_description(words)
    await cover.click()
    await expect(note).to_be_hidden()  # seat 1's turn: no Cobrir on screen
    sent = table.received[-1]
    assert (sent["do"], sent["card"], sent["covered"]) == ("play", "4D", True), sent


# --- 4. a player leaving a finished table ------------------------------------------------------


async def test_a_player_leaving_calls_off_the_rematch_and_it_is_said(
    live_server: LiveServer, browser: Browser
) -> None:
    names = ["ana_rv", "bia_rv", "caio_rv", "duda_rv"]
    table = PlayerTable(paulista_2x2(), seat=0, names=names, people={1, 2, 3}, kind="private")
    page = await open_table(live_server, browser, table, "ana_rv")
    table.abandon(1)  # the match is over
    await expect(page.locator("#match-over")).to_be_visible()
    status = page.locator("#rematch-status")
    table.table_event(rematch=[0, 1])
    await expect(status).to_have_text("2 de 4 pediram revanche: Você, bia_rv.")
    # caio leaves the finished table: it reopens for seating, nobody waits for a rematch
    table.status = "open"
    table.gone.add(2)
    table.table_event(rematch=[])
    log = page.locator("#log")
    await expect(log).to_contain_text("caio_rv saiu da mesa.")
    await expect(log).to_contain_text("A revanche foi desfeita: caio_rv saiu da mesa.")
    await expect(status).to_be_visible()
    await expect(status).to_have_text("A revanche foi desfeita: caio_rv saiu da mesa.")
    await expect(page.locator("#match-over")).to_be_visible()
    # and the seat is free: the private table cannot start yet
    await expect(page.locator("#seating")).to_be_visible()
    await expect(page.locator("#start-match")).to_be_hidden()
    await expect(page.locator("#start-missing")).to_have_text(
        "Falta 1 jogador para começar a partida.")
    # someone sits down: logged too
    table.gone.clear()
    table.names[2] = "edu_rv"
    table.table_event(rematch=[])
    await expect(log).to_contain_text("edu_rv sentou no lugar 3.")
    await expect(page.get_by_role("button", name="Começar a partida")).to_be_visible()
    await expect(page.locator("#start-missing")).to_be_hidden()
    assert await log_lines(page, "saiu da mesa") == 2  # the leaving and the rematch, once each


# --- 5. the start button at a private table ----------------------------------------------------


async def test_a_private_table_offers_the_start_only_when_full(
    live_server: LiveServer, browser: Browser
) -> None:
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "dono_cheia")
    await create_table(owner, "paulista", 4, "private")
    missing = owner.locator("#start-missing")
    await expect(missing).to_have_text(
        "Faltam 3 jogadores para começar a partida: compartilhe o convite.")
    await expect(owner.locator("#start-match")).to_be_hidden()
    await owner.context.close()

    # a 1x1: the guest sits through the invite link, the start shows; the guest leaves, it hides
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "dono_um")
    await create_table(owner, "paulista", 2, "private")
    missing = owner.locator("#start-missing")
    await expect(missing).to_have_text(
        "Falta 1 jogador para começar a partida: compartilhe o convite.")
    start = owner.get_by_role("button", name="Começar a partida")
    await expect(start).to_be_hidden()
    invite = await owner.locator("#invite-link").input_value()
    guest = await new_page(browser, live_server)
    await signup(guest, live_server, "convidado_um")
    await guest.goto(invite)
    await guest.get_by_role("button", name="Sentar no lugar 2").click()
    await expect(start).to_be_visible()
    await expect(missing).to_be_hidden()
    await expect(owner.locator("#log")).to_contain_text("convidado_um sentou no lugar 2.")
    await guest.get_by_role("button", name="Sair da mesa").click()
    await expect(owner.locator("#log")).to_contain_text("convidado_um saiu da mesa.")
    await expect(start).to_be_hidden()
    await expect(missing).to_have_text(
        "Falta 1 jogador para começar a partida: compartilhe o convite.")
    await owner.context.close()
    await guest.context.close()

    # a training table: the bots take the free seats, the start is there at once
    trainer = await new_page(browser, live_server)
    await signup(trainer, live_server, "treino_cheia")
    await create_table(trainer, "paulista", 4, "training")
    await expect(trainer.get_by_role("button", name="Começar contra os robôs")).to_be_visible()
    await expect(trainer.locator("#start-missing")).to_be_hidden()


# --- 6. the answer buttons on a phone ----------------------------------------------------------


def truco_asked_2x2() -> MatchState:
    """Paulista 2x2: I played 3C, Robô 2 asks truco; my team's answer is pending."""
    state = apply(paulista_2x2(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0]
    return apply(state, Action(1, ActionKind.RAISE))[0]


async def assert_answer_in_sight(page: Page) -> None:
    """Without the player scrolling: the request wholly on screen, its answer buttons too (each
    wholly inside the viewport), and none of them covering the request."""
    await page.wait_for_timeout(150)
    buttons = await page.locator("#actions button").all()
    assert {await b.get_attribute("data-action") for b in buttons} >= {"accept", "decline"}
    for button in buttons:
        await expect(button).to_be_in_viewport(ratio=1)
    await expect(page.locator("#request")).to_be_in_viewport(ratio=1)
    request = await page.locator("#request").bounding_box()
    bar = await page.locator("#actions").bounding_box()
    assert request is not None and bar is not None
    assert request["y"] + request["height"] <= bar["y"], (request, bar)


async def test_a_pending_answer_is_in_sight_on_a_phone(
    live_server: LiveServer, browser: Browser
) -> None:
    # as in the review: a 2x2 training table at 390 x 844, a streak standing after "Estou de
    # volta" (its notice above the board), and the answer to a bot's truco pending (a reload)
    table = PlayerTable(truco_asked_2x2(), seat=0, names=["fone_eu", "b1", "b2", "b3"],
                        automatic=[8, 0, 0, 0])
    page = await open_table(live_server, browser, table, "fone_eu", PHONE)
    await expect(page.locator("#request")).to_contain_text("Robô 2 pediu truco!")
    await assert_answer_in_sight(page)
    # in the page's order the answers still follow my cards (keyboard and screen reader)
    order = await page.evaluate("""() => {
        const cards = document.getElementById("my-hand");
        const actions = document.getElementById("actions");
        return Boolean(cards.compareDocumentPosition(actions) & Node.DOCUMENT_POSITION_FOLLOWING);
    }""")
    assert order
    await page.context.close()

    # a hand's start: the Truco! is in sight with the page at its top (not cut at the bottom)
    table = PlayerTable(paulista_2x2(), seat=0, names=["fone_mao", "b1", "b2", "b3"],
                        automatic=[8, 0, 0, 0])
    page = await open_table(live_server, browser, table, "fone_mao", PHONE)
    truco = page.get_by_role("button", name="Truco! (vale 3)")
    await page.evaluate("() => window.scrollTo(0, 0)")
    await expect(truco).to_be_in_viewport(ratio=1)
    # a card focused with the keyboard is scrolled clear of the actions bar
    last = page.locator("#my-hand button").last
    await last.focus()
    await page.wait_for_timeout(200)
    card = await last.bounding_box()
    bar = await page.locator("#actions").bounding_box()
    assert card is not None and bar is not None
    assert card["y"] + card["height"] <= bar["y"] + 1, (card, bar)
    assert await page.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    await page.context.close()

    # I played my card; the player looks at the top of the page, or at the log at its bottom:
    # the bot's truco comes, and is brought into sight with its buttons
    played = apply(paulista_2x2(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0]
    for user, scroll in (("fone_topo", "0"), ("fone_log", "document.body.scrollHeight")):
        table = PlayerTable(played, seat=0, names=[user, "b1", "b2", "b3"],
                            automatic=[8, 0, 0, 0], script=[[Action(2, ActionKind.ACCEPT)]])
        page = await open_table(live_server, browser, table, user, PHONE)
        await expect(page.locator("#turn")).to_have_text("Vez de Robô 2.")
        await page.evaluate(f"() => window.scrollTo(0, {scroll})")
        await page.wait_for_timeout(100)
        assert table.ws is not None
        table.play(table.ws, Action(1, ActionKind.RAISE))
        await expect(page.locator("#request")).to_contain_text("Robô 2 pediu truco!")
        await assert_answer_in_sight(page)
        # answered with a tap where it is
        await page.locator('#actions button[data-action="accept"]').click()
        await expect(page.locator("#hand-value")).to_have_text("3")
        await page.context.close()


# --- 7. the header's touch targets, and its menu on a phone ------------------------------------


async def test_the_header_touch_targets_are_44_px_on_a_phone(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "dedo_grande")
    for path in ("/", "/me/hands"):
        await page.goto(live_server.url(path))
        await page.get_by_role("button", name="Menu").click()  # every link shown
        targets = page.locator("header.site a, header.site button")
        assert await targets.count() >= 8
        small = []
        for target in await targets.all():
            box = await target.bounding_box()
            assert box is not None
            if box["width"] < 44 or box["height"] < 44:
                small.append((await target.text_content(), box["width"], box["height"]))
        assert small == [], (path, small)
        logout = page.get_by_role("button", name="Sair", exact=True)
        await expect(logout).to_be_in_viewport(ratio=1)
        assert await page.evaluate(
            "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    # the desktop header is as it was: one line, the links their text's size
    desktop = await new_page(browser, live_server, DESKTOP)
    await signup(desktop, live_server, "dedo_mesa")
    header = await desktop.locator("header.site").bounding_box()
    assert header is not None and header["height"] < 70, header
    link = await desktop.get_by_role("link", name="Mesas", exact=True).bounding_box()
    assert link is not None and link["height"] < 30, link
    await expect(desktop.get_by_role("button", name="Menu")).to_be_hidden()


async def test_a_phone_folds_the_header_links_behind_a_menu(
    live_server: LiveServer, browser: Browser
) -> None:
    # the header's eight links took four rows above every page, a third of a phone's screen
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "menu_dobrado")
    header = page.locator("header.site")
    menu = header.get_by_role("button", name="Menu", exact=True)  # the arrow is not read
    nav = page.get_by_role("navigation", name="Principal")
    ranked = nav.get_by_role("link", name="Ranqueada")
    await expect(menu).to_have_attribute("aria-expanded", "false")
    await expect(menu).to_have_attribute("aria-controls", "site-nav site-me")
    await expect(nav).to_be_hidden()
    logout = page.get_by_role("button", name="Sair", exact=True)
    await expect(logout).to_be_hidden()
    box = await header.bounding_box()
    assert box is not None and box["height"] < 70, box  # one row: the brand and the menu
    # opened by a tap: every link and my account's, under the first row
    await menu.click()
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await expect(ranked).to_be_in_viewport(ratio=1)
    await expect(logout).to_be_in_viewport(ratio=1)
    await expect(header.get_by_role("link", name="menu_dobrado")).to_be_visible()
    assert await nav.get_by_role("link").count() == 8  # (with "Regras")
    menu_box, nav_box = await menu.bounding_box(), await nav.bounding_box()
    assert menu_box is not None and nav_box is not None
    assert nav_box["y"] >= menu_box["y"] + menu_box["height"], (menu_box, nav_box)
    # closed again by the button, or by Escape from a link, the focus back on the button
    await menu.click()
    await expect(nav).to_be_hidden()
    await menu.press("Enter")
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await page.keyboard.press("Tab")
    await expect(nav.get_by_role("link", name="Mesas", exact=True)).to_be_focused()
    await page.keyboard.press("Escape")
    await expect(nav).to_be_hidden()
    await expect(menu).to_be_focused()
    await expect(menu).to_have_attribute("aria-expanded", "false")
    # a link in it goes where it says; the next page starts folded
    await menu.click()
    await ranked.click()
    await page.wait_for_url(live_server.url("/ranked"))
    await expect(nav).to_be_hidden()
    await expect(menu).to_have_attribute("aria-expanded", "false")
    # a visitor's three links are not folded: "Verificar uma mão" stays in sight
    visitor = await browser.new_context(viewport=PHONE)  # type: ignore[arg-type]
    guest = await visitor.new_page()
    await guest.goto(live_server.url("/"))
    await expect(guest.get_by_role("navigation", name="Principal").get_by_role(
        "link", name="Verificar uma mão")).to_be_in_viewport(ratio=1)
    await expect(guest.get_by_role("button", name="Menu")).to_have_count(0)
    await visitor.close()
    # signed in, without the page's scripts: every link shows, and no button that would do nothing
    bare = await browser.new_context(viewport=PHONE, java_script_enabled=False,  # type: ignore[arg-type]
                                     storage_state=await page.context.storage_state())
    plain = await bare.new_page()
    await plain.goto(live_server.url("/"))
    plain_nav = plain.get_by_role("navigation", name="Principal")
    await expect(plain_nav.get_by_role("link", name="Minhas mãos")).to_be_visible()
    await expect(plain.get_by_role("button", name="Sair", exact=True)).to_be_visible()
    await expect(plain.get_by_role("button", name="Menu")).to_be_hidden()
    await bare.close()
    # a window widened past a phone's shows the links and no menu button, even when it was shut
    await page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]
    await expect(nav.get_by_role("link", name="Ranqueada")).to_be_visible()
    await expect(menu).to_be_hidden()
    await page.context.close()
