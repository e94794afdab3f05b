"""What the house's collector depends on (`server.loops.Collector`): play leaves no reference
cycle, on the house's own event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from server.clock import VirtualClock
from tests.conftest import AppFactory, cyclic_garbage
from tests.test_live_helpers import Live, connect, create_table, play_all, players, start_live


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def test_whole_matches_leave_no_garbage_on_the_house_loop(live: Live) -> None:
    """On the event loop the house runs on (uvloop): tables made, joined, played to the end and
    left, their sockets closed, leave no reference cycle at all, which the house's collector
    would keep until its next whole collection (`server.loops.Collector`). (On the standard
    loop each closed connection leaves its transport in a cycle.)"""
    pytest.importorskip("uvloop", reason="the house runs on the standard loop here")
    assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
    people = await players(live.base, "ana", "bia")

    async def match() -> None:
        table = await create_table(people[0], "paulista", 2, "private")
        tid = table["id"]
        status, _ = await people[1].post(f"/api/tables/{tid}/join",
                                         {"invite": table["invite"], "seat": 1})
        assert status == 200
        seats = [await connect(people[0], tid, 0), await connect(people[1], tid, 1)]
        await people[0].post(f"/api/tables/{tid}/start")
        await play_all(seats)
        for seat in seats:
            await seat.ws.close()
        for person in people:
            assert (await person.post(f"/api/tables/{tid}/leave"))[0] == 200
        for _ in range(100):  # the server's handlers end after the close handshakes
            await asyncio.sleep(0.01)
            if not live.house.sockets:
                break
        assert not live.house.sockets

    try:
        # once first: this process is the test client's too, whose first parse of each kind of
        # answer's Content-Type (aiohttp caches it) makes classes in cycles
        await match()
        with cyclic_garbage() as garbage:
            for _ in range(2):
                await match()
        assert garbage == []
    finally:
        for person in people:
            await person.close()
