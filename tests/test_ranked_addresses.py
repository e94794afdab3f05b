"""Players from one address never meet at a ranked or arena table (a cheating-player review:
one person's second account, queued with the first, was paired with it and threw every hand,
handing over its stake and rating points). The address is each player's latest, as the house
saw it behind its trusted proxy; this machine's own (a trial house, the tests) is not told
apart."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from server.app import ADDRESS_KEPT, LAST_ADDRESS, LAST_ADDRESS_AT, forget_addresses
from server.clock import VirtualClock
from server.ranked.service import RANKED
from tests.test_ranked_http import PASSWORD, House, Player, ranked_app

QUEUE = {"variant": "paulista", "seats": 2}


@pytest.fixture
async def proxied(make_app: Callable[..., web.Application],
                  aiohttp_client: Callable[..., Awaitable[TestClient]]  # type: ignore[type-arg]
                  ) -> AsyncIterator[House]:
    """A house behind a reverse proxy on this machine: each player's address is the one the
    proxy appends to X-Forwarded-For."""
    clock = VirtualClock()
    proxies = frozenset({ipaddress.ip_address("127.0.0.1")})
    client = await aiohttp_client(ranked_app(partial(make_app, trusted_proxies=proxies), clock))
    house = House(client, clock, None)
    try:
        yield house
    finally:
        for session in house.sessions:
            await session.close()


async def player(house: House, name: str, address: str) -> Player:
    session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True),
                                    headers={"X-Forwarded-For": address})
    house.sessions.append(session)
    base = str(house.client.server.make_url("")).rstrip("/")
    token = (await (await session.get(base + "/api/session")).json())["csrf"]
    resp = await session.post(base + "/api/register", json={"name": name, "password": PASSWORD},
                              headers={"X-CSRF-Token": token})
    assert resp.status == 201, await resp.text()
    answer = await resp.json()
    return Player(name, answer["user"]["id"], session, base, answer["csrf"])


async def state(p: Player) -> str:
    return str((await p.json("/api/ranked/queue"))["queue"]["state"])


async def test_two_accounts_from_one_address_are_never_paired(proxied: House) -> None:
    house = proxied
    main = await player(house, "main", "203.0.113.5")
    feeder = await player(house, "feeder", "203.0.113.5")
    await main.json("/api/ranked/queue", QUEUE)
    await feeder.json("/api/ranked/queue", QUEUE)
    assert house.app[LAST_ADDRESS] == {main.id: "203.0.113.5", feeder.id: "203.0.113.5"}
    for _ in range(6):  # the whole widening, and then some: both keep their pages open
        await house.clock.advance(20)
        assert await state(main) == "queued" and await state(feeder) == "queued"
    # each is told why (a lan house's room saw "2 esperando" and waited, never told)
    notice = (await main.json("/api/ranked/queue"))["queue"]["notice"]
    assert notice.startswith("Quem mais espera nesta fila joga da mesma rede que você")
    assert notice.endswith("a partida sai quando entrar alguém de outra rede.")
    # someone elsewhere meets the one who waited longest
    other = await player(house, "other", "198.51.100.7")
    await other.json("/api/ranked/queue", QUEUE)
    await house.clock.advance(2)
    paired = (await main.json("/api/ranked/queue"))["queue"]
    assert paired["state"] == "paired" and paired["seating"] == ["main", "other"]
    assert await state(feeder) == "queued"


async def test_the_address_is_the_latest_one_seen(proxied: House) -> None:
    # a player who moves (home, then the phone's network) is judged by where they are now
    house = proxied
    ana = await player(house, "ana", "203.0.113.5")
    bia = await player(house, "bia", "198.51.100.7")
    await ana.json("/api/ranked/queue", QUEUE)
    await bia.json("/api/ranked/queue", QUEUE)
    # before the round: bia's page now comes from ana's address
    bia.session._default_headers["X-Forwarded-For"] = "203.0.113.5"  # type: ignore[attr-defined]
    await state(bia)
    await house.clock.advance(2)
    assert await state(ana) == "queued" and await state(bia) == "queued"
    bia.session._default_headers["X-Forwarded-For"] = "198.51.100.9"  # type: ignore[attr-defined]
    await state(bia)
    await house.clock.advance(2)
    assert await state(ana) == "paired"
    assert house.app[RANKED].addresses[bia.id] == "198.51.100.9"


async def test_players_on_this_machine_are_not_told_apart(proxied: House) -> None:
    # a trial house: everyone plays from the house's own machine
    house = proxied
    ana = await player(house, "ana", "127.0.0.1")
    bia = await player(house, "bia", "127.0.0.1")
    await ana.json("/api/ranked/queue", QUEUE)
    await bia.json("/api/ranked/queue", QUEUE)
    assert house.app[LAST_ADDRESS] == {}
    await house.clock.advance(2)
    assert await state(ana) == "paired"


async def test_a_queue_all_from_one_address_is_said_in_the_log(
        proxied: House, caplog: pytest.LogCaptureFixture) -> None:
    # a proxy on another machine not named in BARAJAMOS_TRUSTED_PROXIES puts every player at
    # its address: nobody is paired, and the operator is told the likely cause
    house = proxied
    players = [await player(house, name, "10.0.0.9") for name in ("ana", "bia", "caio")]
    for p in players:
        await p.json("/api/ranked/queue", QUEUE)
    with caplog.at_level("WARNING", logger="barajamos.ranked"):
        for _ in range(5):
            await house.clock.advance(2)
            for p in players:
                assert await state(p) == "queued"
    said = [r for r in caplog.records if r.getMessage() == "ranked_one_address"]
    assert len(said) == 1 and said[0].players == 3  # type: ignore[attr-defined]
    assert "BARAJAMOS_TRUSTED_PROXIES" in said[0].hint  # type: ignore[attr-defined]


async def test_an_address_is_forgotten_at_a_logout_and_after_an_hour(proxied: House) -> None:
    # a review: every player's address was kept from their first request to the next restart
    house = proxied
    ana = await player(house, "ana", "203.0.113.5")
    bia = await player(house, "bia", "198.51.100.7")
    await state(ana)
    await state(bia)
    assert set(house.app[LAST_ADDRESS]) == {ana.id, bia.id}
    await ana.json("/api/logout", {})
    assert set(house.app[LAST_ADDRESS]) == {bia.id}
    await house.clock.advance(ADDRESS_KEPT - 1)
    assert forget_addresses(house.app, house.clock.now()) == 0
    await house.clock.advance(2)
    assert forget_addresses(house.app, house.clock.now()) == 1
    assert house.app[LAST_ADDRESS] == {} and house.app[LAST_ADDRESS_AT] == {}
