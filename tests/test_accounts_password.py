"""Changing a password: the current one proves it (under the login limits), the new one is
checked as at sign-up, every other session of the account ends with its sockets, this one goes
on; every refusal changes nothing. Over the JSON API and the /account form."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import WSCloseCode, WSMsgType
from yarl import URL

from server.clock import VirtualClock
from tests.conftest import AppFactory
from tests.test_live_helpers import PASSWORD, Live, Player, create_table, start_live

NEW = "pampas tango 97"


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def can_log_in(live: Live, name: str, password: str) -> bool:
    probe = Player(live.base, name)
    try:
        async with probe.session.get(probe.base / "api/session") as resp:
            probe.csrf = (await resp.json())["csrf"]
        status, _ = await probe.post("/api/login", {"name": name, "password": password})
        if status == 200:  # leaves no session behind (a password change would count it)
            assert (await probe.post("/api/logout"))[0] == 200
        return status == 200
    finally:
        await probe.close()


async def signed_in(player: Player) -> bool:
    status, body = await player.get("/api/session")
    assert status == 200
    return body["user"] is not None


async def test_a_new_password_ends_the_other_sessions_and_their_sockets(live: Live) -> None:
    here = await Player(live.base, "ana").signup()
    there = await Player(live.base, "ana").login()  # another browser of hers
    third = await Player(live.base, "ana").login()
    bia = await Player(live.base, "bia").signup()
    try:
        tid = (await create_table(here, "paulista", 2, "private"))["id"]
        mine = await here.ws(tid)
        theirs = await there.ws(tid)
        status, body = await here.post("/api/me/password", {"current": PASSWORD, "new": NEW})
        assert (status, body) == (200, {"ended_sessions": 2})
        # the other browsers are signed out, their table socket closed as at a logout
        assert not await signed_in(there) and not await signed_in(third)
        msg = await theirs.receive(timeout=5)
        assert (msg.type, msg.data, msg.extra) == (
            WSMsgType.CLOSE, WSCloseCode.POLICY_VIOLATION, "signed out")
        # this one goes on, socket and all
        assert await signed_in(here) and not mine.closed
        await mine.send_json({"type": "hello", "last_seq": 0})
        assert (await mine.receive_json(timeout=5))["type"] == "welcome"
        assert await can_log_in(live, "ana", NEW) and not await can_log_in(live, "ana", PASSWORD)
        # another player's sessions are untouched
        assert await signed_in(bia)
        await mine.close()
    finally:
        for player in (here, there, third, bia):
            await player.close()


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"current": "wrong horse 42", "new": NEW}, 403, "wrong_password"),
    ({"new": NEW}, 403, "wrong_password"),
    ({"current": ["x"], "new": NEW}, 403, "wrong_password"),
    ({"current": PASSWORD, "new": "short"}, 400, "weak_password"),
    ({"current": PASSWORD, "new": "password123"}, 400, "weak_password"),
    ({"current": PASSWORD, "new": "ana-is-great-99"}, 400, "weak_password"),
    ({"current": PASSWORD, "new": 12345678}, 400, "weak_password"),
    ({"current": PASSWORD, "new": PASSWORD}, 400, "same_password"),
])
async def test_a_refused_change_changes_nothing(live: Live, body: dict[str, Any], status: int,
                                                code: str) -> None:
    here = await Player(live.base, "ana").signup()
    there = await Player(live.base, "ana").login()
    try:
        got = await here.post("/api/me/password", body)
        assert (got[0], got[1]["error"]) == (status, code)
        assert await signed_in(here) and await signed_in(there)
        assert await can_log_in(live, "ana", PASSWORD)
    finally:
        await here.close()
        await there.close()


async def test_guessing_the_current_password_is_limited_as_logins_are(live: Live) -> None:
    here = await Player(live.base, "ana").signup()
    try:
        for _ in range(5):
            status, body = await here.post("/api/me/password",
                                           {"current": "guess horse 1", "new": NEW})
            assert (status, body["error"]) == (403, "wrong_password")
        status, body = await here.post("/api/me/password", {"current": PASSWORD, "new": NEW})
        assert (status, body["error"]) == (429, "rate_limited")
        assert await can_log_in(live, "ana", PASSWORD) is False  # the same limit holds a login
    finally:
        await here.close()


async def test_no_change_without_a_session_or_the_csrf_token(live: Live) -> None:
    here = await Player(live.base, "ana").signup()
    stranger = Player(live.base, "nobody")
    try:
        async with stranger.session.get(stranger.base / "api/session") as resp:
            stranger.csrf = (await resp.json())["csrf"]
        status, body = await stranger.post("/api/me/password", {"current": PASSWORD, "new": NEW})
        assert (status, body["error"]) == (401, "login_required")
        token, here.csrf = here.csrf, "forged"
        status, body = await here.post("/api/me/password", {"current": PASSWORD, "new": NEW})
        assert (status, body["error"]) == (403, "csrf_failed")
        here.csrf = token
        assert await can_log_in(live, "ana", PASSWORD)
    finally:
        await here.close()
        await stranger.close()


async def form(player: Player, fields: dict[str, str]) -> tuple[int, str]:
    async with player.session.post(player.base / "account/password",
                                   data={"csrf": player.csrf, **fields},
                                   headers={"Accept": "text/html"}) as resp:
        return resp.status, await resp.text()


def alerts(page: str) -> list[str]:
    return [re.sub(r"\s+", " ", text).strip()
            for text in re.findall(r'role="alert">(.*?)</p>', page, re.S)]


async def test_the_account_page_changes_the_password(live: Live) -> None:
    here = await Player(live.base, "ana").signup()
    there = await Player(live.base, "ana").login()
    try:
        async with here.session.get(here.base / "account") as resp:
            page = await resp.text()
        assert resp.status == 200 and 'action="/account/password"' in page
        assert 'href="/account"' in page  # the name in the header leads here
        status, page = await form(here, {"current": PASSWORD, "new": NEW, "new2": NEW + "x"})
        assert status == 400 and alerts(page) == ["As duas senhas novas não são iguais."]
        status, page = await form(here, {"current": "nope nope 1", "new": NEW, "new2": NEW})
        assert status == 403 and alerts(page) == ["Essa não é a sua senha atual."]
        assert 'id="password-current" name="current"' in page and 'aria-invalid="true"' in page
        status, page = await form(here, {"current": PASSWORD, "new": "abc", "new2": "abc"})
        assert status == 400 and alerts(page) == ["A senha precisa ter pelo menos 8 caracteres."]
        status, page = await form(here, {"current": PASSWORD, "new": PASSWORD,
                                         "new2": PASSWORD})
        assert status == 400 and alerts(page) == [
            "A nova senha é a mesma de agora: escolha outra."]
        assert await can_log_in(live, "ana", PASSWORD) and await signed_in(there)
        async with here.session.post(here.base / "account/password", allow_redirects=False,
                                     data={"csrf": here.csrf, "current": PASSWORD, "new": NEW,
                                           "new2": NEW}) as resp:
            # the page that says so is another address: a reload posts nothing again
            assert resp.status == 303
            assert resp.headers["Location"].startswith("/account?feito=senha&outras=1&sinal=")
        async with here.session.get(here.base.join(URL(resp.headers["Location"]))) as resp:
            page = await resp.text()
        assert resp.status == 200 and "Senha trocada." in page
        assert "A outra sessão aberta com a sua conta" in page
        assert not await signed_in(there) and await signed_in(here)
        assert await can_log_in(live, "ana", NEW)
    finally:
        await here.close()
        await there.close()


async def test_the_account_page_asks_for_a_login(live: Live) -> None:
    stranger = Player(live.base, "nobody")
    try:
        async with stranger.session.get(stranger.base / "account") as resp:
            page = await resp.text()
        assert resp.status == 401 and "Entre ou crie uma conta" in page
    finally:
        await stranger.close()
