"""The sign-up and password-change forms (and `POST /api/register`) say every field's problem at
once, each under its field, and what that costs: no hash, no sign-up counted, nothing changed."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from server import accounts
from server.app import POOL
from server.clock import VirtualClock
from tests.conftest import AppFactory, csrf, signup

Client = TestClient  # type: ignore[type-arg]
PASSWORD = "correct horse 42"


def alerts(page: str) -> dict[str, str]:
    """The errors shown, by the id of the element that shows them."""
    return {ident: html.unescape(re.sub(r"\s+", " ", text).strip()) for ident, text in re.findall(
        r'<p class="error" id="([\w-]+)" role="alert">(.*?)</p>', page, re.S)}


def field(page: str, ident: str) -> str:
    """The opening tag of the input `ident`."""
    found = re.search(rf'<input id="{ident}"[^>]*>', page, re.S)
    assert found, ident
    return re.sub(r"\s+", " ", found.group(0))


async def post_signup(client: Client, **fields: str) -> tuple[int, str]:
    token = await csrf(client)
    resp = await client.post("/signup", data={"csrf": token, **fields},
                             headers={"Accept": "text/html"}, allow_redirects=False)
    return resp.status, await resp.text()


async def test_the_signup_form_shows_every_problem_at_once(client: Client) -> None:
    # the form said only the first problem (the name, else the password, else the repeat): a
    # player fixed one field per submit
    status, page = await post_signup(client, name="a b", password="abc", password2="abd")
    assert status == 400
    assert alerts(page) == {
        "signup-name-error": "O nome precisa ter de 3 a 24 letras sem acento, números, '.',"
                             " '_' ou '-' (sem espaços).",
        "signup-password-error": "A senha precisa ter pelo menos 8 caracteres.",
        "signup-password2-error": "As duas senhas não são iguais.",
    }
    for ident in ("signup-name", "signup-password", "signup-password2"):
        tag = field(page, ident)
        assert 'aria-invalid="true"' in tag, tag
        assert f'aria-describedby="{ident}-hint {ident}-error"' in tag, tag
    # the title says it first (a screen reader reads it on arrival); a page unrefused does not
    assert "<title>Erro: Entrar · Barajamos</title>" in page
    assert "<title>Entrar · Barajamos</title>" in await (await client.get("/")).text()
    # a field without a problem is not marked
    status, page = await post_signup(client, name="a b", password="abc", password2="abc")
    assert set(alerts(page)) == {"signup-name-error", "signup-password-error"}
    assert 'aria-invalid' not in field(page, "signup-password2")
    assert await client.app[POOL].fetchval("SELECT count(*) FROM users") == 0


async def test_a_taken_name_is_said_with_the_rest_before_any_hash(
    make_app: AppFactory, vclock: VirtualClock, aiohttp_client: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "name taken" came only after the Argon2id hash, and so after every other problem
    client = await aiohttp_client(make_app(clock=vclock, registrations_per_hour=2))
    await signup(client, "ana")
    client.session.cookie_jar.clear()
    hashed: list[str] = []
    hash_password = accounts.hash_password

    async def counting(password: str, cost: accounts.PasswordCost) -> str:
        hashed.append(password)
        return await hash_password(password, cost)

    monkeypatch.setattr(accounts, "hash_password", counting)
    status, page = await post_signup(client, name="ANA", password="ana12345",
                                     password2="ana12345")
    assert status == 400  # the first problem's, as `/api/register` answers (weak_password)
    assert alerts(page) == {
        "signup-name-error": "Esse nome já está em uso: escolha outro.",
        "signup-password-error": "Senha fácil demais: evite senhas comuns, caracteres repetidos"
                                 " e o seu próprio nome.",
    }
    status, page = await post_signup(client, name="ana", password=PASSWORD, password2=PASSWORD)
    assert status == 409 and list(alerts(page)) == ["signup-name-error"]
    # neither cost a hash, nor counted against the address's sign-ups (only a hash does)
    pool = client.app[POOL]
    assert hashed == []
    assert await pool.fetchval("SELECT count(*) FROM registration_attempts") == 1
    status, _ = await post_signup(client, name="bia", password=PASSWORD, password2=PASSWORD)
    assert status == 303 and hashed == [PASSWORD]
    assert await pool.fetchval("SELECT count(*) FROM registration_attempts") == 2


async def test_a_name_taken_meanwhile_is_still_refused(
    client: Client, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # two sign-ups for one name at once both pass the look-up: the unique index decides
    await signup(client, "ana")
    client.session.cookie_jar.clear()

    async def nothing_wrong(pool: object, name: object, password: object) -> list[object]:
        return []

    monkeypatch.setattr(accounts, "registration_problems", nothing_wrong)
    token = await csrf(client)
    resp = await client.post("/api/register", json={"name": "Ana", "password": PASSWORD},
                             headers={"X-CSRF-Token": token})
    assert (resp.status, (await resp.json())["error"]) == (409, "name_taken")
    status, page = await post_signup(client, name="ANA", password=PASSWORD, password2=PASSWORD)
    assert status == 409 and list(alerts(page)) == ["signup-name-error"]


async def test_register_keeps_one_error_and_lists_every_problem(client: Client) -> None:
    await signup(client, "ana")
    client.session.cookie_jar.clear()
    token = await csrf(client)

    async def register(name: str, password: str) -> tuple[int, dict[str, Any]]:
        resp = await client.post("/api/register", json={"name": name, "password": password},
                                 headers={"X-CSRF-Token": token})
        return resp.status, await resp.json()

    status, body = await register("a b", "abc")
    assert (status, body["error"]) == (400, "bad_name")  # the documented code, as before
    assert [p["error"] for p in body["problems"]] == ["bad_name", "weak_password"]
    assert body["problems"][0]["message"] == body["message"]
    status, body = await register("ana", "abc")
    assert (status, body["error"]) == (400, "weak_password")
    assert [p["error"] for p in body["problems"]] == ["weak_password", "name_taken"]
    status, body = await register("ANA", PASSWORD)
    assert (status, body["error"]) == (409, "name_taken")
    assert [p["error"] for p in body["problems"]] == ["name_taken"]
    # refusals of other kinds carry no list
    resp = await client.post("/api/login", json={"name": "ana", "password": "wrong pass 1"},
                             headers={"X-CSRF-Token": token})
    assert "problems" not in await resp.json()


async def test_the_password_form_shows_every_problem_at_once(client: Client) -> None:
    # the form said only that the two new passwords differ; the weak one and the wrong current
    # one came at the next submits
    token = await signup(client, "ana")

    async def change(**fields: str) -> tuple[int, str]:
        resp = await client.post("/account/password", data={"csrf": token, **fields},
                                 headers={"Accept": "text/html"})
        return resp.status, await resp.text()

    status, page = await change(current="nope nope 1", new="abc", new2="abd")
    assert status == 403
    assert alerts(page) == {
        "password-current-error": "Essa não é a sua senha atual.",
        "password-new-error": "A senha precisa ter pelo menos 8 caracteres.",
        "password-new2-error": "As duas senhas novas não são iguais.",
    }
    for ident in ("password-current", "password-new", "password-new2"):
        assert 'aria-invalid="true"' in field(page, ident), ident
    # the right current password and a new one that is the same, repeated wrong
    status, page = await change(current=PASSWORD, new=PASSWORD, new2="other pass 77")
    assert status == 400
    assert alerts(page) == {
        "password-new-error": "A nova senha é a mesma de agora: escolha outra.",
        "password-new2-error": "As duas senhas novas não são iguais.",
    }
    assert 'aria-invalid' not in field(page, "password-current")
    # nothing changed
    pool = client.app[POOL]
    user = await accounts.authenticate(pool, "ana", PASSWORD, "10.9.9.9", accounts.MINIMUM)
    assert user.name == "ana"


async def test_the_login_form_lets_the_owner_in_from_a_browser_they_used_while_locked(
        client: Client) -> None:
    # strangers' wrong guesses (fifty, from ten addresses) locked the name for every browser
    pool = client.app[POOL]
    status, _ = await post_signup(client, name="gil_9", password=PASSWORD, password2=PASSWORD)
    assert status == 303
    kept = {c.key: c.value for c in client.session.cookie_jar}[accounts.DEVICE_COOKIE]
    await pool.executemany(
        "INSERT INTO login_attempts (name_lower, remote, succeeded) VALUES ($1, $2, false)",
        [("gil_9", f"10.0.1.{n % 10}") for n in range(accounts.MAX_FAILURES_PER_NAME)])

    async def login_form() -> int:
        token = await csrf(client)
        resp = await client.post("/login", data={"csrf": token, "name": "gil_9",
                                                 "password": PASSWORD},
                                 headers={"Accept": "text/html"}, allow_redirects=False)
        return resp.status

    client.session.cookie_jar.clear()  # another browser: the name's limit holds there
    assert await login_form() == 429
    client.session.cookie_jar.update_cookies({accounts.DEVICE_COOKIE: kept})
    assert await login_form() == 303


async def test_the_login_form_says_whose_mistakes_an_address_limit_counts(
        client: Client) -> None:
    # 25 players of a lan house behind one address: 30 wrong passwords among them, and the next
    # one, right password and all, was told "Muitas tentativas erradas: espere alguns minutos"
    pool = client.app[POOL]
    status, _ = await post_signup(client, name="lan_01", password=PASSWORD, password2=PASSWORD)
    assert status == 303
    client.session.cookie_jar.clear()  # a browser the house does not know
    remote = "127.0.0.1"  # the test client's address
    await pool.executemany(
        "INSERT INTO login_attempts (name_lower, remote, succeeded) VALUES ($1, $2, false)",
        [(f"lan_{n:02d}", remote) for n in range(2, 2 + accounts.MAX_FAILURES_PER_REMOTE)])
    token = await csrf(client)
    resp = await client.post("/login", data={"csrf": token, "name": "lan_01",
                                             "password": PASSWORD},
                             headers={"Accept": "text/html"}, allow_redirects=False)
    assert resp.status == 429 and resp.headers["Retry-After"] == "900"
    said = " ".join(alerts(await resp.text()).values())
    assert said.startswith("Muitas tentativas erradas a partir desta rede nos últimos 15"
                           " minutos: contam as de todos que usam o mesmo endereço")
    assert "Tente de novo em até 15 minutos" in said
    # the API says it too, in its own words
    resp = await client.post("/api/login", json={"name": "lan_01", "password": PASSWORD},
                             headers={"X-CSRF-Token": await csrf(client)})
    body = await resp.json()
    assert (resp.status, body["error"]) == (429, "rate_limited")
    assert "from this network address" in body["message"]


async def test_an_invitation_opened_signed_out_says_it_is_one(client: Client) -> None:
    """A friend's invite link, opened signed out, said only "Entre ou crie uma conta para ver
    esta página", nothing of an invitation (a new player's review). It says so now, looks up
    nothing of the table for a visitor, and a sign-up or log-in comes back to the link."""
    path = "/t/0123456789abcdef?invite=K7QX-92MD"
    resp = await client.get(path)
    page = await resp.text()
    assert resp.status == 401
    assert "Você recebeu um convite para uma mesa de truco: entre ou crie uma conta" in page
    assert 'name="next" value="/t/0123456789abcdef?invite=K7QX-92MD"' in page
    plain = await (await client.get("/t/0123456789abcdef")).text()
    assert "Entre ou crie uma conta para ver esta página." in plain and "convite" not in plain
    token = await csrf(client)
    resp = await client.post("/signup", data={
        "csrf": token, "name": "convidada", "password": PASSWORD, "password2": PASSWORD,
        "next": path}, headers={"Accept": "text/html"}, allow_redirects=False)
    assert (resp.status, resp.headers["Location"]) == (303, path)
