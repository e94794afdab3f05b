"""What an accessibility review (a screen reader through the live regions, the keyboard alone,
contrast) found on the table, the ranked queue and the forms, fixed and kept fixed.

The live regions are watched as a screen reader hears them: a MutationObserver, installed before
the page's own scripts, records every text written into a live region (`aria-live`, `role=status`
/ `alert` / `log`) outside `aria-hidden` parts. Most tables are the real engine answering the real
page's WebSocket (tests/test_browser_views.py, tests/test_browser_table_ux.py); the start button,
the ranked queue and the forms run on the real server.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page, WebSocketRoute, expect

from tests.test_browser_ranked_queue import TABLE_URL, first_in_queue
from tests.test_browser_table_ux import ReviewTable, paulista_1x1
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PASSWORD,
    LiveServer,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    signup,
)
from tests.test_browser_views import TABLE_ID, dealt
from truco import (
    Action,
    ActionKind,
    MatchConfig,
    Variant,
    apply,
    new_match,
    parse_card,
    pending,
    start_hand,
)

# every text a screen reader would be told: written into a live region, not aria-hidden
RECORDER = """
window.__live = [];
(() => {
  const LIVE = '[aria-live], [role="status"], [role="alert"], [role="log"]';
  const element = (node) => (node.nodeType === 1 ? node : node.parentElement);
  new MutationObserver((records) => {
    for (const record of records) {
      const region = element(record.target)?.closest(LIVE);
      if (!region || region.getAttribute("aria-live") === "off") continue;
      const nodes = record.type === "characterData" ? [record.target] : [...record.addedNodes];
      for (const node of nodes) {
        if (element(node)?.closest('[aria-hidden="true"]')) continue;
        let text = node.textContent;
        if (node.nodeType === 1) {
          const copy = node.cloneNode(true);
          copy.querySelectorAll('[aria-hidden="true"]').forEach((n) => n.remove());
          text = copy.textContent;
        }
        text = text.trim();
        if (text) window.__live.push({ region: region.id, text });
      }
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
})();
"""


@dataclass
class A11yTable(ReviewTable):
    """A review table whose clocks run `clock_ms`, answering `back` as the server does."""

    clock_ms: int = 20_000
    messages: list[dict[str, Any]] = field(default_factory=list)

    def deadlines(self) -> list[dict[str, Any]]:
        due = int(time.time() * 1000) + self.clock_ms
        return [
            {"seat": p.seat, "seats": [p.seat], "kind": p.kind.value, "team_vote": p.team_vote,
             "deadline_ms": due}
            for p in pending(self.state)
        ]

    def on_message(self, ws: WebSocketRoute, text: str | bytes) -> None:
        message = json.loads(text)
        self.messages.append(message)
        if message["type"] == "back":
            # docs/PROTOCOL.md: the absence ends, the pending clock restarts in full, the
            # streak stands; the `absent` event, then the ack
            self.ws = ws
            self.absent = [s for s in self.absent if s != self.seat]
            self.clock_ms = 20_000
            streak = self.automatic[self.seat] if self.automatic else 0
            self.push({"type": "absent", "seat": self.seat, "absent": False,
                       "automatic": streak, "pending": self.deadlines()})
            ws.send(json.dumps({"type": "ack", "id": message["id"], "seq": self.seq}))
        else:
            super().on_message(ws, text)

    def rerender(self, times: int = 3) -> None:
        """Messages that change nothing shown (a `table` event each): the page renders again."""
        for _ in range(times):
            self.push({"type": "table", "table": {**self.table_json(), "you": None}})


async def open_recorded(
    live: LiveServer, browser: Browser, table: A11yTable, user: str
) -> Page:
    page = await new_page(browser, live)
    await page.add_init_script(RECORDER)
    await signup(page, live, user)
    await page.route_web_socket("**/ws/tables/**", lambda ws: ws.on_message(
        lambda text: table.on_message(ws, text)))
    await page.goto(live.url(f"/t/{TABLE_ID}"))
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(page.locator("#board")).to_be_visible()
    return page


async def heard(page: Page, region: str | None = None) -> list[str]:
    entries = await page.evaluate("() => window.__live")
    return [e["text"] for e in entries if region is None or e["region"] == region]


def truco_asked() -> Any:
    """Paulista 1x1: I played 3C, Robô 2 asks truco; my answer is pending."""
    state = paulista_1x1()
    state, _ = apply(state, Action(0, ActionKind.PLAY, card=parse_card("3C")))
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    return state


async def test_live_regions_say_each_thing_once_and_never_the_ticking_seconds(
    live_server: LiveServer, browser: Browser
) -> None:
    table = A11yTable(truco_asked(), seat=0, names=["ouvido_0", "bot"], clock_ms=11_400)
    page = await open_recorded(live_server, browser, table, "ouvido_0")
    await expect(page.locator("#request")).to_contain_text("Robô 2 pediu truco!")
    # messages that change nothing on the table: nothing is said again
    table.rerender(4)
    await table.taken_in(page)
    await page.wait_for_timeout(1500)
    request = [t for t in await heard(page, "request-ask") if "pediu truco" in t]
    assert len(request) == 1, request
    turn = await heard(page, "turn")
    assert turn == ["Sua vez —"], turn
    await expect(page.locator("#clock-alert")).to_have_text("10 segundos")
    # the clock counts down on the screen, but only its thresholds are said
    await expect(page.locator("#my-clock")).to_have_text(re.compile(r"^\d+ s$"))
    await expect(page.locator("#my-clock")).to_have_attribute("aria-hidden", "true")
    await expect(page.locator("#clock-alert")).to_have_text("5 segundos", timeout=10_000)
    said = await heard(page)
    assert not [t for t in said if re.search(r"\d+ s\b", t)], said
    assert said.count("10 segundos") == 1 and said.count("5 segundos") == 1, said
    # the fairness notes stay visible in the Jogo justo box, out of the live log
    table.push({"type": "hand_record", "hand": 1, "id": f"{TABLE_ID}-1",
                "url": f"/hands/{TABLE_ID}-1"})
    table.push({"type": "commitment", "hand": 2, "commitment": "fb" * 32, "chain_start": 1,
                "anchor": None, "entropy_deadline_ms": int(time.time() * 1000) + 3000})
    fair = page.locator("#fair-log")
    await expect(fair).to_contain_text("Mão 2: compromisso publicado (fbfbfbfbfbfbfbfb…).")
    await expect(fair).to_contain_text("O registro assinado da mão 1 está público.")
    await expect(fair).to_be_visible()
    await expect(page.locator("#log")).not_to_contain_text("compromisso")
    said = await heard(page)
    assert not [t for t in said if "compromisso" in t or "registro assinado" in t], said
    # the turn line of another seat's turn is said once too
    other = A11yTable(apply(paulista_1x1(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0],
                      seat=0, names=["ouvido_1", "bot"])
    page2 = await open_recorded(live_server, browser, other, "ouvido_1")
    await expect(page2.locator("#turn")).to_have_text("Vez de Robô 2.")
    other.rerender(3)
    await other.taken_in(page2)
    assert await heard(page2, "turn") == ["Vez de Robô 2."]


async def test_an_absent_player_says_they_are_back_and_gets_the_full_clock(
    live_server: LiveServer, browser: Browser
) -> None:
    table = A11yTable(truco_asked(), seat=0, names=["volta_0", "bot"], absent=[0],
                      automatic=[1, 0], clock_ms=2_000)
    page = await open_recorded(live_server, browser, table, "volta_0")
    notice = page.locator("#notice")
    await expect(notice).to_contain_text("Aperte “Estou de volta” para ter de novo o tempo"
                                         " inteiro do relógio em cada decisão.")
    await expect(notice).not_to_contain_text("até você jogar de novo")
    table.rerender(3)
    await table.taken_in(page)
    back = page.get_by_role("button", name="Estou de volta")
    await back.focus()
    await expect(back).to_be_focused()
    # the notice was written once, not at each message
    assert len([t for t in await heard(page, "notice") if "Seu tempo acabou" in t]) == 1
    await page.keyboard.press("Enter")
    await expect(notice).to_be_hidden()
    await expect(back).to_be_hidden()
    assert [m for m in table.messages if m["type"] == "back"] == [{"type": "back", "id": "b1"}]
    # the clock from the event's `pending`: the full 20 s again, not the absent player's 2 s
    # (less the moment the answer took on a busy machine)
    await expect(page.locator("#my-clock")).to_have_text(re.compile(r"^(1[5-9]|20) s$"))
    await expect(page.locator("#log")).to_contain_text("Você voltou")
    # the button went away with the focus: it is on my cards, not on the page's body
    await expect(page.locator("#my-hand")).to_be_focused()
    # absent again later: the button comes back
    table.push({"type": "absent", "seat": 0, "absent": True, "automatic": 2})
    await expect(back).to_be_visible()


async def test_the_end_is_focused_and_scores_are_said(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=1, score=(11, 5))
    state, _ = start_hand(state, dealt(1, [["3C", "3D", "3S"], ["4H", "4D", "5S"]], "KH"))
    table = A11yTable(state, seat=0, names=["fim_a11y", "bot"],
                      script=[[], [Action(1, ActionKind.PLAY, card=parse_card("4H"))],
                              [Action(1, ActionKind.PLAY, card=parse_card("4D"))]])
    page = await open_recorded(live_server, browser, table, "fim_a11y")
    # the board's first showing: the focus starts at the game
    await expect(page.locator("#my-hand")).to_be_focused()
    # the score and the hand's info are labelled groups
    await expect(page.get_by_role("group", name="Placar")).to_contain_text("Você: 11")
    await expect(page.get_by_role("group", name="Esta mão")).to_contain_text("Vale")
    await page.get_by_role("button", name="Jogar a mão de onze (vale 3)").click()
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await page.get_by_role("button", name="Jogar 3 de ouros").click()
    log = page.locator("#log")
    await expect(log).to_contain_text(
        "Fim da mão: você marca 3 pontos (decidida nas rodadas). Placar: Você 14 x 5 Robô 2.")
    # the summary's own sentence (it read "Você marcou 3 pontos: decidida nas rodadas.")
    await expect(page.locator("#summary-result")).to_have_text("Você marcou 3 pontos nas rodadas.")
    await expect(log).to_contain_text(
        "Fim da partida: Você venceu. Placar final: Você 14 x 5 Robô 2.")
    table.push({"type": "match_over", "termination": "target", "winner": 0, "score": [14, 5],
                "forfeit_team": None})
    await expect(page.locator("#match-over")).to_be_visible()
    await expect(page.locator("#match-over-title")).to_be_focused()
    # a score said once: the log's match line is not repeated by the match_over
    assert len([t for t in await heard(page, "log-said") if "Placar final" in t]) == 1
    # the lines are said in the order they came (the visible log, newest first, said several
    # lines of a moment backwards: "Rodada 1: Robô 2 ganhou. Robô 2 jogou…")
    said = await heard(page, "log-said")
    assert [t for t in said if t.startswith(("Fim da mão", "Fim da partida"))] == [
        "Fim da mão: você marca 3 pontos (decidida nas rodadas). Placar: Você 14 x 5 Robô 2.",
        "Fim da partida: Você venceu. Placar final: Você 14 x 5 Robô 2."]
    assert await heard(page, "log") == []  # not a live region: nothing said twice
    # a rematch begins (whoever asked last): the box goes, and with it the focus it held, which
    # dropped to the page's body while the new match's clock ran; it goes to the game
    again = new_match(MatchConfig(Variant.PAULISTA, 2), first_dealer=0)
    again, _ = start_hand(again, dealt(0, [["4C", "5D", "6S"], ["7H", "QD", "JS"]], "KS"))
    table.state, table.status, table.match, table.number = again, "playing", 2, 2
    table.match_first_hand = 2
    table.push({"type": "table", "table": {**table.table_json(), "you": None}})
    table.push({"type": "update", "hand": 2, "events": [], "view": table.my_view(),
                "pending": table.deadlines(), "absent": []})
    await expect(page.locator("#match-over")).to_be_hidden()
    await expect(page.locator("#my-hand")).to_be_focused()


async def test_starting_against_the_bots_puts_the_focus_on_the_game(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "comeca_a11y")
    await create_table(page, "paulista", 2, "training")
    start = page.get_by_role("button", name="Começar contra os robôs")
    await start.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#board")).to_be_visible()
    await expect(page.locator("#my-hand")).to_be_focused()


async def test_the_queue_announces_the_table_which_waits_for_its_players(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    ana, bia = await first_in_queue(browser, live, "ana_a11y", "bia_a11y")
    # bia's join forms the table; her page does not open it (yet): she joins from the lobby,
    # which does not follow the queue, through the JSON API the queue page uses. (Her queue
    # page with its navigation to the table aborted made a page that Playwright's close()
    # could wait on for ever: it did so in 4 of 29 runs, two at a time; none in 80 so.)
    status = await bia.evaluate(
        """async () => {
          const csrf = document.querySelector('meta[name="csrf-token"]').content;
          const r = await fetch("/api/ranked/queue", { method: "POST",
            headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
            body: JSON.stringify({ variant: "paulista", seats: 2 }) });
          return r.status;
        }""")
    assert status == 200
    # ana's page says it in its polite live region before it goes
    await expect(ana.locator("#queue-notice")).to_contain_text("Partida encontrada.")
    await expect(ana.locator("#queue-notice")).to_have_attribute("role", "status")
    await ana.wait_for_url(TABLE_URL)
    # bia has not opened the table: its first deal waits, said with a countdown
    waiting = ana.locator("#first-deal")
    await expect(waiting).to_contain_text(
        "Esperando os jogadores abrirem a mesa: a primeira mão começa quando todos chegarem"
        " (em até")
    await expect(ana.locator("#first-deal-clock")).to_have_text(re.compile(r"^\d+ s$"))
    first = int((await ana.locator("#first-deal-clock").text_content() or "0").split()[0])
    assert 0 < first <= 15
    await expect(ana.locator("#first-deal-clock")).not_to_have_text(f"{first} s")
    # she opens it now
    await bia.goto(ana.url)
    await expect(bia.locator("#board")).to_be_visible()
    await expect(waiting).to_be_hidden()
    await expect(ana.locator("#board")).to_be_visible()
    await expect(ana.locator("#my-hand")).to_be_focused()


async def test_the_focus_ring_and_my_waiting_cards_keep_their_contrast(
    live_server: LiveServer, browser: Browser
) -> None:
    # Robô 2's turn: my cards cannot be played
    state = apply(paulista_1x1(), Action(0, ActionKind.PLAY, card=parse_card("3C")))[0]
    table = A11yTable(state, seat=0, names=["contraste", "bot"])
    page = await open_recorded(live_server, browser, table, "contraste")
    card = page.locator("#my-hand button.card-button").first
    await expect(card).to_be_disabled()
    style = await card.evaluate("""(b) => {
      const s = getComputedStyle(b), face = b.querySelector('.card');
      let opacity = 1;
      for (let n = face; n; n = n.parentElement) opacity *= Number(getComputedStyle(n).opacity);
      return {opacity, border: s.borderTopStyle, color: getComputedStyle(face).color,
              paper: getComputedStyle(face).backgroundColor};
    }""")
    assert style["opacity"] == 1 and style["border"] == "dashed", style
    # a red card's face on its paper, at full opacity
    red = page.locator("#my-hand .card.red").first
    colors = await red.evaluate(
        "(c) => [getComputedStyle(c).color, getComputedStyle(c).backgroundColor]")
    assert contrast(rgb(colors[0]), rgb(colors[1])) >= 4.5, colors
    # the keyboard focus ring: two tones, one of which meets 3:1 on each background in use
    await page.locator("#my-hand").focus()
    await page.keyboard.press("Tab")
    ring = await page.evaluate("""() => {
      const s = getComputedStyle(document.activeElement);
      return {outline: s.outlineColor, width: s.outlineWidth, style: s.outlineStyle,
              shadow: s.boxShadow};
    }""")
    assert ring["style"] == "solid" and ring["width"] == "3px", ring
    shadow = re.match(r"(rgba?\([^)]*\))", ring["shadow"])
    assert shadow, ring
    tones = [rgb(ring["outline"]), rgb(shadow.group(1))]
    backgrounds = ["#ffffff", "#eef1ee", "#0f5132", "#0a3622", "#fff3cd", "#fdfcf8", "#b02a37"]
    for background in backgrounds:
        best = max(contrast(tone, hex_rgb(background)) for tone in tones)
        assert best >= 3, (background, ring)
    # the old amber ring alone failed on white
    assert contrast(hex_rgb("#ffbf47"), hex_rgb("#ffffff")) < 3


async def test_forms_focus_the_invalid_field_and_state_their_rules(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    page = await new_page(browser, live)
    await page.goto(live.url("/"))
    name = page.locator("#signup-name")
    # the rules before any submit, read with the field
    for field_id, rule in (("signup-name", "De 3 a 24 caracteres"),
                           ("signup-password", "Pelo menos 8 caracteres")):
        hint = await page.locator(f"#{field_id}").get_attribute("aria-describedby") or ""
        texts = [await page.locator(f"#{i}").text_content() or "" for i in hint.split()]
        assert any(rule in t for t in texts), (field_id, hint, texts)
    await name.fill("ab")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD)
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.locator("#signup-name-error")).to_be_visible()
    await expect(name).to_be_focused()
    described = (await name.get_attribute("aria-describedby") or "").split()
    assert described == ["signup-name-hint", "signup-name-error"], described
    # the passwords differ: the focus is on the repeated one
    await name.fill("forma_a11y")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD + "x")
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.locator("#signup-password2")).to_be_focused()
    # a wrong login: the password field
    await page.locator("#login-name").fill("ninguem_aqui")
    await page.locator("#login-password").fill("errada errada")
    await page.get_by_role("button", name="Entrar", exact=True).click()
    await expect(page.locator("#login-error")).to_be_visible()
    await expect(page.locator("#login-password")).to_be_focused()
    # /account: a wrong current password
    await signup(page, live, "conta_a11y")
    await page.goto(live.url("/account"))
    await page.locator("#password-current").fill("nao e esta")
    await page.locator("#password-new").fill("outra senha boa 77")
    await page.locator("#password-new2").fill("outra senha boa 77")
    await page.get_by_role("button", name="Trocar a senha").click()
    await expect(page.locator("#password-current-error")).to_be_visible()
    await expect(page.locator("#password-current")).to_be_focused()
    # and a page without an error leaves the focus alone
    await page.goto(live.url("/account"))
    assert await page.evaluate("() => document.activeElement === document.body")


async def test_forms_mark_every_wrong_field_and_focus_the_first(
    live_server: LiveServer, browser: Browser
) -> None:
    # the forms said one problem per submit; now each wrong field says its own at once
    live = live_server
    page = await new_page(browser, live)
    await page.goto(live.url("/"))
    await page.locator("#signup-name").fill("a b")
    await page.locator("#signup-password").fill("abc")
    await page.locator("#signup-password2").fill("abd")
    await page.get_by_role("button", name="Criar conta").click()
    for ident in ("signup-name", "signup-password", "signup-password2"):
        await expect(page.locator(f"#{ident}-error")).to_be_visible()
        await expect(page.locator(f"#{ident}")).to_have_attribute("aria-invalid", "true")
        described = (await page.locator(f"#{ident}").get_attribute("aria-describedby") or "")
        assert described.split() == [f"{ident}-hint", f"{ident}-error"], described
    await expect(page.locator("#signup-name")).to_be_focused()
    # the name fixed: the focus goes to the first field still wrong
    await page.locator("#signup-name").fill("campos_a11y")
    await page.locator("#signup-password").fill("abc")
    await page.locator("#signup-password2").fill("abd")
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.locator("#signup-password")).to_be_focused()
    await expect(page.locator("#signup-password2-error")).to_be_visible()
    await expect(page.locator("#signup-name-error")).to_have_count(0)
    # /account: a wrong current password and new ones that differ
    await signup(page, live, "campos_a11y")
    await page.goto(live.url("/account"))
    await page.locator("#password-current").fill("nao e esta")
    await page.locator("#password-new").fill("outra senha boa 77")
    await page.locator("#password-new2").fill("outra senha boa 78")
    await page.get_by_role("button", name="Trocar a senha").click()
    await expect(page.locator("#password-current-error")).to_be_visible()
    await expect(page.locator("#password-new2-error")).to_be_visible()
    await expect(page.locator("#password-current")).to_be_focused()


async def test_the_ranked_pages_name_me_as_the_site_menu_does(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    page = await new_page(browser, live)
    await signup(page, live, "nome_a11y")
    for path in ("/ranked", "/me", "/arena"):
        await page.goto(live.url(path))
        links = page.locator('a[href="/me"]')
        names = {(await links.nth(i).text_content() or "").strip()
                 for i in range(await links.count())}
        assert "Meu desempenho" in names and "Minha posição" not in names, (path, names)
        await expect(page.locator("body")).not_to_contain_text("Minha posição")


def rgb(css: str) -> tuple[int, int, int]:
    r, g, b = (int(float(x)) for x in re.findall(r"[\d.]+", css)[:3])
    return r, g, b


def hex_rgb(value: str) -> tuple[int, int, int]:
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    def luminance(color: tuple[int, int, int]) -> float:
        def channel(c: int) -> float:
            s = c / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4
        r, g, b_ = (channel(c) for c in color)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)
