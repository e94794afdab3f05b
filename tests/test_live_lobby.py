"""The lobby API, the public record endpoints and who may see or do what."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import aiohttp
import asyncpg
import pytest

from server.accounts import Role, set_role
from server.app import POOL
from server.clock import VirtualClock
from server.live import api
from server.live.house import INVITE_GUESS_WINDOW, INVITE_GUESSES
from server.live.model import TableKind, TableStatus
from server.live.recovery import prune_recorded_rows, reread
from tests.conftest import AppFactory
from tests.test_live_helpers import (
    Live,
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
from truco import MatchConfig, Variant
from truco.records import record_hash


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


async def _close(*people: Player) -> None:
    for person in people:
        await person.close()


async def test_create_refusals(live: Live) -> None:
    ana, = await players(live.base, "ana")
    anon = Player(live.base, "anon")
    try:
        good = {"variant": "paulista", "seats": 4, "mode": "vote", "kind": "private"}
        for change, code in [({"variant": "buraco"}, "bad_variant"),
                             ({"variant": None}, "bad_variant"),
                             ({"seats": 3}, "bad_seats"), ({"seats": True}, "bad_seats"),
                             ({"seats": "4"}, "bad_seats"), ({"mode": "chaos"}, "bad_mode"),
                             ({"kind": "ranked"}, "bad_kind"), ({"kind": "arena"}, "bad_kind"),
                             ({"kind": "public"}, "bad_kind"),
                             # a misspelt field is not taken as absent (mode would be "vote")
                             ({"mdoe": "first"}, "unknown_field")]:
            status, body = await ana.post("/api/tables", {**good, **change})
            assert (status, body["error"]) == (400, code), change
            assert body["message"]
        assert "'mdoe'" in body["message"] and "kind, mode, seats, variant" in body["message"]
        status, body = await ana.get("/api/tables?mine=1")
        assert body["tables"] == []  # nothing was created by the refusals
        # anonymous: CSRF first, then login
        async with anon.session.get(live.base / "api/session") as resp:
            anon.csrf = (await resp.json())["csrf"]
        status, body = await anon.post("/api/tables", good)
        assert (status, body["error"]) == (401, "login_required")
        ana.csrf, saved = "wrong", ana.csrf
        status, body = await ana.post("/api/tables", good)
        assert (status, body["error"]) == (403, "csrf_failed")
        ana.csrf = saved
        status, body = await anon.get("/api/tables")
        assert status == 401
    finally:
        await _close(ana, anon)


async def test_private_table_seating(live: Live) -> None:
    ana, bia, caio, davi, eva = await players(live.base, "ana", "bia", "caio", "davi", "eva")
    try:
        table = await create_table(ana, "mineiro", 4, "private")
        tid = table["id"]
        assert table["you"] == 0 and table["status"] == "open"
        invite = table["invite"]
        assert invite and len(invite) == 9
        # private tables are never advertised in the list
        status, body = await bia.get("/api/tables")
        assert status == 200 and tid not in [t["id"] for t in body["tables"]]
        # a private table is not shown to outsiders in detail
        status, body = await bia.get(f"/api/tables/{tid}")
        assert (status, body["error"]) == (404, "table_not_found")
        status, body = await bia.get(f"/api/tables/{tid}?invite={invite}")
        assert status == 200
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": "AAAA-AAAA"})
        assert (status, body["error"]) == (403, "wrong_invite")
        status, body = await bia.post(f"/api/tables/{tid}/join", {})
        assert (status, body["error"]) == (403, "wrong_invite")
        status, body = await bia.post(f"/api/tables/{tid}/join",
                                      {"invite": invite.lower(), "seat": 0})
        assert (status, body["error"]) == (409, "seat_taken")
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": invite, "seat": 9})
        assert (status, body["error"]) == (400, "bad_seat")
        # a misspelt seat would sit her at the first free one
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": invite, "sat": 2})
        assert (status, body["error"]) == (400, "unknown_field")
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": invite, "seat": 2})
        assert status == 200 and body["table"]["you"] == 2
        status, body = await bia.post(f"/api/tables/{tid}/join", {"invite": invite})
        assert (status, body["error"]) == (409, "already_seated")
        status, body = await bia.post(f"/api/tables/{tid}/seat", {"seat": 0})
        assert (status, body["error"]) == (409, "seat_taken")
        status, body = await bia.post(f"/api/tables/{tid}/seat", {"seta": 1})
        assert (status, body["error"]) == (400, "unknown_field")
        status, body = await bia.post(f"/api/tables/{tid}/seat", {"seat": 1})
        assert status == 200 and body["table"]["you"] == 1
        status, body = await ana.post(f"/api/tables/{tid}/start")
        assert (status, body["error"]) == (409, "not_full")
        status, body = await eva.post(f"/api/tables/{tid}/start")
        assert (status, body["error"]) == (403, "not_seated")
        for person in (caio, davi):
            status, body = await person.post(f"/api/tables/{tid}/join", {"invite": invite})
            assert status == 200
        status, body = await eva.post(f"/api/tables/{tid}/join", {"invite": invite})
        assert (status, body["error"]) == (409, "table_full")
        status, body = await ana.post(f"/api/tables/{tid}/start")
        assert status == 200 and body["table"]["status"] == "playing"
        assert [p["name"] for p in body["table"]["players"]] == ["ana", "bia", "caio", "davi"]
        status, body = await caio.post(f"/api/tables/{tid}/seat", {"seat": 3})
        assert (status, body["error"]) == (409, "not_open")
        status, body = await ana.get("/api/tables?mine=1")
        assert [t["id"] for t in body["tables"]] == [tid]
        status, body = await eva.get("/api/tables/ffffffffffffffff")
        assert (status, body["error"]) == (404, "table_not_found")
    finally:
        await _close(ana, bia, caio, davi, eva)


async def test_wrong_invite_codes_are_limited_per_player(live: Live, vclock: VirtualClock
                                                         ) -> None:
    # a code has 40 bits; with a table's id (its public chain names it) a guesser could still
    # try codes as fast as the house answers: 20 wrong ones in 10 minutes, then none at all
    ana, eva, bia = await players(live.base, "ana", "eva", "bia")
    try:
        table = await create_table(ana, "paulista", 2, "private")
        tid, invite = table["id"], table["invite"]
        assert invite != "AAAA-AAAA"
        status, body = await eva.post(f"/api/tables/{tid}/join", {})
        assert (status, body["error"]) == (403, "wrong_invite")  # no code is no guess
        for i in range(INVITE_GUESSES):
            if i % 3 == 0:
                status, body = await eva.post(f"/api/tables/{tid}/join",
                                              {"invite": "AAAA-AAAA"})
                assert (status, body["error"]) == (403, "wrong_invite")
            elif i % 3 == 1:
                status, body = await eva.get(f"/api/tables/{tid}?invite=AAAA-AAAA")
                assert (status, body["error"]) == (404, "table_not_found")
            else:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await eva.ws(tid, params={"invite": "AAAA-AAAA"})
                assert refused.value.status == 403
        assert INVITE_GUESSES == 20
        # (and joins sent at once are each judged before any is queued: none gets past)
        caio, = await players(live.base, "caio")
        try:
            answers = await asyncio.gather(*(caio.post(f"/api/tables/{tid}/join",
                                                       {"invite": f"CCCC-{i:04d}"})
                                             for i in range(40)))
            assert sorted(status for status, _ in answers) == [403] * 20 + [429] * 20
        finally:
            await caio.close()
        # now even the right code is refused, each way, saying when to try again
        async with eva.session.post(live.base / f"api/tables/{tid}/join",
                                    json={"invite": invite},
                                    headers={"X-CSRF-Token": eva.csrf}) as resp:
            assert resp.status == 429 and (await resp.json())["error"] == "too_many_guesses"
            assert int(resp.headers["Retry-After"]) == 600
        status, body = await eva.get(f"/api/tables/{tid}?invite={invite}")
        assert (status, body["error"]) == (429, "too_many_guesses")
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await eva.ws(tid, params={"invite": invite})
        assert refused.value.status == 429
        status, body = await ana.get(f"/api/tables/{tid}")
        assert status == 200 and [p["name"] for p in body["table"]["players"]] == ["ana", None]
        # another player is not held back; and once the window passed, eva may try again
        status, body = await bia.get(f"/api/tables/{tid}?invite={invite}")
        assert status == 200
        await vclock.advance(INVITE_GUESS_WINDOW)
        status, body = await eva.post(f"/api/tables/{tid}/join", {"invite": invite.lower()})
        assert status == 200 and body["table"]["you"] == 1
    finally:
        await _close(ana, eva, bia)


async def test_training_join_leave_and_close(live: Live) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    try:
        table = await create_table(ana, "argentino", 4, "training")
        tid = table["id"]
        assert table["invite"] is None
        # training tables are listed for anyone to join, while someone seated has them open
        # (a table its owner walked away from would start against an empty seat)
        status, body = await bia.get("/api/tables")
        assert tid not in [t["id"] for t in body["tables"]]
        _owner = await connect(ana, tid, 0)
        status, body = await bia.get("/api/tables")
        (listed,) = [t for t in body["tables"] if t["id"] == tid]
        assert listed["you"] is None and listed["status"] == "open"
        status, body = await bia.post(f"/api/tables/{tid}/join", {"seat": 2})
        assert status == 200 and body["table"]["you"] == 2
        status, body = await bia.post(f"/api/tables/{tid}/leave")
        assert status == 200 and body["table"]["players"][2]["name"] is None
        status, body = await bia.post(f"/api/tables/{tid}/leave")
        assert (status, body["error"]) == (403, "not_seated")
        status, body = await ana.post(f"/api/tables/{tid}/leave")
        assert status == 200 and body["table"]["status"] == "closed"
        status, body = await ana.get(f"/api/tables/{tid}")
        assert (status, body["error"]) == (404, "table_not_found")
        async with live.client.session.get(live.base / f"tables/{tid}/chain") as resp:
            assert resp.status == 200 and await resp.json() == []
    finally:
        await _close(ana, bia)


async def test_public_key_and_hand_privacy(live: Live) -> None:
    ana, = await players(live.base, "ana")
    public = live.client.session  # no cookies of any player
    try:
        async with public.get(live.base / "api/key") as resp:
            key = await resp.json()
        assert key["public_key"] == live.key and len(key["key_id"]) == 16
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        await ana.post(f"/api/tables/{tid}/start")
        # her entropy sent, the deal not played on yet: a move of ana's could end the hand (a
        # truco the bot declines) before its privacy is looked at
        while (dealt := await seat.recv())["type"] != "update":
            await seat.react(dealt)
        # the first hand is in play: nothing of it is public
        for path in (f"hands/{tid}-1", f"hands/{tid}-2", "hands/nonsense", f"hands/{tid}-0"):
            async with public.get(live.base / path) as resp:
                assert resp.status == 404
                assert (await resp.json())["error"] == "hand_not_found"
        async with public.get(live.base / f"tables/{tid}/chain") as resp:
            assert await resp.json() == []
        async with public.get(live.base / "tables/0123456789abcdef/chain") as resp:
            assert resp.status == 404
        await seat.react(dealt)
        while True:
            data = await seat.recv()
            await seat.react(data)
            if data["type"] == "hand_record":
                break
        async with public.get(live.base / data["url"].lstrip("/")) as resp:
            assert resp.status == 200
            record = await resp.json()
        assert record["hand"] == 1 and record["table"] == tid
        assert record["public_key"] == live.key
        chain = await fetch_chain(ana, tid)
        assert hand_records(chain)[0] == record
        assert chain[0]["kind"] == "seed_anchor"
        verify_chain(chain, live.key)
    finally:
        await ana.close()


async def test_rematch_continues_the_chain(live: Live) -> None:
    ana, = await players(live.base, "ana")
    try:
        table = await create_table(ana, "mineiro", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        status, body = await ana.post(f"/api/tables/{tid}/rematch")
        assert (status, body["error"]) == (409, "not_finished")
        await ana.post(f"/api/tables/{tid}/start")
        await play_all([seat])
        first = len(hand_records(await fetch_chain(ana, tid)))
        _, body = await ana.get(f"/api/tables/{tid}")
        assert body["table"]["match_first_hand"] == 1
        status, body = await ana.post(f"/api/tables/{tid}/rematch")
        assert status == 200 and body["table"]["status"] == "playing"
        assert body["table"]["match"] == 2
        # a page's "leave" after the match, which a rematch overtook (two tabs): refused, the
        # new match untouched (it resigned it); resigning takes saying so (the default)
        status, body = await ana.post(f"/api/tables/{tid}/leave", {"resign": False})
        assert (status, body["error"]) == (409, "match_in_play")
        for bad in ("no", 0, None):
            status, body = await ana.post(f"/api/tables/{tid}/leave", {"resign": bad})
            assert (status, body["error"]) == (400, "bad_resign"), bad
        status, body = await ana.post(f"/api/tables/{tid}/leave", {"resing": True})
        assert (status, body["error"]) == (400, "unknown_field")
        _, body = await ana.get(f"/api/tables/{tid}")
        assert (body["table"]["status"], body["table"]["you"]) == ("playing", 0)
        # hands are numbered across the table's matches; the page counts the match's from here
        assert body["table"]["match_first_hand"] == first + 1
        seat.over = None
        await play_all([seat])
        chain = await fetch_chain(ana, tid)
        records = hand_records(chain)
        assert len(records) > first
        assert records[first]["dealer"]["by"] == "draw"
        assert records[first]["score_before"] == [0, 0]
        assert [r["hand"] for r in records] == list(range(1, len(records) + 1))
        verify_chain(chain, live.key)
        # as a restart rebuilds it
        assert (await reread(live.house, tid)).match_first_hand == first + 1
        # with no match in play, leaving without resigning leaves
        status, body = await ana.post(f"/api/tables/{tid}/leave", {"resign": False})
        assert status == 200 and body["table"]["you"] is None
    finally:
        await ana.close()


async def test_the_chain_ends_with_the_houses_signed_ledger_head(live: Live) -> None:
    ana, = await players(live.base, "ana")
    try:
        table = await create_table(ana, "mineiro", 2, "training")
        tid = table["id"]
        seat = await connect(ana, tid, 0)
        await ana.post(f"/api/tables/{tid}/start")
        await play_all([seat])
        chain = await fetch_chain(ana, tid)
        *entries, head = chain
        last = hand_records(entries)[-1]
        assert head["kind"] == "ledger_head" and head["public_key"] == live.key
        assert head["tables"] == [{"table": tid, "hand": last["hand"],
                                   "hash": record_hash(last).hex()}]
        verify_chain(chain, live.key)
        # a hand's rows kept to rebuild it in play go with its record's commit (they stayed for
        # good, some 40% of a database): the record keeps its actions and contributions
        async with live.app[POOL].acquire() as conn:
            for kept in ("live_actions", "live_contributions", "live_signals"):
                assert await conn.fetchval(
                    f"SELECT count(*) FROM {kept} k JOIN live_hands h USING (table_id, hand)"
                    " WHERE k.table_id = $1 AND h.record IS NOT NULL", tid) == 0, kept
            assert await conn.fetchval(
                "SELECT count(*) FROM live_hands WHERE table_id = $1 AND record IS NOT NULL",
                tid) == len(hand_records(entries)) > 1
            # a database served before keeps them: the hourly pruning deletes them, in
            # batches, and only those of recorded hands
            await conn.execute(
                "INSERT INTO live_actions (table_id, hand, idx, action, automatic, at)"
                " SELECT table_id, hand, i, '{}', false, now() FROM live_hands,"
                " generate_series(0, 6) i WHERE table_id = $1", tid)
            await conn.execute(
                "INSERT INTO live_contributions (table_id, hand, seat, data)"
                " SELECT table_id, hand, 0, '\\x01' FROM live_hands WHERE table_id = $1", tid)
            in_play = await conn.fetchval(
                "SELECT count(*) FROM live_hands WHERE table_id = $1 AND record IS NULL", tid)
            recorded = len(hand_records(entries))
            gone = await prune_recorded_rows(live.app[POOL], batch=5, batches=2)
            assert gone == {"live_actions": 10, "live_contributions": min(10, recorded),
                            "live_signals": 0}
            gone = await prune_recorded_rows(live.app[POOL], batch=1000)
            assert gone["live_actions"] == 7 * recorded - 10
            assert await conn.fetchval("SELECT count(*) FROM live_actions WHERE table_id = $1",
                                       tid) == 7 * in_play
            assert await prune_recorded_rows(live.app[POOL]) == {
                "live_actions": 0, "live_contributions": 0, "live_signals": 0}
        # served again: the same statement, not a new signature per request
        assert await fetch_chain(ana, tid) == chain
        async with live.app[POOL].acquire() as conn:
            assert await conn.fetchval(
                "SELECT hand FROM ledger_heads WHERE table_id = $1", tid) == last["hand"]
        # the chain grows: a new head names its new last hand
        await ana.post(f"/api/tables/{tid}/rematch")
        seat.over = None
        await play_all([seat])
        longer = await fetch_chain(ana, tid)
        assert longer[-1]["tables"][0]["hand"] == hand_records(longer)[-1]["hand"] > last["hand"]
        verify_chain(longer, live.key)
        # the head kept from before still holds: the longer chain extends what it signed
        verify_chain([*longer, head], live.key)
    finally:
        await ana.close()


async def test_a_late_client_reads_the_new_chains_anchor_in_its_snapshot(live: Live) -> None:
    ana, = await players(live.base, "ana")
    try:
        table = await create_table(ana, "paulista", 2, "training")
        tid = table["id"]
        first = await connect(ana, tid, 0)
        first.send_entropy = False
        await ana.post(f"/api/tables/{tid}/start")
        commitment = await first.until("commitment", react=False)
        assert commitment["anchor"]["kind"] == "seed_anchor"
        # another tab opens the table while hand 1 still waits for entropy: it missed the event
        late = await connect(ana, tid, 0)
        late.send_entropy = False
        snapshot = await late.until("snapshot", react=False)
        hand = snapshot["hand"]
        assert (hand["hand"], hand["phase"]) == (1, "entropy")
        assert hand["anchor"] == commitment["anchor"]
        assert hand["anchor"]["anchor"] == hand["commitment"]
        await late.ws.close()
    finally:
        await ana.close()


async def test_my_played_tables_outlive_the_lobby(live: Live, vclock: VirtualClock) -> None:
    ana, bia = await players(live.base, "ana", "bia")
    try:
        played = []
        for variant in ("mineiro", "argentino", "paulista"):
            table = await create_table(ana, variant, 2, "training")
            seat = await connect(ana, table["id"], 0)
            await ana.post(f"/api/tables/{table['id']}/start")
            await play_all([seat])
            await seat.ws.close()
            status, _ = await ana.post(f"/api/tables/{table['id']}/leave")
            assert status == 200
            played.append(table["id"])
            await vclock.advance(1.0)
        # a table she never started is not one she played at
        await create_table(ana, "paulista", 2, "training")
        status, body = await ana.get("/api/tables?mine=1")
        assert not set(played) & {t["id"] for t in body["tables"]}  # closed: not "mine" any more
        status, body = await ana.get("/api/me/tables")
        assert status == 200 and body["next"] is None
        assert [t["id"] for t in body["tables"]] == played[::-1]  # newest first
        newest = body["tables"][0]
        assert newest["variant"] == "paulista" and newest["status"] == "closed"
        assert newest["matches"] == 1 and newest["hands"] == len(
            hand_records(await fetch_chain(ana, played[-1])))
        # one of them alone, with how my last match there ended (the table page, refused a
        # table no longer served, says it)
        status, body = await ana.get(f"/api/me/tables/{played[-1]}")
        assert status == 200
        one = body["table"]
        assert (one["id"], one["kind"], one["status"], one["hands"]) == (
            played[-1], "training", "closed", newest["hands"])
        assert one["last_match"]["number"] == 1
        assert one["last_match"]["termination"] == "target"
        assert one["last_match"]["won"] == (one["last_match"]["winner"] == 0)
        # another player sees none of them
        status, body = await bia.get("/api/me/tables")
        assert (status, body) == (200, {"tables": [], "next": None})
        # nor any one of them: told as an unknown id is (a private table stays unknown)
        for tid in (played[-1], "0" * 16, "nope"):
            status, body = await bia.get(f"/api/me/tables/{tid}")
            assert (status, body["error"]) == (404, "table_not_found"), tid
        for bad in ("x", "12-zz", "1" * 19 + "-0123456789abcdef", "-1-0123456789abcdef"):
            status, body = await ana.get(f"/api/me/tables?before={bad}")
            assert (status, body["error"]) == (400, "bad_cursor"), bad
    finally:
        await _close(ana, bia)


async def test_my_played_tables_come_in_pages(
    live: Live, vclock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "PLAYED_PAGE", 2)
    ana, = await players(live.base, "ana")
    try:
        played = []
        for _ in range(5):
            table = await create_table(ana, "mineiro", 2, "training")
            await ana.post(f"/api/tables/{table['id']}/start")  # nobody at it: bots and clocks
            await ana.post(f"/api/tables/{table['id']}/leave")  # resigned: the match is played
            played.append(table["id"])
            if len(played) != 2:  # two of them started at the same moment: ordered by id
                await vclock.advance(1.0)
        seen: list[str] = []
        after = ""
        while True:
            status, body = await ana.get(f"/api/me/tables{after}")
            assert status == 200 and len(body["tables"]) <= 2
            seen += [t["id"] for t in body["tables"]]
            if body["next"] is None:
                break
            after = f"?before={body['next']}"
        played[1:3] = sorted(played[1:3])  # the tie, newest first by id
        assert seen == played[::-1]
    finally:
        await ana.close()


async def test_leaving_mid_match_is_abandonment(live: Live) -> None:
    ana, bia, olga = await players(live.base, "ana", "bia", "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        table = await create_table(ana, "paulista", 2, "private")
        tid = table["id"]
        await bia.post(f"/api/tables/{tid}/join", {"invite": table["invite"]})
        watcher = await connect(ana, tid, 0)
        await ana.post(f"/api/tables/{tid}/start")
        await watcher.until("commitment")
        status, body = await bia.post(f"/api/tables/{tid}/leave")
        assert status == 200
        over = await watcher.until("match_over")
        assert over["termination"] == "abandonment" and over["winner"] == 0
        assert over["forfeit_team"] == 1
        assert (over["forfeit_seat"], over["forfeit_trigger"]) == (1, "left")
        chain = await fetch_chain(ana, tid)
        (record,) = hand_records(chain)
        assert record["end"] == "abandonment" and record["forfeit_team"] == 1
        assert record["match_winner"] == 0
        verify_chain(chain, live.key)
        status, body = await olga.get("/api/operator/abandonments?player=bia")
        assert status == 200
        (entry,) = body["abandonments"]
        assert entry["trigger"] == "left" and entry["consequence"] == "forfeit"
        assert entry["table"] == tid and entry["team"] == 1
        # the database holds what the code relies on (migration 039): a signed record never
        # changes, nor goes (a DELETE of its table cascaded to it)
        async with live.app[POOL].acquire() as conn:
            for statement in (
                    "UPDATE live_hands SET record = record || '{\"end\": \"x\"}'"
                    " WHERE table_id = $1",
                    "UPDATE live_hands SET record_hash = '\\x00' WHERE table_id = $1",
                    "DELETE FROM live_hands WHERE table_id = $1",
                    "DELETE FROM live_tables WHERE id = $1"):
                with pytest.raises(asyncpg.InsufficientPrivilegeError, match="signed record"):
                    await conn.execute(statement, tid)
        verify_chain(await fetch_chain(ana, tid), live.key)
    finally:
        await _close(ana, bia, olga)


async def test_the_table_limits_hold_against_concurrent_requests(live: Live) -> None:
    # a hostile review sent 150 creations at once from one account: each passed the count
    # while the others waited for their insert, and 93 tables were created and started
    ana = (await players(live.base, "ana"))[0]
    settings = live.house.settings
    training = {"variant": "paulista", "seats": 2, "kind": "training"}
    try:
        answers = await asyncio.gather(*(ana.post("/api/tables", training) for _ in range(40)))
        made = [body["table"]["id"] for status, body in answers if status == 201]
        assert len(made) == settings.max_open_tables
        assert {body["error"] for status, body in answers if status != 201} == {
            "too_many_tables"}
        assert await live.app[POOL].fetchval(
            "SELECT count(*) FROM live_tables WHERE owner_id = (SELECT id FROM users"
            " WHERE name = 'ana')") == settings.max_open_tables
        # starts at once: never more matches in play than the limit (here 3 with 5 open)
        live.house.settings = dataclasses.replace(settings, max_playing_tables=3)
        started = await asyncio.gather(*(ana.post(f"/api/tables/{t}/start") for t in made))
        assert sorted(status for status, _ in started) == [200] * 3 + [409] * 2
        assert {body["error"] for status, body in started if status != 200} == {
            "too_many_matches"}
        assert sum(1 for actor in live.house.tables.values()
                   if actor.status is TableStatus.PLAYING) == 3
        assert not live.house.creating and not live.house.starting
        # a start is counted once while it deals: it was counted as starting and as playing
        # until its first hand was set up, so that a start of her other table was refused one
        # table early (a review's two tabs saw 2 of 3 starts pass, at 7 of 8)
        ana_id = await live.app[POOL].fetchval("SELECT id FROM users WHERE name = 'ana'")
        waiting = [t for t in made if live.house.tables[t].status is not TableStatus.PLAYING]
        actor = live.house.tables[waiting[0]]
        seen: list[int] = []
        begin = actor._begin_hand

        async def begin_hand() -> None:
            seen.append(live.house.playing_count(ana_id))
            await begin()

        actor._begin_hand = begin_hand  # type: ignore[method-assign]
        live.house.settings = dataclasses.replace(settings, max_playing_tables=4)
        status, _ = await ana.post(f"/api/tables/{actor.id}/start")
        assert status == 200 and seen == [4]
    finally:
        live.house.settings = settings
        await ana.close()


async def test_seats_must_be_an_int(live: Live) -> None:
    # 2.0 == 2 passed `in (2, 4)` and broke further on (a plain-text 500)
    ana, = await players(live.base, "ana")
    try:
        for seats in (2.0, 4.0, True, "2", None):
            status, body = await ana.post("/api/tables", {"variant": "paulista", "seats": seats,
                                                          "kind": "training"})
            assert (status, body["error"]) == (400, "bad_seats"), seats
        assert await live.app[POOL].fetchval("SELECT count(*) FROM live_tables") == 0
    finally:
        await ana.close()


async def test_the_list_shows_no_open_ranked_table(live: Live) -> None:
    # a ranked table is the matchmaker's: even open (a launch not started yet) it cannot be
    # joined (409), so the lobby list does not offer it (and a finished one never reopens)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        ranked = await live.house.create_table(1, "ana", MatchConfig(Variant.PAULISTA, 2),
                                               TableKind.RANKED)
        training = await create_table(ana, "paulista", 2, "training")
        _page = await connect(ana, training["id"], 0)
        status, body = await bia.get("/api/tables")
        assert status == 200
        assert [t["id"] for t in body["tables"]] == [training["id"]]
        assert ranked.id not in {t["id"] for t in body["tables"]}
        status, body = await bia.post(f"/api/tables/{ranked.id}/join", {})
        assert (status, body["error"]) == (409, "matchmaker_table")
    finally:
        await _close(ana, bia)


async def test_hand_numbers_beyond_the_stored_range_are_unknown_hands(live: Live) -> None:
    # live_hands.hand is an int4: a larger number reached the database (DataError, a 500)
    public = live.client.session
    tid = "0123456789abcdef"
    for hand in ("2147483648", "4294967295", "9999999999", "1\n", "²"):
        async with public.get(live.base / f"hands/{tid}-{hand}") as resp:
            assert resp.status == 404, hand
            assert (await resp.json())["error"] == "hand_not_found"
    # the hand page: a number in ASCII digits, within the scheme's range, else its 404 page
    for hand in ("²", "1" * 5000, "4294967296", "0"):
        async with public.get(live.base / f"h/{tid}/{hand}") as resp:
            assert resp.status == 404, hand[:12]
            assert resp.content_type == "text/html"
            assert "Mão não encontrada" in await resp.text()
    async with public.get(live.base / f"h/{tid}/1") as resp:
        # well formed but never played here: the hand page itself, whose status says so
        assert resp.status == 404
        assert 'id="rec-score"' in await resp.text()


async def test_operator_abandonment_ids_are_ascii_digits(live: Live) -> None:
    olga, = await players(live.base, "olga")
    try:
        await set_role(live.app[POOL], "olga", Role.OPERATOR)
        for text in ("%C2%B2", "1" * 19, "x"):
            status, body = await olga.get(f"/api/operator/abandonments/{text}")
            assert (status, body["error"]) == (404, "abandonment_not_found"), text
    finally:
        await olga.close()


async def test_one_player_cannot_fill_the_lobby_with_tables(live: Live) -> None:
    # a security review created 2,000 training tables with one account in 4.5 s: the lobby's
    # list (its first 200 open tables) then showed almost only those
    ana, bia, caio = await players(live.base, "ana", "bia", "caio")
    limit = live.house.settings.max_open_tables
    training = {"variant": "paulista", "seats": 4, "kind": "training"}
    try:
        made = [await create_table(ana, "paulista", 4, "training") for _ in range(limit)]
        tables = await live.app[POOL].fetchval("SELECT count(*) FROM live_tables")
        for kind in ("training", "private"):
            status, body = await ana.post("/api/tables", {**training, "kind": kind})
            assert (status, body["error"]) == (409, "too_many_tables")
        # refused: nothing written, and the others are not limited by ana's tables
        assert await live.app[POOL].fetchval("SELECT count(*) FROM live_tables") == tables
        mine = await create_table(bia, "paulista", 2, "training")
        _page = await connect(bia, mine["id"], 0)
        status, body = await caio.get("/api/tables")
        assert status == 200 and mine["id"] in {t["id"] for t in body["tables"]}
        # a table started or left no longer counts: ana may create one again
        status, _ = await ana.post(f"/api/tables/{made[0]['id']}/start")
        assert status == 200
        status, _ = await ana.post(f"/api/tables/{made[1]['id']}/leave")
        assert status == 200
        await create_table(ana, "paulista", 2, "private")
        await create_table(ana, "paulista", 2, "training")
        status, body = await ana.post("/api/tables", training)
        assert (status, body["error"]) == (409, "too_many_tables")
    finally:
        await _close(ana, bia, caio)


async def test_one_player_cannot_start_tables_without_end(live: Live) -> None:
    # a security review started 2,158 training tables (6,474 bots) from one account in 14 s:
    # only the tables still waiting were counted
    ana, bia = await players(live.base, "ana", "bia")
    limit = live.house.settings.max_playing_tables
    try:
        playing = []
        for _ in range(limit):
            table = await create_table(ana, "mineiro", 2, "training")
            status, _ = await ana.post(f"/api/tables/{table['id']}/start")
            assert status == 200
            playing.append(table["id"])
        tables = await live.app[POOL].fetchval("SELECT count(*) FROM live_tables")
        status, body = await ana.post("/api/tables", {"variant": "paulista", "seats": 2,
                                                      "kind": "private"})
        assert (status, body["error"]) == (409, "too_many_matches")
        assert await live.app[POOL].fetchval("SELECT count(*) FROM live_tables") == tables
        await create_table(bia, "paulista", 2, "training")  # others are not limited by ana's
        # a match left (resigned) no longer counts
        status, _ = await ana.post(f"/api/tables/{playing[0]}/leave")
        assert status == 200
        await create_table(ana, "paulista", 2, "training")
    finally:
        await _close(ana, bia)


async def test_a_start_or_rematch_checks_every_player_against_the_limit(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # a review: the limit of matches in play was checked for the player asking only; a start
    # by bia (or the rematch she completed) put ana in one more than it allows
    live = await start_live(make_app, aiohttp_client, vclock, max_playing_tables=2)
    ana, bia = await players(live.base, "ana", "bia")
    try:
        for _ in range(2):
            table = await create_table(ana, "mineiro", 2, "training")
            status, _ = await ana.post(f"/api/tables/{table['id']}/start")
            assert status == 200
        theirs = await create_table(bia, "mineiro", 2, "private")
        status, _ = await ana.post(f"/api/tables/{theirs['id']}/join",
                                   {"invite": theirs["invite"]})
        assert status == 200
        status, body = await bia.post(f"/api/tables/{theirs['id']}/start")
        assert (status, body["error"]) == (409, "too_many_matches")
        assert body["message"].startswith("ana already plays at 2 tables")
        assert live.house.tables[theirs["id"]].status is TableStatus.OPEN  # nothing changed
        # she leaves one of hers: the start is taken
        ana_id = live.house.tables[theirs["id"]].seats[1].user_id
        assert ana_id is not None
        first = live.house.tables_of(ana_id)[0]
        status, _ = await ana.post(f"/api/tables/{first.id}/leave")
        assert status == 200
        status, _ = await bia.post(f"/api/tables/{theirs['id']}/start")
        assert status == 200
        assert sum(t.status is TableStatus.PLAYING for t in live.house.tables_of(ana_id)) == 2
    finally:
        await _close(ana, bia)


async def test_my_tables_follow_every_seat_change_and_a_restart(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock) -> None:
    # "my tables" and the per-user limits read the house's index of who sits where (they
    # scanned every table); every test app also checks the index against a scan at shutdown
    first = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await players(first.base, "ana", "bia")

    async def mine(person: Player) -> list[str]:
        status, body = await person.get("/api/tables?mine=1")
        assert status == 200
        return [t["id"] for t in body["tables"]]

    try:
        own = (await create_table(ana, "paulista", 2, "private"))["id"]
        theirs = await create_table(bia, "mineiro", 4, "private")
        other = theirs["id"]
        assert await mine(ana) == [own] and await mine(bia) == [other]
        status, _ = await ana.post(f"/api/tables/{other}/join", {"invite": theirs["invite"]})
        assert status == 200
        assert await mine(ana) == [own, other]  # in the order the tables were opened
        status, _ = await ana.post(f"/api/tables/{other}/seat", {"seat": 3})
        assert status == 200
        assert await mine(ana) == [own, other]
        status, _ = await ana.post(f"/api/tables/{own}/leave")  # her own table closes
        assert status == 200
        assert await mine(ana) == [other]
        status, _ = await bia.post(f"/api/tables/{other}/leave")
        assert status == 200
        assert await mine(bia) == [] and await mine(ana) == [other]
        again = (await create_table(bia, "argentino", 2, "training"))["id"]
    finally:
        await _close(ana, bia)
    await first.client.close()

    second = await start_live(make_app, aiohttp_client, vclock)
    ana, bia = await Player(second.base, "ana").login(), await Player(second.base, "bia").login()
    try:
        # the rebuilt tables are found by their players, and count against their limits
        assert await mine(ana) == [other] and await mine(bia) == [again]
        limit = second.house.settings.max_open_tables
        for _ in range(limit - 1):
            await create_table(ana, "paulista", 2, "training")
        status, body = await ana.post("/api/tables", {"variant": "paulista", "seats": 2,
                                                      "kind": "training"})
        assert (status, body["error"]) == (409, "too_many_tables")
        assert len(await mine(ana)) == limit
    finally:
        await _close(ana, bia)
