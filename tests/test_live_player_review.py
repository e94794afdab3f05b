"""What a player's review of 2x2 tables found on the server's side: a partner signal sent while
the partner is away waits for them in the hand (a reconnect's catch-up and a reload's snapshot
carry it), and a disconnected seat's table says when its match is cancelled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.app import POOL
from server.clock import VirtualClock
from server.live.table import SIGNALS_KEPT, ms
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, Player, connect, start_live
from tests.test_live_protocol import live as live  # the fixture
from tests.test_live_protocol import private_table, quiet, settle, started_2x2


def _signals(messages: list[dict[str, Any]]) -> list[str]:
    return [m["code"] for m in messages if m["type"] == "signal"]


async def test_a_signal_sent_while_the_partner_is_away_waits_for_them_in_the_hand(
        live: Live) -> None:
    people, tid, clients = await started_2x2(live, "paulista")
    try:
        caio = clients[2]
        # caio (ana's partner) is away: his socket closed, a catch-up later
        await caio.ws.close()
        await quiet(clients[0])
        await clients[0].send({"type": "signal", "id": "s1", "code": "zap"})
        await clients[0].send({"type": "signal", "id": "s2", "code": "tres"})
        assert [m["type"] for m in await quiet(clients[0])] == ["ack", "ack"]
        caio.ws = await people[2].ws(tid)
        await caio.hello()
        got = await quiet(caio)
        assert got[0]["type"] == "welcome" and "snapshot" not in [m["type"] for m in got]
        assert _signals(got) == ["zap", "tres"]
        assert all(m["from"] == 0 for m in got if m["type"] == "signal")
        # taken once: another catch-up does not repeat them
        await caio.ws.close()
        caio.ws = await people[2].ws(tid)
        await caio.hello()
        assert _signals(await quiet(caio)) == []
        # a reload (a snapshot) shows the hand's signals again; nobody else ever gets them
        again = await connect(people[2], tid, 2)
        snapshot = next(m for m in await quiet(again) if m["type"] == "snapshot")
        assert [s["code"] for s in snapshot["partner_signals"]] == ["zap", "tres"]
        assert snapshot["partner_signals"][0]["label"] == "Tenho o zap"
        for seat in (1, 3):
            other = await connect(people[seat], tid, seat)
            got = await quiet(other)
            assert next(m for m in got if m["type"] == "snapshot")["partner_signals"] == []
            assert _signals(got) == []
        # ana's own snapshot holds none (she sent them)
        mine = await connect(people[0], tid, 0)
        assert next(m for m in await quiet(mine) if m["type"] == "snapshot"
                    )["partner_signals"] == []
    finally:
        for person in people:
            await person.close()


async def test_a_partners_signals_outlive_a_restart_sealed_at_rest(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # acknowledged, so kept: they were in the server's memory only, and a restart lost them
    first = await start_live(make_app, aiohttp_client, vclock)
    people, tid, clients = await started_2x2(first, "paulista")
    await clients[2].ws.close()  # caio (ana's partner) is away
    await quiet(clients[0])
    await clients[0].send({"type": "signal", "id": "s1", "code": "zap"})
    await clients[0].send({"type": "signal", "id": "s2", "code": "tres"})
    assert [m["type"] for m in await quiet(clients[0])] == ["ack", "ack"]
    sealed = [bytes(r["sealed"]) for r in await first.app[POOL].fetch(
        "SELECT sealed FROM live_signals WHERE table_id = $1 ORDER BY id", tid)]
    assert len(sealed) == 2
    # a leaked database does not tell what was said of cards still hidden
    assert not any(word in value for value in sealed for word in (b"zap", b"tres", b"code"))
    for person in people:
        await person.close()
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    people = [await Player(second.base, name).login() for name in ("ana", "bia", "caio", "davi")]
    try:
        caio = await connect(people[2], tid, 2)
        snapshot = next(m for m in await quiet(caio) if m["type"] == "snapshot")
        assert [(s["from"], s["code"], s["label"]) for s in snapshot["partner_signals"]] == [
            (0, "zap", "Tenho o zap"), (0, "tres", "Tenho três")]
        for seat in (0, 1, 3):
            other = await connect(people[seat], tid, seat)
            got = await quiet(other)
            assert next(m for m in got if m["type"] == "snapshot")["partner_signals"] == []
        # the hand is played out; the first signal of the next one clears the stored ones
        clients = [await connect(people[seat], tid, seat) for seat in range(4)]
        for client in clients:
            client.modest = True  # no raise to twelve ends the match with this hand
        await settle(clients, lambda: any((c.view_hand or 0) >= 2 for c in clients))
        for client in clients:
            client.autoplay = False  # the hand stays where it is
        await clients[1].send({"type": "signal", "id": "s3", "code": "copas"})
        await settle(clients, lambda: "s3" not in clients[1].unanswered)
        rows = await second.app[POOL].fetch(
            "SELECT hand FROM live_signals WHERE table_id = $1", tid)
        hand = second.house.tables[tid].hand
        assert hand is not None and hand.number > 1
        assert [r["hand"] for r in rows] == [hand.number]
        # each is written: a flood is refused past SIGNALS_KEPT a hand, and changes nothing
        for n in range(SIGNALS_KEPT):
            await clients[1].send({"type": "signal", "id": f"f{n}", "code": "fraco"})
        await settle(clients, lambda: not clients[1].unanswered)
        await clients[1].send({"type": "signal", "id": "over", "code": "fraco"})
        await settle(clients, lambda: not clients[1].unanswered)
        refused = [e for e in clients[1].errors if e["id"] == "over"]
        assert [e["error"] for e in refused] == ["too_many_signals"]
        assert await second.app[POOL].fetchval(
            "SELECT count(*) FROM live_signals WHERE table_id = $1", tid) == SIGNALS_KEPT
    finally:
        for person in people:
            await person.close()


async def test_a_disconnected_seat_says_when_the_match_is_cancelled(
        live: Live, vclock: VirtualClock) -> None:
    people, table = await private_table(live, "mineiro", 2, ["ana", "bia"])
    tid = table["id"]
    try:
        ana, bia = await connect(people[0], tid, 0), await connect(people[1], tid, 1)
        ana.autoplay = bia.autoplay = False
        await people[0].post(f"/api/tables/{tid}/start")
        await quiet(ana)
        await quiet(bia)
        players = (await people[0].get(f"/api/tables/{tid}"))[1]["table"]["players"]
        assert [p["cancel_at_ms"] for p in players] == [None, None]
        await bia.ws.close()
        left_at = vclock.now()
        event = next(m for m in reversed(await quiet(ana)) if m["type"] == "table")
        cancel = [p["cancel_at_ms"] for p in event["table"]["players"]]
        assert cancel == [None, ms(left_at + 60)]
        # the lobby's JSON says it too; back at the table, the countdown is gone
        assert (await people[0].get(f"/api/tables/{tid}"))[1]["table"]["players"][1][
            "cancel_at_ms"] == ms(left_at + 60)
        bia = await connect(people[1], tid, 1)
        event = next(m for m in reversed(await quiet(ana)) if m["type"] == "table")
        assert [p["cancel_at_ms"] for p in event["table"]["players"]] == [None, None]
    finally:
        for person in people:
            await person.close()
