"""The ranked queue and arena pages in a real Chromium against the real server (real TCP port,
real clock, the real ranked service and live house), as a player's review found them: the
queue page polls without moving the keyboard focus and takes the player to the table once the
match is found (without script it reloads itself and says so, with a link); the invited partner
sees the invitation and accepts it; the arena page takes its player to the table formed for
them and refreshes the standings."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Browser, Page, Route, expect

from server.ranked.service import RANKED
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    DESKTOP,
    STEP_TIMEOUT_MS,
    LiveServer,
    browser_fixture,
    leave_elsewhere,
    live_server_fixture,
    new_page,
    signup,
)
from tests.test_live_house_guards import until
from truco.variants import Variant

pytestmark = pytest.mark.timeout(120)
TABLE_URL = re.compile(r"/t/[0-9a-f]{16}$")


async def join_queue(page: Page, live: LiveServer, seats: int = 2, partner: str = "") -> None:
    await page.goto(live.url("/ranked"))
    await page.get_by_label("Variante").select_option("paulista")
    await page.get_by_label("Formato").select_option(str(seats))
    if partner:
        await page.get_by_label("Dupla (opcional, só no 2x2)").fill(partner)
    await page.get_by_role("button", name="Entrar na fila").click()


async def first_in_queue(
    browser: Browser, live: LiveServer, first: str, second: str
) -> tuple[Page, Page]:
    """Two new players signed up; the first waits in the Paulista 1x1 queue, the second has
    not joined it yet."""
    ana, bia = await new_page(browser, live), await new_page(browser, live)
    await signup(ana, live, first)
    await signup(bia, live, second)
    await join_queue(ana, live)
    await expect(ana.locator("#queue-state")).to_have_attribute("data-state", "queued")
    return ana, bia


async def test_the_queue_page_keeps_the_focus_and_opens_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    ana, bia = await first_in_queue(browser, live, "ana_q", "bia_q")
    await expect(ana).to_have_title("Fila ranqueada · Barajamos")
    leave = ana.get_by_role("button", name="Sair da fila")
    await leave.focus()
    await ana.evaluate("() => { window.notReloaded = true; }")
    # two polls of the JSON API later the page was not reloaded and the focus stayed put
    for _ in range(2):
        async with ana.expect_response(lambda r: r.url.endswith("/api/ranked/queue")):
            pass
    await expect(ana.locator("#queue-notice")).to_contain_text("Ninguém mais está nesta fila")
    assert await ana.evaluate("() => window.notReloaded === true")
    await expect(leave).to_be_focused()
    # bia comes: the pairing opens the table, and ana's page goes there by itself
    await join_queue(bia, live)
    await ana.wait_for_url(TABLE_URL)
    await bia.wait_for_url(TABLE_URL)
    assert ana.url == bia.url
    await expect(ana.locator("#conn-status")).to_have_attribute("data-state", "connected")
    # back on the queue page (the match still on) it is said and linked, not followed
    table = ana.url.rsplit("/", 1)[1]
    await ana.goto(live.url("/ranked"))
    await expect(ana).to_have_title("(Partida encontrada) Fila ranqueada · Barajamos")
    await expect(ana.get_by_role("link", name="Sua partida começou: ir para a mesa")
                 ).to_have_attribute("href", f"/t/{table}")


async def test_without_script_the_queue_page_reloads_and_links_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    context = await browser.new_context(viewport=DESKTOP,  # type: ignore[arg-type]
                                        java_script_enabled=False)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    ana = await context.new_page()
    bia = await new_page(browser, live)
    await signup(ana, live, "ana_nojs")
    await signup(bia, live, "bia_nojs")
    await join_queue(ana, live)
    await expect(ana.locator("#queue-state")).to_have_attribute("data-state", "queued")
    await join_queue(bia, live)
    await bia.wait_for_url(TABLE_URL)
    # ana's page reloads itself (<noscript> refresh) and finds the match started
    link = ana.get_by_role("link", name="Sua partida começou: ir para a mesa")
    await expect(link).to_be_visible()
    await expect(ana).to_have_title("(Partida encontrada) Fila ranqueada · Barajamos")
    await expect(ana.locator("#queue-state")).to_contain_text("relógio")
    assert ana.url.endswith("/ranked")
    await link.click()
    await ana.wait_for_url(TABLE_URL)
    assert ana.url == bia.url
    await context.close()


async def test_the_invited_partner_sees_the_invitation_without_reloading(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    ana, gil = await new_page(browser, live), await new_page(browser, live)
    await signup(ana, live, "ana_duo")
    await signup(gil, live, "gil_duo")
    await gil.goto(live.url("/ranked"))
    await expect(gil.locator("#queue-state")).to_have_attribute("data-state", "idle")
    await gil.get_by_label("Dupla (opcional, só no 2x2)").fill("typed before")
    await join_queue(ana, live, seats=4, partner="gil_duo")
    await expect(ana.locator("#queue-notice")).to_contain_text("O convite expira em")
    # gil's page shows it at its next poll, without a reload (what gil typed stays)
    invitation = gil.locator("#queue-invitations")
    await expect(invitation).to_contain_text(
        re.compile(r"ana_duo convidou você para uma dupla \(Paulista 2x2\); expira em \d+ min"))
    await expect(gil.get_by_label("Dupla (opcional, só no 2x2)")).to_have_value("typed before")
    await gil.get_by_role("button", name="Aceitar o convite de ana_duo").click()
    await expect(gil.locator("#queue-state")).to_have_attribute("data-state", "queued")
    # ana's page follows: the duo is queued
    await expect(ana.locator("#queue-state")).to_have_attribute("data-state", "queued")
    await expect(ana.locator("dl.kv")).to_contain_text("gil_duo")


async def test_the_arena_page_refreshes_and_takes_its_player_to_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    service = live.app[RANKED]
    now = service.clock.now()
    event = await service.create_arena(Variant.PAULISTA, 4, now, now + 3600)
    names = ["ana_arena", "bia_arena", "caio_arena", "duda_arena"]
    pages = [await new_page(browser, live) for _ in names]
    await asyncio.gather(*(signup(p, live, n) for p, n in zip(pages, names, strict=True)))

    async def join(page: Page) -> None:
        await page.goto(live.url("/arena"))
        await page.get_by_role("button", name="Entrar na arena").click()
        await expect(page.get_by_role("button", name="Sair da arena")).to_be_visible()

    ana = pages[0]
    await join(ana)
    await ana.evaluate("() => { window.notReloaded = true; }")
    for page in pages[1:3]:
        await join(page)
    # a 2x2 table needs four: the standings on ana's page follow without a reload
    await expect(ana.locator(f"#standings-{event.id} tr")).to_have_count(3)
    assert await ana.evaluate("() => window.notReloaded === true")
    await join(pages[3])
    # the fourth completes a table: every page goes to it by itself
    for page in pages:
        await page.wait_for_url(TABLE_URL)
    assert len({page.url for page in pages}) == 1
    table = ana.url.rsplit("/", 1)[1]
    await ana.goto(live.url("/arena"))
    await expect(ana).to_have_title("(Partida encontrada) Arena · Barajamos")
    await expect(ana.get_by_role("link", name="Ir para a mesa")).to_have_attribute(
        "href", f"/t/{table}")
    # back from the table, the arena page links it; a tab that has not been at that table
    # (the player was elsewhere when it was formed) goes to it, its clock running
    await ana.wait_for_timeout(2000)  # a poll or so
    # following, it would have said so at once, and gone 1.2 s later
    await expect(ana.locator("#arena-table")).not_to_contain_text("Abrindo a mesa")
    assert ana.url.endswith("/arena")
    other = await ana.context.new_page()
    await other.goto(live.url("/arena"))
    await other.wait_for_url(f"**/t/{table}")


async def stale_answer(page: Page, path: str, stale: Callable[[dict[str, Any]], bool],
                       ready: Callable[[], bool]) -> list[str]:
    """Answer the page's next poll of `path` that `stale` changes as it was just before the
    table opened, and only once the table is open: the page reloads itself, because its player's
    situation changed, while the table it must go to is already there. Which answers were
    staled is returned."""
    staled: list[str] = []

    async def answer(route: Route) -> None:
        response = await route.fetch()
        body = await response.json()
        if staled or not stale(body):
            await route.fulfill(response=response)
            return
        staled.append(route.request.url)
        try:
            await until(ready, seconds=20)
        finally:
            await route.fulfill(response=response, json=body)

    await page.route(f"**{path}", answer)
    return staled


async def test_a_queue_page_reloaded_as_the_table_opened_still_goes_to_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    """The race a 2x2 duo met: the partner accepted, the page saw the change and reloaded, and
    the pairing and the launch came within the reload: the reloaded page says "seated" and goes
    to the table (not only links it, leaving the player there while the clock runs)."""
    live = live_server
    service = live.app[RANKED]
    ana, bia = await first_in_queue(browser, live, "ana_race", "bia_race")

    def as_paired(body: dict[str, Any]) -> bool:
        queue = body["queue"]
        if queue["state"] not in ("paired", "seated"):
            return False
        queue.update(state="paired", table=None)
        return True

    staled = await stale_answer(ana, "/api/ranked/queue", as_paired,
                                lambda: len(service.seated) == 2)
    await join_queue(bia, live)
    await bia.wait_for_url(TABLE_URL)
    await ana.wait_for_url(TABLE_URL)
    assert staled and ana.url == bia.url
    await expect(ana.locator("#conn-status")).to_have_attribute("data-state", "connected")
    # the follow is kept for that one reload: back on the queue page, the table is linked only
    await ana.goto(live.url("/ranked"))
    await expect(ana.locator("#queue-table-link")).to_be_visible()
    await ana.wait_for_timeout(2000)  # a poll or so
    # following, it would have said so at once, and gone 1.2 s later
    await expect(ana.locator("#queue-notice")).not_to_contain_text("Abrindo a mesa")
    assert ana.url.endswith("/ranked")


async def test_an_arena_page_reloaded_as_the_table_opened_still_goes_to_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    """The arena starts while its page waits: the page reloads for the new state, and the table
    formed for its player within the reload is followed, not only linked."""
    live = live_server
    service = live.app[RANKED]
    now = service.clock.now()
    event = await service.create_arena(Variant.PAULISTA, 2, now + 4, now + 3600)
    ana, bia = await new_page(browser, live), await new_page(browser, live)
    await signup(ana, live, "ana_arena_race")
    await signup(bia, live, "bia_arena_race")
    for page in (ana, bia):
        await page.goto(live.url("/arena"))
        await page.get_by_role("button", name="Entrar na arena").click()
        await expect(page.get_by_role("button", name="Sair da arena")).to_be_visible()

    def started_without_table(body: dict[str, Any]) -> bool:
        arena = next(a for a in body["arenas"] if a["id"] == event.id)
        if arena["state"] != "running":
            return False
        arena["table"] = None
        return True

    staled = await stale_answer(ana, "/api/ranked/arenas", started_without_table,
                                lambda: bool(service.arenas[event.id].tables))
    await bia.wait_for_url(TABLE_URL, timeout=30_000)
    await ana.wait_for_url(TABLE_URL, timeout=30_000)
    assert staled and ana.url == bia.url


async def test_an_invitation_can_be_declined_and_a_duo_partner_leaving_is_said(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    ana, gil = await new_page(browser, live), await new_page(browser, live)
    await signup(ana, live, "ana_no")
    await signup(gil, live, "gil_no")
    await gil.goto(live.url("/ranked"))
    await join_queue(ana, live, seats=4, partner="gil_no")
    # an inviter is in no queue yet: her button cancels the invitation; and she is asked to
    # keep the page open while she waits
    await expect(ana.get_by_role("button", name="Cancelar o convite")).to_be_visible()
    await expect(ana.locator("#queue-keep-open")).to_contain_text(
        "Deixe esta página aberta enquanto espera")
    # gil declines at his page's next poll; ana's page says so without her doing anything
    await gil.get_by_role("button", name="Recusar o convite de ana_no").click()
    await expect(gil.locator("#queue-invitations")).to_be_hidden()
    await expect(gil.locator("#queue-declined")).to_have_text(
        "Você recusou o convite de ana_no para jogar em dupla (o aviso aparece na página da "
        "fila de ana_no).")
    await expect(ana.locator("#queue-state")).to_have_attribute("data-state", "idle")
    await expect(ana.locator("#queue-news")).to_have_text(
        "gil_no recusou o seu convite para jogar em dupla.")
    # invited again, he accepts; then ana leaves the queue: gil's page says why he is out
    await join_queue(ana, live, seats=4, partner="gil_no")
    await expect(ana.locator("#queue-news")).to_be_hidden()
    await expect(gil.locator("#queue-declined")).to_be_hidden()  # past: invited again
    await gil.get_by_role("button", name="Aceitar o convite de ana_no").click()
    await expect(ana.locator("#queue-state")).to_have_attribute("data-state", "queued")
    await ana.get_by_role("button", name="Sair da fila").click()
    await expect(gil.locator("#queue-state")).to_have_attribute("data-state", "idle")
    await expect(gil.locator("#queue-news")).to_contain_text(
        "ana_no, da sua dupla, saiu da fila ranqueada, e a dupla saiu junto")


async def test_the_queue_page_of_a_player_in_an_arena_follows_the_arena_table(
    live_server: LiveServer, browser: Browser
) -> None:
    """A player in an arena who looks at /ranked is out of the queue: the page says where they
    are instead of offering the queue (which would refuse them), and goes to the arena table
    formed for them, whose clock runs from the start (a player's review: /ranked said "Fora da
    fila" and the clock played for her until she had abandoned). A player watching /arena
    without being in it sees the arena's moment refresh too."""
    live = live_server
    service = live.app[RANKED]
    now = service.clock.now()
    event = await service.create_arena(Variant.PAULISTA, 2, now, now + 3600)
    ana, bia, caio = [await new_page(browser, live) for _ in range(3)]
    for page, name in ((ana, "ana_away"), (bia, "bia_away"), (caio, "caio_away")):
        await signup(page, live, name)
    await ana.goto(live.url("/arena"))
    await ana.get_by_role("button", name="Entrar na arena").click()
    await expect(ana.get_by_role("button", name="Sair da arena")).to_be_visible()
    await ana.goto(live.url("/ranked"))
    await expect(ana.locator("#queue-state")).to_contain_text(
        "Você está na arena (Paulista 1x1)")
    await expect(ana.get_by_role("button", name="Entrar na fila")).to_have_count(0)
    await expect(ana.get_by_role("link", name="Ir para a página da arena")).to_be_visible()
    await caio.goto(live.url("/arena"))
    now_line = caio.locator(f"#arena-{event.id}-now")
    await expect(now_line).to_have_text("Agora: 1 jogador esperando mesa, 0 mesas em jogo.")
    await caio.evaluate("() => { window.notReloaded = true; }")
    await bia.goto(live.url("/arena"))
    await bia.get_by_role("button", name="Entrar na arena").click()
    await bia.wait_for_url(TABLE_URL)
    await ana.wait_for_url(TABLE_URL)  # from /ranked, by itself
    assert ana.url == bia.url
    await expect(now_line).to_have_text("Agora: 0 jogadores esperando mesa, 1 mesa em jogo.")
    assert await caio.evaluate("() => window.notReloaded === true")
    # back on /ranked from that table, ana's page links it (this tab has been there); once it
    # ends (bia walked away: ana won, and waits in the arena) the page links the arena again
    table = ana.url.rsplit("/", 1)[1]
    await ana.goto(live.url("/ranked"))
    await expect(ana.get_by_role("link", name="Ir para a mesa da arena")).to_have_attribute(
        "href", f"/t/{table}")
    assert await leave_elsewhere(bia, table) == 200
    await expect(ana.get_by_role("link", name="Ir para a página da arena")).to_be_visible()
    await expect(ana.locator("#queue-state")).to_contain_text(
        "Você está na arena (Paulista 1x1)")
    assert ana.url.endswith("/ranked")
