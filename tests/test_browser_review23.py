"""What the twenty-third session's review of the browser table found, fixed and kept fixed.

The table page is answered by a small table on the real engine (tests/test_browser_views.py):
the hand's summary keeps the cards of every round (the next hand is dealt at once and clears
the board), the log of a hand an envido cut off by ending the match, the match's end by target.
"""

from __future__ import annotations

import re

from playwright.async_api import Browser, expect

from tests.test_browser_table_ux import (  # noqa: F401 (fixtures, found by pytest by name)
    PHONE,
    LiveServer,
    Policy,
    ReviewTable,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    paulista_1x1,
    play_hand,
    screenshot,
    signup,
)
from tests.test_browser_tables import DESKTOP
from tests.test_browser_views import dealt, open_table
from truco import (
    Action,
    ActionKind,
    MatchConfig,
    Variant,
    apply,
    new_match,
    parse_card,
    start_hand,
)


async def test_the_summary_shows_every_rounds_cards(
    live_server: LiveServer, browser: Browser
) -> None:
    # 3C 4D 5S against 2H 6D 7S, vira KH: I take round 1, the bot rounds 2 and 3
    table = ReviewTable(paulista_1x1(), seat=0, names=["rodadas_0", "bot"], script=[
        [Action(1, ActionKind.PLAY, card=parse_card("2H"))],
        [Action(1, ActionKind.PLAY, card=parse_card("7S")),
         Action(1, ActionKind.PLAY, card=parse_card("6D"))],
        [],
    ])
    page = await open_table(live_server, browser, table, "rodadas_0")
    for card in ("3C", "4D", "5S"):
        await page.locator(f'#my-hand button[data-action="play"][data-card="{card}"]').click()
    rounds = page.locator("#summary-rounds > li")
    await expect(rounds).to_have_count(3)
    expected = [("1ª rodada: Você ganhou", "3C", "2H"), ("2ª rodada: Robô 2 ganhou", "4D", "7S"),
                ("3ª rodada: Robô 2 ganhou", "5S", "6D")]
    for index, (title, mine, theirs) in enumerate(expected):
        item = rounds.nth(index)
        await expect(item.locator(".round-title")).to_have_text(title)
        for card in (mine, theirs):
            await expect(item.locator(f'.card[data-card="{card}"]')).to_be_visible()
    await page.context.close()


async def test_the_summary_shows_the_round_a_declined_truco_cut_short(
    live_server: LiveServer, browser: Browser
) -> None:
    table = ReviewTable(paulista_1x1(), seat=0, names=["cortada_0", "bot"], script=[
        [Action(1, ActionKind.PLAY, card=parse_card("2H"))],
        [Action(1, ActionKind.RAISE)],  # I lead round 2; the bot asks truco
        [],
    ])
    page = await open_table(live_server, browser, table, "cortada_0")
    for card in ("3C", "4D"):
        await page.locator(f'#my-hand button[data-action="play"][data-card="{card}"]').click()
    await page.locator('#actions button[data-action="decline"]').click()
    rounds = page.locator("#summary-rounds > li")
    await expect(rounds).to_have_count(2)
    await expect(rounds.nth(1).locator(".round-title")).to_have_text("2ª rodada: não terminou")
    await expect(rounds.nth(1).locator('.card[data-card="4D"]')).to_be_visible()
    await expect(page.locator("#log")).to_contain_text(
        "Fim da mão: Robô 2 marca 1 ponto (você correu do truco).")
    await page.context.close()


async def test_a_hand_the_envido_ended_with_the_match_does_not_say_nobody_scores(
    live_server: LiveServer, browser: Browser
) -> None:
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1, score=(28, 0))
    # my tanto: 7 and 6 of swords = 33; the bot's: 5 and 4 of cups = 29
    state, _ = start_hand(state, dealt(1, [["7S", "6S", "AD"], ["5H", "4H", "KC"]]))
    table = ReviewTable(state, seat=0, names=["fim_0", "bot"],
                        script=[[Action(1, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "fim_0")
    await page.get_by_role("button", name="Envido (vale 2)", exact=True).click()
    log = page.locator("#log")
    await expect(log).to_contain_text("Fim da mão: o envido encerrou a partida.")
    assert "ninguém marca" not in (await log.text_content() or "")
    table.push({"type": "match_over", "termination": "target", "winner": 0,
                "score": list(table.state.score), "forfeit_team": None, "forfeit_seat": None,
                "forfeit_trigger": None})
    await expect(page.locator("#match-over-text")).to_contain_text(
        "Vitória! Você venceu — chegou aos 30 pontos.")
    await page.context.close()


async def test_argentino_scores_read_in_malas_and_buenas_off_the_table_too(
    live_server: LiveServer, browser: Browser
) -> None:
    # the lobby, /me/hands and the hand page said "0 x 5" where the table says "0 (0 malas) x 5
    # (5 malas)"
    page = await new_page(browser, live_server, DESKTOP)
    await signup(page, live_server, "malas_1")
    table_id = await create_table(page, "argentino", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    score = [0, 0]
    while score == [0, 0]:
        await play_hand(page, Policy())
        score = [int(await page.locator(f"#score-{team}").text_content() or "0")
                 for team in (0, 1)]
    mine, theirs = (malas(points) for points in score)

    await page.goto(live_server.url("/"))
    item = page.locator(f'#my-tables li[data-table="{table_id}"]')
    await expect(item).to_contain_text(f"placar: Você {mine} x {theirs} Robô 2")

    await page.goto(live_server.url("/me/hands"))
    section = page.locator(f'#hands-list section[data-table="{table_id}"]')
    await expect(section.locator('.hand-list li[data-hand="1"]')).to_contain_text(
        "Mão 1 — 0 (0 malas) x 0 (0 malas) →")

    # the hand page names the sides, mine (this browser played the hand at seat 1) first
    await page.goto(live_server.url(f"/h/{table_id}/1"))
    await expect(page.locator("#rec-score")).to_contain_text(
        "Você (lugar 1) x Lugar 2: 0 (0 malas) x 0 (0 malas) →")
    await page.context.close()


def malas(points: int) -> str:
    """A score in words: its points and, beside them, its malas (the scoreboard's form)."""
    assert points <= 15  # a few hands from 0
    return f"{points} ({points} {'mala' if points == 1 else 'malas'})"


async def test_on_a_phone_a_truco_is_answered_with_my_cards_in_sight(
    live_server: LiveServer, browser: Browser
) -> None:
    # the review: Argentino 2x2 at 390 x 844, six answers in the bar (quiero, no quiero,
    # retruco and the three envidos) sat over my cards while the request was in sight
    state = new_match(MatchConfig(Variant.ARGENTINO, 4), first_dealer=0)
    hands = [["2D", "KH", "5C"], ["QC", "4S", "6H"], ["AD", "7C", "3S"], ["JD", "5H", "4C"]]
    state, _ = start_hand(state, dealt(0, hands))
    for action in (Action(1, ActionKind.PLAY, card=parse_card("QC")),
                   Action(2, ActionKind.PLAY, card=parse_card("AD")),
                   Action(3, ActionKind.RAISE)):
        state = apply(state, action)[0]
    table = ReviewTable(state, seat=0, names=["fone_0", "b1", "b2", "b3"])
    page = await open_table(live_server, browser, table, "fone_0", PHONE)
    await expect(page.locator("#request")).to_contain_text("pediu truco")
    await page.wait_for_timeout(200)
    assert await page.locator("#actions button").count() == 6
    bar = await page.locator("#actions").bounding_box()
    assert bar is not None
    for target in ("#request", "#my-hand", "#scoreboard"):
        await expect(page.locator(target)).to_be_in_viewport(ratio=1)
        box = await page.locator(target).bounding_box()
        assert box is not None and box["y"] + box["height"] <= bar["y"] + 1, (target, box, bar)
    for button in await page.locator("#actions button").all():
        await expect(button).to_be_in_viewport(ratio=1)
    await screenshot(page, "phone-truco-with-my-cards")
    await page.context.close()


async def test_a_rematchs_hands_are_counted_from_its_first(
    live_server: LiveServer, browser: Browser
) -> None:
    # a review: after "Revanche: começa a partida 2." the first hand read "Mão 12", as if left
    # over; the table's number stays (the records and their pages use it), the match's is said
    table = ReviewTable(paulista_1x1(), seat=0, names=["revanche_0", "bot"],
                        script=[[Action(1, ActionKind.DECLINE)]],
                        number=13, match=2, match_first_hand=12)
    page = await open_table(live_server, browser, table, "revanche_0")
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    await expect(page.locator("#summary-title")).to_have_text(
        "Resumo da mão 13 (2ª da partida 2)")
    await expect(page.locator("#summary-record")).to_have_attribute(
        "href", re.compile(r"/h/[0-9a-f]+/13$"))
    await page.context.close()

    # a table's first match says the table's number alone
    table = ReviewTable(paulista_1x1(), seat=0, names=["primeira_0", "bot"],
                        script=[[Action(1, ActionKind.DECLINE)]], number=3)
    page = await open_table(live_server, browser, table, "primeira_0")
    await page.get_by_role("button", name="Truco! (vale 3)").click()
    await expect(page.locator("#summary-title")).to_have_text("Resumo da mão 3")
    await page.context.close()
