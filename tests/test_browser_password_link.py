"""A forgotten password, in a real Chromium: the operator makes a link on the accounts page, the
player opens it on a phone, is told next to the field what is wrong, saves a new password, and
logs in with it from the page that said so (screens under `artifacts/`)."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from server.accounts import Role, set_role
from server.app import POOL
from tests.test_browser_tables import (  # noqa: F401 (fixtures, found by pytest by name)
    PHONE,
    LiveServer,
    browser_fixture,
    live_server_fixture,
    new_page,
    no_horizontal_scroll,
    screenshot,
    signup,
)

pytestmark = pytest.mark.timeout(180)
NEW = "quero retruco 84"


async def test_a_player_gets_the_account_back_through_an_operators_link(
    live_server: LiveServer, browser: Browser
) -> None:
    live = live_server
    player = await new_page(browser, live, PHONE)
    await signup(player, live, "bia_esquece")
    await player.context.clear_cookies()  # she forgot it, on another day
    judge = await new_page(browser, live)
    await signup(judge, live, "judge")
    assert await set_role(live.app[POOL], "judge", Role.OPERATOR)

    await player.goto(live.url("/"))
    await expect(player.locator("#login-forgot")).to_contain_text("Peça a um operador")
    await judge.goto(live.url("/operator/accounts"))
    await judge.get_by_role("link", name="Contas", exact=True).click()
    await expect(judge.get_by_role("link", name="Contas", exact=True)).to_have_attribute(
        "aria-current", "page")
    await judge.get_by_label("Nome da conta").fill("nobody_here")
    await judge.get_by_role("button", name="Fazer o link").click()
    await expect(judge.locator("#link-name-error")).to_have_text("Nenhuma conta tem esse nome.")
    await expect(judge.get_by_label("Nome da conta")).to_be_focused()
    await judge.get_by_label("Nome da conta").fill("bia_esquece")
    await judge.get_by_role("button", name="Fazer o link").click()
    await expect(judge.locator("#made-title")).to_be_focused()  # the link, read first
    link = await judge.get_by_label("Link", exact=True).input_value()
    assert link.startswith(live.url("/account/reset/")), link
    await expect(judge.locator("#links li").first).to_contain_text("bia_esquece")
    await screenshot(judge, "password-link-operator")

    await player.goto(link)
    await expect(player.locator("#reset-name")).to_have_text("bia_esquece")
    await player.get_by_label("Senha nova", exact=True).fill(NEW)
    await player.get_by_label("Repita a senha nova").fill(NEW + "!")
    await player.get_by_role("button", name="Guardar a senha nova").click()
    await expect(player.locator("#reset-new2-error")).to_have_text("As duas senhas não são iguais.")
    await expect(player.get_by_label("Repita a senha nova")).to_be_focused()
    assert (await player.title()).startswith("Erro:")
    await player.get_by_label("Senha nova", exact=True).fill(NEW)
    await player.get_by_label("Repita a senha nova").fill(NEW)
    await player.get_by_role("button", name="Guardar a senha nova").click()
    await expect(player.locator("#reset-done")).to_contain_text("Senha nova guardada")
    assert await no_horizontal_scroll(player)
    await screenshot(player, "password-link-done-phone")
    await expect(player.get_by_label("Nome")).to_have_value("bia_esquece")
    await player.get_by_label("Senha", exact=True).fill(NEW)
    await player.get_by_role("button", name="Entrar", exact=True).click()
    await expect(player.get_by_role("heading", name="Mesas", exact=True)).to_be_visible()
    await player.goto(live.url("/account"))
    await expect(player.locator("#reset-link")).to_contain_text("pelo operador judge")
    # the link was spent
    await player.goto(link)
    await expect(player.locator("#reset-refused")).to_contain_text("já foi usado")
