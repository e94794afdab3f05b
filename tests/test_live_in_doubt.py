"""A write in doubt at a live table: the database connection broke (here: the watchdog cut a
commit stuck on a lock) while a move was being saved. The player hears `in_doubt`, the table
re-reads what was written, exactly as a restart would, sends a snapshot of it, and goes on; and
whichever way the commit went, the hand's record holds what was written and verifies."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import aiohttp
import asyncpg
import pytest

from server.clock import VirtualClock
from tests.conftest import AppFactory
from tests.test_live_fixes import act, drain
from tests.test_live_helpers import (
    Live,
    Player,
    SeatClient,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    players,
    start_live,
    verify_chain,
)

WATCHDOG = 0.5  # seconds of real time a commit may take here before its connection is cut


async def _at_anas_card(live: Live, ana: Player,
                        vclock: VirtualClock) -> tuple[str, SeatClient, dict[str, Any]]:
    """A training table of ana's, started and played (by her: accepting any bet first) until
    she may play a card of hand 1: its id, her client and that move."""
    table = await create_table(ana, "paulista", 2, "training")
    tid: str = table["id"]
    seat = await connect(ana, tid, 0)
    seat.autoplay = False
    await drain(seat)
    await ana.post(f"/api/tables/{tid}/start")
    for _ in range(200):
        await drain(seat)
        view = seat.view
        plays = [a for a in (view or {}).get("legal") or () if a["do"] == "play"]
        if plays and seat.view_hand == 1:
            return tid, seat, plays[0]
        if view and view.get("legal") and seat.acted_at != seat.last_seq:
            legal = view["legal"]
            await act(seat, next((a for a in legal if a["do"] == "accept"), legal[0]))
        await vclock.advance(0.1)
    raise AssertionError("ana never got a card to play")


async def _lost_commit(admin: asyncpg.Connection, live: Live, tid: str,
                       card: str) -> asyncpg.transaction.Transaction:
    """What a commit whose answer was lost leaves: ana's move playing `card`, written in a
    transaction the caller commits. Until then it holds the table's rows, so the table's
    re-read cannot come before it (nor the stuck write of the same move go through)."""
    actor = live.house.tables[tid]
    assert actor.hand is not None
    lock = admin.transaction()
    await lock.start()
    await admin.execute("LOCK TABLE live_actions, live_tables IN ACCESS EXCLUSIVE MODE")
    await admin.execute(
        "INSERT INTO live_actions (table_id, hand, idx, action, automatic, at)"
        " VALUES ($1, $2, $3, $4::jsonb, false, now())",
        tid, actor.hand.number, len(actor.hand.actions),
        json.dumps({"do": "play", "seat": 0, "card": card}))
    return lock


async def test_a_move_in_doubt_is_taken_as_written_either_way(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    live = await start_live(partial(make_app, write_timeout=WATCHDOG), aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    admin = await asyncpg.connect(database_url)
    try:
        tid, seat, play = await _at_anas_card(live, ana, vclock)
        before = seat.view
        assert before is not None

        # 1. the commit did not happen: the move is not in play, ana may play it again
        lock = admin.transaction()
        await lock.start()
        await admin.execute("LOCK TABLE live_actions IN EXCLUSIVE MODE")
        answer_seq = seat.last_seq
        await act(seat, play)
        answer = await seat.until("error", react=False)
        assert answer["error"] == "in_doubt" and answer["id"] == seat.next_id
        snapshot = await seat.until("snapshot", react=False)
        await lock.rollback()
        assert snapshot["view"]["legal"] == before["legal"]
        assert snapshot["seq"] == answer_seq + 1  # a new point: older events are not replayed

        # 2. the commit happened but its answer was lost: the table takes the move as played
        lock = await _lost_commit(admin, live, tid, play["card"])
        await act(seat, play)
        answer = await seat.until("error", react=False)
        assert answer["error"] == "in_doubt"
        await lock.commit()
        snapshot = await seat.until("snapshot", react=False)
        view = snapshot["view"]
        mine = view["hand"]["players"][0]["hand"]
        assert play["card"] not in str(mine) and play["card"] not in str(view["legal"])
        assert play["card"] in str(view["hand"]["table"]) + str(view["hand"]["rounds"])

        assert live.house.metrics.registry.get_sample_value(
            "barajamos_table_reloads_total") == 2
        # play goes on from there: the hand ends, and its record holds the move and verifies
        seat.autoplay = True
        await seat.react(snapshot)
        for _ in range(400):
            await drain(seat)
            if seat.view_hand is not None and seat.view_hand > 1:
                break
            await vclock.advance(0.1)
        chain = await fetch_chain(ana, tid)
        verify_chain(chain, live.key)
        [first] = [r for r in hand_records(chain) if r["hand"] == 1]
        assert {"do": "play", "seat": 0, "card": play["card"]} in first["actions"]
    finally:
        await admin.close()
        await ana.close()



async def test_a_reread_that_hangs_is_retried_and_said(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # a database that hangs (here: a lock on the table's rows) held the table's re-read for as
    # long as it hung, and nothing said so; now each try is bounded as a write is, and retried
    live = await start_live(partial(make_app, write_timeout=WATCHDOG), aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    admin = await asyncpg.connect(database_url)
    try:
        tid, seat, play = await _at_anas_card(live, ana, vclock)
        before = seat.view
        assert before is not None
        caplog.set_level(logging.WARNING, logger="barajamos.live")
        lock = admin.transaction()
        await lock.start()
        await admin.execute("LOCK TABLE live_actions, live_tables IN ACCESS EXCLUSIVE MODE")
        await act(seat, play)
        answer = await seat.until("error", react=False)
        assert answer["error"] == "in_doubt"

        def waits() -> list[logging.LogRecord]:
            return [r for r in caplog.records
                    if r.getMessage() == "table reload waits for the database"]

        for _ in range(200):
            if len(waits()) >= 2:
                break
            await asyncio.sleep(0.05)
        await lock.rollback()
        assert len(waits()) >= 2
        assert all(r.table == tid and r.error == "TimeoutError"  # type: ignore[attr-defined]
                   for r in waits())
        snapshot = await seat.until("snapshot", react=False)
        assert snapshot["view"]["legal"] == before["legal"]  # the move was not written
    finally:
        await admin.close()
        await ana.close()


async def test_a_table_whose_rows_do_not_replay_is_taken_out_of_service(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    """As after a restart: a table that cannot be rebuilt from what was written is not served
    (its sockets close with 1011, the lobby no longer has it) and stays as written."""
    live = await start_live(partial(make_app, write_timeout=WATCHDOG), aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    admin = await asyncpg.connect(database_url)
    try:
        tid, seat, play = await _at_anas_card(live, ana, vclock)
        held = {c["card"] for c in seat.view["hand"]["players"][0]["hand"]}  # type: ignore[index]
        foreign = next(c for c in ("4C", "5C", "6C", "7C", "QC") if c not in held)
        # the row "written" by the lost commit is a card ana never held: it cannot replay
        lock = await _lost_commit(admin, live, tid, foreign)
        await act(seat, play)
        answer = await seat.until("error", react=False)
        assert answer["error"] == "in_doubt"
        await lock.commit()
        closing = await seat.ws.receive(timeout=10)
        assert closing.type is aiohttp.WSMsgType.CLOSE and closing.data == 1011
        status, body = await ana.get(f"/api/tables/{tid}")
        assert (status, body["error"]) == (404, "table_not_found")
        assert live.house.metrics.registry.get_sample_value("barajamos_live_tables") == 0
        assert await admin.fetchval("SELECT status FROM live_tables WHERE id = $1",
                                    tid) == "playing"  # as written, for an operator
    finally:
        await admin.close()
        await ana.close()
