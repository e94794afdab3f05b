"""Erasing an account at its owner's request (LGPD art. 18): `barajamos erase-account NAME` on
the house's machine. The name becomes apagado-<id> (the old one free for anyone), the password
one nobody knows, every session and unused password link ends; what was played stays under the
new name. Refused while the account holds a seat, a ticket or an arena place; no sign-up may
take an apagado- name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from server.account_data import collect
from server.accounts import MINIMUM, Role, authenticate, open_session, register
from server.clock import VirtualClock
from server.config import from_env
from server.password_links import make
from server.serve import _erase_account
from tests.conftest import AppFactory
from tests.test_accounts_password import alerts
from tests.test_accounts_reset import Live, anonymous, live  # noqa: F401 (a fixture)

PASSWORD = "sturdy pass 9"


async def test_an_erased_account_keeps_its_history_under_a_new_name(
        database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        ana = await register(pool, "Ana", PASSWORD, MINIMUM)
        await authenticate(pool, "ana", PASSWORD, "203.0.113.9", MINIMUM)  # her address
        await open_session(pool, ana)
        await open_session(pool, ana)
        await make(pool, "ana", None)
        await pool.execute(  # a finished table she played at, and its chips
            "INSERT INTO live_tables (id, variant, seats, mode, kind, owner_id, status)"
            " VALUES ('00000000000000e7', 'paulista', 2, 'vote', 'training', $1, 'closed')",
            ana.id)
        config = from_env({}, data_dir=tmp_path, database_url=database_url)
        assert await _erase_account(config, "ANA") == 0
        out = capsys.readouterr().out
        assert out == f"ANA: erased, now apagado-{ana.id}; 2 session(s) ended\n"
        row = await pool.fetchrow("SELECT name, role FROM users WHERE id = $1", ana.id)
        assert (row["name"], row["role"]) == (f"apagado-{ana.id}", "player")
        assert await pool.fetchval("SELECT count(*) FROM sessions WHERE user_id = $1",
                                   ana.id) == 0
        assert await pool.fetchval("SELECT count(*) FROM password_links WHERE user_id = $1"
                                   " AND replaced_at IS NULL AND used_at IS NULL", ana.id) == 0
        # her history stays, under the new name
        assert await pool.fetchval("SELECT owner_id FROM live_tables") == ana.id
        # nobody logs in to it, by either name; her old name is anyone's
        for name in ("ana", f"apagado-{ana.id}"):
            with pytest.raises(Exception, match="Wrong name or password"):
                await authenticate(pool, name, PASSWORD, "198.51.100.1", MINIMUM)
        newcomer = await register(pool, "ana", "another pass 7", MINIMUM)
        # the login attempts on her old name went with her: the newcomer's data download,
        # which lists the day's logins on its name, has none of hers (a review found her
        # address in it)
        assert await pool.fetchval("SELECT count(*) FROM login_attempts WHERE name_lower ="
                                   " 'ana' AND remote <> '198.51.100.1'") == 0
        async with pool.acquire() as conn:
            doc = await collect(conn, newcomer.id, session_hash=None,
                                now=await conn.fetchval("SELECT now()"))
        assert doc is not None and doc["logins"] == []
        assert await _erase_account(config, "nobody") == 1
        assert "No account is named 'nobody'." in capsys.readouterr().err
    finally:
        await pool.close()


async def test_an_account_at_a_table_or_in_a_queue_is_not_erased(
        database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        bia = await register(pool, "bia", PASSWORD, MINIMUM)
        config = from_env({}, data_dir=tmp_path, database_url=database_url)
        await pool.execute(
            "INSERT INTO live_tables (id, variant, seats, mode, kind, status) VALUES"
            " ('00000000000000e8', 'paulista', 2, 'vote', 'private', 'open')")
        await pool.execute("INSERT INTO live_seats (table_id, seat, user_id) VALUES"
                           " ('00000000000000e8', 0, $1)", bia.id)
        assert await _erase_account(config, "bia") == 1
        assert "holds a seat at a table" in capsys.readouterr().err
        await pool.execute("UPDATE live_tables SET status = 'closed'")
        await pool.execute(
            "INSERT INTO ranked_queue_tickets (user_id, variant, seats, rating, enqueued_at)"
            " VALUES ($1, 'paulista', 2, 1500, now())", bia.id)
        assert await _erase_account(config, "bia") == 1
        assert await pool.fetchval("SELECT name FROM users WHERE id = $1", bia.id) == "bia"
        await pool.execute("DELETE FROM ranked_queue_tickets")
        # an invitation to a duo, or a table of hers still open, holds her name too
        other = await register(pool, "caio", PASSWORD, MINIMUM)
        await pool.execute(
            "INSERT INTO ranked_invitations (inviter_id, partner_id, variant, seats,"
            " invited_at) VALUES ($1, $2, 'paulista', 4, now())", other.id, bia.id)
        assert await _erase_account(config, "bia") == 1
        await pool.execute("DELETE FROM ranked_invitations")
        await pool.execute("UPDATE live_tables SET status = 'open', owner_id = $1", bia.id)
        assert await _erase_account(config, "bia") == 1
        assert "owns one not closed" in capsys.readouterr().err
        await pool.execute("UPDATE live_tables SET status = 'closed'")
        # a place in an arena still open (one closed holds nothing)
        await pool.execute(
            "INSERT INTO ranked_arenas (id, variant, seats, starts_at, ends_at) VALUES"
            " ('arena-1', 'paulista', 2, now(), now() + interval '1 hour')")
        await pool.execute(
            "INSERT INTO ranked_arena_entries (arena_id, user_id, seq, rating, active, points,"
            " wins, games, streak, joined_at) VALUES ('arena-1', $1, 0, 1500, true, 0, 0, 0, 0,"
            " now())", bia.id)
        assert await _erase_account(config, "bia") == 1
        assert "an arena place" in capsys.readouterr().err
        await pool.execute("UPDATE ranked_arenas SET status = 'closed'")
        assert await _erase_account(config, "bia") == 0
    finally:
        await pool.close()


async def test_an_erased_operator_is_a_player(database_url: str, tmp_path: Path) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        olga = await register(pool, "olga", PASSWORD, MINIMUM, Role.OPERATOR)
        config = from_env({}, data_dir=tmp_path, database_url=database_url)
        assert await _erase_account(config, "olga") == 0
        assert await pool.fetchval("SELECT role FROM users WHERE id = $1", olga.id) == "player"
    finally:
        await pool.close()


async def test_no_sign_up_takes_an_erased_accounts_name(live: Live) -> None:  # noqa: F811
    stranger = await anonymous(live)
    try:
        status, body = await stranger.post("/api/register",
                                           {"name": "Apagado-7", "password": PASSWORD})
        assert (status, body["error"]) == (400, "reserved_name")
        async with stranger.session.post(
                stranger.base / "signup", headers={"Accept": "text/html"},
                data={"csrf": stranger.csrf, "name": "apagado-7", "password": PASSWORD,
                      "password2": PASSWORD}) as resp:
            assert resp.status == 400
            assert alerts(await resp.text()) == [
                "Nomes que começam com “apagado-” são da casa (contas apagadas): escolha"
                " outro."]
    finally:
        await stranger.close()


async def test_the_privacy_page_says_what_is_kept_and_whom_to_ask(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    client = await aiohttp_client(make_app(clock=vclock, privacy_contact="dados@truco.example"))
    resp = await client.get("/privacidade")
    page = await resp.text()
    assert resp.status == 200
    assert 'id="privacy-contact">dados@truco.example<' in page
    for said in ("a sessão (30 dias)", "o do aparelho (365 dias", "apagados depois de 24 horas",
                 "(depois de 48 horas)", "apagado 30 dias depois do fim da partida",
                 "<code>apagado-</code>"):
        assert said in page, said
    home = await (await client.get("/")).text()
    assert 'href="/privacidade" id="privacy-link"' in home
    assert "O nome é público (mesas, classificação): use um apelido." in home
