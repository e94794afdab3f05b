"""The live house's fast paths keep behaviour: a catch-up rebuilt from the compact history is
exactly what each audience received live, the writer's statement grouping keeps every job's
order, the server's record signing matches `sign_record`, and a seed chain kept as marks gives
back every seed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from server.clock import VirtualClock
from server.live.table import Chain
from server.live.writer import Statement, group_statements
from tests.conftest import AppFactory
from tests.test_fairness_records import minimal_record
from tests.test_live_fixes import act
from tests.test_live_helpers import SeatClient, connect, create_table, players, start_live
from tests.test_live_in_doubt import _at_anas_card
from truco.fairness import seed_chain
from verifier.signing import (
    sign_built_record,
    sign_record,
    signing_key_from_seed,
    verify_signature,
)

HISTORY = 512
CATCH_UP = 100  # within the replay limit (half the 256-message send queue)


def numbered(client: SeatClient) -> dict[int, dict[str, Any]]:
    return {m["seq"]: m for m in client.received
            if "seq" in m and m["type"] not in ("ack", "welcome", "snapshot")}


async def test_catch_up_equals_what_each_audience_received_live(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock, history=HISTORY)
    people = await players(live.base, "ana", "bia", "caio", "duda", "eva")
    try:
        table = await create_table(people[0], "paulista", 4, "private")
        tid = table["id"]
        for seat, person in enumerate(people[1:4], start=1):
            status, body = await person.post(f"/api/tables/{tid}/join",
                                             {"invite": table["invite"], "seat": seat})
            assert status == 200, body
        seated = [await connect(person, tid, seat) for seat, person in enumerate(people[:4])]
        spectator = SeatClient(await people[4].ws(tid, params={"invite": table["invite"]}),
                               None)
        await spectator.hello()
        clients = [*seated, spectator]
        # every socket is subscribed (its snapshot taken) before the first event of the match,
        # so each received every event of the match live
        joined = [(await client.until("snapshot", react=False))["seq"] for client in clients]
        status, _ = await people[0].post(f"/api/tables/{tid}/start")
        assert status == 200
        await asyncio.wait_for(asyncio.gather(*(c.play() for c in clients)), 60)
        last = spectator.last_seq
        assert all(c.last_seq == last for c in clients)
        # matches differ in length (the deals are random): catch up on at most CATCH_UP events
        for person, old, snapshot_seq in zip(people, clients, joined, strict=True):
            # not before the socket's own snapshot: the seats' connections came one by one
            since = max(last - min(CATCH_UP, last - 1), snapshot_seq)
            catch_up = last - since
            params = {} if old.seat is not None else {"invite": table["invite"]}
            again = SeatClient(await person.ws(tid, params=params), old.seat,
                               last_seq=since, autoplay=False)
            await again.send({"type": "hello", "last_seq": since, "epoch": old.epoch})
            welcome = await again.recv()
            assert welcome["type"] == "welcome" and welcome["seat"] == old.seat
            replayed = [await again.recv() for _ in range(catch_up)]
            assert [m["seq"] for m in replayed] == list(range(since + 1, last + 1))
            live_messages = numbered(old)
            for message in replayed:
                assert message == live_messages[message["seq"]], message["seq"]
            hands = {m["hand"] for m in replayed if m["type"] == "update"}
            # it crosses a hand boundary (unless the whole match was one hand, which is rare)
            assert len(hands) >= min(2, max(hands)), "the catch-up should span hands"
            await again.ws.close()
    finally:
        for person in people:
            await person.close()


def _job(*statements: Statement) -> list[Statement]:
    return list(statements)


def test_grouping_keeps_each_jobs_order() -> None:
    chain, hand, action = "INSERT chain", "INSERT hand", "INSERT action"
    batch = [
        _job((hand, (1,))),  # a job that starts with a hand row
        _job((chain, (2,)), (hand, (2,))),  # the hand needs its chain first
        _job((action, (3,))),
        _job((action, (4,)), (chain, (4,)), (action, (5,))),
    ]
    runs = group_statements(batch)
    assert runs == [
        (hand, [(1,)]),
        (chain, [(2,)]),
        (hand, [(2,)]),  # not joined to the first hand run: that would precede its chain
        (action, [(3,), (4,)]),  # job 4's first statement joins job 3's
        (chain, [(4,)]),  # job 4 must not jump back before its own action
        (action, [(5,)]),
    ]
    position = {(query, args): index for index, (query, rows) in enumerate(runs)
                for args in rows}
    for job in batch:
        order = [position[(query, args)] for query, args in job]
        assert order == sorted(order), job
    flat = [(query, args) for query, rows in runs for args in rows]
    assert sorted(flat) == sorted(s for job in batch for s in job)


def test_grouping_one_sql_text_is_one_run() -> None:
    move = "INSERT action"
    runs = group_statements([_job((move, (i,))) for i in range(50)])
    assert runs == [(move, [(i,) for i in range(50)])]


def test_server_signature_is_the_validating_one() -> None:
    key = signing_key_from_seed(bytes(range(32)))
    built = minimal_record()
    signed = sign_built_record(built, key)
    assert signed == sign_record(built, key)
    assert verify_signature(signed, bytes(key.verify_key))
    assert "signature" not in built  # the built record is not changed


@pytest.mark.parametrize("length", [1, 31, 32, 33, 100, 1024])
def test_chain_rebuilds_every_seed_from_its_marks(length: int) -> None:
    seeds = seed_chain(bytes(range(32)), length)
    chain = Chain(7, seeds, {})
    assert chain.seeds == seeds
    assert [chain.seed(i) for i in range(length + 1)] == list(seeds)
    for hand in range(0, 7 + length + 2):
        covered = 1 <= hand - 6 < len(seeds)
        assert chain.covers(hand) == covered, hand
        if covered:
            assert chain.seed_for(hand) == seeds[hand - 6]
            assert chain.commitment_for(hand) == seeds[hand - 7]
    with pytest.raises(IndexError):
        chain.seed(length + 1)


class _CountingTransport:
    """A socket's transport that records each write (each is one system call in production)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_move_and_its_ack_leave_in_one_write(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    (ana,) = await players(live.base, "ana")
    try:
        tid, seat, play = await _at_anas_card(live, ana, vclock)
        (conn,) = live.house.tables[tid].subscribers
        counting = _CountingTransport(conn._transport)
        conn._transport = counting  # type: ignore[assignment]
        await act(seat, play)
        ack = await seat.until("ack", react=False)
        assert ack["id"] == seat.next_id
        update = next(m for m in seat.received
                      if m["type"] == "update" and m["seq"] == ack["seq"])
        assert any(e["type"] == "card_played" for e in update["events"])
        # the update (with ana's view) and the ack that follows it: one write, in that order
        first = counting.writes[0]
        assert first.index(b'"type":"update"') < first.index(b'"type":"ack"')
        assert first.endswith(f'"seq":{ack["seq"]}}}'.encode())
    finally:
        await ana.close()
