"""The WebSocket protocol: reconnects (missed events or a snapshot), refusals of malformed,
oversized, out-of-turn and forged messages with no state change, limits, signals to the partner
only, access control, shutdown with GOING_AWAY, and seeds sealed at rest."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket as socket_module
import types
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import WSCloseCode, WSMsgType, web
from yarl import URL

from server.app import POOL
from server.clock import VirtualClock
from server.live import ws as ws_module
from server.live.model import LiveError, LiveSettings
from server.live.seeds import SealedKind, SealError, unseal
from server.live.ws import Connection, forget_tracebacks
from tests.conftest import AppFactory, cyclic_garbage
from tests.test_live_helpers import (
    Live,
    Player,
    SeatClient,
    check_no_hidden_cards,
    connect,
    create_table,
    fetch_chain,
    play_all,
    players,
    start_live,
    verify_chain,
)

HISTORY = 64  # events a table keeps for reconnects in these tests


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock, history=HISTORY)


async def answer(client: SeatClient) -> dict[str, Any]:
    """The reply (ack or error) to the message just sent."""
    while True:
        data = await client.recv()
        if data["type"] in ("ack", "error", "pong"):
            return data


async def quiet(client: SeatClient, timeout: float = 0.15) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        try:
            got.append(await client.recv(timeout=timeout))
        except TimeoutError:
            return got


async def settle(clients: list[SeatClient], until: Callable[[], bool]) -> None:
    """Read (and react to) every client's messages until `until` holds."""
    for _ in range(200):
        for client in clients:
            for data in await quiet(client, 0.03):
                await client.react(data)
        if until():
            return
    raise AssertionError("the table did not reach the expected point")


async def act_once(client: SeatClient) -> dict[str, Any]:
    """One move of the policy's choosing on the client's latest view: its ack (or error, when
    that view was already out of date)."""
    client.autoplay, client.acted_at = True, -1
    await client.react({"type": "update"})
    client.autoplay = False
    while True:
        data = await client.recv()
        await client.react(data)  # entropy for a new hand; no other move
        if data["type"] in ("ack", "error"):
            return data


async def private_table(live: Live, variant: str, seats: int,
                        names: list[str]) -> tuple[list[Player], dict[str, Any]]:
    people = await players(live.base, *names)
    table = await create_table(people[0], variant, seats, "private")
    for index, person in enumerate(people[1:seats], start=1):
        status, _ = await person.post(f"/api/tables/{table['id']}/join",
                                      {"invite": table["invite"], "seat": index})
        assert status == 200
    return people, table


async def dealt_pair(people: list[Player], tid: str) -> tuple[SeatClient, SeatClient]:
    """Ana and bia seated at a 2-seat table and connected, the match started and its first hand
    dealt to both, neither playing by itself."""
    ana, bia = (await connect(people[0], tid, 0), await connect(people[1], tid, 1))
    ana.autoplay = bia.autoplay = False
    await people[0].post(f"/api/tables/{tid}/start")
    await settle([ana, bia], lambda: bool(ana.view and bia.view))  # entropy, deal
    return ana, bia


async def test_reconnect_gets_missed_events_then_snapshots(live: Live) -> None:
    people, table = await private_table(live, "paulista", 2, ["ana", "bia"])
    tid = table["id"]
    try:
        ana, bia = await dealt_pair(people, tid)
        # moves until it is ana's turn after bia moved at least once
        while True:
            assert ana.view is not None and bia.view is not None
            if bia.view["legal"]:
                await act_once(bia)
                await settle([ana, bia], lambda: ana.last_seq == bia.last_seq)
            elif ana.view["legal"] and bia.acted_at > 0:
                break
            else:
                await act_once(ana)
                await settle([ana, bia], lambda: ana.last_seq == bia.last_seq)
        missed_from = bia.last_seq
        await bia.ws.close()
        await ana.until("table")  # bia's seat shows disconnected
        assert (await act_once(ana))["type"] == "ack"  # bia misses this move
        assert ana.last_seq >= missed_from + 2
        bia.autoplay = ana.autoplay = True
        bia.ws = await people[1].ws(tid)
        await bia.hello()
        welcome = await bia.recv()
        assert welcome["type"] == "welcome" and welcome["seat"] == 1
        replay = await bia.recv()
        assert replay["type"] != "snapshot" and replay["seq"] == missed_from + 1
        # same numbering for both, gapless (SeatClient asserts it on every event)
        await play_all([ana, bia])
        chain = await fetch_chain(people[0], tid)
        verify_chain(chain, live.key)
        assert check_no_hidden_cards(bia, chain) > 0
        # a client from nowhere (or another server run, or too far behind) gets a snapshot;
        # how far is too far depends on the match's length (the deals are random) and on the
        # events these sockets' own comings and goings add: the table keeps the last HISTORY
        # events, so seq 1 is too far once more than that followed it when the hello came
        # (the welcome says which seq that was)
        behind = {"last_seq": 1, "epoch": bia.epoch}
        for hello in ({"last_seq": 0}, {"last_seq": bia.last_seq, "epoch": 999}, behind,
                      {"last_seq": 10**9}):
            ws = await people[1].ws(tid)
            await ws.send_str(json.dumps({"type": "hello", **hello}))
            welcome = json.loads((await ws.receive()).data)
            assert welcome["type"] == "welcome"
            too_far = welcome["seq"] - 1 > HISTORY
            first = json.loads((await ws.receive()).data)
            if hello is behind and not too_far:
                assert first["type"] != "snapshot" and first["seq"] == 2, first  # replayed
            else:
                assert first["type"] == "snapshot", hello
                assert first["seq"] >= bia.last_seq and first["table"]["you"] == 1
            await ws.close()
    finally:
        for person in people:
            await person.close()


FORGED: list[tuple[dict[str, Any] | str, str]] = [
    ("not json", "bad_json"),
    ("[1, 2]", "bad_message"),
    ('"hello"', "bad_message"),
    ({"type": "dance"}, "bad_message"),
    ({"id": "x"}, "bad_message"),
    ({"type": "action", "id": {"x": 1}, "action": {"do": "raise"}}, "bad_message"),
    ({"type": "action", "id": "y" * 65, "action": {"do": "raise"}}, "bad_message"),
    ({"type": "action", "id": 1}, "bad_action"),
    ({"type": "action", "id": 2, "action": "raise"}, "bad_action"),
    ({"type": "action", "id": 3, "action": {"do": "fly"}}, "bad_action"),
    ({"type": "action", "id": 4, "action": {"do": "play", "card": "ZZ"}}, "bad_action"),
    ({"type": "action", "id": 5, "action": {"do": "play", "card": "4C", "extra": 1}},
     "bad_action"),
    ({"type": "action", "id": 7, "action": {"seat": "0", "do": "raise"}}, "bad_action"),
    ({"type": "action", "id": 8, "action": {"do": "timeout"}}, "bad_action"),
    ({"type": "entropy", "id": 9, "hand": 1, "hex": "ab"}, "entropy_closed"),
    ({"type": "entropy", "id": 10, "hand": 99, "hex": "ab"}, "entropy_closed"),
    ({"type": "signal", "id": 11, "code": "zap"}, "no_partner"),
    ({"type": "hello", "last_seq": -1}, "bad_message"),
    ({"type": "hello", "last_seq": "7"}, "bad_message"),
    # a misspelt field is not taken as absent: `hnad` is no `hand` (the move's stale check)
    ({"type": "action", "id": 12, "hnad": 999, "action": {"do": "raise"}}, "bad_message"),
    ({"type": "hello", "last_seq": 0, "lastseq": 5}, "bad_message"),
    ({"type": "entropy", "id": 13, "hand": 1, "hex": "ab", "seat": 1}, "bad_message"),
    ({"type": "ping", "id": 14, "at": 1}, "bad_message"),
]


async def test_fuzz_refused_messages_change_nothing(live: Live) -> None:
    people, table = await private_table(live, "paulista", 2, ["ana", "bia", "eve"])
    tid = table["id"]
    actor = live.house.tables[tid]
    try:
        early = await people[0].ws(tid)
        await early.send_str(json.dumps({"type": "action", "id": 1, "action": {"do": "raise"}}))
        assert json.loads((await early.receive()).data)["error"] == "hello_first"
        await early.close()
        ana, bia = await dealt_pair(people, tid)
        assert ana.view is not None and ana.view["phase"] == "in_hand"
        mover, waiter = (ana, bia) if ana.view["legal"] else (bia, ana)
        before = (actor.seq, actor.state, len(actor.hand.actions) if actor.hand else None)
        cases: list[tuple[dict[str, Any] | str, str]] = list(FORGED)
        # out of turn: every move the waiting seat could make is refused by the engine
        assert waiter.view is not None
        waiter_seat = waiter.seat
        mine = [c["card"] for c in waiter.view["hand"]["players"][waiter_seat]["hand"]]
        assert mover.view is not None and mover.seat is not None
        movers = [c["card"] for c in mover.view["hand"]["players"][mover.seat]["hand"]]
        not_movers = [c for c in ("4C", "5H", "6S", "7D", "QC", "3D") if c not in movers]
        wrong_moves = [{"do": "play", "card": mine[0]}, {"do": "raise"}, {"do": "accept"}]
        # the mover's turn, but a card it does not hold, or moves this variant does not have
        right_moves = [{"do": "play", "card": not_movers[0]}, {"do": "fold"},
                       {"do": "envido"}, {"do": "play", "position": 0}]
        rng = random.Random(3)
        junk = ["".join(rng.choice('{}[]":,aex0159 ') for _ in range(rng.randint(1, 40)))
                for _ in range(30)]
        for text in junk:
            try:
                parsed = json.loads(text)
            except ValueError:
                cases.append((text, "bad_json"))
            else:
                if not isinstance(parsed, dict):
                    cases.append((text, "bad_message"))
        for client, messages in ((waiter, wrong_moves), (mover, right_moves)):
            for move in messages:
                await client.send({"type": "action", "id": "m", "action": move})
                reply = await answer(client)
                assert reply["type"] == "error" and reply["id"] == "m"
                assert reply["error"] in ("not_your_turn", "card_not_in_hand",
                                           "raise_not_allowed", "nothing_to_answer",
                                           "fold_not_allowed", "envido_not_allowed",
                                           "wrong_variant", "bad_action"), reply
        # a forged seat: the other player's
        cases.append(({"type": "action", "id": 6, "action": {"seat": waiter_seat, "do": "raise"}},
                      "wrong_seat"))
        for message, code in cases:
            text = message if isinstance(message, str) else json.dumps(message)
            await mover.ws.send_str(text)
            reply = await answer(mover)
            assert reply["type"] == "error" and reply["error"] == code, (message, reply)
            assert reply["message"]
        await mover.ws.send_str(json.dumps({"type": "ping", "pad": "x" * 5000}))
        assert (await answer(mover))["error"] == "too_large"
        # the limit counts UTF-8 bytes: under it in characters, over it in bytes
        wide = json.dumps({"type": "ping", "pad": "é" * 2100}, ensure_ascii=False)
        assert len(wide) < live.house.settings.max_message_bytes < len(wide.encode())
        await mover.ws.send_str(wide)
        assert (await answer(mover))["error"] == "too_large"
        await mover.ws.send_bytes(b"\x00\x01")
        assert (await answer(mover))["error"] == "bad_message"
        # a spectator (eve has the invite) sees the public view and cannot act
        watcher = SeatClient(await people[2].ws(tid, params={"invite": table["invite"]}), None)
        await watcher.hello()
        await watcher.recv()
        snapshot = await watcher.recv()
        assert snapshot["type"] == "snapshot" and snapshot["view"]["seat"] is None
        assert all(c["card"] is None for p in snapshot["view"]["hand"]["players"]
                   for c in p["hand"])
        await watcher.send({"type": "action", "id": 1, "action": {"do": "raise"}})
        assert (await quiet(watcher))[-1]["error"] == "not_seated"
        await watcher.send({"type": "entropy", "id": 2, "hand": 1, "hex": "aa"})
        assert (await quiet(watcher))[-1]["error"] == "not_seated"
        # nothing changed: no event, same state, same actions
        after = (actor.seq, actor.state, len(actor.hand.actions) if actor.hand else None)
        assert after == before
        assert not [m for m in waiter.received[-20:] if m["type"] == "update"
                    and m["seq"] > before[0]]
        # and the table still plays normally
        mover.autoplay = waiter.autoplay = True
        mover.acted_at = -1
        await mover.react({"type": "update"})
        ack = await mover.until("ack")
        assert ack["seq"] == before[0] + 1
        await watcher.ws.close()
    finally:
        for person in people:
            await person.close()


async def test_refusals_leave_no_garbage_for_the_collector(live: Live) -> None:
    """The house runs the cyclic collector seldom (`server.loops.quiet_gc`): a refused move, or
    a refused entropy, must be freed by reference counting. (Each used to leave a reference
    cycle: its traceback held the frame awaiting its future, which held the refusal.)"""
    people, table = await private_table(live, "paulista", 2, ["ana", "bia"])
    tid = table["id"]
    try:
        ana, bia = await dealt_pair(people, tid)
        waiter = bia if ana.view and ana.view["legal"] else ana
        with cyclic_garbage() as garbage:
            for number in range(6):
                await waiter.send({"type": "action", "id": number, "action": {"do": "raise"}})
                assert (await answer(waiter))["error"] in ("not_your_turn", "raise_not_allowed")
            await waiter.send({"type": "entropy", "id": 9, "hand": 1, "hex": "aa"})
            assert (await answer(waiter))["error"] == "entropy_closed"
        assert [o for o in garbage if isinstance(o, LiveError)] == []
    finally:
        for person in people:
            await person.close()


async def test_a_closed_socket_leaves_no_garbage_for_the_collector(live: Live) -> None:
    """A table socket that closes is freed by reference counting, not left in a cycle for the
    house's seldom collector (aiohttp keeps the socket's heartbeat callback on its protocol)."""
    people, table = await private_table(live, "paulista", 2, ["ana", "bia"])
    tid = table["id"]
    try:
        with cyclic_garbage() as garbage:
            for _ in range(3):
                client = await connect(people[0], tid, 0)
                await client.ws.close()
            for _ in range(100):  # the server's handler ends after the close handshake
                await asyncio.sleep(0.01)
                if not live.house.sockets:
                    break
            assert not live.house.sockets
        assert [o for o in garbage if isinstance(o, web.WebSocketResponse)] == []
    finally:
        for person in people:
            await person.close()


async def test_entropy_refusals(live: Live) -> None:
    people, table = await private_table(live, "argentino", 2, ["ana", "bia"])
    tid = table["id"]
    try:
        ana = await connect(people[0], tid, 0)
        ana.send_entropy = False
        await people[0].post(f"/api/tables/{tid}/start")
        commitment = await ana.until("commitment")
        hand = commitment["hand"]
        for hex_text, code in [("ABCD", "bad_entropy"), ("abc", "bad_entropy"),
                               ("", "bad_entropy"), ("zz", "bad_entropy"),
                               ("abcd\n", "bad_entropy"),
                               ("ab" * 257, "bad_entropy"), (12, "bad_entropy")]:
            await ana.send({"type": "entropy", "id": "e", "hand": hand, "hex": hex_text})
            assert (await ana.until("error"))["error"] == code
        for number in (hand + 1, float(hand), str(hand), True):  # the hand's number, exactly
            await ana.send({"type": "entropy", "id": "e", "hand": number, "hex": "ab"})
            assert (await ana.until("error"))["error"] == "entropy_closed", number
        await ana.send({"type": "entropy", "id": "ok", "hand": hand, "hex": "ab" * 256})
        received = await ana.until("entropy")
        assert received["seat"] == 0 and "hex" not in received
        assert (await ana.until("ack"))["id"] == "ok"
        await ana.send({"type": "entropy", "id": "e", "hand": hand, "hex": "cd"})
        assert (await ana.until("error"))["error"] == "entropy_duplicate"
    finally:
        for person in people:
            await person.close()


async def started_2x2(live: Live, variant: str
                      ) -> tuple[list[Player], str, list[SeatClient]]:
    """A private 2x2 table's match started, its four seats connected, nothing played for them
    (the first hand waits for their entropy)."""
    people, table = await private_table(live, variant, 4, ["ana", "bia", "caio", "davi"])
    tid = table["id"]
    clients = [await connect(p, tid, i) for i, p in enumerate(people)]
    for client in clients:
        client.autoplay = False
    await people[0].post(f"/api/tables/{tid}/start")
    for client in clients:
        await quiet(client)
    return people, tid, clients


async def test_signals_reach_the_partner_only(live: Live) -> None:
    people, _, clients = await started_2x2(live, "argentino")
    try:
        await clients[0].send({"type": "signal", "id": "s", "code": "macho"})
        await clients[0].send({"type": "signal", "id": "t", "code": "zap"})
        got = [await quiet(c) for c in clients]
        signals = [[m for m in g if m["type"] == "signal"] for g in got]
        assert signals[1] == [] and signals[3] == [] and signals[0] == []
        (signal,) = signals[2]
        assert signal["from"] == 0 and signal["code"] == "macho"
        assert signal["label"] == "Tengo el macho"
        assert [m["error"] for m in got[0] if m["type"] == "error"] == ["bad_signal"]
    finally:
        for person in people:
            await person.close()


async def test_socket_access(live: Live) -> None:
    people, table = await private_table(live, "mineiro", 2, ["ana", "bia", "eve"])
    tid = table["id"]
    try:
        # refused before the upgrade, with the API's JSON errors
        async with aiohttp.ClientSession() as anon, anon.get(
                live.base / f"ws/tables/{tid}") as resp:
            assert (resp.status, (await resp.json())["error"]) == (401, "login_required")
        for person, path, headers, expected in [
            (people[0], tid, {"Origin": "https://evil.example"}, (403, "bad_origin")),
            (people[2], tid, {}, (403, "private_table")),  # not seated at this private table
            (people[2], "0123456789abcdef", {}, (404, "table_not_found")),
        ]:
            async with person.session.get(live.base / f"ws/tables/{path}",
                                          headers=headers) as resp:
                assert (resp.status, (await resp.json())["error"]) == expected
        # eve's own table: her socket there gives her no say at ana's table
        other = await create_table(people[2], "mineiro", 2, "training")
        eve = await connect(people[2], other["id"], 0)
        await quiet(eve)
        ana = await connect(people[0], tid, 0)
        await quiet(ana)
        await people[0].post(f"/api/tables/{tid}/start")
        await quiet(ana)
        await eve.send({"type": "action", "id": 1, "action": {"seat": 0, "do": "raise"}})
        assert (await quiet(eve))[-1]["error"] in ("no_hand", "wrong_seat")
        assert [m for m in await quiet(ana) if m["type"] == "update"] == []
    finally:
        for person in people:
            await person.close()


async def _limited(make_app: AppFactory, aiohttp_client: Callable[..., Any],
                   vclock: VirtualClock) -> tuple[Player, str, aiohttp.ClientWebSocketResponse]:
    """ana's socket at a table of hers, on a server allowing bursts of 5 messages (and hardly
    any more after them) that closes a client after 10 refusals in a row."""
    live = await start_live(make_app, aiohttp_client, vclock, rate_per_second=0.001,
                            rate_burst=5.0, flood_close_after=10)
    (ana,) = await players(live.base, "ana")
    table = await create_table(ana, "paulista", 2, "training")
    return ana, table["id"], await ana.ws(table["id"])


async def _until_closed(ws: aiohttp.ClientWebSocketResponse) -> None:
    while True:
        msg = await ws.receive()
        if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING):
            return


async def test_rate_limit_and_flood(make_app: AppFactory, aiohttp_client: Callable[..., Any],
                                    vclock: VirtualClock) -> None:
    ana, tid, ws = await _limited(make_app, aiohttp_client, vclock)
    try:
        for index in range(8):
            await ws.send_str(json.dumps({"type": "ping", "id": index}))
        answers = [json.loads((await ws.receive()).data) for _ in range(8)]
        assert [a["type"] for a in answers[:5]] == ["pong"] * 5
        assert [a.get("error") for a in answers[5:]] == ["rate_limited"] * 3
        for _ in range(20):
            await ws.send_str("{}")
        await _until_closed(ws)
        assert ws.close_code == WSCloseCode.POLICY_VIOLATION
        ws = await ana.ws(tid)
        await ws.send_str("x" * (70 * 1024))  # over the frame limit: closed, 1009
        msg = await ws.receive()
        assert msg.type is WSMsgType.CLOSE and msg.data == WSCloseCode.MESSAGE_TOO_BIG
    finally:
        await ana.close()


async def test_a_flood_gets_every_answer_before_the_close(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a security review sent 160 pings at once: 40 pongs, then only 91 of the 100 promised
    # `rate_limited` errors before the 1008. The errors queued in the turn that closed the
    # socket were written after the close frame, and a client reads nothing after that
    live = await start_live(make_app, aiohttp_client, vclock, rate_per_second=0.001,
                            rate_burst=40.0, flood_close_after=100)
    (ana,) = await players(live.base, "ana")
    table = await create_table(ana, "paulista", 2, "training")
    ws = await ana.ws(table["id"])
    try:
        for n in range(160):
            await ws.send_str(json.dumps({"type": "ping", "id": n}))
        answers: list[tuple[str, int]] = []
        async for msg in ws:  # until the close
            data = json.loads(msg.data)
            if data["type"] in ("pong", "error"):
                answers.append((data.get("error", "pong"), data["id"]))
        assert ws.close_code == WSCloseCode.POLICY_VIOLATION
        assert answers == ([("pong", n) for n in range(40)]
                           + [("rate_limited", n) for n in range(40, 140)])
    finally:
        await ana.close()


async def test_one_user_may_hold_only_so_many_table_sockets(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a security review opened 400 sockets to one table with one account: each one multiplies
    # the per-connection rate limit and holds server memory
    live = await start_live(make_app, aiohttp_client, vclock, max_sockets_per_user=3)
    ana, bia = await players(live.base, "ana", "bia")
    table = await create_table(ana, "paulista", 2, "training")
    url = live.base / f"ws/tables/{table['id']}"
    try:
        # the address without the upgrade says whether a socket would be let in
        async with ana.session.get(url) as resp:
            assert (resp.status, await resp.json()) == (200, {"ok": True, "seated": True})
        async with bia.session.get(url) as resp:
            assert (resp.status, await resp.json()) == (200, {"ok": True, "seated": False})
        sockets = [await ana.ws(table["id"]) for _ in range(3)]
        async with ana.session.get(url) as resp:
            assert (resp.status, (await resp.json())["error"]) == (429, "too_many_sockets")
        # another user is not limited by ana's sockets
        other = await bia.ws(table["id"])
        await other.close()
        # a socket closed frees its place
        await sockets.pop().close()
        for _ in range(100):
            if sum(live.house.user_sockets.values()) < 3:
                break
            await asyncio.sleep(0.01)
        sockets.append(await ana.ws(table["id"]))
        for ws in sockets:
            await ws.close()
    finally:
        await ana.close()
        await bia.close()


async def test_opening_and_closing_sockets_in_a_loop_is_limited(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a hostile review connected and disconnected one seat 300 times in a second: 603 seat
    # events (abandonment evidence) and 600 table events to the other player
    live = await start_live(make_app, aiohttp_client, vclock, connect_burst=4,
                            connect_interval=5.0)
    ana, bia = await players(live.base, "ana", "bia")
    table = await create_table(ana, "paulista", 2, "training")
    url = live.base / f"ws/tables/{table['id']}"
    try:
        for _ in range(4):
            await (await ana.ws(table["id"])).close()
        events = await live.app[POOL].fetchval("SELECT count(*) FROM seat_events")
        async with ana.session.get(url, headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                 "Sec-WebSocket-Version": "13",
                                                 "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
                                   ) as resp:
            assert resp.status == 429
            assert (await resp.json())["error"] == "too_many_connections"
            assert resp.headers["Retry-After"] == "5"
        # the plain GET says so too, and takes nothing
        async with ana.session.get(url) as resp:
            assert (resp.status, (await resp.json())["error"]) == (429, "too_many_connections")
        assert await live.app[POOL].fetchval("SELECT count(*) FROM seat_events") == events
        # another user, or another table, is not limited by ana's sockets
        await (await bia.ws(table["id"])).close()
        other = await create_table(ana, "paulista", 2, "training")
        await (await ana.ws(other["id"])).close()
        # one more every 5 s
        await vclock.advance(5.0)
        await (await ana.ws(table["id"])).close()
        async with ana.session.get(url) as resp:
            assert resp.status == 429
    finally:
        await ana.close()
        await bia.close()


async def test_binary_frames_count_against_the_rate_limit(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    ana, _, ws = await _limited(make_app, aiohttp_client, vclock)
    try:
        for _ in range(8):
            await ws.send_bytes(b"\x00\x01")
        answers = [json.loads((await ws.receive()).data) for _ in range(8)]
        assert [a["error"] for a in answers] == ["bad_message"] * 5 + ["rate_limited"] * 3
        await ws.send_str(json.dumps({"type": "ping", "id": 1}))  # the bucket is empty
        assert json.loads((await ws.receive()).data)["error"] == "rate_limited"
        for _ in range(20):  # an unbroken flood of binary frames closes the socket too
            await ws.send_bytes(b"\x00")
        await _until_closed(ws)
        assert ws.close_code == WSCloseCode.POLICY_VIOLATION
    finally:
        await ana.close()


class _Socket:
    """The WebSocketResponse side a Connection uses: closing it."""

    closed = False
    close_code: int | None = None

    async def close(self, *, code: int, message: bytes) -> bool:
        self.close_code = code
        self.closed = True
        return True


class _StuckTransport(asyncio.WriteTransport):
    """A peer that never reads: everything written stays in the transport's buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self.writes))

    def is_closing(self) -> bool:
        return False


async def test_the_rate_bucket_holds_no_more_than_a_burst(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(ws_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    settings = LiveSettings()
    conn = Connection(_Socket(), _StuckTransport(), 1, settings)  # type: ignore[arg-type]
    now[0] += 1000.0  # a long quiet while: the bucket refills to a burst, no fuller
    burst = int(settings.rate_burst)
    assert [conn.allow() for _ in range(burst + 1)] == [True] * burst + [False]
    await conn.close()


def _frames(data: bytes) -> list[bytes]:
    """Split server-to-client text frames (unmasked; 7- or 16-bit lengths)."""
    out = []
    while data:
        assert data[0] == 0x81  # FIN, text
        size, start = data[1], 2
        if size == 126:
            size, start = int.from_bytes(data[2:4], "big"), 4
        out.append(data[start:start + size])
        data = data[start + size:]
    return out


async def test_slow_client_is_disconnected_not_waited_for() -> None:
    socket, transport = _Socket(), _StuckTransport()
    conn = Connection(socket, transport, 1,  # type: ignore[arg-type]
                      LiveSettings(send_buffer_bytes=1000))
    for index in range(10):
        conn.send(b'"' + b"x" * 300 + b'%d"' % index)  # never blocks the caller
        await asyncio.sleep(0)
    await conn.close()
    assert socket.close_code == WSCloseCode.TRY_AGAIN_LATER
    sent = [frame for chunk in transport.writes for frame in _frames(chunk)]
    assert sent == [b'"' + b"x" * 300 + b'%d"' % i for i in range(3)]  # then no more
    assert transport.get_write_buffer_size() <= 1000


async def test_a_close_the_peer_never_reads_drops_the_socket() -> None:
    # aiohttp's close waits for the socket to drain before its close frame: a review's client,
    # too slow to read, was told so and never dropped (its seat stayed connected for good)
    class Undrained(_Socket):
        async def close(self, *, code: int, message: bytes) -> bool:
            self.close_code = code
            self.closed = True
            await asyncio.Event().wait()  # the peer reads nothing
            return True

    class Transport(_StuckTransport):
        aborted = False

        def abort(self) -> None:
            self.aborted = True

    socket, transport = Undrained(), Transport()
    conn = Connection(socket, transport, 1,  # type: ignore[arg-type]
                      LiveSettings(send_buffer_bytes=1000, close_grace_seconds=0.05))
    for index in range(10):
        conn.send(b'"' + b"x" * 300 + b'%d"' % index)
    await asyncio.wait_for(conn.close(), 10)
    assert socket.close_code == WSCloseCode.TRY_AGAIN_LATER and transport.aborted


def _masked_text(payload: bytes) -> bytes:
    """A client's text frame (masked, RFC 6455 5.3), payload under 126 bytes."""
    mask = b"\x01\x02\x03\x04"
    assert len(payload) < 126
    return (bytes([0x81, 0x80 | len(payload)]) + mask
            + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


async def test_a_client_too_slow_to_read_is_dropped_and_its_seat_freed(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock, send_buffer_bytes=4096,
                            close_grace_seconds=0.3)
    (ana,) = await players(live.base, "ana")
    table = await create_table(ana, "paulista", 2, "training")
    status, body = await ana.post(f"/api/tables/{table['id']}/start")
    assert status == 200, body
    actor = live.house.tables[table["id"]]
    # a socket that reads nothing: small buffers on both sides fill at once
    url = live.base.join(URL(f"/ws/tables/{table['id']}"))
    reader, writer = await asyncio.open_connection(
        url.host, url.port, limit=1024)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket_module.SOL_SOCKET, socket_module.SO_RCVBUF, 4096)
    cookies = "; ".join(f"{c.key}={c.value}" for c in ana.session.cookie_jar)
    writer.write(f"GET {url.path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
                 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                 f"Origin: http://{url.host}:{url.port}\r\nCookie: {cookies}\r\n\r\n".encode())
    assert (await reader.readline()).startswith(b"HTTP/1.1 101")
    try:
        [conn] = live.house.sockets.values()
        conn._transport.get_extra_info("socket").setsockopt(
            socket_module.SOL_SOCKET, socket_module.SO_SNDBUF, 4096)
        for _ in range(100):  # the socket's opening reaches the table
            if actor.connected(0):
                break
            await asyncio.sleep(0.02)
        assert actor.connected(0)
        # each hello from the start is the table's history again, and nothing is read
        for _ in range(30):
            writer.write(_masked_text(b'{"type":"hello","last_seq":0}'))
            await asyncio.sleep(0.05)
            if not live.house.sockets:
                break
        for _ in range(100):  # the close's grace, then the handler ends
            if not live.house.sockets and not actor.connected(0):
                break
            await asyncio.sleep(0.05)
        assert not live.house.sockets and not actor.connected(0)
    finally:
        writer.close()
        await ana.close()


async def test_messages_of_one_turn_leave_in_one_write() -> None:
    socket, transport = _Socket(), _StuckTransport()
    conn = Connection(socket, transport, 1, LiveSettings())  # type: ignore[arg-type]
    long_text = json.dumps({"type": "update", "pad": "y" * 300}).encode()
    conn.send(b'{"type":"update"}')
    conn.send(long_text)
    conn.send_json({"type": "ack", "id": 1, "seq": 7})
    assert transport.writes == []  # written at the end of this turn, not one by one
    await asyncio.sleep(0)
    assert len(transport.writes) == 1
    assert _frames(transport.writes[0]) == [
        b'{"type":"update"}', long_text, b'{"type":"ack","id":1,"seq":7}']
    await conn.close()
    assert socket.close_code is None


async def test_a_close_sends_what_this_turn_queued_first() -> None:
    # a table that closes its sockets (`close_soon`) right after sending them something: the
    # close frame went before those frames, which the client then never read
    transport = _StuckTransport()

    class Socket(_Socket):
        async def close(self, *, code: int, message: bytes) -> bool:
            transport.writes.append(b"<close>")
            return await super().close(code=code, message=message)

    socket = Socket()
    conn = Connection(socket, transport, 1, LiveSettings())  # type: ignore[arg-type]
    conn.send_json({"type": "error", "id": 1, "error": "table_closed", "message": "closed"})
    conn.close_soon(WSCloseCode.INTERNAL_ERROR, "table unavailable")
    conn.send(b'{"type":"update"}')  # after the close: not sent
    await conn.close()
    assert socket.close_code == WSCloseCode.INTERNAL_ERROR
    assert len(transport.writes) == 2 and transport.writes[1] == b"<close>"
    assert _frames(transport.writes[0]) == [
        b'{"type":"error","id":1,"error":"table_closed","message":"closed"}']


async def test_shutdown_closes_sockets_going_away(live: Live) -> None:
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 4, "training")
        client = await connect(ana, table["id"], 0)
        await quiet(client)
        await live.client.close()
        msg = await client.ws.receive(timeout=5)
        assert msg.type is WSMsgType.CLOSE and msg.data == WSCloseCode.GOING_AWAY
    finally:
        await ana.close()


async def test_a_logout_closes_the_sockets_of_that_session_only(live: Live) -> None:
    (ana,) = await players(live.base, "ana")
    elsewhere = await Player(live.base, "ana").login()  # ana signed in on another device too
    try:
        table = await create_table(ana, "paulista", 2, "training")
        here = await connect(ana, table["id"], 0)
        there = await connect(elsewhere, table["id"], 0)
        await quiet(here)
        await quiet(there)
        status, _ = await ana.post("/api/logout")
        assert status == 200
        msg = await here.ws.receive(timeout=5)
        assert (msg.type, msg.data, msg.extra) == (
            WSMsgType.CLOSE, WSCloseCode.POLICY_VIOLATION, "signed out")
        # the other session's socket still speaks for ana
        await there.send({"type": "hello", "last_seq": 0})
        assert [m["type"] for m in await quiet(there)][:1] == ["welcome"]
        # and the logged-out session opens no new one
        async with ana.session.get(live.base / f"ws/tables/{table['id']}") as resp:
            assert (resp.status, (await resp.json())["error"]) == (401, "login_required")
    finally:
        await ana.close()
        await elsewhere.close()


async def test_seeds_are_sealed_at_rest(live: Live) -> None:
    (ana,) = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        client = await connect(ana, tid, 0)
        client.autoplay = False
        await ana.post(f"/api/tables/{tid}/start")
        await client.until("update")
        actor = live.house.tables[tid]
        assert actor.hand is not None and actor.chain is not None
        seed, number = actor.hand.seed, actor.hand.number
        pool = live.app[POOL]
        row = await pool.fetchrow("SELECT * FROM live_hands WHERE table_id = $1", tid)
        dump = b"".join(bytes(v) if isinstance(v, bytes) else str(v).encode()
                        for v in row.values())
        chain_row = await pool.fetchrow("SELECT * FROM seed_chains WHERE table_id = $1", tid)
        dump += bytes(chain_row["tip_sealed"]) + str(chain_row["anchor"]).encode()
        for secret in (seed, actor.chain.seeds[-1]):
            assert secret not in dump and secret.hex().encode() not in dump
        sealed = bytes(row["seed_sealed"])
        key = live.house.config.seed_key
        assert unseal(key, SealedKind.SEED, tid, number, sealed) == seed
        assert hashlib.sha256(seed).digest() == bytes(row["commitment"])
        for wrong in ((SealedKind.SEED, tid, number + 1), (SealedKind.TIP, tid, number),
                      (SealedKind.SEED, "f" * 16, number)):
            with pytest.raises(SealError):
                unseal(key, *wrong, sealed)
        with pytest.raises(SealError):
            unseal(b"k" * 32, SealedKind.SEED, tid, number, sealed)
        # two seals of one seed differ (fresh nonce each time)
        other = await pool.fetchval("SELECT tip_sealed FROM seed_chains WHERE table_id = $1", tid)
        assert bytes(other)[:12] != sealed[:12]
        client.autoplay = True
        client.acted_at = -1
        await client.react({"type": "update"})
        await client.until("hand_record")
        assert await pool.fetchval(
            "SELECT seed_sealed FROM live_hands WHERE table_id = $1 AND hand = $2",
            tid, number) is None  # revealed in the record: nothing left to keep secret
    finally:
        await ana.close()


def test_a_dropped_sockets_close_error_leaves_no_cycle() -> None:
    """aiohttp keeps the error of a close written to a dead connection on the socket, raised
    while it handled the end of the stream: both tracebacks hold frames that hold the socket (a
    soak found 30 such sockets, 7 frames each, kept by the house's collector). As the handler
    lets the socket go, it lets go of those tracebacks (`forget_tracebacks`)."""

    class Socket:
        def __init__(self) -> None:
            self.error: BaseException | None = None

        def receive(self) -> None:
            try:
                raise EOFError("the stream ended")
            except EOFError:
                self.close()

        def close(self) -> None:
            try:
                raise ConnectionResetError("cannot write to a closing transport")
            except ConnectionResetError as exc:
                self.error = exc  # its traceback holds this frame, which holds `self`

    def dropped(forget: bool) -> list[object]:
        with cyclic_garbage() as garbage:
            ws = Socket()
            ws.receive()
            chained = ws.error is not None and ws.error.__context__ is not None
            if forget:
                forget_tracebacks(ws.error)
            del ws
        assert chained
        return garbage

    assert any(isinstance(o, Socket) for o in dropped(forget=False))  # the cycle
    assert dropped(forget=True) == []
