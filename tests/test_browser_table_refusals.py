"""Two refusals the table page must handle by itself, in a real Chromium against the real server.

- A reconnect after the session ended (a logout elsewhere): the server refuses the WebSocket
  (401); the page asks the lobby why, tells the player to sign in again and stops retrying.
- A table no longer served (a player review: a cancelled training match's page blamed a missing
  invite, offered the entropy phrase in an empty box, and no way on): to a player who played
  there the page says how its match ended and links the lobby and the table's hands; to anyone
  else it is not found, as an unknown id is.
- An entropy message the database refused (`unavailable`: nothing changed): the page sends the
  same contribution again a moment later, and the hand is dealt with it.

The failures are real: the session is ended through the site's own logout form (which closes
the session's sockets), and the database refuses the write through a temporary trigger.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from playwright.async_api import Browser, Response, WebSocket, expect

from server.app import POOL
from server.live import HOUSE
from tests.test_browser_reconnect import record_of, until
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    STEP_TIMEOUT_MS,
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    leave_elsewhere,
    live_server_fixture,
    new_page,
    play_hand,
    signup,
)

SESSION_OVER = (
    "Sua sessão terminou: entre de novo na sua conta e recarregue a página para voltar à mesa."
)


async def test_a_reconnect_after_a_logout_asks_to_sign_in_and_stops(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    # every table socket the page opens, and the handshake errors Chromium reports for each
    sockets: list[WebSocket] = []
    socket_errors: list[tuple[int, str]] = []

    def watch(ws: WebSocket) -> None:
        if "/ws/tables/" not in ws.url:
            return
        index = len(sockets)
        sockets.append(ws)
        ws.on("socketerror", lambda error: socket_errors.append((index, error)))

    page.on("websocket", watch)
    lobby_answers: list[int] = []
    await signup(page, live_server, "out_a1")
    table_id = await create_table(page, "paulista", 2, "training")
    page.on("response", lambda r: _note_lobby(r, table_id, lobby_answers))
    await expect(page.locator("#seat-list")).to_contain_text("out_a1 (você)")
    assert len(sockets) == 1

    # the same session, in another browser context (another tab or device holding the same
    # cookie), is ended through the site's own logout form: the table page keeps its cookie,
    # but the server no longer knows it
    other = await browser.new_context(storage_state=await page.context.storage_state())
    try:
        other_page = await other.new_page()
        other_page.on("pageerror", lambda error: live_server.page_errors.append(str(error)))
        await other_page.goto(live_server.url("/"))
        await other_page.get_by_role("button", name="Sair", exact=True).click()
        await expect(other_page.locator("#signup-password")).to_be_visible()
        await expect(other_page.locator("#me")).to_have_count(0)
    finally:
        await other.close()
    # the logout closed the session's sockets, this page's too: the page reconnects once, is
    # refused (401), asks the lobby (401 too) and says so
    house = live_server.app[HOUSE]
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "closed")
    await expect(page.locator("#conn-status")).to_have_text("Sem acesso")
    await expect(page.locator("#table-error")).to_be_visible()
    await expect(page.locator("#table-error")).to_have_text(SESSION_OVER)
    assert lobby_answers == [401]
    tries = len(sockets)
    assert tries == 2  # the first socket and one refused reconnect
    # and then nothing: no reconnect loop, and the message stays (it is not a passing notice)
    await page.wait_for_timeout(4000)
    assert len(sockets) == tries
    assert lobby_answers == [401]
    assert len(house.sockets) == 0
    # the reconnect's handshake was refused (Chromium: "HTTP Authentication failed"), not the
    # first socket's
    assert [index for index, _ in socket_errors] == [1], socket_errors
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "closed")
    await expect(page.locator("#table-error")).to_be_visible()
    await expect(page.locator("#table-error")).to_have_text(SESSION_OVER)


async def test_a_page_that_lost_its_session_offers_no_move_and_keeps_saying_why(
    live_server: LiveServer, browser: Browser
) -> None:
    # the page kept its cards enabled and its clock ticking ("Sua vez — 14 s"); a click said
    # "Sem conexão; tente de novo." over the reason, and 6 s later nothing was said at all
    page = await new_page(browser, live_server)
    await signup(page, live_server, "out_b1")
    await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    # my decision: a card to play, or an answer to the bot's truco (a bot that is mão with a
    # strong hand calls at once, and the cards wait while I answer)
    decision = page.locator('#my-hand button[data-action="play"]:not([disabled]),'
                            ' #actions button')
    await expect(decision.first).to_be_visible(timeout=STEP_TIMEOUT_MS)
    await expect(page.locator("#turn")).to_contain_text("Sua vez")
    other = await browser.new_context(storage_state=await page.context.storage_state())
    try:
        other_page = await other.new_page()
        await other_page.goto(live_server.url("/"))
        await other_page.get_by_role("button", name="Sair", exact=True).click()
        await expect(other_page.locator("#signup-password")).to_be_visible()
    finally:
        await other.close()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "closed")
    await expect(page.locator("#table-error")).to_have_text(SESSION_OVER)
    await expect(playable).to_have_count(0)
    await expect(page.locator("#actions button")).to_have_count(0)
    await expect(page.locator("#turn")).to_have_text("Sem acesso à mesa nesta página.")
    # a passing error (resigning needs the session too: 401) does not replace the reason
    page.once("dialog", lambda dialog: dialog.accept())
    async with page.expect_response(lambda r: r.url.endswith("/leave")) as refused:
        await page.get_by_role("button", name="Desistir e sair da mesa").click()
    assert (await refused.value).status == 401
    await page.wait_for_timeout(6500)  # past a passing error's 6 s, from its answer
    await expect(page.locator("#table-error")).to_be_visible()
    await expect(page.locator("#table-error")).to_have_text(SESSION_OVER)


def _note_lobby(response: Response, table_id: str, answers: list[int]) -> None:
    # after a refused handshake the page asks the socket's address without the upgrade why
    if response.url.split("?", 1)[0].endswith(f"/ws/tables/{table_id}"):
        answers.append(response.status)


# the database refuses the first write of a contribution to this table's hand 1, as a real
# failure would (the transaction is rolled back: nothing of it is written); a sequence counts the
# tries, since it is not rolled back with the refused write
REFUSE_ONCE = """
CREATE SEQUENCE test_refuse_tries;
CREATE FUNCTION test_refuse_first_contribution() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.table_id = '{table}' AND NEW.hand = 1 THEN
    IF nextval('test_refuse_tries') = 1 THEN
      RAISE EXCEPTION 'test: the database refuses this contribution';
    END IF;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER test_refuse_first_contribution BEFORE INSERT ON live_contributions
  FOR EACH ROW EXECUTE FUNCTION test_refuse_first_contribution();
"""
DROP_REFUSAL = """
DROP TRIGGER IF EXISTS test_refuse_first_contribution ON live_contributions;
DROP FUNCTION IF EXISTS test_refuse_first_contribution();
DROP SEQUENCE IF EXISTS test_refuse_tries;
"""


async def test_entropy_refused_as_unavailable_is_sent_again_and_counts(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    # every frame of the table sockets, both ways, with when it was seen
    frames: list[tuple[float, str, dict[str, Any]]] = []

    def watch(ws: WebSocket) -> None:
        if "/ws/tables/" not in ws.url:
            return
        ws.on("framesent", lambda payload: frames.append(
            (time.monotonic(), "sent", json.loads(payload))))
        ws.on("framereceived", lambda payload: frames.append(
            (time.monotonic(), "received", json.loads(payload))))

    page.on("websocket", watch)
    await signup(page, live_server, "una_a1")
    table_id = await create_table(page, "paulista", 2, "training")
    pool = live_server.app[POOL]
    await pool.execute(REFUSE_ONCE.replace("{table}", table_id))
    try:
        await page.get_by_role("button", name="Começar contra os robôs").click()
        await expect(page.locator("#my-hand .card").first).to_be_visible()
        # the database saw two contributions: the refused one and the one it took
        assert await pool.fetchval("SELECT last_value FROM test_refuse_tries") == 2
    finally:
        await pool.execute(DROP_REFUSAL)

    sent = [(at, m) for at, way, m in frames if way == "sent" and m.get("type") == "entropy"]
    assert len(sent) == 2, sent
    (first_at, first), (again_at, again) = sent
    assert first["hand"] == 1 and first["id"] == "e1"
    # the same message, byte for byte: the same contribution, not a new one
    assert again == first
    # the server answered the first one `unavailable`, and the page waited before sending again
    replies = [(at, m) for at, way, m in frames
               if way == "received" and m.get("type") in ("error", "ack") and m.get("id") == "e1"]
    assert [(m["type"], m.get("error")) for _, m in replies] == [
        ("error", "unavailable"), ("ack", None)
    ], replies
    refused_at = replies[0][0]
    assert first_at < refused_at < again_at
    assert again_at - refused_at >= 0.3  # ENTROPY_RETRY_MS.unavailable (400 ms), not at once
    # the table received my seat's contribution, then dealt
    received = [m for _, way, m in frames if way == "received"]
    kinds = [(m.get("type"), m.get("hand"), m.get("seat")) for m in received]
    assert kinds.index(("entropy", 1, 0)) < next(
        i for i, m in enumerate(received) if m.get("type") == "update" and m["hand"] == 1
    )
    # a retried refusal is not the player's business: no error shown, nor shown and gone (an
    # error hides itself after 6 s; its text stays)
    assert await page.locator("#table-error").is_hidden()
    await expect(page.locator("#table-error")).to_have_text("")
    await expect(page.locator("#fair-mine")).to_have_text(first["hex"])
    await expect(page.locator("#fair-mine-note")).to_have_text("(recebida pela mesa)")
    await expect(page.locator("#fair-from")).to_contain_text("Você")
    written = await pool.fetchval(
        "SELECT data FROM live_contributions WHERE table_id = $1 AND hand = 1 AND seat = 0",
        table_id,
    )
    assert written is not None and bytes(written).hex() == first["hex"]

    # and the hand's public record, once it is over, has it at my seat
    assert await play_hand(page, Policy()) == 1
    await until(lambda: any(
        m.get("type") == "hand_record" and m["hand"] == 1 for _, _, m in frames
    ), page, timeout_s=STEP_TIMEOUT_MS / 1000)
    record = await record_of(page, table_id, 1)
    assert record["contributions"][0] == first["hex"]
    await expect(page.locator("#fair-last")).to_have_attribute("data-state", "ok")


async def test_a_table_gone_says_how_it_ended_to_its_player_and_the_way_on(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "fim_a1")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    # I leave mid-match from elsewhere: the match is lost by abandonment and, nobody left,
    # the table closes and is no longer served
    assert await leave_elsewhere(page, table_id) == 200
    house = live_server.app[HOUSE]
    await until(lambda: table_id not in house.tables, page)
    # coming back in a new tab (this tab's log is kept in its sessionStorage)
    await page.evaluate("sessionStorage.clear()")
    await page.goto(live_server.url(f"/t/{table_id}"))
    gone = page.locator("#table-gone")
    await expect(page.locator("#table-gone-title")).to_have_text("Mesa encerrada")
    await expect(page.locator("#table-gone-text")).to_have_text(
        "A partida terminou por abandono (você perdeu), e a mesa foi fechada.")
    await expect(page.locator("#table-gone-title")).to_be_focused()
    await expect(gone).not_to_contain_text("convite")
    await expect(gone.get_by_role("link", name="Voltar às mesas")).to_have_attribute("href", "/")
    hands = gone.get_by_role("link", name=re.compile(r"^Ver (a mão|as \d+ mãos) desta mesa$"))
    await expect(hands).to_have_attribute("href", f"/me/hands?table={table_id}")
    # nothing left to use: no entropy phrase, no empty fairness box, no empty log
    await expect(page.locator("#entropy-phrase")).to_be_hidden()
    await expect(page.locator("#fairness")).to_be_hidden()
    await expect(page.locator("#log-box")).to_be_hidden()
    await expect(page.locator("#table-error")).to_be_hidden()
    await hands.click()
    await page.wait_for_url(live_server.url(f"/me/hands?table={table_id}"))

    # a match cancelled by a seat left empty (RULES.md: 60 s at a training table) says so; the
    # 60 s are not waited for here, the match's row says it as the server writes it
    pool = live_server.app[POOL]
    await pool.execute("UPDATE live_matches SET termination = 'cancelled', winner = NULL"
                       " WHERE table_id = $1", table_id)
    await page.goto(live_server.url(f"/t/{table_id}"))
    await expect(page.locator("#table-gone-text")).to_have_text(
        "A partida foi cancelada porque um lugar ficou vazio por 60 s (ninguém ganhou), e a mesa"
        " foi fechada.")
    await page.context.close()

    # someone who never played there learns nothing of the table: not found, as an unknown id
    other = await new_page(browser, live_server)
    await signup(other, live_server, "fim_b1")
    answer = await other.evaluate(
        "async (id) => (await fetch(`/api/me/tables/${id}`)).status", table_id)
    assert answer == 404
    await other.goto(live_server.url(f"/t/{table_id}"))
    gone = other.locator("#table-gone")
    await expect(other.locator("#table-gone-title")).to_have_text("Mesa não encontrada")
    await expect(other.locator("#table-gone-text")).to_contain_text(
        "Mesa não encontrada: foi fechada")
    await expect(gone.get_by_role("link", name="Ver minhas mãos")).to_have_attribute(
        "href", "/me/hands")
    await expect(other.locator("#entropy-phrase")).to_be_hidden()
    await other.context.close()


async def test_a_private_table_opened_without_its_invite_offers_no_fairness_box(
    live_server: LiveServer, browser: Browser
) -> None:
    # a player's review: "Sem acesso", and under it the whole "Jogo justo" box with its entropy
    # phrase, for a table the page never had
    owner = await new_page(browser, live_server)
    await signup(owner, live_server, "conv_a1")
    table_id = await create_table(owner, "paulista", 2, "private")
    page = await new_page(browser, live_server)
    await signup(page, live_server, "conv_b1")
    await page.goto(live_server.url(f"/t/{table_id}"))
    await expect(page.locator("#conn-status")).to_have_text("Sem acesso")
    await expect(page.locator("#table-error")).to_be_visible()
    await expect(page.locator("#fairness")).to_be_hidden()
    await expect(page.locator("#entropy-phrase")).to_be_hidden()
    # the owner's page, which has the table, keeps it
    await expect(owner.locator("#fairness")).to_be_visible()
