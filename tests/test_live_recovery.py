"""Rebuilding tables at start: a table is served again exactly where it stood (same hand, same
commitment, a fresh entropy window), and one table whose rows cannot be rebuilt does not keep
the house from opening."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import asyncpg

from server.app import CONFIG
from server.clock import VirtualClock
from server.live.seeds import SealedKind, seal
from server.live.table import RESTART_ENTROPY_GRACE
from tests.conftest import AppFactory
from tests.test_live_helpers import (
    Player,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    players,
    start_live,
    verify_chain,
)


async def test_restart_rebuilds_tables_and_skips_a_broken_one(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, = await players(first.base, "ana")
    tables = [await create_table(ana, "mineiro", 2, "training") for _ in range(2)]
    commitments = []
    for table in tables:
        client = await connect(ana, table["id"], 0)
        client.send_entropy = False
        await ana.post(f"/api/tables/{table['id']}/start")
        commitments.append((await client.until("commitment"))["commitment"])
        await client.ws.close()
    await ana.close()
    await first.client.close()
    broken, kept = tables[0]["id"], tables[1]["id"]
    # one table's sealed seed is damaged while the server is down
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE live_hands SET seed_sealed = $2 WHERE table_id = $1",
                           broken, os.urandom(60))
    finally:
        await conn.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    try:
        status, body = await ana.get(f"/api/tables/{broken}")
        assert (status, body["error"]) == (404, "table_not_found")
        # said where an alert can see it, not only in the log
        assert second.house.metrics.registry.get_sample_value(
            "barajamos_tables_unavailable_total", {"when": "not_restored"}) == 1
        status, body = await ana.get(f"/api/tables/{kept}")
        assert status == 200 and body["table"]["status"] == "playing"
        client = await connect(ana, kept, 0)
        client.send_entropy = False
        snapshot = await client.until("snapshot", react=False)
        hand = snapshot["hand"]
        assert hand["hand"] == 1 and hand["phase"] == "entropy"
        assert hand["commitment"] == commitments[1]
        assert hand["entropy_deadline_ms"] > 0
        # the window opened again in full, and the time pages take to come back, then the deal
        await vclock.advance(3.0 + RESTART_ENTROPY_GRACE)
        update = await client.until("update", react=False)
        assert update["hand"] == 1 and update["events"][0]["type"] == "hand_started"
    finally:
        await ana.close()


_KEEP_DROPPED_ROWS = """
CREATE TABLE dropped_live_actions (LIKE live_actions);
CREATE TABLE dropped_live_contributions (LIKE live_contributions);
CREATE FUNCTION keep_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('INSERT INTO dropped_%s SELECT ($1).*', TG_TABLE_NAME) USING OLD;
    RETURN OLD;
END $$;
CREATE TRIGGER keep_dropped BEFORE DELETE ON live_actions
    FOR EACH ROW EXECUTE FUNCTION keep_dropped();
CREATE TRIGGER keep_dropped BEFORE DELETE ON live_contributions
    FOR EACH ROW EXECUTE FUNCTION keep_dropped();
"""


async def test_crash_between_last_action_and_record(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    """The hand's last action was written, then the process died before the hand's record was:
    the restarted house records that hand (revealing its seed) and deals the next one."""
    # the record's commit drops the hand's rows (actions, contributions): this test database
    # keeps copies, to put them back as they were before it
    setup = await asyncpg.connect(database_url)
    try:
        await setup.execute(_KEEP_DROPPED_ROWS)
    finally:
        await setup.close()
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, = await players(first.base, "ana")
    table = await create_table(ana, "mineiro", 2, "training")
    client = await connect(ana, table["id"], 0)
    await ana.post(f"/api/tables/{table['id']}/start")
    while True:  # play (bots answer on the virtual clock) until hand 1 is recorded
        try:
            data = await client.recv(timeout=0.2)
        except TimeoutError:
            await vclock.advance(1.0)
            continue
        await client.react(data)
        if data["type"] == "hand_record" and data["hand"] == 1:
            break
    await client.ws.close()
    await ana.close()
    await first.client.close()
    key = first.house.public_key.hex()

    # put the database back to the instant before hand 1's record was written
    conn = await asyncpg.connect(database_url)
    try:
        record = json.loads(await conn.fetchval(
            "SELECT record FROM live_hands WHERE table_id = $1 AND hand = 1", table["id"]))
        # a hand can end the match (a raise to 12): its record was written with the match's end
        ended = record["match_winner"] is not None
        async with conn.transaction():
            # (as a crash would have left it: past the triggers that keep a signed record)
            await conn.execute("SET LOCAL session_replication_role = replica")
            for kept in ("live_actions", "live_contributions"):
                await conn.execute(f"INSERT INTO {kept} SELECT * FROM dropped_{kept}"
                                   " WHERE table_id = $1 AND hand = 1", table["id"])
            await conn.execute("UPDATE live_tables SET status = 'playing', closed_at = NULL"
                               " WHERE id = $1", table["id"])
            await conn.execute("UPDATE live_matches SET termination = NULL, winner = NULL,"
                               " ended_at = NULL WHERE table_id = $1", table["id"])
            await conn.execute("DELETE FROM live_contributions WHERE table_id = $1 AND hand > 1",
                               table["id"])
            await conn.execute("DELETE FROM live_hands WHERE table_id = $1 AND hand > 1",
                               table["id"])
            await conn.execute(
                "UPDATE live_hands SET record = NULL, record_hash = NULL, seed_sealed = $2"
                " WHERE table_id = $1 AND hand = 1",
                table["id"], seal(first.app[CONFIG].seed_key, SealedKind.SEED, table["id"], 1,
                                  bytes.fromhex(record["seed"])))
    finally:
        await conn.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    try:
        client = await connect(ana, table["id"], 0)
        client.send_entropy = False
        snapshot = await client.until("snapshot", react=False)
        # hand 1 was recorded at start, and hand 2 committed (or the match ended with it)
        if ended:
            assert snapshot["hand"] is None and snapshot["table"]["status"] == "finished"
        else:
            assert snapshot["hand"]["hand"] == 2 and snapshot["hand"]["phase"] == "entropy"
        chain = await fetch_chain(ana, table["id"])
        records = hand_records(chain)
        assert [r["hand"] for r in records] == [1]
        assert records[0]["seed"] == record["seed"] and records[0]["actions"] == record["actions"]
        verify_chain(chain, key)
    finally:
        await ana.close()


async def test_a_restart_between_hands_still_shows_the_hand_just_finished(
        make_app: AppFactory, aiohttp_client: Callable[..., Any],
        vclock: VirtualClock) -> None:
    # a review: a snapshot between hands shows the hand just finished (docs/PROTOCOL.md), but
    # after a restart it had no view at all while the next hand waited for entropy
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, = await players(first.base, "ana")
    table = await create_table(ana, "paulista", 2, "training")
    client = await connect(ana, table["id"], 0)
    await ana.post(f"/api/tables/{table['id']}/start")
    first_of_match = True
    while True:  # play (bots answer on the virtual clock) until a match goes on to a next hand
        try:
            data = await client.recv(timeout=0.2)
        except TimeoutError:
            await vclock.advance(1.0)
            continue
        if data["type"] == "commitment" and not first_of_match:
            break  # not answered: that hand waits for my entropy
        await client.react(data)
        if data["type"] == "commitment":
            first_of_match = False
        elif data["type"] == "match_over":  # a hand can end a match (a raise to 12): again
            await ana.post(f"/api/tables/{table['id']}/rematch")
            first_of_match = True
    before = client.view
    assert before is not None and before["hand"]["result"] is not None
    await client.ws.close()
    await ana.close()
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    try:
        client = await connect(ana, table["id"], 0)
        client.send_entropy = False
        snapshot = await client.until("snapshot", react=False)
        assert snapshot["hand"]["hand"] == data["hand"] and snapshot["hand"]["phase"] == "entropy"
        view = snapshot["view"]
        assert view is not None
        assert view["hand"]["result"] == before["hand"]["result"]
        record = hand_records(await fetch_chain(ana, table["id"]))[-1]
        assert record["hand"] == data["hand"] - 1
        assert view["score"] == record["score_after"] == before["score"]
        assert view["legal"] == []
    finally:
        await ana.close()
