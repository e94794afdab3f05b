"""The browser tables in a real Chromium against the real server (real TCP port, real clock).

Playwright's async API drives Debian's Chromium (`/usr/bin/chromium`, installed by scripts/test;
never downloaded). Each test starts the app from `make_app` on its own fresh database. Screens
of the lobby, a table mid-hand and a verified hand page are saved under `artifacts/`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from playwright.async_api import (
    Browser,
    Dialog,
    Page,
    Route,
    WebSocketRoute,
    async_playwright,
    expect,
)
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
from tests.conftest import csrf  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
PHONE = {"width": 375, "height": 800}
DESKTOP = {"width": 1280, "height": 900}
PASSWORD = "truco na praia 42"
# generous: a bot or the server may take a moment on a loaded 2-core machine, never a clock
STEP_TIMEOUT_MS = 20_000
CLICK_TIMEOUT_MS = 2_000

pytestmark = pytest.mark.timeout(180)
expect.set_options(timeout=STEP_TIMEOUT_MS)


@dataclass
class LiveServer:
    base: str
    app: web.Application
    page_errors: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path


@pytest.fixture(name="live_server")
async def live_server_fixture(
    make_app: Callable[..., web.Application], aiohttp_server: Callable[..., Awaitable[Any]]
) -> AsyncIterator[LiveServer]:
    # `make_app` first: its database must outlive the server (fixtures tear down in reverse).
    # No clock given: the app runs on the real system clock, as in production.
    server = await aiohttp_server(make_app())
    live = LiveServer(str(server.make_url("/")).rstrip("/"), server.app)
    try:
        yield live
    finally:
        await server.close()
    assert not live.page_errors, f"JavaScript errors in the pages: {live.page_errors}"


@pytest.fixture(name="browser")
async def browser_fixture() -> AsyncIterator[Browser]:
    assert CHROMIUM.exists(), (
        f"the browser tests need Debian's Chromium at {CHROMIUM}:"
        " run scripts/test, which installs it"
    )
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


async def new_page(
    browser: Browser, live: LiveServer, viewport: dict[str, int] | None = None
) -> Page:
    """A page in its own context (its own cookies and localStorage: one player)."""
    context = await browser.new_context(viewport=viewport or DESKTOP)  # type: ignore[arg-type]
    context.set_default_timeout(STEP_TIMEOUT_MS)
    page = await context.new_page()
    page.on("pageerror", lambda error: live.page_errors.append(str(error)))
    return page


def lobby_refreshes(page: Page) -> list[str]:
    """The lobby's list refreshes, each counted as it begins (it asks for the player's own tables
    once). The lobby begins a refresh 4 s after the one before it is shown, so once two more than
    n have begun, a refresh begun after the nth has been shown whole."""
    begun: list[str] = []
    page.on("request", lambda request: begun.append(request.url)
            if request.url.endswith("/api/tables?mine=1") else None)
    return begun


async def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def signup(page: Page, live: LiveServer, name: str) -> None:
    await page.goto(live.url("/"))
    await page.get_by_label("Nome").first.fill(name)
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD)
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.get_by_role("heading", name="Mesas", exact=True)).to_be_visible()


async def create_table(page: Page, variant: str, seats: int, kind: str) -> str:
    await page.get_by_label("Variante").select_option(variant)
    await page.get_by_label("Jogadores").select_option(str(seats))
    await page.get_by_label("Tipo").select_option(kind)
    await page.get_by_role("button", name="Criar mesa").click()
    await page.wait_for_url(re.compile(r"/t/[0-9a-f]{16}$"))
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    return page.url.rsplit("/", 1)[1]


async def leave_elsewhere(page: Page, table_id: str) -> int:
    """Leave the table as another tab of the same session would (the page itself is not told):
    the answer's status."""
    return int(await page.evaluate(
        """async (id) => {
          const csrf = document.querySelector('meta[name="csrf-token"]').content;
          const r = await fetch(`/api/tables/${id}/leave`, { method: "POST",
            headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" }, body: "{}" });
          return r.status;
        }""",
        table_id,
    ))


def kept_js(params: str, body: str) -> str:
    """A script for `page.evaluate` taking `params`, whose `body` may name a key of the page's
    storage as `kept(name)`: what the page keeps is kept per account (common.js `stored`)."""
    key = "`barajamos:u${document.getElementById('me').dataset.userId}:${n}`"
    return f"({params}) => {{ const kept = (n) => {key}; {body} }}"


async def no_horizontal_scroll(page: Page) -> bool:
    return bool(await page.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    ))


# --- playing by clicking ----------------------------------------------------------------------


@dataclass
class Policy:
    """How a test player clicks: raise when it may (optionally), accept requests, play cards."""

    raise_when_possible: bool = False
    raised: int = 0
    cards_played: int = 0
    clicks: int = 0


async def enabled(page: Page, selector: str) -> list[str]:
    return list(await page.eval_on_selector_all(
        selector, "(nodes) => nodes.filter((n) => !n.disabled && n.offsetParent !== null)"
        ".map((n) => n.dataset.action + ':' + (n.dataset.card ?? n.dataset.position ?? ''))",
    ))


async def play_step(page: Page, policy: Policy) -> bool:
    """Click one legal thing, if there is one; False when this player has nothing to do now."""
    actions = await enabled(page, "#actions button")
    plays = await enabled(page, '#my-hand button[data-action="play"]')
    if "accept:" in actions:
        verb, target = "accept", page.locator('#actions button[data-action="accept"]')
    elif policy.raise_when_possible and "raise:" in actions:
        verb, target = "raise", page.locator('#actions button[data-action="raise"]')
    elif plays:
        verb = "play"
        target = page.locator('#my-hand button[data-action="play"]:not([disabled])').first
    else:
        return False
    try:
        # the others move meanwhile: a button that went away is only a missed chance
        await target.click(timeout=CLICK_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        return False
    policy.clicks += 1
    policy.raised += verb == "raise"
    policy.cards_played += verb == "play"
    # the click sent one action: wait for its answer before looking again
    await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    return True


async def last_summary(page: Page) -> int:
    """The number of the latest hand whose summary the page shows (0: none yet)."""
    value = await page.locator("#summary").get_attribute("data-hand")
    return int(value) if value else 0


async def play_hand(page: Page, policy: Policy) -> int:
    """Click through until the hand in progress ends; its number."""
    before = await last_summary(page)
    while (after := await last_summary(page)) == before:
        if not await play_step(page, policy):
            await page.wait_for_timeout(100)
    return after


# --- tests -------------------------------------------------------------------------------------


async def test_signup_shows_clear_errors_and_opens_the_lobby(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, PHONE)
    await page.goto(live_server.url("/"))
    assert await page.title() == "Entrar · Barajamos"
    # a name with a space: refused in pt-BR, the form keeps what was typed, nothing created
    await page.locator("#signup-name").fill("ana maria")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD)
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.locator("#signup-name-error")).to_contain_text("O nome precisa ter")
    await expect(page.locator("#signup-name")).to_have_value("ana maria")
    await expect(page.locator("#signup-name")).to_have_attribute("aria-invalid", "true")
    # passwords that differ
    await page.locator("#signup-name").fill("ana_maria")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD + "x")
    await page.get_by_role("button", name="Criar conta").click()
    await expect(page.locator("#signup-password2-error")).to_have_text(
        "As duas senhas não são iguais."
    )
    # a wrong login for a name that does not exist
    await page.locator("#login-name").fill("ana_maria")
    await page.locator("#login-password").fill(PASSWORD)
    await page.get_by_role("button", name="Entrar").click()
    await expect(page.locator("#login-error")).to_have_text("Nome ou senha incorretos.")
    assert await no_horizontal_scroll(page)
    # now right, with the keyboard only
    await page.locator("#signup-name").fill("ana_maria")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD)
    await page.locator("#signup-password2").press("Enter")
    await expect(page.get_by_role("heading", name="Mesas", exact=True)).to_be_visible()
    await expect(page.locator("#me")).to_have_text("ana_maria")
    await expect(page.locator("#lobby-status")).not_to_have_text("Carregando as mesas…")
    assert await no_horizontal_scroll(page)
    await screenshot(page, "lobby-phone")
    await page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]
    await screenshot(page, "lobby-desktop")
    # log out and back in
    await page.get_by_role("button", name="Sair").click()
    await expect(page.get_by_role("heading", name="Entrar")).to_be_visible()
    await page.locator("#login-name").fill("ana_maria")
    await page.locator("#login-password").fill(PASSWORD)
    await page.get_by_role("button", name="Entrar").click()
    await expect(page.locator("#me")).to_have_text("ana_maria")
    # the same name again, from another browser: taken
    other = await new_page(browser, live_server)
    await other.goto(live_server.url("/"))
    await other.locator("#signup-name").fill("Ana_Maria")
    await other.locator("#signup-password").fill(PASSWORD)
    await other.locator("#signup-password2").fill(PASSWORD)
    await other.get_by_role("button", name="Criar conta").click()
    await expect(other.locator("#signup-name-error")).to_have_text(
        "Esse nome já está em uso: escolha outro."
    )


async def test_a_browser_keeps_the_host_only_cookies_of_a_house_behind_https(
    make_app: Callable[..., web.Application], aiohttp_server: Callable[..., Awaitable[Any]],
    browser: Browser,
) -> None:
    # behind HTTPS the cookies go by __Host- names (Secure, Path=/, no Domain): a browser keeps
    # them only when they meet the prefix's rules, so the house must set them exactly so.
    # Chromium treats this loopback address as a secure origin, as it does https
    server = await aiohttp_server(make_app(secure_cookies=True))
    live = LiveServer(str(server.make_url("/")).rstrip("/"), server.app)
    try:
        page = await new_page(browser, live)
        await signup(page, live, "ana_maria")
        await expect(page.locator("#me")).to_have_text("ana_maria")
        await expect(page.locator("#lobby-status")).not_to_have_text("Carregando as mesas…")
        kept = {c["name"]: c for c in await page.context.cookies()}
        assert set(kept) == {"__Host-barajamos_session", "__Host-barajamos_csrf",
                             "__Host-barajamos_device"}, kept
        assert all(c["secure"] and c["httpOnly"] and c["path"] == "/" for c in kept.values())
        # a table made from the lobby (the page's CSRF token and its cookie agree), its socket
        # opened with the session cookie
        await create_table(page, "mineiro", 2, "training")
        await page.goto(live.url("/"))
        await page.get_by_role("button", name="Sair").click()
        await expect(page.get_by_role("heading", name="Entrar")).to_be_visible()
        names = {c["name"] for c in await page.context.cookies()}
        # the session cookie expired; the device one stays (strangers cannot lock them out)
        assert names == {"__Host-barajamos_csrf", "__Host-barajamos_device"}, names
    finally:
        await server.close()
    assert not live.page_errors, f"JavaScript errors in the pages: {live.page_errors}"


async def test_the_lobby_creates_a_table_only_once_its_script_handles_the_form(
    live_server: LiveServer, browser: Browser
) -> None:
    """A click on `Criar mesa` while the lobby's script is still loading would submit the bare
    form (a reload of the lobby, the choices lost): the button waits, disabled, for the script."""
    page = await new_page(browser, live_server)
    await signup(page, live_server, "lobby_early")
    released = asyncio.Event()

    async def slow_script(route: Route) -> None:
        await released.wait()
        await route.continue_()

    await page.route("**/static/js/lobby.js", slow_script)
    await page.goto(live_server.url("/"), wait_until="commit")
    create = page.get_by_role("button", name="Criar mesa")
    await expect(create).to_be_disabled()
    released.set()
    await expect(create).to_be_enabled()
    await create_table(page, "mineiro", 2, "training")
    # without script the lobby says that making a table needs it, and offers no dead button
    bare = await browser.new_context(viewport=DESKTOP,  # type: ignore[arg-type]
                                     java_script_enabled=False)
    nojs = await bare.new_page()
    await nojs.goto(live_server.url("/"))
    await nojs.locator("#login-name").fill("lobby_early")
    await nojs.locator("#login-password").fill(PASSWORD)
    await nojs.get_by_role("button", name="Entrar").click()
    await expect(nojs.get_by_role("heading", name="Mesas", exact=True)).to_be_visible()
    await expect(nojs.get_by_role("button", name="Criar mesa")).to_be_disabled()
    # (Chromium with script execution turned off still parses <noscript> as scripted: its note
    # is in the page, though not laid out here)
    note = '<noscript><p class="error">Criar uma mesa precisa de JavaScript'
    assert note in await nojs.content()
    await bare.close()


async def test_the_lobby_refreshes_one_request_at_a_time_and_not_while_hidden(
    live_server: LiveServer, browser: Browser
) -> None:
    """The lobby's two lists come every 4 s after the last answer (a slow server is not asked
    again while its answer is on the way: they piled up every 4 s before), and a tab the player
    is not looking at does not ask at all (at thousands of tables, a background lobby tab per
    player cost the house a refresh every 4 s each)."""
    page = await new_page(browser, live_server)
    await page.clock.install()  # the page's timers move only when the test says
    await signup(page, live_server, "lobby_tab")
    await expect(page.locator("#lobby-status")).not_to_have_text("Carregando as mesas…")
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/tables" in r.url else None)

    async def asks(count: int) -> None:
        for _ in range(100):
            if len(asked) >= count:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # and no more than that
        assert len(asked) == count, asked

    await page.clock.run_for(4_100)
    await asks(2)  # both lists, once
    # hidden: the next refresh does not ask, nor any after it
    await page.evaluate("""() => {
        Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
        document.dispatchEvent(new Event("visibilitychange"));
    }""")
    await page.clock.run_for(20_000)
    await asks(2)
    # shown again: at once, and from then on every 4 s
    await page.evaluate("""() => {
        Object.defineProperty(document, "hidden", { configurable: true, get: () => false });
        document.dispatchEvent(new Event("visibilitychange"));
    }""")
    await asks(4)
    # a slow answer: nothing more is asked until it has come, then 4 s after it
    released = asyncio.Event()

    async def slow(route: Route) -> None:
        await released.wait()
        await route.continue_()

    await page.route("**/api/tables", slow)
    await page.clock.run_for(4_100)
    await asks(6)
    await page.clock.run_for(20_000)
    await asks(6)
    # (the held list's answer arrived; then the page's `finally` sets its next 4 s)
    async with page.expect_response(lambda r: r.url.endswith("/api/tables")):
        released.set()
    await asyncio.sleep(0.3)
    await page.clock.run_for(4_100)
    await asks(8)


async def test_a_private_page_asks_for_login_and_comes_back(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    response = await page.goto(live_server.url("/me/hands"))
    assert response is not None and response.status == 401
    await expect(page.locator(".notice")).to_contain_text("Entre ou crie uma conta")
    await page.locator("#signup-name").fill("bia_22")
    await page.locator("#signup-password").fill(PASSWORD)
    await page.locator("#signup-password2").fill(PASSWORD)
    await page.get_by_role("button", name="Criar conta").click()
    await page.wait_for_url(live_server.url("/me/hands"))
    await expect(page.get_by_role("heading", name="Minhas mãos")).to_be_visible()
    await expect(page.locator("#hands-status")).to_contain_text("Nenhuma mão")
    # a table that does not exist is said so, not retried forever
    await page.goto(live_server.url("/t/00000000000000ff"))
    await expect(page.locator("#table-gone")).to_contain_text("Mesa não encontrada")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "closed")


async def test_training_hand_by_clicking_then_verify_it_in_the_browser(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "caio_1")
    table_id = await create_table(page, "paulista", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    # the commitment is shown before the deal, and my browser's entropy is kept
    await expect(page.locator("#fair-commitment")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    await expect(page.locator("#fair-mine")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    # hand 1 starts the table's seed chain: its anchor statement is signed and names it
    await expect(page.locator("#fair-chain")).to_contain_text("nova cadeia a partir da mão 1")
    await expect(page.locator("#fair-chain")).to_have_attribute("data-state", "ok")
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await expect(page.locator("#hand-info .vira .card")).to_have_count(1)
    await expect(page.locator("#hand-info .manilhas .card")).to_have_count(4)

    # the clock counts down from the server's deadline
    await expect(page.locator("#my-clock")).to_have_text(re.compile(r"^\d+ s$"))
    # the first card goes with the keyboard only
    playable = page.locator('#my-hand button[data-action="play"]:not([disabled])')
    accept = page.locator('#actions button[data-action="accept"]:not([disabled])')
    await expect(playable.or_(accept).first).to_be_visible()
    if await accept.count():
        # the robot, mano with a strong hand, asked for truco before its card: accept it, also
        # with the keyboard
        await accept.first.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    first = playable.first
    await first.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#rounds .play .card")).not_to_have_count(0)
    await expect(page.locator("#table-root")).to_have_attribute("data-busy", "false")
    policy = Policy(cards_played=1)
    # the bot is named by its seat ("Robô 2"): every bot is called "bot" by the server
    answered = re.compile(r"Robô 2 (aceitou|correu)|Robô 2 pediu (seis|nove|doze)")
    screenshot_taken = False
    hands_played = 0
    # (a truco the bot runs from can end a hand with one card on the table: the picture of a
    # hand in play is then taken in a later one)
    while policy.raised == 0 or not screenshot_taken:
        # play a card first, then ask for truco once it is possible: the bot must answer
        before = await last_summary(page)
        while await last_summary(page) == before:
            policy.raise_when_possible = policy.cards_played >= 1 and policy.raised == 0
            raised_before = policy.raised
            if not await play_step(page, policy):
                await page.wait_for_timeout(100)
                continue
            if not screenshot_taken and await page.locator("#rounds .play .card").count() >= 2:
                await screenshot(page, "table-mid-hand")
                screenshot_taken = True
            if policy.raised > raised_before:
                await expect(page.locator("#log")).to_contain_text(answered)
        hands_played += 1
        assert hands_played <= 6, "no truco raised, or no two cards seen, in six hands"
    await expect(page.locator("#summary-body")).to_contain_text("Placar")
    assert policy.cards_played >= 1 and screenshot_taken

    # the table itself checked the finished hand's record, and the next commitment against it
    await expect(page.locator("#fair-last")).to_have_attribute("data-state", "ok")
    await expect(page.locator("#fair-chain")).to_have_attribute("data-state", "ok")
    await expect(page.locator("#fair-chain")).to_contain_text("é a semente revelada da mão")

    # the record goes public after the hand: open it from the table and check it here
    record_link = page.locator("#last-record")
    await expect(record_link).to_be_visible()
    hand_number = int((await record_link.get_attribute("href") or "").rsplit("/", 1)[1])
    assert hand_number >= 1
    await record_link.click()
    await page.wait_for_url(live_server.url(f"/h/{table_id}/{hand_number}"))
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "ok")
    for name in ("structure", "key", "signature", "commitment", "deck", "deal", "mine"):
        await expect(page.locator(f'#checks [data-check="{name}"]')).to_have_attribute(
            "data-status", "pass"
        )
    await expect(page.locator("#rec-contributions li.mine")).to_have_count(1)
    await expect(page.locator("#rec-deck li")).to_have_count(40)
    await expect(page.locator("#cli-command")).to_contain_text(
        f"barajamos-verify hand {live_server.base}/hands/{table_id}-{hand_number} --key "
    )
    await screenshot(page, "hand-verified")

    # a tampered record (two cards of the deck swapped): a clear, named failure
    record = json.loads(await page.evaluate(
        "async (url) => (await fetch(url)).text()", f"/hands/{table_id}-{hand_number}"
    ))
    record["deck"][0], record["deck"][1] = record["deck"][1], record["deck"][0]
    await page.get_by_label("ou cole o JSON do registro").fill(json.dumps(record))
    await page.get_by_role("button", name="Verificar").click()
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "fail")
    await expect(page.locator("#verdict")).to_contain_text("FALHOU")
    for name in ("signature", "deck"):
        await expect(page.locator(f'#checks [data-check="{name}"]')).to_have_attribute(
            "data-status", "fail"
        )
    # garbage is unreadable, not a crash
    await page.get_by_label("ou cole o JSON do registro").fill('{"kind": "hand", "version": 1.5}')
    await page.get_by_role("button", name="Verificar").click()
    await expect(page.locator("#verdict")).to_have_attribute("data-state", "unreadable")

    # my past hands list it
    await page.goto(live_server.url("/me/hands"))
    await expect(page.locator(f'#hands-list li[data-hand="{hand_number}"] a')).to_have_attribute(
        "href", f"/h/{table_id}/{hand_number}"
    )


async def test_reload_mid_hand_recovers_the_table(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server, PHONE)
    await signup(page, live_server, "duda_3")
    await create_table(page, "mineiro", 2, "training")
    # my entropy as a phrase: its UTF-8 bytes exactly as typed
    phrase = "Truco! ñandú 🂡"
    # it goes into the public record for good: said with the field (a privacy review)
    await expect(page.get_by_label("Usar uma frase como entropia")).to_have_accessible_description(
        re.compile("fica pública para sempre no registro assinado da mão"))
    await page.get_by_label("Usar uma frase como entropia").fill("x" * 257)
    await expect(page.locator("#entropy-phrase-error")).to_contain_text("257 bytes")
    await page.get_by_label("Usar uma frase como entropia").fill(phrase)
    await expect(page.locator("#entropy-phrase-error")).to_be_hidden()
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-mine")).to_have_text(phrase.encode().hex())
    policy = Policy()
    # play one card, so the table has history to restore
    while policy.cards_played == 0:
        if not await play_step(page, policy):
            await page.wait_for_timeout(100)
    await expect(page.locator("#rounds .play .card").first).to_be_visible()
    before_cards = await page.eval_on_selector_all(
        "#my-hand .card[data-card]", "(nodes) => nodes.map((n) => n.dataset.card)"
    )
    before_mine = await page.locator("#fair-mine").text_content()
    before_log = await page.locator("#log li").all_text_contents()
    assert any(line.startswith("Você jogou") for line in before_log)
    assert await no_horizontal_scroll(page)
    await screenshot(page, "table-phone")
    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(page.locator("#board")).to_be_visible()
    # "O que aconteceu" was emptied by a reload: it is kept, the reload's gap said
    after_log = await page.locator("#log li").all_text_contents()
    marker = after_log.index(
        "Página recarregada: o que aconteceu durante a recarga não aparece aqui.")
    kept = after_log[marker + 1:]
    assert before_log and all(line in kept for line in before_log)  # (a bot's move may follow)
    if await last_summary(page) == 0:
        after_cards = await page.eval_on_selector_all(
            "#my-hand .card[data-card]", "(nodes) => nodes.map((n) => n.dataset.card)"
        )
        assert set(after_cards) <= set(before_cards)
        await expect(page.locator("#rounds .play .card").first).to_be_visible()
    await expect(page.locator("#fair-mine")).to_have_text(before_mine or "")
    # and the hand goes on to its end from the restored page
    await play_hand(page, policy)
    await expect(page.locator("#summary-body")).to_contain_text("Placar")
    # resigning asks first: "no" keeps the seat, "yes" leaves (and loses) the match
    async def say_no(dialog: Dialog) -> None:
        await dialog.dismiss()

    async def say_yes(dialog: Dialog) -> None:
        await dialog.accept()

    page.once("dialog", say_no)
    await page.get_by_role("button", name="Desistir e sair da mesa").click()
    await expect(page.locator("#resign")).to_be_visible()
    assert "/t/" in page.url
    page.once("dialog", say_yes)
    await page.get_by_role("button", name="Desistir e sair da mesa").click()
    # the lobby says the match was given up
    await page.wait_for_url(live_server.url("/?left=1"))
    await expect(page.locator("#left-notice")).to_have_text(
        "Você saiu da mesa; a partida foi dada como perdida.")


async def test_a_dropped_connection_reconnects_by_itself(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    # every table socket goes through this route, so the test can cut it like a network would
    routes: list[WebSocketRoute] = []
    hellos: list[dict[str, Any]] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            if isinstance(message, str) and '"hello"' in message:
                hellos.append(json.loads(message))
            server.send(message)

        ws.on_message(from_page)
        routes.append(ws)

    await page.route_web_socket(re.compile(r"/ws/tables/"), route)
    await signup(page, live_server, "eva_4")
    await create_table(page, "argentino", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#my-hand .card").first).to_be_visible()
    await expect(page.locator("#scoreboard")).to_contain_text("malas")
    assert len(routes) == 1 and hellos[0]["last_seq"] == 0
    await routes[0].close(code=4000, reason="test: connection dropped")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    assert len(routes) == 2
    # the new socket's hello carries the last table event the page had processed
    assert hellos[-1]["last_seq"] > 0
    await play_hand(page, Policy())


async def test_four_browsers_play_a_2v2_match_to_the_end(
    live_server: LiveServer, browser: Browser
) -> None:
    pages = [await new_page(browser, live_server) for _ in range(4)]
    names = ["fa_0", "gui_1", "hel_2", "ivo_3"]
    await asyncio.gather(*(signup(p, live_server, n) for p, n in zip(pages, names, strict=True)))
    owner = pages[0]
    table_id = await create_table(owner, "paulista", 4, "private")
    invite_link = await owner.locator("#invite-link").input_value()
    assert f"/t/{table_id}?invite=" in invite_link
    for seat, page in enumerate(pages[1:3], start=1):
        await page.goto(invite_link)
        await page.get_by_role("button", name=f"Sentar no lugar {seat + 1}").click()
        await expect(page.locator("#seat-list")).to_contain_text(f"{names[seat]} (você)")
    # private tables are not advertised (their ids stay with their players): the last one
    # does not find it in the lobby, and sits through the invite link
    last = pages[3]
    await last.goto(live_server.url("/"))
    lobby = last.get_by_role("region", name="Mesas com lugar livre")
    await expect(lobby.get_by_role("status")).to_contain_text("Nenhuma mesa esperando")
    assert await last.locator(f'#lobby-tables li[data-table="{table_id}"]').count() == 0
    await last.goto(invite_link)
    await last.get_by_role("button", name="Sentar no lugar 4").click()
    await expect(last.locator("#seat-list")).to_contain_text("ivo_3 (você)")
    await expect(owner.locator("#seat-list")).to_contain_text(names[3])
    await owner.get_by_role("button", name="Começar a partida").click()

    # the first truco: one partner votes to run, the other to accept, and the split shows
    asker: Page | None = None
    while asker is None:
        for page in pages:
            if "raise:" in await enabled(page, "#actions button"):
                asker = page
                break
        else:
            await pages[0].wait_for_timeout(100)
    await asker.locator('#actions button[data-action="raise"]').click()
    seat = pages.index(asker)
    runner, taker = pages[(seat + 1) % 4], pages[(seat + 3) % 4]
    await runner.locator('#actions button[data-action="decline"]').click()
    await expect(runner.locator("#table-root")).to_have_attribute("data-busy", "false")
    await taker.locator('#actions button[data-action="accept"]').click()
    await expect(runner.locator("#votes")).to_contain_text("a dupla discorda")
    await expect(taker.locator("#votes")).to_contain_text("Você: aceitar")
    await expect(taker.locator("#votes")).to_contain_text("(parceiro): correr")
    # the one who voted to run changes their mind: now the team answers
    await runner.locator('#actions button[data-action="accept"]').click()
    await expect(asker.locator("#log")).to_contain_text("A dupla adversária aceitou")
    await screenshot(asker, "table-2v2")
    # a partner signal reaches the partner only
    partner, opponent = pages[(seat + 2) % 4], runner
    await asker.get_by_role("button", name="Tenho o zap").click()
    await expect(partner.locator("#signal-received")).to_have_text("Parceiro: “Tenho o zap”")
    # shown by the turn line too, in sight on a phone (the signals box is below the actions)
    await expect(partner.locator("#signal-seen")).to_have_text("Parceiro: “Tenho o zap”")
    await expect(partner.locator("#signal-seen")).to_be_in_viewport()
    # the opponent's own signal is answered on their socket after anything sent to it before:
    # the one above, had it gone to them too, would be on their page by then
    await opponent.get_by_role("button", name="Tenho o zap").click()
    await expect(opponent.locator("#signal-sent")).to_contain_text("Sinal enviado ao parceiro")
    await expect(opponent.locator("#signal-received")).to_have_text("")
    await expect(opponent.locator("#signal-seen")).to_be_hidden()

    # everybody raises when they may and accepts every request: the stake climbs, so the
    # match is decided in a hand or two instead of a dozen
    policies = [Policy(raise_when_possible=True) for _ in pages]

    async def player(page: Page, policy: Policy) -> None:
        while not await page.locator("#match-over").is_visible():
            if not await play_step(page, policy):
                await page.wait_for_timeout(80)

    await asyncio.wait_for(
        asyncio.gather(*(player(p, pol) for p, pol in zip(pages, policies, strict=True))),
        timeout=150,
    )
    texts = [await p.locator("#match-over-text").text_content() or "" for p in pages]
    assert all("Placar final" in text for text in texts)
    # partners see the same verdict, opponents the opposite one
    won = ["Vitória!" in text for text in texts]
    assert won[0] == won[2] and won[1] == won[3] and won[0] != won[1]
    assert all(("Derrota." in text) != w for text, w in zip(texts, won, strict=True))
    assert sum(p.raised for p in policies) >= 1
    # everybody asks for a rematch: a new match starts at the same table
    for page in pages:
        await page.get_by_role("button", name="Revanche").click()
    for page in pages:
        await expect(page.locator("#match-over")).to_be_hidden()
        await expect(page.locator("#scoreboard")).to_contain_text("Nós: 0")


# --- the pages without a browser --------------------------------------------------------------


async def test_pages_send_csp_and_refuse_foreign_redirects(
    make_app: Callable[..., web.Application],
    aiohttp_client: Callable[..., Awaitable[TestClient]],  # type: ignore[type-arg]
) -> None:
    # `make_app` first, as for the live server: the database outlives the client
    client = await aiohttp_client(make_app())
    response = await client.get("/")
    assert response.status == 200
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    token = await csrf(client)
    # a crafted `next` may not send a fresh session to another site
    response = await client.post(
        "/signup",
        data={"csrf": token, "name": "jo_5", "password": PASSWORD, "password2": PASSWORD,
              "next": "//evil.example/steal"},
        allow_redirects=False,
    )
    assert response.status == 303
    assert response.headers["Location"] == "/"
    # every answer, not only pages: no type sniffing, no address of the house sent elsewhere
    # (JSON, JSON errors, redirects and static files had neither)
    for answer in (response, await client.get("/api/session"), await client.get("/hands/x-1"),
                   await client.get("/static/js/common.js"), await client.get("/health")):
        assert answer.headers["X-Content-Type-Options"] == "nosniff", answer.url
        assert answer.headers["Referrer-Policy"] == "same-origin", answer.url
    # a form without its CSRF token changes nothing
    response = await client.post(
        "/login", data={"name": "jo_5", "password": PASSWORD}, allow_redirects=False
    )
    assert response.status == 403
    # a bad hand number is a clear 404 page, not a crash
    response = await client.get("/h/0123456789abcdef/zero")
    assert response.status == 404
    assert "O número da mão precisa ser um inteiro positivo." in await response.text()
    # past what a table can reach (the database keeps int4): said so, not "not positive"
    for number in ("2147483648", "99999999999999999999"):
        response = await client.get(f"/h/0123456789abcdef/{number}")
        assert response.status == 404
        assert "Não há mão com esse número: nenhuma mesa chega tão longe." in await response.text()
    for path in ("/t/not-a-table", "/h/ABCDEF0123456789/1"):
        response = await client.get(path)
        assert response.status == 404
        assert "Mesa não encontrada" in await response.text()
    # static files are served with their type
    response = await client.get("/static/js/fairness.js")
    assert response.status == 200
    assert response.content_type in ("text/javascript", "application/javascript")


async def test_a_tab_opened_after_the_commitment_checks_the_new_chains_anchor(
    live_server: LiveServer, browser: Browser
) -> None:
    page = await new_page(browser, live_server)
    await signup(page, live_server, "caio_tab")
    table_id = await create_table(page, "mineiro", 2, "training")
    await page.get_by_role("button", name="Começar contra os robôs").click()
    await expect(page.locator("#fair-chain")).to_have_attribute("data-state", "ok")
    # a second tab of hers opens hand 1 after its `commitment` event: the snapshot's hand
    # carries the signed anchor, checked there as the first tab checked the event's
    later = await page.context.new_page()
    await later.goto(live_server.url(f"/t/{table_id}"))
    await expect(later.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(later.locator("#fair-chain")).to_contain_text("nova cadeia a partir da mão 1")
    await expect(later.locator("#fair-chain")).to_have_attribute("data-state", "ok")
