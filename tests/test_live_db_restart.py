"""PostgreSQL restarted under a live house (its own embedded server here, so the run's shared one
is left alone): while the database is down a move is refused as `unavailable` and changes
nothing; once it is back the committers and the pool reconnect on their own, the same move goes
through, the match finishes, and every hand record verifies. Nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg

from server.clock import VirtualClock
from server.db import EmbeddedPostgres, migrate
from tests.conftest import AppFactory
from tests.test_live_fixes import drain
from tests.test_live_helpers import (
    PASSWORD,
    Player,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    play_all,
    players,
    start_live,
    verify_chain,
)

# a move or two into the first hand: its deal is event 8 (after the two seatings, the match's
# start, the commitment and two entropy receipts)
EARLY_SEQ = 10


async def _migrated(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()


async def test_the_house_rides_out_a_database_restart(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    database = EmbeddedPostgres(tmp_path / "pg")
    url = await loop.run_in_executor(None, database.start)
    try:
        await _migrated(url)
        live = await start_live(lambda clock: make_app(clock, database_url=url),
                                aiohttp_client, vclock)
        people = await players(live.base, "ana", "bia")
        ana, bia = people
        try:
            table = await create_table(ana, "paulista", 2, "private")
            tid = table["id"]
            status, _ = await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
            assert status == 200
            clients = [await connect(p, tid, i) for i, p in enumerate(people)]
            status, _ = await ana.post(f"/api/tables/{tid}/start")
            assert status == 200
            # early in the first hand: one hand may win the whole match (a bet raised to 12),
            # and the move held back below needs a match still in play
            await asyncio.wait_for(asyncio.gather(*(c.play(stop_after_seq=EARLY_SEQ)
                                                    for c in clients)), 30)
            # the seat to move holds its move while the database goes away
            for c in clients:
                c.autoplay = False
            for _ in range(100):  # entropy still goes in: the next hand may need dealing
                for c in clients:
                    await drain(c)
                due = [c for c in clients if c.view and c.view["legal"]]
                if due:
                    break
            mover = due[0]
            assert mover.view is not None
            legal, seq = mover.view["legal"], mover.last_seq

            await loop.run_in_executor(None, database.stop)
            await mover.send({"type": "action", "id": "down", "hand": mover.view_hand,
                              "action": legal[0]})
            answer = await mover.until("error", react=False)
            assert (answer["id"], answer["error"]) == ("down", "unavailable"), answer
            assert mover.last_seq == seq  # nothing happened at the table
            # outside the tables too, what needs the database says it is unavailable (503),
            # not a server bug (500): the session lookup, a new table, a login, a page
            assert await ana.get("/api/session") == (503, {
                "error": "unavailable",
                "message": "The database did not answer; try again in a moment."})
            status, body = await bia.post("/api/tables", {"variant": "paulista", "seats": 2,
                                                          "kind": "private"})
            assert (status, body["error"]) == (503, "unavailable")
            stranger = Player(live.base, "cris")
            try:
                async with stranger.session.get(live.base / "api/session") as resp:
                    assert resp.status == 200  # no session to look up: no database needed
                    stranger.csrf = (await resp.json())["csrf"]
                status, body = await stranger.post("/api/login", {"name": "ana",
                                                                  "password": PASSWORD})
                assert (status, body["error"]) == (503, "unavailable")
            finally:
                await stranger.close()
            async with ana.session.get(live.base / "me/hands",
                                       headers={"Accept": "text/html"}) as resp:
                assert resp.status == 503 and "Serviço indisponível" in await resp.text()

            assert await loop.run_in_executor(None, database.start) == url
            await mover.send({"type": "action", "id": "up", "hand": mover.view_hand,
                              "action": legal[0]})
            seen = len(mover.received)
            ack = await mover.until("ack", react=False)
            assert ack["id"] == "up" and ack["seq"] == seq + 1
            for m in mover.received[seen:]:
                if m["type"] == "commitment":  # the move ended a hand: the next one wants entropy
                    await mover.react(m)
            for c in clients:
                c.autoplay = True
                await c.react({"type": "update"})
            await play_all(clients)
            assert all(c.over and c.over["termination"] == "target" for c in clients)
            chain = await fetch_chain(ana, tid)
            verify_chain(chain, live.key)
            records = hand_records(chain)
            assert [r["hand"] for r in records] == list(range(1, len(records) + 1))
            # every acknowledged move is in a record
            acked = sum(1 for c in clients for m in c.received if m["type"] == "ack"
                        and isinstance(m.get("id"), int | str) and str(m["id"])[0] != "e")
            assert sum(len(r["actions"]) for r in records) >= acked
        finally:
            for person in people:
                await person.close()
            await live.client.close()  # the house stops (and says so) while its database runs
    finally:
        await loop.run_in_executor(None, database.stop)
