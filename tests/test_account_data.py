"""A player's own data, from the account page: the download of everything the house keeps about
the account (server.account_data) and the list of its open sessions, with "end the others".
On a real PostgreSQL, over HTTP and the table protocol."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import WSCloseCode, WSMsgType
from yarl import URL

from server import password_links
from server.app import POOL
from server.clock import VirtualClock
from tests.conftest import AppFactory
from tests.test_accounts_password import alerts, signed_in
from tests.test_live_helpers import (
    PASSWORD,
    Live,
    Player,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    play_training_match,
    players,
    start_live,
)

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def download(player: Player) -> tuple[int, dict[str, str], bytes]:
    async with player.session.get(player.base / "account/data") as resp:
        return resp.status, dict(resp.headers), await resp.read()


async def test_the_download_holds_the_accounts_matches_sessions_and_logins(live: Live) -> None:
    ana = await Player(live.base, "ana").signup()
    other = await Player(live.base, "ana").login()  # another browser of hers
    bia = await Player(live.base, "bia").signup()
    try:
        stranger = Player(live.base, "ana")  # someone tries her name with a wrong password
        async with stranger.session.get(stranger.base / "api/session") as resp:
            stranger.csrf = (await resp.json())["csrf"]
        assert (await stranger.post("/api/login", {"name": "ana",
                                                   "password": "wrong horse 1"}))[0] == 401
        await stranger.close()
        table_id = await play_training_match(ana)
        bias_table = await play_training_match(bia)

        status, headers, body = await download(ana)
        assert status == 200, body
        assert headers["Content-Type"] == "application/json; charset=utf-8"
        assert headers["Cache-Control"] == "no-store"
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        assert headers["Content-Disposition"] == (
            f'attachment; filename="barajamos-ana-{today}.json"')
        doc = json.loads(body)
        assert doc["format"] == "barajamos-account-data/1"
        assert (doc["account"]["name"], doc["account"]["role"]) == ("ana", "player")
        # her two sessions, this one marked; no token or hash of either
        assert [s["this_one"] for s in doc["sessions"]] == [True, False]  # oldest first
        assert set(doc["sessions"][0]) == {"created_at", "expires_at", "agent", "this_one"}
        # (aiohttp's client names itself "Python/3.x aiohttp/3.x": no browser the label names)
        assert [s["agent"] for s in doc["sessions"]] == [None] * 2
        # logins: hers with their address, the stranger's failure with its time alone
        failed = [entry for entry in doc["logins"] if not entry["succeeded"]]
        assert len(failed) == 1 and failed[0]["address"] is None
        assert all(entry["address"] for entry in doc["logins"] if entry["succeeded"])
        assert [t["table_id"] for t in doc["tables_owned"]] == [table_id]
        [match] = doc["matches"]
        assert (match["table_id"], match["variant"], match["kind"], match["players"],
                match["my_seat"]) == (table_id, "mineiro", "training", ["ana", None], 0)
        assert match["termination"] is not None and isinstance(match["won"], bool)
        # the hands are the table's chain, each named by its public page
        chain = hand_records(await fetch_chain(ana, table_id))
        assert [h["hand"] for h in match["hands"]] == [r["hand"] for r in chain]
        assert match["hands"][0]["hand_url"] == f"/h/{table_id}/{chain[0]['hand']}"
        async with ana.session.get(ana.base / match["hands"][0]["hand_url"].lstrip("/")) as r:
            assert r.status == 200
        kinds = {event["kind"] for event in match["my_seat_events"]}
        assert "connected" in kinds, match["my_seat_events"]
        # nothing of bia's: her table, her name
        assert bias_table not in body.decode() and '"bia"' not in body.decode()
        assert "hash" not in body.decode() and "token" not in body.decode()
        # one download every few seconds: a second at once is refused, in pt-BR, and says when
        status, headers, body = await download(ana)
        assert status == 429 and int(headers["Retry-After"]) >= 1
        assert "acabaram de ser baixados" in body.decode()
        assert (await download(bia))[0] == 200  # (another account's own limit)
    finally:
        for player in (ana, other, bia):
            await player.close()


async def test_the_download_holds_her_own_seats_events_and_links_only(live: Live) -> None:
    # a match between two people: the seat events of bia's seat, and a password link made for
    # bia, are bia's, not in ana's download
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "paulista", 2, "private")
        tid = table["id"]
        await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        seats = [await connect(ana, tid, 0), await connect(bia, tid, 1)]
        for seat in seats:
            seat.autoplay = False
        await ana.post(f"/api/tables/{tid}/start")
        pool = live.app[POOL]
        count = "SELECT count(*) FROM seat_events WHERE table_id = $1 AND seat = $2"

        async def both_seats_have_events() -> bool:
            return all([await pool.fetchval(count, tid, s) for s in (0, 1)])

        for _ in range(100):
            if await both_seats_have_events():
                break
            await asyncio.sleep(0.05)
        assert await both_seats_have_events()
        await password_links.make(pool, "bia", None)
        mine = await pool.fetchval(count, tid, 0)
        status, _, body = await download(ana)
        assert status == 200, body
        doc = json.loads(body)
        [match] = doc["matches"]
        assert match["players"] == ["ana", "bia"] and match["my_seat"] == 0
        assert len(match["my_seat_events"]) == mine > 0
        assert doc["password_links"] == []
        for seat in seats:
            await seat.ws.close()
    finally:
        for player in (ana, bia):
            await player.close()


async def test_the_download_asks_for_a_login(live: Live) -> None:
    stranger = Player(live.base, "nobody")
    try:
        status, _, body = await download(stranger)
        assert status == 401 and "Entre ou crie uma conta" in body.decode()
    finally:
        await stranger.close()


async def form(player: Player, csrf: str | None = None) -> tuple[int, str]:
    async with player.session.post(player.base / "account/sessions",
                                   data={"csrf": player.csrf if csrf is None else csrf},
                                   headers={"Accept": "text/html"}) as resp:
        return resp.status, await resp.text()


def listed(page: str) -> list[str]:
    found = re.search(r'<ul id="sessions-list">(.*?)</ul>', page, re.S)
    assert found, page
    return [re.sub(r"<[^>]+>|\s+", " ", item).strip()
            for item in re.findall(r"<li>(.*?)</li>", found.group(1), re.S)]


async def test_the_account_page_lists_the_sessions_and_ends_the_others(live: Live) -> None:
    here = await Player(live.base, "ana").signup()
    there = Player(live.base, "ana")
    there.session.headers["User-Agent"] = FIREFOX
    await there.login()
    third = Player(live.base, "ana")
    # a label in its own words, as whoever logged in might choose it (ua-parser takes this
    # family from the header): only the system it names, a known one, is said
    third.session.headers["User-Agent"] = (
        "Firefox no Windows, aberta hoje (esta, neste navegador)/1.0 CFNetwork/758.0.2"
        " Darwin/15.0.0")
    await third.login()
    bia = await Player(live.base, "bia").signup()
    try:
        tid = (await create_table(here, "paulista", 2, "private"))["id"]
        mine, theirs = await here.ws(tid), await there.ws(tid)
        async with here.session.get(here.base / "account") as resp:
            page = await resp.text()
        items = listed(page)
        assert [item.split(",")[0] for item in items] == [
            "Navegador desconhecido", "Firefox no Windows", "iOS"]
        assert "(esta, neste navegador)" in items[0]
        assert not any("(esta" in item for item in items[1:])
        assert 'action="/account/sessions"' in page
        # a forged or stale form changes nothing
        status, page = await form(here, csrf="forged")
        assert status == 403 and "Formulário expirado" in page
        assert await signed_in(there) and await signed_in(third)
        status, page = await form(here)
        assert status == 200 and alerts(page) == []
        assert "As outras 2 sessões foram encerradas" in page
        assert listed(page) == [i for i in listed(page) if "(esta, neste navegador)" in i]
        assert 'action="/account/sessions"' not in page  # no other one to end
        assert not await signed_in(there) and not await signed_in(third)
        msg = await theirs.receive(timeout=5)
        assert (msg.type, msg.data, msg.extra) == (
            WSMsgType.CLOSE, WSCloseCode.POLICY_VIOLATION, "signed out")
        assert await signed_in(here) and not mine.closed and await signed_in(bia)
        # the answer is a redirect: a reload of the page it leads to posts nothing again
        async with here.session.post(here.base / "account/sessions", data={"csrf": here.csrf},
                                     allow_redirects=False) as resp:
            location = resp.headers["Location"]
        assert resp.status == 303
        assert re.fullmatch(r"/account\?feito=sessoes&outras=0&sinal=[0-9a-f]{32}", location)
        async with here.session.get(here.base.join(URL(location))) as resp:
            assert "Não havia outra sessão aberta." in await resp.text()
        # only the house's own redirect, signed for this account, says what was done: a link
        # from anywhere could make the page say sessions ended or a password changed
        forged = location.replace("outras=0", "outras=7")
        for path in ("/account?feito=sessoes&outras=7", "/account?feito=senha&outras=1",
                     forged, "/account?feito=sessoes&outras=x"):
            async with here.session.get(here.base.join(URL(path))) as resp:
                page = await resp.text()
            assert resp.status == 200 and 'id="sessions-list"' in page
            assert "sessions-ended" not in page and "password-changed" not in page, path
        # another account's signed link says nothing to this one
        async with bia.session.get(bia.base.join(URL(location))) as resp:
            assert "sessions-ended" not in await resp.text()
        # the password still logs in: nothing but the sessions changed
        again = await Player(live.base, "ana").login()
        await again.close()
        await mine.close()
    finally:
        for player in (here, there, third, bia):
            await player.close()


async def erase_form(player: Player, fields: dict[str, str]) -> tuple[int, str]:
    async with player.session.post(player.base / "account/erase",
                                   data={"csrf": player.csrf, **fields},
                                   headers={"Accept": "text/html"}) as resp:
        return resp.status, await resp.text()


async def test_a_player_erases_their_own_account(live: Live) -> None:
    """LGPD art. 18 without asking the operators: the password proves it is the owner, a box
    says what stays. Every refusal changes nothing; done, every session of the account ends
    (their sockets too), nobody logs in to it, the name is free, what was played stays."""
    here = await Player(live.base, "ana").signup()
    there = await Player(live.base, "ana").login()
    try:
        user_id = await live.app[POOL].fetchval("SELECT id FROM users WHERE name = 'ana'")
        table_id = await play_training_match(here)
        tid = (await create_table(here, "paulista", 2, "private"))["id"]
        socket = await there.ws(tid)
        # refusals: no box, a wrong password, a table not closed (she owns one), no CSRF token
        status, page = await erase_form(here, {"password": PASSWORD})
        assert status == 400 and alerts(page) == [
            "Marque a caixa: ela diz o que fica e o que não volta."]
        status, page = await erase_form(here, {"password": "wrong horse 1", "confirm": "sim"})
        assert status == 403 and alerts(page) == ["Essa não é a sua senha atual."]
        status, page = await erase_form(here, {"password": PASSWORD, "confirm": "sim"})
        assert status == 409 and "Ainda não dá para apagar a conta" in alerts(page)[0]
        status, page = await erase_form(here, {"password": PASSWORD, "confirm": "sim",
                                               "csrf": "forged"})
        assert status == 403
        assert await live.app[POOL].fetchval(
            "SELECT name FROM users WHERE id = $1", user_id) == "ana"
        assert await signed_in(here) and await signed_in(there)
        # she leaves her tables (each closes, nobody left at it)
        for table in (tid, table_id):
            assert (await here.post(f"/api/tables/{table}/leave"))[0] == 200
        # done
        status, page = await erase_form(here, {"password": PASSWORD, "confirm": "sim"})
        assert status == 200
        assert f"A sua conta foi apagada: agora ela se chama apagado-{user_id}" in page
        assert not await signed_in(here) and not await signed_in(there)
        msg = await socket.receive(timeout=5)
        assert (msg.type, msg.extra) == (WSMsgType.CLOSE, "signed out")
        assert await live.app[POOL].fetchval(
            "SELECT name FROM users WHERE id = $1", user_id) == f"apagado-{user_id}"
        probe = Player(live.base, "ana")
        async with probe.session.get(probe.base / "api/session") as resp:
            probe.csrf = (await resp.json())["csrf"]
        assert (await probe.post("/api/login", {"name": "ana", "password": PASSWORD}))[0] == 401
        await probe.close()
        # what was played stays, under the new name; the name is anyone's
        assert await live.app[POOL].fetchval(
            "SELECT count(*) FROM live_matches WHERE table_id = $1"
            " AND players @> ARRAY[$2::bigint]", table_id, user_id) == 1
        newcomer = await Player(live.base, "ana").signup()
        await newcomer.close()
    finally:
        await here.close()
        await there.close()
