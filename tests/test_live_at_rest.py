"""What the database holds of a hand still in play tells nothing a player may not see: the seed
is sealed (tests/test_live_seeds*), and a covered card is written by its position in its
owner's hand, never by its face; a restart reads it back from the unsealed deal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from server.app import POOL
from server.clock import VirtualClock
from server.live.recovery import reread
from tests.conftest import AppFactory
from tests.test_live_helpers import (
    Live,
    SeatClient,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    players,
    start_live,
    verify_chain,
)


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    # a virtual clock that the test never moves: no deadline fires, the players decide alone
    return await start_live(make_app, aiohttp_client, vclock)


async def _step(client: SeatClient, covered: list[dict[str, Any]]) -> None:
    """Read what is there; on my turn cover a card when I may (once), else play one face up."""
    while True:
        try:
            data = await client.recv(timeout=0.2)
        except TimeoutError:
            return
        await client.react(data)  # entropy only: autoplay is off
        view = client.view
        if data["type"] not in ("update", "snapshot") or not view or not view.get("legal"):
            continue
        if client.acted_at == client.last_seq:
            continue
        plays = [a for a in view["legal"] if a["do"] == "play"]
        if not plays:
            answers = [a for a in view["legal"] if a["do"] in ("accept", "decline")]
            if not answers:
                continue
            plays = answers
        # covered only as the round's first card: a round's last card may end the hand at once
        leads = view["hand"] is not None and not view["hand"]["table"]
        cover = [a for a in plays if a.get("covered")] if leads else []
        action = cover[0] if cover and not covered else plays[0]
        if action.get("covered"):
            covered.append(action)
        client.acted_at = client.last_seq
        client.next_id += 1
        await client.send({"type": "action", "id": client.next_id, "hand": client.view_hand,
                           "action": action})
        if action.get("covered"):
            return  # nobody plays on before the test has read the rows


async def test_a_covered_card_is_written_by_its_position_until_the_hand_is_over(
        live: Live) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "paulista", 2, "private")
        tid = table["id"]
        await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        seats = [await connect(ana, tid, 0), await connect(bia, tid, 1)]
        for seat in seats:
            seat.autoplay = False
        await ana.post(f"/api/tables/{tid}/start")
        covered: list[dict[str, Any]] = []
        actor = live.house.get(tid)
        for _ in range(200):
            for seat in seats:
                if not covered:
                    await _step(seat, covered)
            if covered:
                break
        assert covered, "no covered play came up"
        for _ in range(100):  # applied (written first) once its ack comes
            if actor.hand is not None and any(a.covered for a in actor.hand.actions):
                break
            await asyncio.sleep(0.05)
        assert actor.hand is not None
        number = actor.hand.number
        (played,) = [a for a in actor.hand.actions if a.covered]
        assert played.card is not None and str(played.card) == covered[0]["card"]
        rows = await live.app[POOL].fetch(
            "SELECT action FROM live_actions WHERE table_id = $1 AND hand = $2 ORDER BY idx",
            tid, number)
        at_rest = [json.loads(r["action"]) for r in rows]
        (row,) = [a for a in at_rest if a.get("covered")]
        # the face is nowhere in the hand's rows: its position in bia's or ana's dealt hand only
        assert "card" not in row and row["position"] in (0, 1, 2)
        assert covered[0]["card"] not in json.dumps(at_rest)
        assert actor.state is not None and actor.state.hand is not None
        assert actor.state.hand.hands[played.seat][row["position"]] == played.card
        # a restart reads the card back from the unsealed deal: the same hand, move for move
        rebuilt = await reread(live.house, tid)
        assert rebuilt.hand is not None and rebuilt.hand.actions == actor.hand.actions
        assert rebuilt.state == actor.state
        # and the hand's record, once the hand is over, names the card (RULE_DECISIONS 16)
        for _ in range(200):
            if actor.hand is None or actor.hand.number != number:
                break
            for seat in seats:
                await _step(seat, covered)
        record = next(r for r in hand_records(await fetch_chain(ana, tid))
                      if r["hand"] == number)
        assert {**covered[0], "seat": played.seat} in record["actions"]
        verify_chain(await fetch_chain(ana, tid), live.key)
    finally:
        await ana.close()
        await bia.close()
