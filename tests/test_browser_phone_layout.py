"""A phone's screen, from a phone player's review: the cards in sight at the first deal (they
sat half under the actions bar, and a tap on a card's middle called truco), a phone held
sideways laid out as a phone (its answers to a truco were below the screen), the verifier's
verdict brought to the player, an arena ended only on a second thought, the lobby's 2x2
setting hidden for 1x1, and a 2x2 board in one small phone's screen."""

from __future__ import annotations

from playwright.async_api import Browser, Dialog, Page, expect

from server.accounts import Role, set_role
from server.app import POOL
from tests.test_browser_table_ux import paulista_1x1, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    no_horizontal_scroll,
    signup,
)
from tests.test_browser_views import EngineTable, dealt, open_table
from truco import MatchConfig, MatchState, Variant, new_match, start_hand

IPHONE_12 = {"width": 390, "height": 664}
SIDEWAYS = {"width": 844, "height": 390}


async def clear_of_the_bar(page: Page) -> bool:
    return bool(await page.evaluate("""() => {
      const cards = document.getElementById("my-hand").getBoundingClientRect();
      const bar = document.getElementById("actions").getBoundingClientRect();
      return cards.top >= 0 && cards.bottom <= Math.min(window.innerHeight, bar.top);
    }"""))


async def test_the_cards_are_in_sight_at_the_first_deal(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, IPHONE_12)
    await signup(page, live_server, "primeira_mao")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand button").first).to_be_visible()
    await expect(page.locator("#my-hand")).to_be_focused()
    # my turn (the bot may lead, or call truco): the bar holds my moves and sticks to the
    # screen's bottom, and my cards are above it
    await expect(page.locator("#actions button").first).to_be_visible()
    await page.wait_for_timeout(200)
    assert await page.evaluate(
        "() => getComputedStyle(document.getElementById('actions')).position") == "sticky"
    assert await clear_of_the_bar(page)
    # a tap on a card's middle plays it, not the bar's Truco!
    card = page.locator("#my-hand button").first
    box = await card.bounding_box()
    assert box is not None
    hit = await page.evaluate("([x, y]) => document.elementFromPoint(x, y)?.closest('button')"
                              "?.getAttribute('aria-label')",
                              [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hit == await card.get_attribute("aria-label")


async def test_a_phone_held_sideways_is_laid_out_as_a_phone(
    live_server: LiveServer, browser: Browser
) -> None:
    table = EngineTable(paulista_1x1(), seat=0, names=["deitado", "bot"])
    page = await open_table(live_server, browser, table, "deitado", SIDEWAYS)
    # the actions stick to the bottom of the screen, and the header folds behind its Menu
    assert await page.evaluate(
        "() => getComputedStyle(document.getElementById('actions')).position") == "sticky"
    await expect(page.get_by_role("button", name="Menu")).to_be_visible()
    await expect(page.get_by_role("button", name="Truco! (vale 3)")).to_be_in_viewport()
    assert await clear_of_the_bar(page)


async def test_the_lobby_hides_the_dupla_setting_for_1x1(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, IPHONE_12)
    await signup(page, live_server, "lobby_1x1")
    mode = page.get_by_label("Respostas da dupla (2x2)")
    await expect(mode).to_be_hidden()
    await page.get_by_label("Jogadores").select_option("4")
    await expect(mode).to_be_visible()
    await page.get_by_label("Jogadores").select_option("2")
    await expect(mode).to_be_hidden()


async def test_ending_an_arena_asks_first(live_server: LiveServer, browser: Browser) -> None:
    page = await new_page(browser, live_server, IPHONE_12)
    await signup(page, live_server, "juiza_arena")
    assert await set_role(live_server.app[POOL], "juiza_arena", Role.OPERATOR)
    created = await page.evaluate("""async () => {
      const csrf = document.querySelector('meta[name="csrf-token"]').content;
      const r = await fetch("/api/ranked/arenas", { method: "POST", body: JSON.stringify(
        { variant: "paulista", seats: 2, minutes: 60 }),
        headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" } });
      return r.status;
    }""")
    assert created == 201
    await page.goto(live_server.url("/arena"))
    end = page.get_by_role("button", name="Encerrar esta arena agora (operação)")
    asked: list[str] = []

    async def answer(dialog: Dialog) -> None:
        asked.append(dialog.message)
        await (dialog.accept() if len(asked) > 1 else dialog.dismiss())

    page.on("dialog", answer)
    await end.click()  # thought better of it: nothing sent
    await expect(end).to_be_visible()
    assert asked == ["Encerrar esta arena (Paulista 1x1) agora, para todos os jogadores?"
                     " Isso não se desfaz."]
    await end.click()
    await expect(end).to_be_hidden()
    assert len(asked) == 2


async def test_nothing_scrolls_sideways_at_200_percent_zoom(
    live_server: LiveServer, browser: Browser
) -> None:
    # a 360 x 640 phone at 200% zoom: 180 x 320 CSS pixels (the lobby's "Mesa <id>" and the
    # table's log of commitments scrolled sideways)
    page = await new_page(browser, live_server, {"width": 180, "height": 320})
    await signup(page, live_server, "zoom_200")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-log li").first).to_be_visible()
    assert await no_horizontal_scroll(page)
    await page.goto(live_server.url("/"))
    mine = page.locator("#my-tables")
    await expect(mine.get_by_role("link", name=f"Mesa {table_id}")).to_be_visible()
    # with what leaving the match in play costs, said on the table's item
    await expect(mine.get_by_role("link", name="Voltar à mesa")).to_be_visible()
    assert await no_horizontal_scroll(page)


async def test_the_invite_link_is_copied_whole(live_server: LiveServer, browser: Browser) -> None:
    # a phone showed a few characters of the link in a read-only field, nothing to copy it with
    page = await new_page(browser, live_server, IPHONE_12)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    await signup(page, live_server, "convida_1")
    table_id = await create_table(page, "paulista", 2, "private")
    link = await page.get_by_label("Link de convite").input_value()
    assert link.startswith(live_server.url(f"/t/{table_id}?invite="))
    await page.get_by_role("button", name="Copiar o link").click()
    await expect(page.locator("#invite-copied")).to_have_text(
        "Link copiado: cole-o para quem você convida.")
    assert await page.evaluate("() => navigator.clipboard.readText()") == link


SMALL_PHONE = {"width": 360, "height": 640}


def argentino_2x2() -> MatchState:
    """An Argentino 2x2 dealt by seat 3: my turn first, with the envido calls offered."""
    state = new_match(MatchConfig(Variant.ARGENTINO, 4), first_dealer=3, score=(14, 9))
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    return start_hand(state, dealt(3, hands))[0]


async def test_a_2x2_board_fits_a_small_phones_screen(
    live_server: LiveServer, browser: Browser
) -> None:
    """A 2x2 board was 760 px high on a 360 x 640 phone: the score, the vira and the manilhas
    were off the screen whenever my cards were on it. Now the whole board, from the score to
    my moves, fits the screen (Paulista with its vira and four manilhas; Argentino with its
    malas and the envido calls)."""
    for name, state in (("pequeno_p", paulista_2x2()), ("pequeno_a", argentino_2x2())):
        table = EngineTable(state, seat=0, names=[name, "bot1", "bot2", "bot3"])
        page = await open_table(live_server, browser, table, name, SMALL_PHONE)
        await expect(page.locator("#my-hand button").first).to_be_enabled()
        await expect(page.locator("#actions button").first).to_be_visible()
        board = await page.evaluate("""() => {
          const board = document.getElementById("board");
          board.scrollIntoView();
          const box = board.getBoundingClientRect();
          return {height: box.height, screen: window.innerHeight, top: box.top}; }""")
        assert board["height"] <= board["screen"], (name, board)
        for part in ("#scoreboard", "#hand-info", "#players", "#my-hand", "#actions"):
            await expect(page.locator(part)).to_be_in_viewport(ratio=1)
        assert await no_horizontal_scroll(page)
        await page.context.close()


async def test_links_and_folds_that_stand_alone_are_44_px_touch_targets(
    live_server: LiveServer, browser: Browser
) -> None:
    """The ranked pages' links, "Atualizar", a table of mine in the lobby, "Baixar os meus
    dados" and the folds were 16 to 23 px high on a phone (links inside a sentence stay)."""
    page = await new_page(browser, live_server, IPHONE_12)
    await signup(page, live_server, "dedo_grosso")
    heights = """(selector) => [...document.querySelectorAll(selector)]
      .map((node) => node.getBoundingClientRect().height)"""
    await page.goto(live_server.url("/ranked"))
    for selector in ('nav[aria-label="Ranqueadas"] a', 'a[href="/ranked"].target'):
        found = await page.evaluate(heights, selector)
        assert found and min(found) >= 44, (selector, found)
    await page.goto(live_server.url("/account"))
    assert min(await page.evaluate(heights, "#data-download")) >= 44
    await page.goto(live_server.url("/"))
    await create_table(page, "paulista", 2, "training")
    assert min(await page.evaluate(heights, "details.fairness > summary")) >= 44
    await page.goto(live_server.url("/"))
    await expect(page.locator(".table-item a").first).to_be_visible()
    assert min(await page.evaluate(heights, ".table-item p > a:first-child")) >= 44
