"""Accounts over HTTP against a real PostgreSQL: register, log in/out, CSRF, rate limit."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from server import accounts
from server.app import POOL
from tests.conftest import csrf, signup

Client = TestClient  # type: ignore[type-arg]


async def test_health_and_metrics(client: Client) -> None:
    resp = await client.get("/health")
    assert resp.status == 200
    assert (await resp.json())["status"] == "ok"
    resp = await client.get("/metrics")
    assert resp.status == 200
    text = await resp.text()
    assert "barajamos_live_tables" in text and "barajamos_write_batch_size" in text


async def test_register_login_logout(client: Client) -> None:
    token = await signup(client, "ana")
    me = await (await client.get("/api/session")).json()
    assert me["user"]["name"] == "ana" and me["user"]["role"] == "player"
    resp = await client.post("/api/logout", headers={"X-CSRF-Token": token})
    assert resp.status == 200
    assert (await (await client.get("/api/session")).json())["user"] is None
    resp = await client.post("/api/login", json={"name": "ANA", "password": "correct horse 42"},
                             headers={"X-CSRF-Token": token})
    assert resp.status == 200
    assert (await resp.json())["user"]["name"] == "ana"
    cookie = resp.cookies[accounts.SESSION_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"


async def test_form_posts_work_with_the_form_token(client: Client) -> None:
    token = await csrf(client)
    resp = await client.post("/api/register",
                             data={"name": "bia", "password": "lua cheia 77", "csrf": token})
    assert resp.status == 201


async def test_taken_names_are_case_insensitive(client: Client) -> None:
    await signup(client, "Carlos")
    token = await csrf(client)
    resp = await client.post("/api/register", json={"name": "carlos", "password": "x9y8z7w6v5"},
                             headers={"X-CSRF-Token": token})
    assert resp.status == 409
    assert (await resp.json())["error"] == "name_taken"


async def test_weak_passwords_and_bad_names_are_refused(client: Client) -> None:
    token = await csrf(client)
    for name, password, code in [
        ("dora", "short", "weak_password"),
        ("dora", "password123", "weak_password"),
        ("dora", "aaaaaaaaaaaa", "weak_password"),
        ("dora", "dora-is-great", "weak_password"),
        ("a", "fine pass 123", "bad_name"),
        ("bad name", "fine pass 123", "bad_name"),
        (7, "fine pass 123", "bad_name"),
    ]:
        resp = await client.post("/api/register", json={"name": name, "password": password},
                                 headers={"X-CSRF-Token": token})
        assert resp.status == 400, (name, password)
        assert (await resp.json())["error"] == code
    pool = client.app[POOL]
    assert await pool.fetchval("SELECT count(*) FROM users") == 0


async def test_csrf_is_required_and_checked(client: Client) -> None:
    await csrf(client)
    resp = await client.post("/api/register", json={"name": "eva", "password": "good one 123"})
    assert resp.status == 403 and (await resp.json())["error"] == "csrf_failed"
    resp = await client.post("/api/register", json={"name": "eva", "password": "good one 123"},
                             headers={"X-CSRF-Token": "0" * 64})
    assert resp.status == 403
    assert await client.app[POOL].fetchval("SELECT count(*) FROM users") == 0


async def test_cross_origin_posts_are_refused(client: Client) -> None:
    token = await csrf(client)
    resp = await client.post("/api/register", json={"name": "fay", "password": "good one 123"},
                             headers={"X-CSRF-Token": token, "Origin": "https://evil.example"})
    assert resp.status == 403 and (await resp.json())["error"] == "bad_origin"


async def test_bad_credentials_then_rate_limit(client: Client) -> None:
    token = await signup(client, "gil")
    await client.post("/api/logout", headers={"X-CSRF-Token": token})
    for _ in range(accounts.MAX_FAILURES_PER_NAME):
        resp = await client.post("/api/login", json={"name": "gil", "password": "wrong pass 1"},
                                 headers={"X-CSRF-Token": token})
        assert resp.status == 401
        assert (await resp.json())["error"] == "bad_credentials"
    # even the right password is refused while the name is rate limited
    resp = await client.post("/api/login", json={"name": "gil", "password": "correct horse 42"},
                             headers={"X-CSRF-Token": token})
    assert resp.status == 429 and resp.headers["Retry-After"]


async def test_malformed_bodies_get_clear_errors(client: Client) -> None:
    token = await csrf(client)
    headers = {"X-CSRF-Token": token, "Content-Type": "application/json"}
    resp = await client.post("/api/login", data=b"{not json", headers=headers)
    assert resp.status == 400 and (await resp.json())["error"] == "bad_json"
    resp = await client.post("/api/login", data=b"[1, 2]", headers=headers)
    assert resp.status == 400
    resp = await client.post("/api/login", data=b"x" * 70_000, headers=headers)
    assert resp.status == 413


async def test_a_stale_browser_form_gets_a_page_not_json(client: Client) -> None:
    await csrf(client)
    resp = await client.post("/api/register", data={"name": "hal", "password": "good one 123",
                                                    "csrf": "stale"},
                             headers={"Accept": "text/html,application/xhtml+xml"})
    assert resp.status == 403
    assert resp.content_type == "text/html"
    assert "Recarregue a página" in await resp.text()
    assert await client.app[POOL].fetchval("SELECT count(*) FROM users") == 0
