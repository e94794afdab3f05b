"""Whole matches over real WebSockets: every variant with 2 and 4 seats, played to the end by
protocol clients using the bot policy (with the server's bots at training tables); each hand
record verifies, and no client ever received a card it may not see."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.clock import VirtualClock
from tests.conftest import AppFactory
from tests.test_live_helpers import (
    Live,
    Player,
    check_no_hidden_cards,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    play_all,
    players,
    start_live,
    verify_chain,
)


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def _finish(owner: Player, table: dict[str, Any], clients: list[Any],
                  public_key: str) -> list[dict[str, Any]]:
    await play_all(clients)
    chain = await fetch_chain(owner, table["id"])
    records = hand_records(chain)
    assert records and records[-1]["match_winner"] in (0, 1)
    assert records[-1]["end"] == "completed"
    verify_chain(chain, public_key)
    for client in clients:
        assert check_no_hidden_cards(client, chain) > 0
        assert client.over is not None and client.over["termination"] == "target"
    return chain


def _samples(text: str) -> dict[str, float]:
    """Prometheus text format: sample name (with labels) -> value."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


@pytest.mark.parametrize("variant", ["paulista", "mineiro", "argentino"])
@pytest.mark.parametrize("seats", [2, 4])
async def test_training_match_with_bots(live: Live, variant: str, seats: int) -> None:
    (ana,) = await players(live.base, f"ana_{variant[:3]}{seats}")
    try:
        table = await create_table(ana, variant, seats, "training")
        seat_client = await connect(ana, table["id"], 0, rng_seed=seats)
        status, body = await ana.post(f"/api/tables/{table['id']}/start")
        assert status == 200, body
        assert body["table"]["status"] == "playing"
        assert all(p["bot"] for p in body["table"]["players"][1:])
        chain = await _finish(ana, table, [seat_client], live.key)
        # server bots never send entropy: their contributions are recorded absent
        for record in hand_records(chain):
            assert all(c is None for c in record["contributions"][1:])
            assert record["contributions"][0] == seat_client.entropy_sent[record["hand"]]
        async with live.client.session.get(live.base / "metrics") as resp:
            metrics = _samples(await resp.text())
        actions = sum(len(r["actions"]) for r in hand_records(chain))
        counted = sum(v for k, v in metrics.items()
                      if k.startswith("barajamos_actions_total{") and variant in k)
        assert counted == actions
        assert metrics["barajamos_action_latency_seconds_count"] == actions
        assert metrics["barajamos_write_batch_size_count"] > 0
        assert metrics["barajamos_live_tables"] == 0  # the match is over
        assert metrics["barajamos_connected_players"] == 1
    finally:
        await ana.close()


@pytest.mark.parametrize(("variant", "seats", "mode"), [("argentino", 4, "vote"),
                                                        ("paulista", 2, "vote"),
                                                        ("mineiro", 4, "first")])
async def test_private_all_human_match(live: Live, variant: str, seats: int,
                                       mode: str) -> None:
    people = await players(live.base, *(f"p{i}_{variant[:3]}{seats}" for i in range(seats)))
    try:
        table = await create_table(people[0], variant, seats, "private", mode)
        for index, person in enumerate(people[1:], start=1):
            status, body = await person.post(f"/api/tables/{table['id']}/join",
                                             {"invite": table["invite"], "seat": index})
            assert status == 200, body
        clients = [await connect(p, table["id"], i, rng_seed=i) for i, p in enumerate(people)]
        status, body = await people[0].post(f"/api/tables/{table['id']}/start")
        assert status == 200, body
        chain = await _finish(people[0], table, clients, live.key)
        for record in hand_records(chain):
            # each seat's contribution is exactly what its client sent for that hand
            assert record["contributions"] == [c.entropy_sent[record["hand"]] for c in clients]
        # every seat saw the same numbered events, gapless
        last = {c.last_seq for c in clients}
        assert len(last) == 1
    finally:
        for person in people:
            await person.close()


async def test_short_seed_chains_are_re_anchored(make_app: AppFactory,
                                                 aiohttp_client: Callable[..., Any],
                                                 vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock, chain_length=3)
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        client = await connect(ana, table["id"], 0)
        await ana.post(f"/api/tables/{table['id']}/start")
        await play_all([client])
        chain = await fetch_chain(ana, table["id"])
        records = hand_records(chain)
        anchors = [e for e in chain if e["kind"] == "seed_anchor"]
        # a new chain every 3 hands, each anchored (signed) before its first hand
        assert [a["chain_start"] for a in anchors] == list(range(1, len(records) + 1, 3))
        assert [r["chain_start"] for r in records] == [1 + 3 * ((r["hand"] - 1) // 3)
                                                       for r in records]
        commitments = [m for m in client.received if m["type"] == "commitment"]
        assert [m["anchor"] is not None for m in commitments] == [
            (m["hand"] - 1) % 3 == 0 for m in commitments]
        verify_chain(chain, live.key)
    finally:
        await ana.close()
