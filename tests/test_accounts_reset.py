"""A forgotten password: an operator (the accounts page, players' accounts only) or the house's
machine (`barajamos password-link`, any account) makes a one-time link; opening it, the owner
chooses a new password, every session of the account ends with its sockets, and the link is
spent. A link is good once, for 24 hours, and only the newest of its account; every refusal
changes nothing. Only the token's hash is kept; the account's page says its newest link."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp import WSCloseCode, WSMsgType

from server import accounts, password_links
from server.accounts import MINIMUM, AccountError, Role, register, set_role
from server.app import POOL
from server.clock import VirtualClock
from server.config import from_env
from server.serve import _password_link
from tests.conftest import AppFactory
from tests.test_accounts_password import alerts, can_log_in, signed_in
from tests.test_live_helpers import PASSWORD, Live, Player, create_table, start_live

NEW = "pampas tango 97"
LINK = re.compile(r'value="(http://[^"]+(/account/reset/[A-Za-z0-9_-]{43}))"')


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def operator(live: Live, name: str = "olga") -> Player:
    person = await Player(live.base, name).signup()
    assert await set_role(live.app[POOL], name, Role.OPERATOR)
    return person


async def page(player: Player, path: str) -> tuple[int, str]:
    async with player.session.get(player.base / path.lstrip("/"),
                                  allow_redirects=False) as resp:
        return resp.status, await resp.text()


async def submit(player: Player, path: str, fields: dict[str, str]) -> tuple[int, str]:
    async with player.session.post(player.base / path.lstrip("/"),
                                   data={"csrf": player.csrf, **fields},
                                   headers={"Accept": "text/html"}) as resp:
        return resp.status, await resp.text()


async def make_link(olga: Player, name: str) -> str:
    """The path of a new link for `name`, as the operators' page shows it."""
    status, text = await submit(olga, "/operator/accounts/link", {"name": name})
    assert status == 200, text
    found = LINK.search(text)
    assert found is not None, text
    return found.group(2)


async def anonymous(live: Live) -> Player:
    """A browser signed in to nobody, with its CSRF cookie (from a page's form)."""
    person = Player(live.base, "nobody")
    async with person.session.get(person.base / "api/session") as resp:
        person.csrf = (await resp.json())["csrf"]
    return person


async def test_an_operators_link_sets_a_new_password_once(live: Live) -> None:
    ana = await Player(live.base, "ana").signup()
    there = await Player(live.base, "ana").login()  # another browser of hers, at a table
    olga = await operator(live)
    stranger = await anonymous(live)
    try:
        tid = (await create_table(ana, "paulista", 2, "private"))["id"]
        socket = await there.ws(tid)
        status, text = await page(olga, "/operator/accounts")
        assert status == 200 and "Nenhum link feito ainda." in text
        path = await make_link(olga, "ANA")  # any case
        token = path.rsplit("/", 1)[1]
        pool = live.app[POOL]
        # only the token's hash is kept
        row = await pool.fetchrow("SELECT * FROM password_links")
        assert bytes(row["token_hash"]) == hashlib.sha256(token.encode()).digest()
        assert token not in repr(dict(row))
        status, text = await page(olga, "/operator/accounts")
        assert re.search(r'data-state="good"><strong>ana</strong> · feito .* por olga', text)
        # whoever opens it chooses ana's password: refusals first, each changing nothing
        status, text = await page(stranger, path)
        assert status == 200 and 'id="reset-name">ana<' in text
        status, text = await submit(stranger, path, {"new": NEW, "new2": NEW + "x"})
        assert status == 400 and alerts(text) == ["As duas senhas não são iguais."], text[-3000:]
        status, text = await submit(stranger, path, {"new": "ana12345", "new2": "ana12345"})
        assert status == 400 and alerts(text) == [
            "Senha fácil demais: evite senhas comuns, caracteres repetidos e o seu próprio nome."]
        assert text.startswith("<!doctype html>") and "<title>Erro: Senha nova" in text
        assert await can_log_in(live, "ana", PASSWORD) and await signed_in(there)
        status, text = await submit(stranger, path, {"new": NEW, "new2": NEW})
        assert status == 200 and "Senha nova guardada para a conta <strong>ana</strong>." in text
        assert "As 2 sessões que estavam abertas com ela foram encerradas." in text
        assert 'id="login-name" name="name" autocomplete="username" required value="ana"' in text
        # every session of hers ended, the table's socket closed as at a logout
        assert not await signed_in(ana) and not await signed_in(there)
        msg = await socket.receive(timeout=5)
        assert (msg.type, msg.data, msg.extra) == (
            WSMsgType.CLOSE, WSCloseCode.POLICY_VIOLATION, "signed out")
        assert await can_log_in(live, "ana", NEW) and not await can_log_in(live, "ana", PASSWORD)
        # once only
        for status, text in (await page(stranger, path),
                             await submit(stranger, path, {"new": "other pass 12",
                                                           "new2": "other pass 12"})):
            assert status == 410 and "Este link já foi usado" in text
        assert await can_log_in(live, "ana", NEW)
        # her own page says it, and the operators' list
        await ana.close()
        ana = await anonymous(live)
        status, _ = await ana.post("/api/login", {"name": "ana", "password": NEW})
        assert status == 200
        status, text = await page(ana, "/account")
        assert status == 200 and "pelo operador <strong>olga</strong>" in text
        assert re.search(r"usado <time", text)
        status, text = await page(olga, "/operator/accounts")
        assert 'data-state="used"' in text and "usado <time" in text
    finally:
        for person in (ana, there, olga, stranger):
            await person.close()


async def test_the_browser_signed_in_to_the_account_is_signed_out(live: Live) -> None:
    ana = await Player(live.base, "ana").signup()
    olga = await operator(live)
    try:
        path = await make_link(olga, "ana")
        status, text = await page(ana, path)  # she still has a session, not the password
        assert status == 200
        async with ana.session.get(ana.base / "api/session") as resp:
            ana.csrf = (await resp.json())["csrf"]
        status, text = await submit(ana, path, {"new": NEW, "new2": NEW})
        assert status == 200 and "Senha nova guardada" in text
        # the page is a signed-out one: no name in the header, and the cookie is gone
        assert 'id="me"' not in text
        assert not await signed_in(ana)
        assert ana.session.cookie_jar.filter_cookies(ana.base).get("barajamos_session") is None
    finally:
        await ana.close()
        await olga.close()


async def test_a_link_is_good_only_while_it_is_the_newest_and_not_expired(live: Live) -> None:
    await (await Player(live.base, "ana").signup()).close()
    olga = await operator(live)
    stranger = await anonymous(live)
    try:
        first = await make_link(olga, "ana")
        second = await make_link(olga, "ana")  # replaces the first
        status, text = await page(stranger, first)
        assert status == 410
        assert "Este link não vale mais: foi feito um mais novo para esta conta" in text
        status, text = await submit(stranger, first, {"new": NEW, "new2": NEW})
        assert status == 410 and "Este link não vale mais" in text
        await live.app[POOL].execute(
            "UPDATE password_links SET expires_at = now() - interval '1 second'")
        status, text = await submit(stranger, second, {"new": NEW, "new2": NEW})
        assert status == 410 and "Este link venceu (ele vale 24 horas)" in text
        for path in ("/account/reset/" + "A" * 43, "/account/reset/short",
                     "/account/reset/" + "!" * 43):
            status, text = await page(stranger, path)
            assert status == 404 and "não é um link de senha desta casa" in text
        status, text = await submit(stranger, "/account/reset/" + "A" * 43,
                                    {"new": NEW, "new2": NEW})
        assert status == 404
        assert await can_log_in(live, "ana", PASSWORD)
        status, text = await page(olga, "/operator/accounts")
        assert text.count('data-state="replaced"') == 1 and text.count(
            'data-state="expired"') == 1
    finally:
        await olga.close()
        await stranger.close()


async def test_only_operators_make_links_and_never_for_an_operator(live: Live) -> None:
    bia = await Player(live.base, "bia").signup()
    olga = await operator(live)
    otto = await operator(live, "otto")
    stranger = await anonymous(live)
    pool = live.app[POOL]
    try:
        status, text = await page(stranger, "/operator/accounts")
        assert status == 401 and "Entre ou crie uma conta" in text
        status, text = await page(bia, "/operator/accounts")
        assert status == 403 and "Somente operadores" in text
        status, text = await submit(bia, "/operator/accounts/link", {"name": "bia"})
        assert status == 403
        status, text = await submit(olga, "/operator/accounts/link", {"name": "otto"})
        assert status == 403 and alerts(text) == [
            "Esta é uma conta de operador: a senha dela só é refeita na máquina da casa, com o"
            " comando barajamos password-link."]
        status, text = await submit(olga, "/operator/accounts/link", {"name": "nobody"})
        assert status == 404 and alerts(text) == ["Nenhuma conta tem esse nome."]
        assert 'value="nobody"' in text and 'aria-invalid="true"' in text
        status, text = await submit(olga, "/operator/accounts/link", {"name": "  "})
        assert status == 404 and alerts(text) == ["Dê o nome da conta."]
        token, olga.csrf = olga.csrf, "forged"
        status, text = await submit(olga, "/operator/accounts/link", {"name": "bia"})
        assert status == 403
        olga.csrf = token
        assert await pool.fetchval("SELECT count(*) FROM password_links") == 0
        # a refused form's address, opened again, leads to its page
        status, _ = await page(olga, "/operator/accounts/link")
        assert status == 303
    finally:
        for person in (bia, olga, otto, stranger):
            await person.close()


async def test_the_login_form_says_what_to_do_about_a_forgotten_password(live: Live) -> None:
    stranger = await anonymous(live)
    try:
        status, text = await page(stranger, "/")
        assert status == 200 and "Esqueceu a senha? Peça a um operador desta casa" in text
    finally:
        await stranger.close()


async def test_the_command_makes_a_link_for_any_account(
        database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        await register(pool, "olga", "sturdy pass 9", MINIMUM)
        await set_role(pool, "olga", Role.OPERATOR)
        config = from_env({}, data_dir=tmp_path, database_url=database_url)
        assert await _password_link(config, "OLGA", "https://truco.example") == 0
        out, err = capsys.readouterr()
        found = re.fullmatch(r"olga: https://truco\.example/account/reset/([A-Za-z0-9_-]{43})\n",
                             out)
        assert found is not None, out
        assert "good once, until " in err and "hand it only to olga" in err
        digest = hashlib.sha256(found.group(1).encode()).digest()
        row = await pool.fetchrow("SELECT made_by, used_at FROM password_links"
                                  " WHERE token_hash = $1", digest)
        assert row is not None and row["made_by"] is None and row["used_at"] is None
        assert await _password_link(config, "nobody", "https://truco.example") == 1
        assert "No account is named 'nobody'." in capsys.readouterr().err
    finally:
        await pool.close()


async def test_the_token_is_never_written_to_the_log(
        live: Live, caplog: pytest.LogCaptureFixture) -> None:
    # a privacy review: every request's log line held its path, the link's token with it (good
    # for a day: whoever reads the logs could take the account)
    await (await Player(live.base, "ana").signup()).close()
    olga = await operator(live)
    stranger = await anonymous(live)
    try:
        with caplog.at_level("INFO"):
            path = await make_link(olga, "ana")
            await page(stranger, path)
            await submit(stranger, path, {"new": NEW, "new2": "x"})
            await submit(stranger, path, {"new": NEW, "new2": NEW})
            await page(stranger, path + "/")  # no route: a 404, its path still a secret
        token = path.rsplit("/", 1)[1]
        lines = [r for r in caplog.records if r.name.startswith("barajamos")]
        assert all(token not in repr(vars(r)) for r in lines)
        logged = [vars(r).get("path") for r in lines if r.getMessage() == "request"]
        assert logged.count("/account/reset/{token}") == 4, logged
    finally:
        await olga.close()
        await stranger.close()


async def test_a_link_is_spent_when_its_account_becomes_an_operators(live: Live) -> None:
    # a review: an operator kept a link made for a player, who was made an operator the next
    # hour; the link then gave an operator's account to another operator
    await (await Player(live.base, "bia").signup()).close()
    olga = await operator(live)
    stranger = await anonymous(live)
    try:
        path = await make_link(olga, "bia")
        assert await set_role(live.app[POOL], "bia", Role.OPERATOR)
        status, text = await submit(stranger, path, {"new": NEW, "new2": NEW})
        assert status == 410 and "Este link não vale mais" in text
        assert await can_log_in(live, "bia", PASSWORD)
        # a link of an erased account is never made
        await (await Player(live.base, "cleo").signup()).close()
        await live.app[POOL].execute(
            "UPDATE users SET name = 'apagado-' || id WHERE name = 'cleo'")
        cleo = await live.app[POOL].fetchval("SELECT name FROM users WHERE name LIKE 'apagado-%'")
        status, text = await submit(olga, "/operator/accounts/link", {"name": cleo})
        assert status == 410 and alerts(text) == [
            "Esta conta foi apagada a pedido do dono: ninguém entra mais nela."]
    finally:
        await olga.close()
        await stranger.close()


async def test_a_link_used_while_the_password_is_hashed_is_refused(
        database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the hash takes a while: a second tab may spend the link meanwhile; the link is checked
    # again in the commit, and the second password is not set
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        await register(pool, "ana", PASSWORD, MINIMUM)
        token, link = await password_links.make(pool, "ana", None)

        async def hashed_while_the_other_tab_uses_it(password: str, cost: Any) -> str:
            await pool.execute("UPDATE password_links SET used_at = now() WHERE id = $1",
                               link.id)
            return await accounts.hash_password(password, cost)

        monkeypatch.setattr(password_links, "hash_password", hashed_while_the_other_tab_uses_it)
        before = await pool.fetchval("SELECT password_hash FROM users WHERE name = 'ana'")
        with pytest.raises(AccountError) as refused:
            await password_links.use(pool, token, NEW, MINIMUM)
        assert refused.value.code == "link_used"
        assert await pool.fetchval(
            "SELECT password_hash FROM users WHERE name = 'ana'") == before
    finally:
        await pool.close()


async def test_a_link_is_good_for_24_hours(database_url: str) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        await register(pool, "ana", PASSWORD, MINIMUM)
        await password_links.make(pool, "ana", None)
        row = await pool.fetchrow("SELECT made_at, expires_at FROM password_links")
        assert row is not None and row["expires_at"] - row["made_at"] == timedelta(hours=24)
    finally:
        await pool.close()
