"""What the 15th review of the browser pages found, fixed and kept fixed.

Most tables are the engine tables of tests/test_browser_table_ux.py (`ReviewTable`: the real
page, its WebSocket answered in the test on the real engine), put where the reviewers saw each
defect; the lobby, `/me/hands` and `/me` are the real pages of a live server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from playwright.async_api import Browser, Page, expect

from server.app import POOL
from server.ranked import review
from tests.test_browser_table_ux import ReviewTable, paulista_1x1, paulista_2x2
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    DESKTOP,
    PASSWORD,
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
from tests.test_browser_views import dealt, open_table
from truco import (
    Action,
    ActionKind,
    MatchConfig,
    TeamMode,
    Termination,
    Variant,
    forfeit,
    new_match,
    parse_card,
    start_hand,
)

PHONE = {"width": 390, "height": 844}


async def in_sight(page: Page, selector: str) -> None:
    """Wholly on the screen, and not under the actions bar stuck to its bottom."""
    await expect(page.locator(selector)).to_be_in_viewport(ratio=1)
    box = await page.locator(selector).bounding_box()
    bar = await page.locator("#actions").bounding_box()
    assert box is not None
    if bar is not None and bar["height"]:
        below, above = box["y"] + box["height"] <= bar["y"], box["y"] >= bar["y"] + bar["height"]
        assert below or above, (box, bar)


# --- 1. on a phone, my absence, the way back and an error are where I look ----------------------


async def test_on_a_phone_the_absence_notice_the_way_back_and_errors_are_in_sight(
    live_server: LiveServer, browser: Browser
) -> None:
    # a training 1x1 at 390 x 844: the first clock ran out, the page sits at my cards
    table = ReviewTable(paulista_1x1(), seat=0, names=["longe_eu", "bot"], absent=[0],
                        automatic=[1, 0])
    page = await open_table(live_server, browser, table, "longe_eu", PHONE)
    await expect(page.locator("#notice")).to_contain_text("Seu tempo acabou")
    await expect(page.locator("#my-hand")).to_be_focused()
    # my cards at the top of the screen (a phone's board now fits its screen: with my cards in
    # its middle, the connection line above the board can be in sight too)
    await page.evaluate(
        "() => document.getElementById('my-hand').scrollIntoView({block: 'start'})")
    await page.wait_for_timeout(200)
    # in the page's flow the alerts would be off the screen (they follow the connection line):
    # only sticking keeps them in sight
    assert await page.evaluate(
        """() => document.getElementById('conn-status').getBoundingClientRect().bottom
                 + document.getElementById('table-alerts').getBoundingClientRect().height""") < 0
    await in_sight(page, "#notice")
    await in_sight(page, "#back")
    await expect(page.locator("#my-hand button").first).to_be_in_viewport()
    # the cards are not under the notice: a card focused with the keyboard is scrolled clear
    last = page.locator("#my-hand button").last
    await last.focus()
    await page.wait_for_timeout(200)
    card = await last.bounding_box()
    alerts = await page.locator("#table-alerts").bounding_box()
    assert card is not None and alerts is not None
    assert card["y"] >= alerts["y"] + alerts["height"] - 1, (card, alerts)
    await screenshot(page, "table-absent-phone")
    # a refusal while I look at my cards is said where I look
    assert table.ws is not None
    table.ws.send(json.dumps({"type": "error", "id": None, "error": "nothing_to_answer",
                              "message": "x"}))
    await expect(page.locator("#table-error")).to_have_text("Não há pedido para responder.")
    await in_sight(page, "#table-error")
    # back: the notice and the button go, the focus goes on to my cards
    await page.get_by_role("button", name="Estou de volta").click()
    table.push({"type": "absent", "seat": 0, "absent": False, "automatic": 1,
                "pending": table.deadlines()})
    await expect(page.locator("#notice")).to_be_hidden()
    await expect(page.locator("#my-hand")).to_be_focused()
    # the streak stands until I act myself: its count stays where I look, above my cards
    await expect(page.locator("#streak-notice")).to_contain_text("O relógio agiu por você")
    await in_sight(page, "#streak-notice")
    card = await page.locator("#my-hand button").first.bounding_box()
    alerts = await page.locator("#table-alerts").bounding_box()
    assert card is not None and alerts is not None
    assert card["y"] >= alerts["y"] + alerts["height"] - 1, (card, alerts)
    await page.context.close()

    # on a wide screen nothing sticks: the notice stays above the board, in the page's flow
    table = ReviewTable(paulista_1x1(), seat=0, names=["longe_pc", "bot"], absent=[0])
    page = await open_table(live_server, browser, table, "longe_pc", DESKTOP)
    await expect(page.locator("#notice")).to_be_visible()
    assert await page.eval_on_selector(
        "#table-alerts", "(node) => getComputedStyle(node).position") == "static"
    notice = await page.locator("#notice").bounding_box()
    board = await page.locator("#board").bounding_box()
    assert notice is not None and board is not None and notice["y"] < board["y"]
    await page.context.close()


# --- 2. /me/hands and the lobby's "Suas mesas" say scores from my side ---------------------------


async def test_my_hands_and_my_tables_say_the_score_from_my_side(
    live_server: LiveServer, browser: Browser
) -> None:
    # the review: at seat 2, "Partida 1 (terminada em 6 x 14)", "Mão 7 — 6 x 11 → 6 x 14" and
    # "placar 6 x 14" where the table page says "Você 14 x 6 eva1"
    page = await new_page(browser, live_server, DESKTOP)
    await signup(page, live_server, "lado_2")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Mudar para o lugar 2").click()
    await expect(page.locator("#seat-list")).to_contain_text("Lugar 2: lado_2 (você)")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    score = [0, 0]
    hands = 0
    while score[0] == score[1]:  # a tied hand scores nobody: until the order shows
        hands = await play_hand(page, Policy())
        # my side first on the table page: "Você: 1", "Robô 1: 0"
        score = [int(await page.locator(f"#score-{team}").text_content() or "0")
                 for team in (1, 0)]
    assert hands <= 6
    mine, theirs = score
    await expect(page.locator("#summary-score")).to_have_text(
        f"Placar: Você {mine} x {theirs} Robô 1")

    await page.goto(live_server.url("/"))
    item = page.locator(f'#my-tables li[data-table="{table_id}"]')
    await expect(item).to_contain_text(f"placar: Você {mine} x {theirs} Robô 1")

    await page.goto(live_server.url("/me/hands"))
    section = page.locator(f'#hands-list section[data-table="{table_id}"]')
    await expect(section.locator("h3.match-title")).to_have_text(
        "Partida 1 — Você x Robô 1 (em andamento)")
    last = section.locator(f'.hand-list li[data-hand="{hands}"]')
    await expect(last).to_contain_text(f"→ {mine} x {theirs}")
    await expect(section.locator('.hand-list li[data-hand="1"]')).to_contain_text("Mão 1 — 0 x 0 →")
    await screenshot(page, "my-hands-my-side")
    await page.context.close()

    # another browser (none of this one's kept hands): the server says where I sat
    page = await new_page(browser, live_server, DESKTOP)
    await page.goto(live_server.url("/"))
    await page.locator("#login-name").fill("lado_2")
    await page.locator("#login-password").fill(PASSWORD)
    await page.get_by_role("button", name="Entrar").click()
    await expect(page.get_by_role("heading", name="Mesas", exact=True)).to_be_visible()
    for address in ("/me/hands", f"/me/hands?table={table_id}"):
        await page.goto(live_server.url(address))
        section = page.locator(f'#hands-list section[data-table="{table_id}"]')
        await expect(section.locator("h3.match-title")).to_have_text(
            "Partida 1 — Você x Robô 1 (em andamento)")
        await expect(section.locator(f'.hand-list li[data-hand="{hands}"]')).to_contain_text(
            f"→ {mine} x {theirs}")
    await page.context.close()


# --- 3. 1x1 tables use no team words; the lobby counts its tables ---------------------------------


async def test_a_1x1_says_no_dupla_and_names_the_one_other_player(
    live_server: LiveServer, browser: Browser
) -> None:
    # the lobby: "Sentar no lugar 2 (dupla B)" at a 1x1, "2 mesa(s) com lugar livre"
    owner = await new_page(browser, live_server, DESKTOP)
    await signup(owner, live_server, "dono_1x1")
    first = await create_table(owner, "paulista", 2, "training")
    guest = await new_page(browser, live_server, DESKTOP)
    await signup(guest, live_server, "visita_1x1")
    status = guest.locator("#lobby-status")
    await expect(status).to_have_text("1 mesa com lugar livre.")
    item = guest.locator(f'#lobby-tables li[data-table="{first}"]')
    await expect(item.get_by_role("button")).to_have_text(["Sentar no lugar 2"])
    # (a table is listed while its owner has it open: a second tab)
    second = await owner.context.new_page()
    await second.goto(live_server.url("/"))
    await create_table(second, "mineiro", 4, "training")
    await expect(status).to_have_text("2 mesas com lugar livre.", timeout=10_000)
    # a 2x2 seat still says its dupla
    await expect(guest.get_by_role("button", name="Sentar no lugar 2 (dupla B)")).to_be_visible()
    await owner.context.close()
    await guest.context.close()

    # Argentino 1x1: the bot (mano) sings 26, I do not sing: it said "os outros: son buenas"
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=0)
    state, _ = start_hand(state, dealt(0, [["7C", "4D", "KS"], ["6H", "QH", "2S"]]))
    table = ReviewTable(state, seat=0, names=["buenas_eu", "bot"])
    page = await open_table(live_server, browser, table, "buenas_eu")
    assert table.ws is not None
    table.play(table.ws, Action(1, ActionKind.ENVIDO))
    await page.get_by_role("button", name="Quiero (envido)", exact=True).click()
    log = page.locator("#log")
    await expect(log).to_contain_text(
        "Envido querido (envido): Robô 2 com 26; você: son buenas. Robô 2 ganha 2 pontos.")
    table.play(table.ws, Action(1, ActionKind.PLAY, card=parse_card("2S")))
    await page.get_by_role("button", name="Ir al mazo").click()
    await expect(page.locator("#summary-envido")).to_contain_text(
        "Envido — querido: Robô 2 com 26; o seu tanto não foi cantado (son buenas).")
    text = (await log.text_content() or "") + (await page.locator("#summary").text_content() or "")
    assert "os outros" not in text and "dupla" not in text, text
    await page.context.close()


# --- 4. Argentino never says "16 buenas" ----------------------------------------------------------


async def test_argentino_past_30_says_15_buenas_and_the_total(
    live_server: LiveServer, browser: Browser
) -> None:
    # 8 x 29, an envido of 2 for the bot: 31, shown as "31 (16 buenas)" and "8 malas x 16 buenas";
    # in words both sides are their points with the malas / buenas beside them
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1, score=(8, 29))
    state, _ = start_hand(state, dealt(1, [["7C", "4D", "KS"], ["6H", "QH", "2S"]]))
    table = ReviewTable(state, seat=0, names=["malas_eu", "bot"],
                        script=[[Action(1, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "malas_eu")
    await expect(page.locator("#scoreboard")).to_contain_text("Robô 2: 29 (14 buenas)")
    await page.get_by_role("button", name="Envido (vale 2)", exact=True).click()
    board = page.locator("#scoreboard")
    await expect(board).to_contain_text("Robô 2: 31 (15 buenas)")
    log = page.locator("#log")
    await expect(log).to_contain_text(
        "Placar final: Você 8 (8 malas) x 31 (15 buenas) Robô 2.")
    table.push({"type": "match_over", "termination": "target", "winner": 1,
                "score": list(table.state.score), "forfeit_team": None, "forfeit_seat": None,
                "forfeit_trigger": None})
    await expect(page.locator("#match-over-text")).to_have_text(
        "Derrota. Robô 2 venceu — chegou aos 30 pontos."
        " Placar final: Você 8 (8 malas) x 31 (15 buenas) Robô 2.")
    text = "".join([await n.text_content() or "" for n in (board, log, page.locator("#main"))])
    # the number and its unit are joined by a no-break space (a phone never splits them)
    text = text.replace("\u00a0", " ")
    assert "16 buenas" not in text and "pontos (" not in text, text
    await page.context.close()

    # exactly 30: the 15th buena, no total
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1, score=(8, 28))
    state, _ = start_hand(state, dealt(1, [["7C", "4D", "KS"], ["6H", "QH", "2S"]]))
    table = ReviewTable(state, seat=0, names=["malas_30", "bot"],
                        script=[[Action(1, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "malas_30")
    await page.get_by_role("button", name="Envido (vale 2)", exact=True).click()
    await expect(page.locator("#scoreboard")).to_contain_text("Robô 2: 30 (15 buenas)")
    await expect(page.locator("#log")).to_contain_text(
        "Placar final: Você 8 (8 malas) x 30 (15 buenas) Robô 2.")
    await page.context.close()


# --- 5. a passing error goes once a later move of mine is accepted --------------------------------


async def test_a_stale_error_goes_when_a_later_move_is_accepted(
    live_server: LiveServer, browser: Browser
) -> None:
    table = ReviewTable(paulista_1x1(), seat=0, names=["velho_eu", "bot"],
                        script=[[Action(1, ActionKind.RAISE)], []])
    page = await open_table(live_server, browser, table, "velho_eu")
    error = page.locator("#table-error")
    assert table.ws is not None

    async def refused() -> None:
        assert table.ws is not None
        table.ws.send(json.dumps({"type": "error", "id": None, "error": "nothing_to_answer",
                                  "message": "x"}))
        await expect(error).to_have_text("Não há pedido para responder.")

    # a card played: accepted, the error said before it goes (it stayed ~6 s)
    await refused()
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    await expect(page.locator("#request")).to_contain_text("Robô 2 pediu truco!")
    await expect(error).to_be_hidden(timeout=1500)
    # an answer: the same
    await refused()
    await page.get_by_role("button", name="Aceitar (vale 3)").click()
    await expect(page.locator("#hand-value")).to_have_text("3")
    await expect(error).to_be_hidden(timeout=1500)
    await page.context.close()


# --- 6. the end of a match: a resignation, a cancellation --------------------------------


async def test_a_partner_who_left_resigned_and_a_cancelled_match_reads_once(
    live_server: LiveServer, browser: Browser
) -> None:
    # my partner clicked "Desistir e sair da mesa": it read "abandonou a partida: saiu da mesa
    # no meio dela", as if they had walked away from a clock
    names = ["eu_des", "rival_des", "par_des", "outro_des"]
    table = ReviewTable(paulista_2x2(), seat=0, names=names, people={1, 2, 3})
    page = await open_table(live_server, browser, table, "eu_des")
    table.abandon(0, seat=2, trigger="left")
    text = page.locator("#match-over-text")
    await expect(text).to_contain_text(
        "Derrota. par_des (parceiro) desistiu da partida e saiu da mesa. Placar final: Nós 0 x 0"
        " Eles.")
    log = page.locator("#log")
    await expect(log).to_contain_text(
        "Fim da partida: par_des (parceiro) desistiu e saiu da mesa; a dupla adversária venceu.")
    await expect(log).to_contain_text("Fim da mão 1: mão interrompida: a nossa dupla desistiu da"
                                      " partida; ninguém marca.")
    await expect(page.locator("#match-over")).not_to_contain_text("abandonou")
    # a reload: the table's forfeit_trigger says it
    await page.reload()
    await expect(text).to_contain_text(
        "Derrota. par_des (parceiro) desistiu da partida e saiu da mesa.")
    await page.context.close()

    # a cancelled match: "Sem vencedor: partida cancelada: ninguém ganha."
    table = ReviewTable(paulista_1x1(score=(3, 5)), seat=0, names=["eu_cancel", "bot"])
    page = await open_table(live_server, browser, table, "eu_cancel")
    table.state = forfeit(table.state, 0, Termination.CANCELLED)
    table.push({"type": "match_over", "termination": "cancelled", "winner": None,
                "score": [3, 5], "forfeit_team": None, "forfeit_seat": None,
                "forfeit_trigger": None})
    await expect(page.locator("#match-over-text")).to_have_text(
        "Partida cancelada: ninguém ganha. Placar final: Você 3 x 5 Robô 2.")
    await page.context.close()


# --- 7. a full private table opened through its invite link: watching, said ----------------------


async def test_a_full_private_table_says_you_are_watching_and_offers_no_hand(
    live_server: LiveServer, browser: Browser
) -> None:
    # the review: only "(nenhuma: você está assistindo)", under an empty "Suas cartas" heading
    # and the entropy phrase's field
    owner = await new_page(browser, live_server, DESKTOP)
    await signup(owner, live_server, "dono_cheia")
    await create_table(owner, "paulista", 2, "private")
    invite = await owner.locator("#invite-link").input_value()
    guest = await new_page(browser, live_server, DESKTOP)
    await signup(guest, live_server, "hospede_cheia")
    await guest.goto(invite)
    note = guest.locator("#spectator-note")
    await expect(guest.locator("#conn-status")).to_have_attribute("data-state", "connected")
    # a free seat to sit at: the seating box says it all
    await expect(note).to_be_hidden()
    await expect(guest.locator("#entropy-phrase")).to_be_hidden()
    await guest.get_by_role("button", name="Sentar no lugar 2").click()
    await expect(guest.locator("#seat-list")).to_contain_text("hospede_cheia (você)")
    await expect(note).to_be_hidden()
    await expect(guest.locator("#entropy-phrase")).to_be_visible()
    late = await new_page(browser, live_server, DESKTOP)
    await signup(late, live_server, "tarde_cheia")
    await late.goto(invite)
    await expect(late.locator("#conn-status")).to_have_attribute("data-state", "connected")
    note = late.locator("#spectator-note")
    await expect(note).to_have_text(
        "Mesa cheia: você está assistindo. Se um lugar vagar, você pode se sentar.")
    await expect(note).to_have_attribute("role", "status")
    await expect(late.locator("#entropy-phrase")).to_be_hidden()
    # the match starts: still watching, no hand of mine
    await owner.get_by_role("button", name="Começar a partida").click()
    await expect(late.locator("#board")).to_be_visible()
    await expect(note).to_have_text("Mesa cheia: você está assistindo à partida.")
    await expect(late.get_by_role("heading", name="Suas cartas")).to_be_hidden()
    await expect(late.locator("#entropy-phrase")).to_be_hidden()
    await expect(late.locator("#fair-mine")).to_have_text("(nenhuma: você está assistindo)")
    await expect(guest.get_by_role("heading", name="Suas cartas")).to_be_visible()
    await expect(guest.locator("#spectator-note")).to_be_hidden()
    for page in (owner, guest, late):
        await page.context.close()

    # a player who left the match in play: their seat is free, the match goes on
    table = ReviewTable(paulista_1x1(), seat=None, names=["ana_w", "bia_w"],  # type: ignore[arg-type]
                        people={0, 1}, kind="private", gone={1})
    page = await open_table(live_server, browser, table, "olho_w")
    await expect(page.locator("#spectator-note")).to_have_text(
        "A partida já começou: você está assistindo.")
    await expect(page.get_by_role("heading", name="Suas cartas")).to_be_hidden()
    await page.context.close()


# --- 8. "Primeira resposta vale": an answer, not a vote ------------------------------------------


async def test_in_first_answer_mode_a_partner_answers_and_does_not_vote(
    live_server: LiveServer, browser: Browser
) -> None:
    # the review: "Robô 3 (parceiro) votou: quiero." where there is no vote
    config = MatchConfig(Variant.ARGENTINO, 4, TeamMode.FIRST)
    hands = [["4C", "5D", "6S"], ["3H", "2C", "KS"], ["7H", "5C", "QD"], ["4H", "6C", "JD"]]
    state = start_hand(new_match(config, first_dealer=3), dealt(3, hands))[0]
    table = ReviewTable(state, seat=0, names=["primeira_0", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.RAISE), Action(2, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "primeira_0")
    await page.get_by_role("button", name="Jogar 4 de bastos").click()
    log = page.locator("#log")
    await expect(log).to_contain_text("Robô 3 (parceiro) respondeu: quiero.")
    await expect(log).to_contain_text("Nossa dupla disse quiero: a mão vale 2.")
    await page.context.close()

    # Paulista: a partner's raise back, and an opponent's answer whose words are hidden
    config = MatchConfig(Variant.PAULISTA, 4, TeamMode.FIRST)
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"], ["AC", "QD", "KS"], ["2C", "JD", "4H"]]
    state = start_hand(new_match(config, first_dealer=3), dealt(3, hands, "7C"))[0]
    table = ReviewTable(state, seat=0, names=["primeira_1", "b1", "b2", "b3"],
                        script=[[Action(1, ActionKind.RAISE), Action(2, ActionKind.RAISE),
                                 Action(3, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "primeira_1")
    await page.get_by_role("button", name="Jogar 3 de paus").click()
    log = page.locator("#log")
    await expect(log).to_contain_text("Robô 3 (parceiro) respondeu: aumentar para seis.")
    await expect(page.locator("#hand-value")).to_have_text("6")
    await expect(log).to_contain_text("Robô 4 respondeu")
    text = await page.locator("#log").text_content() or ""
    assert "votou" not in text, text
    await page.context.close()


# --- 9. /me: an exempt record says why it is exempt --------------------------------------------


async def test_an_exempt_record_on_me_says_its_own_reason(
    live_server: LiveServer, browser: Browser
) -> None:
    # the review: an arena record exempt because the arena had ended said "a partida atravessou
    # um reinício ou uma falha do servidor" and "para voltar a ser pareado nela, entre de novo"
    page = await new_page(browser, live_server, DESKTOP)
    await signup(page, live_server, "isento_eu")
    pool = live_server.app[POOL]
    me = await pool.fetchval("SELECT id FROM users WHERE name = 'isento_eu'")
    at = datetime.now(UTC) - timedelta(minutes=5)
    left = [{"kind": "left", "at_ms": int(at.timestamp() * 1000), "seat": 0,
             "abandonment": "forfeit"}]
    over = await review.record_abandonment(
        pool, user_id=me, match_ref="arena:00000000000000e1:1", variant=Variant.PAULISTA,
        seats=2, match_started_at=at - timedelta(minutes=5), abandoned_at=at, evidence=left,
        arena_over=True)
    restart = await review.record_abandonment(
        pool, user_id=me, match_ref="ranked:00000000000000e2:1", variant=Variant.PAULISTA,
        seats=2, match_started_at=at - timedelta(minutes=4),
        abandoned_at=at + timedelta(seconds=30), evidence=left, fault_overlap=True)
    assert over.status.value == restart.status.value == "exempt"
    await page.goto(live_server.url("/me"))
    meaning = page.locator(f"#record-{over.id}-meaning")
    await expect(meaning).to_have_text(
        "Isento: a arena acabou com a mesa ainda em jogo (a partida não contava), então este"
        " abandono não conta e não suspende. Não há o que contestar.")
    cost = page.locator(f"#record-{over.id}-cost")
    await expect(cost).to_have_text(
        "A partida não contou: a arena acabou com ela em jogo (nenhum ponto de arena, sem aposta"
        " e sem pontos de classificação).")
    await expect(page.locator(f"#record-{over.id}")).not_to_contain_text("entre de novo")
    await expect(page.locator(f"#record-{over.id}")).not_to_contain_text("servidor")
    # a restart's exemption says the restart (a loss is still a loss)
    await expect(page.locator(f"#record-{restart.id}-meaning")).to_have_text(
        "Isento: a partida atravessou um reinício do servidor, então este abandono não conta e"
        " não suspende. Não há o que contestar.")
    await expect(page.locator(f"#record-{restart.id}-cost")).to_contain_text("Derrota")
    await screenshot(page, "me-exempt-records")
    await page.context.close()


async def test_a_2x2_envido_names_who_sang_and_who_said_son_buenas(
    live_server: LiveServer, browser: Browser
) -> None:
    # an Argentine player's review: the log read "Você 2, Robô 2 25, ...; os outros: son
    # buenas", numbers run into the bots' names and the quiet players unnamed
    state = new_match(MatchConfig(Variant.ARGENTINO, 4, TeamMode.VOTE), first_dealer=0)
    hands = [["7D", "4H", "2S"],   # me: no two of a suit, 7
             ["5S", "QS", "3H"],   # mano: 25, sung
             ["7C", "4C", "6H"],   # my partner: 31, sung
             ["JH", "KH", "AD"]]   # 20: does not beat 31, son buenas
    state, _ = start_hand(state, dealt(0, hands))
    table = ReviewTable(state, seat=0, names=["tanto_eu", "bot1", "bot2", "bot3"],
                        script=[[Action(2, ActionKind.ACCEPT)]])
    page = await open_table(live_server, browser, table, "tanto_eu")
    assert table.ws is not None
    table.play(table.ws, Action(1, ActionKind.ENVIDO))
    await page.get_by_role("button", name="Quiero (envido)", exact=True).click()
    await expect(page.locator("#log")).to_contain_text(
        "Envido querido (envido): Robô 2 com 25, Robô 3 (parceiro) com 31; você e Robô 4:"
        " son buenas.")
    await page.context.close()
