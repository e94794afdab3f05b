"""Ranked queue tickets and running arenas are durable (migration 024): a queued player keeps
their place and waiting time across an app restart and is paired after it; an arena keeps its
standings and the table still playing, scores on, and an arena whose end passed while the
server was down closes at the next start with its podium, once. Virtual clock, real
PostgreSQL: each restart stops the app and starts a new one on the same database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient

from server.app import POOL
from server.clock import VirtualClock
from server.live.model import TableKind
from server.ranked import ledger
from server.ranked.arena import REMATCH_WAIT
from server.ranked.service import RANKED, RankedService
from tests.test_ranked_http import PASSWORD, ranked_app
from truco import Termination, Variant

Client = Callable[..., Awaitable[TestClient]]  # type: ignore[type-arg]


@dataclass
class Launcher:
    """The live house's side of `TableLauncher`: records launches; table ids go on from `first`
    so a restarted house never reuses one still playing."""

    first: int = 1
    launched: list[tuple[TableKind, tuple[int, ...], str]] = field(default_factory=list)

    async def launch(self, kind: TableKind, variant: Variant, seats: int,
                     users_by_seat: Sequence[int], stake: int, *,
                     before_start: Callable[[str], Awaitable[None]] | None = None) -> str:
        table_id = f"{self.first + len(self.launched):016x}"
        if before_start is not None:
            await before_start(table_id)
        self.launched.append((kind, tuple(users_by_seat), table_id))
        return table_id


@dataclass
class Run:
    """One run of the app on the test database, and the players' sessions on it."""

    client: TestClient  # type: ignore[type-arg]
    sessions: list[aiohttp.ClientSession] = field(default_factory=list)
    _csrf: dict[str, str] = field(default_factory=dict)
    _by_name: dict[str, aiohttp.ClientSession] = field(default_factory=dict)

    @property
    def app(self) -> web.Application:
        app = self.client.app
        assert isinstance(app, web.Application)
        return app

    @property
    def service(self) -> RankedService:
        return self.app[RANKED]

    async def call(self, name: str, method: str, path: str, body: dict[str, Any] | None = None,
                   *, new: bool = False) -> tuple[int, Any]:
        """A JSON request as player `name`, who registers first when `new` (else logs in on
        their first request to this run)."""
        session = await self._session(name, new)
        base = str(self.client.server.make_url("")).rstrip("/")
        resp = await session.request(method, base + path, json=body,
                                     headers={"X-CSRF-Token": self._csrf[name]})
        return resp.status, await resp.json()

    async def _session(self, name: str, new: bool) -> aiohttp.ClientSession:
        if name in self._by_name:
            return self._by_name[name]
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.sessions.append(session)
        base = str(self.client.server.make_url("")).rstrip("/")
        token = (await (await session.get(base + "/api/session")).json())["csrf"]
        resp = await session.post(base + ("/api/register" if new else "/api/login"),
                                  json={"name": name, "password": PASSWORD},
                                  headers={"X-CSRF-Token": token})
        assert resp.status in (200, 201), await resp.text()
        self._csrf[name] = (await (await session.get(base + "/api/session")).json())["csrf"]
        self._by_name[name] = session
        return session

    async def stop(self) -> None:
        for session in self.sessions:
            await session.close()
        await self.client.close()


async def _run(make_app: Callable[..., web.Application], aiohttp_client: Client,
               clock: VirtualClock, launcher: Launcher | None) -> Run:
    return Run(await aiohttp_client(ranked_app(make_app, clock, launcher)))  # type: ignore[arg-type]


async def _id(run: Run, name: str) -> int:
    value = await run.app[POOL].fetchval("SELECT id FROM users WHERE name = $1", name)
    assert isinstance(value, int)
    return value


async def test_a_queued_player_keeps_place_and_waiting_time_across_a_restart(
        make_app: Callable[..., web.Application], aiohttp_client: Client) -> None:
    clock = VirtualClock()
    first = await _run(make_app, aiohttp_client, clock, None)
    status, body = await first.call("ana", "POST", "/api/ranked/queue",
                                    {"variant": "paulista", "seats": 2}, new=True)
    assert status == 200 and body["queue"]["state"] == "queued"
    await first.call("bia", "GET", "/api/ranked/queue", new=True)  # registered, not queued
    ana, bia = await _id(first, "ana"), await _id(first, "bia")
    # acknowledged means stored, with the original join time
    stored = await first.app[POOL].fetchrow("SELECT * FROM ranked_queue_tickets")
    assert stored is not None and stored["user_id"] == ana and stored["partner_id"] is None
    assert stored["enqueued_at"].timestamp() == clock.now()
    await clock.advance(25.0)
    await first.stop()

    await clock.advance(30.0)  # the server is down
    launcher = Launcher()
    second = await _run(make_app, aiohttp_client, clock, launcher)
    try:
        status, body = await second.call("ana", "GET", "/api/ranked/queue")
        assert status == 200
        queue = body["queue"]
        assert (queue["state"], queue["variant"], queue["seats"]) == ("queued", "paulista", 2)
        assert queue["waited_s"] == 55.0 and queue["window"] == 350.0  # 100 + 50 x 5
        # leaving and joining again is refused as before: ana holds her place
        status, body = await second.call("ana", "POST", "/api/ranked/queue",
                                         {"variant": "mineiro", "seats": 2})
        assert (status, body["error"]) == (409, "already_queued")

        # pairing goes on: bia joins, the next round opens their table and holds the stakes
        status, _ = await second.call("bia", "POST", "/api/ranked/queue",
                                      {"variant": "paulista", "seats": 2})
        assert status == 200
        assert await second.app[POOL].fetchval("SELECT count(*) FROM ranked_queue_tickets") == 2
        await clock.advance(1.0)
        [(kind, seating, table_id)] = launcher.launched
        assert kind is TableKind.RANKED and seating == (ana, bia)  # ana waited longer: seat 0
        assert second.service.seated == {ana: table_id, bia: table_id}
        assert await ledger.balance(second.app[POOL], ana) == 1000 - 50
        # seated: the tickets are gone from the database too
        assert await second.app[POOL].fetchval("SELECT count(*) FROM ranked_queue_tickets") == 0
    finally:
        await second.stop()


async def test_a_left_ticket_is_not_restored(
        make_app: Callable[..., web.Application], aiohttp_client: Client) -> None:
    clock = VirtualClock()
    first = await _run(make_app, aiohttp_client, clock, None)
    await first.call("ana", "POST", "/api/ranked/queue", {"variant": "mineiro", "seats": 4},
                     new=True)
    status, body = await first.call("ana", "POST", "/api/ranked/queue/leave", {})
    assert status == 200 and body["queue"]["state"] == "idle"
    assert await first.app[POOL].fetchval("SELECT count(*) FROM ranked_queue_tickets") == 0
    await first.stop()
    second = await _run(make_app, aiohttp_client, clock, None)
    try:
        assert second.service.matchmaker.tickets == ()
        status, body = await second.call("ana", "GET", "/api/ranked/queue")
        assert body["queue"]["state"] == "idle"
    finally:
        await second.stop()


async def _finish(run: Run, table_id: str, seating: tuple[int, ...], winner: int) -> None:
    await run.service.match_ended(
        table_id=table_id, match_number=1, kind=TableKind.ARENA, variant=Variant.PAULISTA,
        seats=2, users_by_seat=seating, termination=Termination.TARGET, winner_team=winner,
        forfeit_seat=None, restart_overlap=False, evidence=())


async def _standings(run: Run) -> tuple[str, list[dict[str, Any]], list[str]]:
    status, body = await run.call("judge", "GET", "/api/ranked/arenas")
    assert status == 200
    [event] = body["arenas"]
    return event["state"], event["standings"], event["podium"]


async def test_a_running_arena_scores_on_after_a_restart_and_closes_once_when_it_ended_down(
        make_app: Callable[..., web.Application], aiohttp_client: Client) -> None:
    clock = VirtualClock()
    first = await _run(make_app, aiohttp_client, clock, Launcher(first=1))
    await first.call("judge", "GET", "/api/session", new=True)
    await first.app[POOL].execute("UPDATE users SET role = 'operator' WHERE name = 'judge'")
    status, body = await first.call("judge", "POST", "/api/ranked/arenas",
                                    {"variant": "paulista", "seats": 2, "minutes": 10})
    assert status == 201, body
    arena_id = body["arena"]["id"]
    for name in ("ana", "bia"):
        status, _ = await first.call(name, "POST", f"/api/ranked/arenas/{arena_id}/join", {},
                                     new=True)
        assert status == 200
    ana = await _id(first, "ana")
    await clock.advance(1.0)
    launcher = first.service.launcher
    assert isinstance(launcher, Launcher)
    [(_, seating, table_id)] = launcher.launched
    winner = seating[0]
    await _finish(first, table_id, seating, 0)  # 2 points
    # alone together, the two meet again once they have waited for someone else a little;
    # this table is still playing at the stop
    await clock.advance(REMATCH_WAIT)
    (_, seating2, playing) = launcher.launched[1]
    await first.stop()

    await clock.advance(60.0)
    second = await _run(make_app, aiohttp_client, clock, Launcher(first=100))
    try:
        state, standings, _ = await _standings(second)
        assert state == "running"
        assert [(s["points"], s["wins"], s["games"], s["streak"]) for s in standings] == [
            (2, 1, 1, 1), (0, 0, 1, 0)]
        assert second.service.arena_tables == {playing: arena_id}
        # the table that outlived the restart scores in the arena: a second win in a row
        await _finish(second, playing, seating2, seating2.index(winner) % 2)
        state, standings, _ = await _standings(second)
        assert standings[0]["points"] == 4 and standings[0]["streak"] == 2
        assert standings[0]["on_fire"] is True
        # and pairing goes on in the new run (the two just met: after a little wait)
        await clock.advance(REMATCH_WAIT)
        relaunched = second.service.launcher
        assert isinstance(relaunched, Launcher) and len(relaunched.launched) == 1
        # ana leaves: stored, so the restart keeps her out of the pairing
        status, _ = await second.call("ana", "POST", f"/api/ranked/arenas/{arena_id}/leave",
                                      {})
        assert status == 200
        left = await second.app[POOL].fetchrow(
            "SELECT active, left_at, left_why FROM ranked_arena_entries WHERE user_id = $1",
            ana)
        assert left is not None and left["active"] is False and left["left_at"] is not None
        assert left["left_why"] == "left"
    finally:
        await second.stop()

    await clock.advance(20 * 60.0)  # the arena's end passes while the server is down
    third = await _run(make_app, aiohttp_client, clock, Launcher(first=200))
    try:
        assert second.service.arenas[arena_id].arena.closed is False
        # closed at start: the podium recorded once, from the standings kept over two restarts
        assert third.service.arenas[arena_id].recorded is True
        # and why ana was out came back with her (what the page says to her)
        out = third.service.arenas[arena_id].arena.entrant(ana)
        assert out is not None and (out.active, out.out) == (False, "left")
        state, standings, podium = await _standings(third)
        assert state == "closed" and len(podium) == 1
        assert (standings[0]["points"], standings[0]["wins"]) == (4, 2)
        pool = third.app[POOL]
        assert await pool.fetchval("SELECT status FROM ranked_arenas WHERE id = $1",
                                   arena_id) == "closed"
        assert await pool.fetchval("SELECT user_id FROM arena_standings WHERE arena_id = $1 "
                                   "AND podium", arena_id) == winner
    finally:
        await third.stop()

    fourth = await _run(make_app, aiohttp_client, clock, None)
    try:
        assert fourth.service.arenas == {}  # closed for good: not rebuilt, not recorded again
        pool = fourth.app[POOL]
        assert await pool.fetchval("SELECT count(*) FROM arena_events") == 1
        assert await pool.fetchval("SELECT count(*) FROM arena_standings") == 2
    finally:
        await fourth.stop()


async def test_a_change_the_database_cannot_store_is_refused_and_undone(
        make_app: Callable[..., web.Application], aiohttp_client: Client) -> None:
    clock = VirtualClock()
    run = await _run(make_app, aiohttp_client, clock, None)
    try:
        pool = run.app[POOL]
        await run.call("ana", "GET", "/api/ranked/queue", new=True)
        await pool.execute("""
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'disk full'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT ON ranked_queue_tickets
                FOR EACH ROW EXECUTE FUNCTION refuse();""")
        status, body = await run.call("ana", "POST", "/api/ranked/queue",
                                      {"variant": "paulista", "seats": 2})
        assert (status, body["error"]) == (503, "unavailable")
        # not queued in memory either: no ticket the next run would not know of
        assert run.service.matchmaker.tickets == ()
        status, body = await run.call("ana", "GET", "/api/ranked/queue")
        assert body["queue"]["state"] == "idle"
        await pool.execute("DROP TRIGGER refuse ON ranked_queue_tickets")
        status, body = await run.call("ana", "POST", "/api/ranked/queue",
                                      {"variant": "paulista", "seats": 2})
        assert status == 200 and body["queue"]["state"] == "queued"
    finally:
        await run.stop()


async def test_a_duo_invitation_outlives_a_restart_and_still_lapses_on_time(
        make_app: Callable[..., web.Application], aiohttp_client: Client) -> None:
    # answered "inviting", so stored: a restart dropped it, and the partner found nothing
    clock = VirtualClock()
    first = await _run(make_app, aiohttp_client, clock, None)
    for name in ("bia", "caio", "davi"):
        await first.call(name, "GET", "/api/ranked/queue", new=True)
    duo = {"variant": "paulista", "seats": 4}
    status, body = await first.call("ana", "POST", "/api/ranked/queue", duo | {"partner": "bia"},
                                    new=True)
    assert status == 200 and body["queue"]["state"] == "inviting"
    status, body = await first.call("caio", "POST", "/api/ranked/queue", duo | {"partner": "davi"})
    assert status == 200 and body["queue"]["state"] == "inviting"
    ana, bia = await _id(first, "ana"), await _id(first, "bia")
    stored = {r["inviter_id"]: r for r in await first.app[POOL].fetch(
        "SELECT inviter_id, partner_id, invited_at FROM ranked_invitations")}
    assert len(stored) == 2 and stored[ana]["partner_id"] == bia
    assert stored[ana]["invited_at"].timestamp() == clock.now()
    # caio takes his back before the restart: gone from the database too
    status, body = await first.call("caio", "POST", "/api/ranked/queue/leave", {})
    assert status == 200 and body["queue"]["state"] == "idle"
    assert await first.app[POOL].fetchval("SELECT count(*) FROM ranked_invitations") == 1
    await clock.advance(60.0)
    await first.stop()

    await clock.advance(60.0)  # the server is down
    second = await _run(make_app, aiohttp_client, clock, None)
    try:
        status, body = await second.call("ana", "GET", "/api/ranked/queue")
        assert body["queue"]["state"] == "inviting" and body["queue"]["partner"] == "bia"
        assert body["queue"]["waited_s"] == 120.0  # from the original invitation
        status, body = await second.call("davi", "GET", "/api/ranked/queue")
        assert body["queue"]["state"] == "idle"
        # bia accepts by naming ana back: the duo queues
        status, body = await second.call("bia", "POST", "/api/ranked/queue",
                                         duo | {"partner": "ana"})
        assert status == 200 and body["queue"]["state"] == "queued"
        assert await second.app[POOL].fetchval("SELECT count(*) FROM ranked_invitations") == 0
        # a new invitation, stored across a restart, still lapses 10 minutes after it
        status, body = await second.call("caio", "POST", "/api/ranked/queue",
                                         duo | {"partner": "davi"})
        assert body["queue"]["state"] == "inviting"
    finally:
        await second.stop()
    await clock.advance(10 * 60.0)  # down past its lapse: said at the first round after
    third = await _run(make_app, aiohttp_client, clock, None)
    try:
        await clock.advance(2.0)
        status, body = await third.call("caio", "GET", "/api/ranked/queue")
        assert body["queue"]["state"] == "idle" and body["queue"]["news"]["kind"] == "expired"
        assert await third.app[POOL].fetchval("SELECT count(*) FROM ranked_invitations") == 0
    finally:
        await third.stop()
