"""Ranked play end to end in a real Chromium against the real server (real TCP port, real clock,
the real ranked service and live house): players queue from `/ranked`, the pairing opens the
table by itself, they play the match to the end by clicking, and `/me` shows the chips and the
rating it moved, once. Screens under `artifacts/`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from playwright.async_api import Browser, Page, expect

from server.app import POOL
from server.ranked import ledger, ratings
from server.ranked.service import RANKED
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PASSWORD,
    LiveServer,
    Policy,
    browser_fixture,
    create_table,
    live_server_fixture,
    new_page,
    play_hand,
    play_step,
    screenshot,
    signup,
)
from truco.variants import Variant

pytestmark = pytest.mark.timeout(180)
STAKE = 50
START = 1000  # every wallet's starting grant
# the clicking itself, not counting sign-ups; the brief's budget is ~90 s per test
MATCH_TIMEOUT_S = 75.0


async def queue_for(page: Page, live: LiveServer, seats: int, partner: str = "") -> None:
    """Queue from the ranked page, as a player does."""
    await page.goto(live.url("/ranked"))
    await expect(page.locator("#queue-state")).to_have_attribute("data-state", "idle")
    await page.get_by_label("Variante").select_option("paulista")
    await page.get_by_label("Formato").select_option(str(seats))
    if partner:
        await page.get_by_label("Dupla (opcional, só no 2x2)").fill(partner)
    await page.get_by_role("button", name="Entrar na fila").click()


async def follow_to_table(page: Page) -> str:
    """The queue page follows the queue until the pairing opened the table, and then goes to
    the table by itself."""
    await page.wait_for_url(re.compile(r"/t/[0-9a-f]{16}$"))
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    return page.url.rsplit("/", 1)[1]


async def play_to_the_end(pages: Sequence[Page]) -> list[bool]:
    """Everybody raises when they may and accepts every request (the stake climbs, so the match
    is decided in few hands); who won, page by page."""
    policies = [Policy(raise_when_possible=True) for _ in pages]

    async def player(page: Page, policy: Policy) -> None:
        while not await page.locator("#match-over").is_visible():
            if not await play_step(page, policy):
                await page.wait_for_timeout(60)

    await asyncio.wait_for(
        asyncio.gather(*(player(p, pol) for p, pol in zip(pages, policies, strict=True))),
        timeout=MATCH_TIMEOUT_S)
    assert sum(p.clicks for p in policies) > 0
    texts = [await p.locator("#match-over-text").text_content() or "" for p in pages]
    assert all("Placar final" in text for text in texts), texts
    return ["Vitória!" in text for text in texts]


async def standing_before(page: Page, live: LiveServer) -> None:
    await page.goto(live.url("/me"))
    await expect(page.locator("#chips-balance")).to_have_text(str(START))
    await expect(page.get_by_text("Você ainda não jogou ranqueadas")).to_be_visible()


async def check_standing(page: Page, live: LiveServer, user: int, won: bool, seats: int,
                         table_id: str) -> None:
    """`/me` after the match: the chips and the rating moved by this match, once."""
    pool = live.app[POOL]
    rating = await ratings.rating_of(pool, user, Variant.PAULISTA, seats)
    assert len(await ratings.history(pool, user, Variant.PAULISTA, seats)) == 1
    assert (rating.rating > 1500) == won
    assert await ledger.balance(pool, user) == START + (STAKE if won else -STAKE)
    await page.goto(live.url("/me"))
    await expect(page.locator("#chips-balance")).to_have_text(
        str(START + (STAKE if won else -STAKE)))
    shown = page.locator("#ratings li")
    await expect(shown).to_have_count(1)
    fmt = "1x1" if seats == 2 else "2x2"
    await expect(shown).to_contain_text(f"Paulista {fmt}: {rating.rating:.0f} ± {rating.rd:.0f}")
    await expect(page.get_by_text("Vitória" if won else "Derrota", exact=True)).to_be_visible()
    # the table's hands on a page for people (not the raw JSON chain)
    await expect(page.get_by_role("link", name="registros da mesa")).to_have_attribute(
        "href", f"/me/hands?table={table_id}")


async def settled_once(live: LiveServer, table_id: str, seats: int) -> None:
    """One payout entry, one rating row per player; nothing held any more."""
    pool = live.app[POOL]
    ref = f"ranked:{table_id}:1"
    # a full match, played to the target: nobody resigned or timed out
    assert await pool.fetchval(
        "SELECT termination FROM live_matches WHERE table_id = $1 AND number = 1",
        table_id) == "target"
    assert await pool.fetchval(
        "SELECT count(*) FROM live_matches WHERE table_id = $1", table_id) == 1
    entries = await pool.fetch(
        "SELECT reason FROM chip_entries WHERE match_ref = $1 ORDER BY id", ref)
    assert [e["reason"] for e in entries] == ["hold", "payout"]
    rated = await pool.fetchval(
        "SELECT count(*) FROM ranked_rating_history WHERE reference = $1", f"match:{ref}")
    assert rated == seats
    held = await pool.fetchval("SELECT balance FROM chip_accounts WHERE code = $1",
                               f"stake:{ref}")
    assert held == 0
    # the players are free to queue again
    service = live.app[RANKED]
    assert not service.seated


async def user_ids(live: LiveServer, names: Sequence[str]) -> list[int]:
    rows = await live.app[POOL].fetch(
        "SELECT id, name FROM users WHERE name = ANY($1::text[])", list(names))
    ids = {row["name"]: row["id"] for row in rows}
    return [ids[name] for name in names]


async def test_two_players_queue_play_a_ranked_1v1_and_see_their_standing(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    names = ["rita_1", "sol_2"]
    pages = [await new_page(browser, live) for _ in names]
    await asyncio.gather(*(signup(p, live, n) for p, n in zip(pages, names, strict=True)))
    for page in pages:
        await standing_before(page, live)
    for page in pages:
        await queue_for(page, live, 2)
    tables = await asyncio.gather(*(follow_to_table(p) for p in pages))
    assert tables[0] == tables[1]
    table_id = tables[0]
    await expect(pages[0].locator("#seat-list")).to_contain_text("sol_2")
    won = await play_to_the_end(pages)
    assert sorted(won) == [False, True]
    await screenshot(pages[won.index(True)], "ranked-1v1-over")

    # a ranked table plays one match: no rematch is offered, the players requeue
    await expect(pages[0].locator("#match-over")).to_be_visible()
    # (once the finished table is shown: its leave button comes with the same message)
    await expect(pages[0].locator("#leave-finished")).to_be_visible()
    await expect(pages[0].locator("#rematch")).to_be_hidden()
    await expect(pages[0].locator("#leave-hint")).to_be_hidden()  # no rematch: no seat to keep

    await settled_once(live, table_id, 2)
    for page, user, w in zip(pages, await user_ids(live, names), won, strict=True):
        await check_standing(page, live, user, w, 2, table_id)
    await screenshot(pages[0], "ranked-me-after-1v1")
    # and back in the queue straight away
    await queue_for(pages[0], live, 2)
    await expect(pages[0].locator("#queue-state")).to_have_attribute("data-state", "queued")


async def test_a_duo_and_two_solo_players_play_a_ranked_2v2_to_the_payout(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    names = ["duo_a", "duo_b", "solo_c", "solo_d"]
    pages = [await new_page(browser, live) for _ in names]
    await asyncio.gather(*(signup(p, live, n) for p, n in zip(pages, names, strict=True)))
    await standing_before(pages[0], live)
    # the duo: each names the other; the first waits as "inviting" until the second answers
    await queue_for(pages[0], live, 4, partner="duo_b")
    await expect(pages[0].locator("#queue-state")).to_have_attribute("data-state", "inviting")
    await queue_for(pages[1], live, 4, partner="duo_a")
    await queue_for(pages[2], live, 4)
    await queue_for(pages[3], live, 4)
    tables = await asyncio.gather(*(follow_to_table(p) for p in pages))
    assert len(set(tables)) == 1
    table_id = tables[0]
    ids = await user_ids(live, names)
    seating = await live.app[POOL].fetch(
        "SELECT seat, user_id FROM live_seats WHERE table_id = $1 ORDER BY seat", table_id)
    by_seat = [row["user_id"] for row in seating]
    # duos stay together: the partners sit on the same team (seats of one parity)
    assert by_seat.index(ids[0]) % 2 == by_seat.index(ids[1]) % 2
    assert by_seat.index(ids[2]) % 2 == by_seat.index(ids[3]) % 2

    won = await play_to_the_end(pages)
    assert won[0] == won[1] and won[2] == won[3] and won[0] != won[2]
    await screenshot(pages[0], "ranked-2v2-over")
    await settled_once(live, table_id, 4)
    for page, user, w in zip(pages, ids, won, strict=True):
        await check_standing(page, live, user, w, 4, table_id)


PHONE_390 = {"width": 390, "height": 844}


async def page_fits(page: Page, width: int) -> bool:
    return bool(await page.evaluate(
        "(width) => document.documentElement.scrollWidth <= width", width))


async def test_my_hands_fits_a_phone_with_a_hand_listed(
    live_server: LiveServer, browser: Browser
) -> None:
    """`/me/hands` at 390 px: the chain's offline command (a 64-hex key, the address) wraps
    instead of widening the page; `?table=` shows that table's hands, as `/me` links them."""
    live = live_server
    page = await new_page(browser, live)
    await signup(page, live, "fone_390")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    hand = await play_hand(page, Policy())
    await page.set_viewport_size(PHONE_390)  # type: ignore[arg-type]
    for path in ("/me/hands", f"/me/hands?table={table_id}"):
        await page.goto(live.url(path))
        listed = page.locator(f'#hands-list li[data-hand="{hand}"] a')
        await expect(listed).to_have_attribute("href", f"/h/{table_id}/{hand}")
        command = page.locator(f'#hands-list section[data-table="{table_id}"] code.cli-command')
        await expect(command).to_contain_text("--key ")
        assert await page_fits(page, 390), path
        box = await command.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, box
    await expect(page.locator("#hands-list section")).to_have_count(1)
    # one table only, said so, with the way back to all of them
    await expect(page.locator("#hands-status")).to_contain_text(f"da mesa {table_id}")
    await expect(page.locator("#hands-status").get_by_role(
        "link", name="Ver as mãos de todas as suas mesas")).to_have_attribute("href", "/me/hands")
    await screenshot(page, "my-hands-phone")
    # from another browser, where none of her hands were kept, the table is there too (the
    # house lists the tables she played at, closed ones as well)
    other = await new_page(browser, live)
    await other.goto(live.url("/"))
    await other.locator("#login-name").fill("fone_390")
    await other.locator("#login-password").fill(PASSWORD)
    await other.get_by_role("button", name="Entrar").click()
    await other.goto(live.url("/me/hands"))
    await expect(other.locator(f'#hands-list li[data-hand="{hand}"] a')).to_have_attribute(
        "href", f"/h/{table_id}/{hand}")
    # and its page says which seat was hers ("Você"), from the house: this browser kept nothing
    await other.goto(live.url(f"/h/{table_id}/{hand}"))
    await expect(other.locator("#verdict")).to_have_attribute("data-state", "ok")
    await expect(other.locator("#rec-score .side").first).to_contain_text("Você")
    # signed out, the same page names seats only
    await other.context.clear_cookies()
    await other.reload()
    await expect(other.locator("#verdict")).to_have_attribute("data-state", "ok")
    await expect(other.locator("#rec-score")).not_to_contain_text("Você")


async def test_players_pages_say_their_moments_in_the_readers_time_zone(
    live_server: LiveServer, browser: Browser
) -> None:
    # the server says every moment in UTC; a player in São Paulo reads them in their own time
    context = await browser.new_context(timezone_id="America/Sao_Paulo")
    page = await context.new_page()
    page.on("pageerror", lambda error: live_server.page_errors.append(str(error)))
    await signup(page, live_server, "fuso")
    await page.goto(live_server.url("/me"))
    await page.get_by_text("Extrato").click()
    moment = page.locator("#chips-title ~ details time[data-local]").first
    await expect(moment).to_be_visible()
    utc = await moment.get_attribute("datetime")
    assert utc is not None and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", utc)
    at = datetime.fromisoformat(utc).astimezone(timezone(timedelta(hours=-3)))
    await expect(moment).to_have_text(at.strftime("%d/%m/%Y %H:%M:%S") + " BRT")
    await expect(moment).to_have_attribute(
        "title", datetime.fromisoformat(utc).strftime("%d/%m/%Y %H:%M:%S UTC"))
    await context.close()
