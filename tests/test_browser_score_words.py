"""What a player's review of the scores and the house's key, as the pages write them, found.

- The hand page gave the record's score in its team order with no names ("Placar 0 x 0 → 6 x
  0"), where /me/hands shows the same hand my side first ("0 x 0 → 0 x 6"): each side is now
  named by its seats, and the side of the player who played the hand here is marked and first.
- Argentino scores in words mixed units ("Você 3 buenas x 31 pontos (15 buenas) Robô 2"): every
  side is now its points with the malas / buenas beside them, and a phone never splits "(0
  malas)" across lines.
- Every page's footer named the key's id as "Chave de assinatura da casa", beside commands whose
  `--key` is the whole public key: a player told to compare saw two values. It says it is the id.
The records are served through Playwright routes (tests/test_browser_review22.py); the pages are
the real ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.conftest import AppFactory
from tests.test_browser_fairness_review import house_key, open_hand, serve_chain
from tests.test_browser_table_ux import PHONE, ReviewTable
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    LiveServer,
    browser_fixture,
    kept_js,
    live_server_fixture,
    new_page,
    signup,
)
from tests.test_browser_views import dealt, open_table
from truco import new_match, start_hand
from truco.records import RecordEnd
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import sample_signing_key, sample_table

pytestmark = pytest.mark.timeout(180)

TABLE = "0123456789abcdef"
NBSP = "\u00a0"


async def played_here(page: Page, record: dict[str, Any], seat: int) -> None:
    """This browser played `record`'s hand in `seat`, as table.js keeps it (localStorage)."""
    entry = {"table": record["table"], "hand": record["hand"], "variant": record["variant"],
             "seat": seat, "at": 0, "bots": [], "commitment": None}
    await page.evaluate(
        kept_js("e", "localStorage.setItem(kept('hands'), JSON.stringify([e]))"), entry)


@pytest.mark.parametrize("seats", [2, 4])
async def test_the_hand_page_names_the_sides_of_its_score_mine_first(
    live_server: LiveServer, browser: Browser, seats: int
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "placar_1")  # what a browser keeps is its player's
    await house_key(page, sample_signing_key())
    config = MatchConfig(Variant.PAULISTA, seats, TeamMode.VOTE)
    sample = sample_table(table_id=TABLE, config=config, hands=4, seed=9,
                          last_end=RecordEnd.ABANDONMENT)
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    # a hand whose score tells the sides apart: read in the wrong order, it is another score
    record = next(r for r in sample.records
                  if r["match_winner"] is None and r["score_after"][0] != r["score_after"][1])
    b, a = record["score_before"], record["score_after"]
    score = page.locator("#rec-score")
    team_0, team_1 = (("Lugar 1", "Lugar 2") if seats == 2
                      else ("Dupla A (lugares 1 e 3)", "Dupla B (lugares 2 e 4)"))
    # a hand this browser did not play: the record's order, each side named by its seats
    await open_hand(page, live_server, record)
    await expect(score).to_have_text(f"{team_0} x {team_1}: {b[0]} x {b[1]} → {a[0]} x {a[1]}")
    # played here, in team 1 (seat 2 of 1x1, seat 4 of 2x2): my side marked and first, as
    # /me/hands says the same hand
    await played_here(page, record, seats - 1)
    await open_hand(page, live_server, record)
    mine = "Você (lugar 2)" if seats == 2 else "Sua dupla (B: lugares 2 e 4)"
    await expect(score).to_have_text(f"{mine} x {team_0}: {b[1]} x {b[0]} → {a[1]} x {a[0]}")
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    # the note of how the match ended names the sides as the labels do (team 1 abandoned)
    last = sample.records[-1]
    assert last["forfeit_team"] == 1 and last["match_winner"] == 0
    await played_here(page, last, seats - 1)
    await open_hand(page, live_server, last)
    note = ("(abandono seu; partida ganha pelo lugar 1)" if seats == 2
            else "(abandono da sua dupla; partida ganha pela dupla A)")
    await expect(score).to_have_text(re.compile(rf"^{re.escape(mine)} x .* {re.escape(note)}$"))
    await page.context.close()


def argentino_words(points: int) -> str:
    """The expected words: the points, then the malas / buenas (30 is the 15th buena)."""
    count = points if points <= 15 else min(points, 30) - 15
    unit = ("mala" if points <= 15 else "buena") + ("" if count == 1 else "s")
    return f"{points}{NBSP}({count}{NBSP}{unit})"


async def test_argentino_scores_read_in_points_and_malas_or_buenas_on_both_sides(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await house_key(page, sample_signing_key())
    # common.js, as every page writes a score in words (the lobby, /me/hands, the hand page and
    # the table's log and end): one form whatever the points, never "3 buenas x 31 pontos"
    await page.goto(live_server.url("/verify"))
    said = await page.evaluate("""async () => {
      const { scorePoints } = await import("/static/js/common.js");
      const said = (p) => [scorePoints(p, "argentino"), scorePoints(p, "paulista")];
      return Array.from({ length: 34 }, (_, p) => said(p));
    }""")
    assert said == [[argentino_words(p), str(p)] for p in range(34)]
    # the hand page: both sides of an Argentino record in those words
    config = MatchConfig(Variant.ARGENTINO, 2, TeamMode.VOTE)
    sample = sample_table(table_id=TABLE, config=config, hands=3, seed=4)
    await serve_chain(page, TABLE, [sample.anchor_statement, *sample.records])
    record = sample.records[-1]
    await open_hand(page, live_server, record)
    b, a = record["score_before"], record["score_after"]
    words = [argentino_words(p).replace(NBSP, " ") for p in (*b, *a)]
    await expect(page.locator("#rec-score")).to_have_text(
        f"Lugar 1 x Lugar 2: {words[0]} x {words[1]} → {words[2]} x {words[3]}")
    await page.context.close()


async def test_a_phone_never_splits_malas_across_lines(
    live_server: LiveServer, browser: Browser
) -> None:
    # "Robô 2: 0 (0 / malas)" on a 390 px phone; any width where the line ends there will do
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, dealt(1, [["7C", "4D", "KS"], ["6H", "QH", "2S"]]))
    table = ReviewTable(state, seat=0, names=["malas_fone", "bot"])
    page = await open_table(live_server, browser, table, "malas_fone", PHONE)
    await expect(page.locator("#scoreboard")).to_contain_text("Robô 2: 0 (0 malas)")
    lines_of_units = """() => [...document.querySelectorAll("#scoreboard .team")].map((team) => {
      const text = [...team.childNodes]
        .find((n) => n.nodeType === 3 && n.textContent.includes("("));
      const range = document.createRange();
      range.setStart(text, text.textContent.indexOf("("));
      range.setEnd(text, text.textContent.length);
      return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    })"""
    for width in range(PHONE["width"], 239, -2):
        await page.set_viewport_size({"width": width, "height": PHONE["height"]})
        lines = await page.evaluate(lines_of_units)
        assert lines == [1, 1], (width, lines)
    await page.context.close()


async def test_the_footer_says_its_value_is_the_keys_id_not_the_key(
    make_app: AppFactory, aiohttp_client: Callable[..., Any]
) -> None:
    client = await aiohttp_client(make_app())
    published = json.loads(await (await client.get("/api/key")).text())
    page = await (await client.get("/")).text()
    found = re.search(r'<p id="house-key-note">(.*?)</p>', page, re.S)
    assert found, page
    note = re.sub(r"<[^>]+>", "", found.group(1))
    key_id = hashlib.sha256(bytes.fromhex(published["public_key"])).hexdigest()[:16]
    assert key_id == published["key_id"]
    # the id (FAIRNESS.md 9), said to be one, and not the public key the commands' --key carry
    assert note.startswith(f"Identificador da chave de assinatura da casa: {key_id} ("), note
    assert "(a chave inteira, a de --key, está no verificador;" in note, note
    assert published["public_key"] not in page
