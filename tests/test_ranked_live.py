"""The wiring between the live house and the ranked service: a ranked table plays one match (no
rematch), its settlement pays and rates the players the match started with, once, and an
abandonment in a match that outlived a server run is exempt (the house's `restart_overlap`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from server.app import POOL
from server.clock import VirtualClock
from server.live.house import Lineup
from server.live.model import TableKind
from server.live.table import MatchResult
from server.ranked import ledger, ratings
from server.ranked.service import RANKED
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, Player, connect, create_table, players, start_live
from truco import Termination, Variant

STAKE = 50


async def _ids(live: Live, *names: str) -> list[int]:
    rows = await live.app[POOL].fetch(
        "SELECT id, name FROM users WHERE name = ANY($1::text[])", list(names))
    ids = {row["name"]: row["id"] for row in rows}
    return [ids[name] for name in names]


async def _launch(live: Live, users: list[int]) -> str:
    """Open a ranked table as the ranked service does: launch it, then hold the stakes."""
    tid = await live.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, STAKE)
    await ledger.hold_stakes(live.app[POOL], f"ranked:{tid}:1", users, STAKE)
    return tid


async def _record_status(live: Live, tid: str) -> list[tuple[int, str]]:
    rows = await live.app[POOL].fetch(
        "SELECT user_id, status FROM ranked_abandonments WHERE match_ref = $1",
        f"ranked:{tid}:1")
    return [(row["user_id"], row["status"]) for row in rows]


async def _movements(live: Live, tid: str) -> list[str]:
    rows = await live.app[POOL].fetch(
        "SELECT reason FROM chip_entries WHERE match_ref = $1 ORDER BY id", f"ranked:{tid}:1")
    return [row["reason"] for row in rows]


async def test_a_ranked_table_refuses_a_rematch_and_settles_its_match_once(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        users = await _ids(live, "ana", "bia")
        tid = await _launch(live, users)
        status, body = await bia.post(f"/api/tables/{tid}/rematch")
        assert (status, body["error"]) == (409, "rematch_not_allowed")  # not even mid-match
        # ana resigns: the match ends by abandonment, settled for both players
        status, _ = await ana.post(f"/api/tables/{tid}/leave")
        assert status == 200
        pool = live.app[POOL]
        assert await ledger.balance(pool, users[0]) == 1000 - STAKE
        assert await ledger.balance(pool, users[1]) == 1000 + STAKE
        assert await _movements(live, tid) == ["hold", "payout"]
        assert await _record_status(live, tid) == [(users[0], "pending")]  # no restart: counts
        won = await ratings.rating_of(pool, users[1], Variant.PAULISTA, 2)
        assert won.rating > 1500
        assert tid not in live.house.lineups  # settled: nothing kept for the table

        # the winner asks for a rematch: refused, nothing starts, nothing is staked again
        status, body = await bia.post(f"/api/tables/{tid}/rematch")
        assert (status, body["error"]) == (409, "rematch_not_allowed")
        _, table = await bia.get(f"/api/tables/{tid}")
        assert table["table"]["match"] == 1 and table["table"]["rematch"] == []
        assert await _movements(live, tid) == ["hold", "payout"]

        # the table reports a seat emptied (0): the lineup it was launched with is used, and a
        # second settlement of the same match moves nothing
        result = MatchResult(
            table_id=tid, match_number=1, kind=TableKind.RANKED, variant=Variant.PAULISTA,
            seats=2, users_by_seat=(0, users[1]), termination=Termination.ABANDONMENT,
            winner_team=1, forfeit_seat=0, evidence=())
        assert live.house.lineup(result) is None  # settled and forgotten: nobody to guess
        live.house.lineups[tid] = Lineup(tuple(users), restart_overlap=False)
        lineup = live.house.lineup(result)
        assert lineup is not None and lineup.users_by_seat == tuple(users)
        await live.house.settle(result)
        assert await ledger.balance(pool, users[1]) == 1000 + STAKE
        assert await _movements(live, tid) == ["hold", "payout"]
        assert len(await ratings.history(pool, users[1], Variant.PAULISTA, 2)) == 1

        # the freed seat is not a lobby seat: nobody joins, moves or starts a second,
        # unstaked and unpaired match at a ranked table
        cid, = await players(live.base, "cid")
        try:
            for who, path, body in [(cid, "join", {"seat": 0}), (bia, "seat", {"seat": 0}),
                                    (bia, "start", None)]:
                status, answer = await who.post(f"/api/tables/{tid}/{path}", body)
                assert (status, answer["error"]) == (409, "matchmaker_table"), path
            _, table = await bia.get(f"/api/tables/{tid}")
            assert table["table"]["match"] == 1
            assert await _movements(live, tid) == ["hold", "payout"]
        finally:
            await cid.close()
    finally:
        await ana.close()
        await bia.close()


async def test_an_abandonment_in_a_match_that_outlived_a_restart_is_exempt(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(first.base, "ana", "bia")
    users = await _ids(first, "ana", "bia")
    tid = await _launch(first, users)
    assert first.house.lineups[tid].restart_overlap is False
    await ana.close()
    await bia.close()
    await first.client.close()  # a clean stop mid-match

    await vclock.advance(30.0)
    second = await start_live(make_app, aiohttp_client, vclock)
    ana = await Player(second.base, "ana").login()
    try:
        lineup = second.house.lineups[tid]
        assert lineup.users_by_seat == tuple(users) and lineup.restart_overlap is True
        # the ranked service knows them seated: neither can queue for a second table meanwhile
        service = second.app[RANKED]
        assert service.seated == {users[0]: tid, users[1]: tid}
        status, body = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
        assert (status, body["error"]) == (409, "already_queued")
        status, _ = await ana.post(f"/api/tables/{tid}/leave")
        assert status == 200
        pool = second.app[POOL]
        # the match is lost and paid as any other, but the record carries no penalty
        assert await _movements(second, tid) == ["hold", "payout"]
        assert await ledger.balance(pool, users[1]) == 1000 + STAKE
        assert await _record_status(second, tid) == [(users[0], "exempt")]
        assert len(await ratings.history(pool, users[0], Variant.PAULISTA, 2)) == 1
        assert service.seated == {}
    finally:
        await ana.close()


async def test_a_settlement_cut_off_by_a_crash_is_made_at_the_next_start(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(first.base, "ana", "bia")
    users = await _ids(first, "ana", "bia")
    tid = await _launch(first, users)
    first.house.settler = None  # the process dies between the match's end and its settlement
    status, _ = await ana.post(f"/api/tables/{tid}/leave")
    assert status == 200
    assert await _movements(first, tid) == ["hold"]
    await ana.close()
    await bia.close()
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    pool = second.app[POOL]
    # settled once at start: paid, both rated, the resigning player's record made
    assert await _movements(second, tid) == ["hold", "payout"]
    assert await ledger.balance(pool, users[1]) == 1000 + STAKE
    assert await _record_status(second, tid) == [(users[0], "pending")]
    for user in users:
        assert len(await ratings.history(pool, user, Variant.PAULISTA, 2)) == 1
    await second.client.close()
    # and not again at the start after
    third = await start_live(make_app, aiohttp_client, vclock)
    assert await _movements(third, tid) == ["hold", "payout"]
    assert len(await ratings.history(third.app[POOL], users[1], Variant.PAULISTA, 2)) == 1


async def test_a_settlement_cut_off_by_a_crash_is_made_at_the_next_start_after_seats_emptied(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        caplog: pytest.LogCaptureFixture) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia, cid, dan = await players(first.base, "ana", "bia", "cid", "dan")
    users = await _ids(first, "ana", "bia")
    legacy = await _ids(first, "cid", "dan")
    tid = await _launch(first, users)
    old = await _launch(first, legacy)
    first.house.settler = None  # the process dies between the matches' ends and settlements
    pool = first.app[POOL]
    for resigning, winner, table in ((ana, bia, tid), (cid, dan, old)):
        status, _ = await resigning.post(f"/api/tables/{table}/leave")
        assert status == 200
        # the winner leaves the finished table too: every seat of it is empty now
        status, _ = await winner.post(f"/api/tables/{table}/leave")
        assert status == 200
        assert await pool.fetch(
            "SELECT user_id FROM live_seats WHERE table_id = $1 AND user_id IS NOT NULL",
            table) == []
        assert await _movements(first, table) == ["hold"]
    # a match written before migration 026: who played it is not recorded
    await pool.execute("UPDATE live_matches SET players = NULL WHERE table_id = $1", old)
    for player in (ana, bia, cid, dan):
        await player.close()
    await first.client.close()

    caplog.set_level(logging.INFO, logger="barajamos.ranked")
    second = await start_live(make_app, aiohttp_client, vclock)
    pool = second.app[POOL]
    # settled at start for the players the match started with, though nobody sits there now
    assert await _movements(second, tid) == ["hold", "payout"]
    assert await ledger.balance(pool, users[0]) == 1000 - STAKE
    assert await ledger.balance(pool, users[1]) == 1000 + STAKE
    assert await _record_status(second, tid) == [(users[0], "pending")]
    for user in users:
        assert len(await ratings.history(pool, user, Variant.PAULISTA, 2)) == 1
    # the older match names nobody for the emptied winner's seat: left for an operator, its
    # stakes still held and nobody rated (paying or rating a guess is worse)
    assert await _movements(second, old) == ["hold"]
    assert await ledger.balance(pool, legacy[1]) == 1000 - STAKE
    for user in legacy:
        assert not await ratings.history(pool, user, Variant.PAULISTA, 2)
    unknown = [r for r in caplog.records if r.getMessage() == "ranked_unsettled_unknown_players"]
    assert [getattr(r, "table", None) for r in unknown] == [old]
    await second.client.close()
    # and not again at the start after
    third = await start_live(make_app, aiohttp_client, vclock)
    assert await _movements(third, tid) == ["hold", "payout"]
    assert len(await ratings.history(third.app[POOL], users[1], Variant.PAULISTA, 2)) == 1


async def test_a_match_records_the_players_it_started_with(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        pool = live.app[POOL]
        users = await _ids(live, "ana", "bia")

        async def recorded(table_id: str) -> list[list[int | None]]:
            rows = await pool.fetch(
                "SELECT players FROM live_matches WHERE table_id = $1 ORDER BY number", table_id)
            return [list(row["players"]) for row in rows]

        # a ranked table: the players it was launched with, seat by seat
        tid = await _launch(live, list(reversed(users)))
        assert await recorded(tid) == [list(reversed(users))]
        # a training table: its humans where they sit, None for the bots' seats; the row keeps
        # them when a player leaves (resigning) and the seat empties
        table = await create_table(ana, "paulista", 4, "training")
        training = table["id"]
        status, body = await bia.post(f"/api/tables/{training}/join", {"seat": 3})
        assert status == 200, body
        status, body = await ana.post(f"/api/tables/{training}/start")
        assert status == 200, body
        assert await recorded(training) == [[users[0], None, None, users[1]]]
        status, _ = await bia.post(f"/api/tables/{training}/leave")
        assert status == 200
        assert await pool.fetchval(
            "SELECT user_id FROM live_seats WHERE table_id = $1 AND seat = 3", training) is None
        assert await recorded(training) == [[users[0], None, None, users[1]]]
    finally:
        await ana.close()
        await bia.close()


async def test_a_match_that_spanned_a_restart_stays_exempt_when_settled_at_the_next_start(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(first.base, "ana", "bia")
    users = await _ids(first, "ana", "bia")
    tid = await _launch(first, users)
    await ana.close()
    await bia.close()
    await first.client.close()  # a restart mid-match
    await vclock.advance(30.0)
    second = await start_live(make_app, aiohttp_client, vclock)
    assert second.house.lineups[tid].restart_overlap is True
    second.house.settler = None  # ...and the process dies before the settlement
    ana = await Player(second.base, "ana").login()
    status, _ = await ana.post(f"/api/tables/{tid}/leave")
    assert status == 200
    await ana.close()
    await second.client.close()
    # settled at the next start, as it would have been live: the restart exempts it
    third = await start_live(make_app, aiohttp_client, vclock)
    assert await _record_status(third, tid) == [(users[0], "exempt")]


async def test_a_match_rebuilt_mid_play_keeps_the_players_it_started_with(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    """Its settlement names the seat's player even if the seat was emptied before the crash
    (a resignation between hands leaves it empty while the match is still on)."""
    first = await start_live(make_app, aiohttp_client, vclock)
    for player in await players(first.base, "ana", "bia"):
        await player.close()
    users = await _ids(first, "ana", "bia")
    tid = await _launch(first, users)
    await first.app[POOL].execute(
        "UPDATE live_seats SET user_id = NULL WHERE table_id = $1 AND seat = 1", tid)
    await first.client.close()  # a restart mid-match
    second = await start_live(make_app, aiohttp_client, vclock)
    assert second.house.lineups[tid] == Lineup(tuple(users), restart_overlap=True)
    await second.client.close()


async def test_a_stake_that_cannot_be_held_closes_the_table_unplayed(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    live = await start_live(make_app, aiohttp_client, vclock)
    ana, bia, caio = await players(live.base, "ana", "bia", "caio")
    try:
        pool = live.app[POOL]
        users = await _ids(live, "ana", "bia")
        # bia's chips are all at stake elsewhere when the table opens
        (caio_id,) = await _ids(live, "caio")
        await ledger.hold_stakes(pool, "ranked:00000000000000aa:1", [users[1], caio_id], 1000)

        async def hold(table_id: str) -> None:
            await ledger.hold_stakes(pool, f"ranked:{table_id}:1", users, STAKE)

        with pytest.raises(ledger.LedgerError) as refused:
            await live.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, STAKE,
                                    before_start=hold)
        assert refused.value.code == "insufficient_chips"
        # nothing dealt, nothing held, the table closed and forgotten
        assert live.house.tables == {} and live.house.lineups == {}
        assert await pool.fetchval("SELECT count(*) FROM live_matches") == 0
        assert await pool.fetchval("SELECT status FROM live_tables") == "closed"
        assert await ledger.balance(pool, users[0]) == 1000
    finally:
        await ana.close()
        await bia.close()
        await caio.close()


async def test_a_launch_cut_off_before_the_first_deal_closes_and_refunds(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(first.base, "ana", "bia")
    users = await _ids(first, "ana", "bia")
    pool = first.app[POOL]
    crash: list[str] = []

    async def hold_then_die(table_id: str) -> None:
        await ledger.hold_stakes(pool, f"ranked:{table_id}:1", users, STAKE)
        crash.append(table_id)
        raise asyncio.CancelledError  # the process stops here: nothing after runs

    with pytest.raises(asyncio.CancelledError):
        await first.house.launch(TableKind.RANKED, Variant.PAULISTA, 2, users, STAKE,
                                 before_start=hold_then_die)
    (tid,) = crash
    assert await ledger.balance(pool, users[0]) == 1000 - STAKE
    await ana.close()
    await bia.close()
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    pool = second.app[POOL]
    assert await _movements(second, tid) == ["hold", "refund"]
    for user in users:
        assert await ledger.balance(pool, user) == 1000
    assert await pool.fetchval("SELECT status FROM live_tables WHERE id = $1", tid) == "closed"
    assert second.house.tables == {}


async def test_a_ranked_or_arena_table_never_reopens_after_a_player_leaves(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    """A player review saw a ranked table go back to `open` (seats offered, "Começar a
    partida", listed as waiting in the lobby, the end of the match gone after a reload) once a
    player resigned or left the finished table. The matchmaker's tables play one match: they
    stay finished for whoever is still there, and close when everybody has left."""
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia, cid, dan, eva = await players(first.base, "ana", "bia", "cid", "dan", "eva")
    try:
        users = await _ids(first, "ana", "bia")
        tid = await _launch(first, users)
        watcher = await connect(eva, tid, None)  # a spectator
        await watcher.until("snapshot", react=False)
        status, body = await ana.post(f"/api/tables/{tid}/leave")  # resigning mid-match
        assert status == 200 and body["table"]["status"] == "finished", body
        over = await watcher.until("match_over", react=False)
        assert over["winner"] == 1
        table = await watcher.until("table", react=False)
        while table["table"]["players"][0]["name"] is not None:
            table = await watcher.until("table", react=False)
        assert table["table"]["status"] == "finished"
        for who in (bia, eva):
            _, body = await who.get(f"/api/tables/{tid}")
            assert body["table"]["status"] == "finished", body
            assert body["table"]["players"][1]["name"] == "bia"
            # the seat ana left still says who played it: the result names her after a reload
            assert [p["played_by"] for p in body["table"]["players"]] == ["ana", "bia"]
        # a reload still shows the end of the match: the snapshot's view has the outcome
        for who, seat in ((bia, 1), (eva, None)):
            again = await connect(who, tid, seat)
            snapshot = await again.until("snapshot", react=False)
            assert snapshot["table"]["status"] == "finished"
            assert snapshot["view"]["outcome"]["winner"] == 1
            await again.ws.close()
        # never offered in the lobby, never seated by hand; the winner's own list says finished
        _, listed = await cid.get("/api/tables")
        assert tid not in {t["id"] for t in listed["tables"]}
        _, mine = await bia.get("/api/tables?mine=1")
        assert [(t["id"], t["status"]) for t in mine["tables"]] == [(tid, "finished")]
        for who, path, payload in [(cid, "join", {"seat": 0}), (bia, "seat", {"seat": 0}),
                                   (bia, "start", None)]:
            status, answer = await who.post(f"/api/tables/{tid}/{path}", payload)
            assert (status, answer["error"]) == (409, "matchmaker_table"), path
        assert await _movements(first, tid) == ["hold", "payout"]  # settled once, as before

        # an arena 2x2: a resignation, then the partner leaves the finished table
        four = await _ids(first, "ana", "cid", "dan", "eva")
        aid = await first.house.launch(TableKind.ARENA, Variant.PAULISTA, 4, four, 0)
        status, body = await ana.post(f"/api/tables/{aid}/leave")
        assert status == 200 and body["table"]["status"] == "finished", body
        status, body = await dan.post(f"/api/tables/{aid}/leave")  # "Sair da mesa" after it
        assert status == 200 and body["table"]["status"] == "finished", body
        _, body = await cid.get(f"/api/tables/{aid}")
        assert body["table"]["status"] == "finished"
        assert [p["name"] for p in body["table"]["players"]] == [None, "cid", None, "eva"]
        assert [p["played_by"] for p in body["table"]["players"]] == ["ana", "cid", "dan", "eva"]
        pool = first.app[POOL]
        assert await pool.fetchval("SELECT status FROM live_tables WHERE id = $1",
                                   aid) == "finished"
        # the 1x1 as an earlier version left it, reopened: the next start finishes it again
        await pool.execute("UPDATE live_tables SET status = 'open' WHERE id = $1", tid)
    finally:
        for person in (ana, bia, cid, dan, eva):
            await person.close()
    await first.client.close()

    # after a restart both are finished (not closed as unplayed, not reopened)
    second = await start_live(make_app, aiohttp_client, vclock)
    bia, cid, eva = [await Player(second.base, n).login() for n in ("bia", "cid", "eva")]
    try:
        for who, table_id, played in ((bia, tid, ["ana", "bia"]),
                                      (cid, aid, ["ana", "cid", "dan", "eva"])):
            _, body = await who.get(f"/api/tables/{table_id}")
            assert body["table"]["status"] == "finished", body
            # rebuilt from the match's lineup (migration 026)
            assert [p["played_by"] for p in body["table"]["players"]] == played
        assert await _movements(second, tid) == ["hold", "payout"]
        # and their snapshot still says how the match ended (the final state is replayed)
        for who, table_id, seat, winner in ((bia, tid, 1, 1), (cid, aid, 1, 1)):
            again = await connect(who, table_id, seat)
            snapshot = await again.until("snapshot", react=False)
            assert snapshot["view"]["outcome"]["winner"] == winner
            assert snapshot["view"]["outcome"]["termination"] == "abandonment"
            await again.ws.close()
        # the last to leave closes the table: it is no longer served
        for who, table_id in ((bia, tid), (cid, aid), (eva, aid)):
            status, _ = await who.post(f"/api/tables/{table_id}/leave")
            assert status == 200
        pool = second.app[POOL]
        for table_id in (tid, aid):
            assert table_id not in second.house.tables
            assert await pool.fetchval("SELECT status FROM live_tables WHERE id = $1",
                                       table_id) == "closed"
    finally:
        for person in (bia, cid, eva):
            await person.close()
