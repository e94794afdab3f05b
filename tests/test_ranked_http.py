"""Ranked play over HTTP on a real PostgreSQL, in virtual time: the queues pair and widen through
the API, a paired table waits without a live house and opens with one, match results settle
(chips, ratings, abandonment records), standings, one appeal, and the operators' review: who may
see it, forged CSRF, and an overturn that gives back rating, chips and pause exactly once."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import aiohttp
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from yarl import URL

from server.accounts import Role, set_role
from server.app import CONFIG, POOL
from server.clock import VirtualClock
from server.live.model import TableKind, abandon_limit
from server.live.table import TableActor
from server.live.writer import WriteRefused
from server.pages import decimal_pt
from server.ranked import http as ranked_http
from server.ranked import ledger, ratings, review
from server.ranked import service as ranked_service
from server.ranked.service import (
    LAUNCHER,
    RANKED,
    RANKED_SETTINGS,
    RankedError,
    settle_match,
)
from truco.outcome import Termination
from truco.variants import Variant

PASSWORD = "correct horse 42"
P = Variant.PAULISTA
TABLE = "00000000000000a1"
EVIDENCE = [
    {"kind": "disconnected", "at_ms": 1_800_000_100_000, "seat": 1},
    {"kind": "deadline", "at_ms": 1_800_000_110_000, "seat": 1, "decision": "play",
     "deadline_ms": 1_800_000_110_000},
    {"kind": "automatic", "at_ms": 1_800_000_110_004, "seat": 1, "streak": 1, "hand": 3,
     "late_ms": 4},
    {"kind": "automatic", "at_ms": 1_800_000_112_004, "seat": 1, "streak": 2, "hand": 4,
     "late_ms": 4},
]


@dataclass
class FakeHouse:
    """The live house's side of `TableLauncher`, as a test double: it records each launch and
    answers a fresh table id."""

    launched: list[tuple[TableKind, Variant, int, tuple[int, ...], int]] = field(
        default_factory=list)
    fail: bool = False

    async def launch(self, kind: TableKind, variant: Variant, seats: int,
                     users_by_seat: Sequence[int], stake: int, *,
                     before_start: Callable[[str], Awaitable[None]] | None = None) -> str:
        if self.fail:
            raise OSError("the live house is restarting")
        table_id = f"{len(self.launched) + 1:016x}"
        if before_start is not None:
            await before_start(table_id)  # a failure opens nothing, as in the house
        self.launched.append((kind, variant, seats, tuple(users_by_seat), stake))
        return table_id


def ranked_app(make_app: Callable[..., web.Application], clock: VirtualClock | None,
               launcher: FakeHouse | None = None) -> web.Application:
    app = make_app(clock=clock)
    if RANKED_SETTINGS not in app:  # until create_app calls it
        ranked_http.setup(app)
    if launcher is not None:
        app[LAUNCHER] = launcher
    elif LAUNCHER in app:  # the live house registers itself: these tests run without it
        del app[LAUNCHER]
    return app


async def _read(request: Awaitable[aiohttp.ClientResponse]) -> aiohttp.ClientResponse:
    """The answer with its body read: its connection goes back to the pool now (an answer a test
    reads only the status of would hold it until the collector found it, then warn)."""
    resp = await request
    await resp.read()
    return resp


@dataclass
class Player:
    name: str
    id: int
    session: aiohttp.ClientSession
    base: str
    csrf: str

    async def get(self, path: str) -> aiohttp.ClientResponse:
        return await _read(self.session.get(self.base + path, allow_redirects=False))

    async def post(self, path: str, body: dict[str, Any] | None = None, *,
                   form: dict[str, str] | None = None, csrf: str | None = None
                   ) -> aiohttp.ClientResponse:
        token = self.csrf if csrf is None else csrf
        if form is not None:
            return await _read(self.session.post(self.base + path, data={**form, "csrf": token},
                                                 allow_redirects=False))
        return await _read(self.session.post(self.base + path, json=body or {},
                                             headers={"X-CSRF-Token": token},
                                             allow_redirects=False))

    async def json(self, path: str, body: dict[str, Any] | None = None,
                   status: int = 200) -> Any:
        resp = await (self.post(path, body) if body is not None else self.get(path))
        assert resp.status == status, await resp.text()
        return await resp.json()


Players = Callable[..., Awaitable[Player]]


@dataclass
class House:
    client: TestClient  # type: ignore[type-arg]
    clock: VirtualClock
    launcher: FakeHouse | None
    sessions: list[aiohttp.ClientSession] = field(default_factory=list)

    @property
    def app(self) -> web.Application:
        app = self.client.app
        assert isinstance(app, web.Application)
        return app

    @property
    def pool(self) -> asyncpg.Pool:
        return self.app[POOL]

    async def player(self, name: str, *, operator: bool = False) -> Player:
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.sessions.append(session)
        base = str(self.client.server.make_url("")).rstrip("/")
        token = (await (await session.get(base + "/api/session")).json())["csrf"]
        resp = await session.post(base + "/api/register", json={"name": name,
                                                                 "password": PASSWORD},
                                  headers={"X-CSRF-Token": token})
        assert resp.status == 201, await resp.text()
        answer = await resp.json()
        user_id = answer["user"]["id"]
        if operator:
            assert await set_role(self.pool, name, Role.OPERATOR)
        # the login changed the CSRF token: its answer carries the new one
        return Player(name, user_id, session, base, answer["csrf"])

    async def players(self, *names: str) -> list[Player]:
        return [await self.player(name) for name in names]

    async def rate(self, player: Player, rating: float, rd: float = 80.0,
                   variant: Variant = P, seats: int = 2) -> None:
        await self.pool.execute(
            "INSERT INTO ranked_ratings (user_id, variant, seats, rating, rd, volatility, games)"
            " VALUES ($1, $2, $3, $4, $5, 0.06, 10)", player.id, variant.value, seats, rating, rd)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)


async def _house(make_app: Callable[..., web.Application],
                 aiohttp_client: Callable[..., Awaitable[TestClient]],  # type: ignore[type-arg]
                 launcher: FakeHouse | None) -> AsyncIterator[House]:
    clock = VirtualClock()
    client = await aiohttp_client(ranked_app(make_app, clock, launcher))
    house = House(client, clock, launcher)
    try:
        yield house
    finally:
        for session in house.sessions:
            await session.close()


@pytest.fixture
async def house(make_app: Callable[..., web.Application],
                aiohttp_client: Callable[..., Awaitable[TestClient]]  # type: ignore[type-arg]
                ) -> AsyncIterator[House]:
    async for value in _house(make_app, aiohttp_client, None):
        yield value


@pytest.fixture
async def staffed(make_app: Callable[..., web.Application],
                  aiohttp_client: Callable[..., Awaitable[TestClient]]  # type: ignore[type-arg]
                  ) -> AsyncIterator[House]:
    """The same house with a live house registered to open tables."""
    async for value in _house(make_app, aiohttp_client, FakeHouse()):
        yield value


async def settle_abandonment(house: House, table: str, users: Sequence[int], forfeit_seat: int,
                             *, hold: bool = True, minutes: int = 10) -> Any:
    """A ranked match on `table` (1v1, or 2v2 given 4 players) whose player at `forfeit_seat`
    abandoned just now."""
    ref = f"ranked:{table}:1"
    if hold:
        await ledger.hold_stakes(house.pool, ref, users, 50)
    return await settle_match(
        house.pool, table_id=table, match_number=1, kind=TableKind.RANKED, variant=P,
        seats=len(users),
        users_by_seat=users, termination=Termination.ABANDONMENT,
        winner_team=1 - forfeit_seat % 2, forfeit_seat=forfeit_seat, restart_overlap=False,
        evidence=EVIDENCE, started_at=house.now() - timedelta(minutes=minutes),
        ended_at=house.now())


# --- queues -----------------------------------------------------------------------------------


async def test_queue_widens_over_time_and_a_pair_waits_without_a_live_house(
    house: House,
) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await house.rate(ana, 1500)
    await house.rate(bia, 1720)
    status = await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert status["queue"]["state"] == "queued" and status["queue"]["window"] == 100
    await bia.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert (await caio.json("/api/ranked/queue"))["queues"] == [
        {"variant": "paulista", "seats": 2, "waiting": 2}]
    # 220 points apart: the windows reach 200 after 20 s and 250 after 30 s
    await house.clock.advance(25)
    mine = (await ana.json("/api/ranked/queue"))["queue"]
    assert mine["state"] == "queued" and mine["window"] == 200 and mine["waited_s"] == 25
    await house.clock.advance(6)
    paired = (await ana.json("/api/ranked/queue"))["queue"]
    assert paired["state"] == "paired" and paired["seating"] == ["ana", "bia"]
    assert "ainda não estão disponíveis" in paired["message"]
    # no table was pretended: nobody's chips moved, and a rematch of the round changes nothing
    await house.clock.advance(5)
    assert (await bia.json("/api/ranked/queue"))["queue"]["state"] == "paired"
    assert await house.pool.fetchval("SELECT count(*) FROM chip_entries "
                                     "WHERE reason = 'hold'") == 0
    # ana gives up: bia goes back to the queue with her waiting time, and is told why
    await ana.json("/api/ranked/queue/leave", {})
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    back = (await bia.json("/api/ranked/queue"))["queue"]
    assert back["state"] == "queued" and back["waited_s"] == 36
    assert back["news"] == {"kind": "table_undone", "who": "ana", "text": (
        "ana desistiu da mesa que tinha sido formada: você voltou à fila, com o tempo de "
        "espera que já tinha.")}
    assert (await ana.json("/api/ranked/queue"))["queue"]["news"] is None


async def test_queue_refusals_change_nothing(house: House) -> None:
    ana = await house.player("ana")
    for body, code in (({"variant": "truco", "seats": 2}, "bad_queue"),
                       ({"variant": "paulista", "seats": 3}, "bad_queue"),
                       ({"variant": "paulista", "seats": True}, "bad_queue"),
                       ({"variant": "paulista", "seats": 2, "partner": "nobody"},
                        "unknown_user"),
                       ({"variant": "paulista", "seats": 2, "partner": "ana"}, "bad_partner"),
                       ({"variant": "paulista", "seats": 4, "partner": 7}, "bad_partner")):
        resp = await ana.post("/api/ranked/queue", body)
        assert resp.status in (400, 404) and (await resp.json())["error"] == code, body
    resp = await ana.post("/api/ranked/queue/leave", {})
    assert resp.status == 409 and (await resp.json())["error"] == "not_queued"
    await ana.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4})
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "already_queued"
    mine = (await ana.json("/api/ranked/queue"))["queue"]
    assert (mine["variant"], mine["seats"]) == ("mineiro", 4)
    anonymous = await house.client.post("/api/ranked/queue", json={})
    assert anonymous.status in (401, 403)


async def test_a_live_house_opens_the_2v2_table_and_holds_the_stakes(staffed: House) -> None:
    ana, bia, caio, duda = await staffed.players("ana", "bia", "caio", "duda")
    for player, rating in ((ana, 1500), (bia, 1560), (caio, 1510), (duda, 1540)):
        await staffed.rate(player, rating, seats=4)
    invited = await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                                   "partner": "bia"})
    assert invited["queue"]["state"] == "inviting" and invited["queue"]["partner"] == "bia"
    duo = await bia.json("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                               "partner": "ana"})
    assert duo["queue"]["state"] == "queued" and duo["queue"]["partner"] == "ana"
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 4})
    await staffed.clock.advance(0.5)
    assert staffed.launcher is not None and staffed.launcher.launched == []
    await duda.json("/api/ranked/queue", {"variant": "paulista", "seats": 4})
    await staffed.clock.advance(1)
    [(kind, variant, seats, seating, stake)] = staffed.launcher.launched
    assert (kind, variant, seats, stake) == (TableKind.RANKED, P, 4, 50)
    # the duo (the inviter first) stays together on the even seats: it waited longest; the
    # solos sit on the odd seats, the nearer rating first
    assert seating == (ana.id, duda.id, bia.id, caio.id)
    table = f"{1:016x}"
    for player in (ana, bia, caio, duda):
        status = (await player.json("/api/ranked/queue"))["queue"]
        assert status["state"] == "seated" and status["table"] == table
        assert await ledger.balance(staffed.pool, player.id) == 950
    # the match ends: the winners share the pot, everybody is rated, all may queue again
    service = staffed.app[RANKED]
    settled = await service.match_ended(
        table_id=table, match_number=1, kind=TableKind.RANKED, variant=P, seats=4,
        users_by_seat=seating, termination=Termination.TARGET, winner_team=1,
        forfeit_seat=None, restart_overlap=False, evidence=(), started_at=staffed.now(),
        ended_at=staffed.now() + timedelta(minutes=12))
    assert settled.record is None and len(settled.changes) == 4
    balances = [await ledger.balance(staffed.pool, p.id) for p in (ana, bia, caio, duda)]
    assert balances == [950, 950, 1050, 1050]
    assert (await caio.json("/api/ranked/queue"))["queue"]["state"] == "idle"


async def test_a_failed_launch_is_tried_again(staffed: House) -> None:
    assert staffed.launcher is not None
    staffed.launcher.fail = True
    ana, bia = await staffed.player("ana"), await staffed.player("bia")
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "argentino", "seats": 2})
    await staffed.clock.advance(3)
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "paired"
    staffed.launcher.fail = False
    await staffed.clock.advance(1)
    assert len(staffed.launcher.launched) == 1
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "seated"


async def test_paused_or_broke_players_cannot_queue(house: House) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await settle_abandonment(house, "00000000000000b1", [ana.id, bia.id], 0)
    await settle_abandonment(house, "00000000000000b2", [ana.id, caio.id], 0)
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "paused"
    # the second abandonment in a week pauses for 15 minutes, on the server's clock
    await house.clock.advance(15 * 60 + 1)
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    # a wallet below the stake is refused too
    await ledger.hold_stakes(house.pool, "ranked:00000000000000b3:1", [bia.id, caio.id], 1010)
    resp = await bia.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "insufficient_chips"


async def test_a_balance_of_exactly_the_stake_may_queue(house: House) -> None:
    ana, bia = await house.players("ana", "bia")
    stake = house.app[RANKED_SETTINGS].stake
    await ledger.hold_stakes(house.pool, "ranked:00000000000000b4:1", [ana.id, bia.id],
                             ledger.STARTING_GRANT - stake)
    assert await ledger.balance(house.pool, ana.id) == stake
    # `insufficient_chips` is fewer chips than the stake: the last stake may still be played
    status = await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert status["queue"]["state"] == "queued"


async def test_one_place_at_a_time_and_a_duo_needs_an_eligible_partner(house: House) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    op = await house.player("judge", operator=True)
    arena = (await op.json("/api/ranked/arenas", {"variant": "mineiro", "seats": 2},
                           status=201))["arena"]["id"]
    await ana.json(f"/api/ranked/arenas/{arena}/join", {})
    resp = await ana.post("/api/ranked/queue", {"variant": "mineiro", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "in_arena"
    await bia.json("/api/ranked/queue", {"variant": "mineiro", "seats": 2})
    resp = await bia.post(f"/api/ranked/arenas/{arena}/join", {})
    assert resp.status == 409 and (await resp.json())["error"] == "already_queued"
    # the judge invites caio, then is paused: the duo does not form, and caio is told why
    duo = {"variant": "paulista", "seats": 4}
    await op.json("/api/ranked/queue", duo | {"partner": "caio"})
    await settle_abandonment(house, "00000000000000f1", [ana.id, op.id], 1)
    await settle_abandonment(house, "00000000000000f2", [caio.id, op.id], 1)
    resp = await caio.post("/api/ranked/queue", duo | {"partner": "judge"})
    assert resp.status == 409 and (await resp.json())["error"] == "partner_paused"
    # how long the judge's pause runs is the judge's business (a review probed it by name)
    assert (await resp.json())["message"] == "Your partner is paused from ranked play."
    assert (await caio.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    assert (await op.json("/api/ranked/queue"))["queue"]["state"] == "inviting"


# --- settlement -------------------------------------------------------------------------------


async def test_settle_match_pays_rates_and_records_once(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    first = await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)
    again = await settle_abandonment(house, TABLE, [ana.id, bia.id], 1, hold=False)
    assert first.match_ref == again.match_ref == f"ranked:{TABLE}:1"
    assert first.chips is not None and first.chips.new and not again.chips.new
    assert first.changes == again.changes and first.record == again.record
    assert first.record.user_id == bia.id and first.record.strikes == 1
    assert [await ledger.balance(house.pool, u) for u in (ana.id, bia.id)] == [1050, 950]
    won = await ratings.rating_of(house.pool, ana.id, P, 2)
    assert won.rating > 1500
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_rating_history") == 2


async def test_a_2v2_abandonment_is_recorded_against_the_seat_that_left(house: House) -> None:
    ana, bia, caio, duda = await house.players("ana", "bia", "caio", "duda")
    settled = await settle_abandonment(house, TABLE, [ana.id, bia.id, caio.id, duda.id], 2)
    # caio (seat 2) left; his partner ana (seat 0) played on: the record is caio's, not hers
    assert settled.record is not None and settled.record.user_id == caio.id
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_abandonments") == 1


async def test_a_cancelled_match_is_refunded_and_not_rated(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    await ledger.hold_stakes(house.pool, f"ranked:{TABLE}:1", [ana.id, bia.id], 50)
    done = await settle_match(
        house.pool, table_id=TABLE, match_number=1, kind=TableKind.RANKED, variant=P, seats=2,
        users_by_seat=[ana.id, bia.id], termination=Termination.CANCELLED, winner_team=None,
        forfeit_seat=None, restart_overlap=False, evidence=(), started_at=house.now(),
        ended_at=house.now())
    assert done.chips is not None and done.chips.reason is ledger.Reason.REFUND
    assert done.changes == () and done.record is None
    assert [await ledger.balance(house.pool, u) for u in (ana.id, bia.id)] == [1000, 1000]


async def test_an_arena_match_is_neither_staked_nor_rated(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    done = await settle_match(
        house.pool, table_id=TABLE, match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
        users_by_seat=[ana.id, bia.id], termination=Termination.ABANDONMENT, winner_team=0,
        forfeit_seat=1, restart_overlap=True, evidence=EVIDENCE, started_at=house.now(),
        ended_at=house.now())
    assert done.chips is None and done.changes == ()
    # the live house flagged a restart during the streak: the record carries no penalty
    assert done.record is not None and done.record.status.value == "exempt"
    assert done.record.match_ref == f"arena:{TABLE}:1"


@pytest.mark.parametrize("change, code", [
    ({"kind": TableKind.PRIVATE}, "bad_result"),
    ({"table_id": "XYZ"}, "bad_result"),
    ({"seats": 3}, "bad_result"),
    ({"users_by_seat": [1, 1]}, "bad_result"),
    ({"winner_team": 2}, "bad_result"),
    ({"forfeit_seat": 0}, "bad_result"),  # the abandoning side won
    ({"forfeit_seat": None}, "bad_result"),
    ({"termination": "target"}, "bad_result"),
    ({"match_number": 0}, "bad_id"),
    ({"evidence": [{"kind": "deadline"}]}, "bad_record"),
    ({"ended_at": datetime(2020, 1, 1, tzinfo=UTC)}, "bad_result"),
])
async def test_bad_results_are_refused_and_change_nothing(
    house: House, change: dict[str, Any], code: str,
) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    await ledger.hold_stakes(house.pool, f"ranked:{TABLE}:1", [ana.id, bia.id], 50)
    args: dict[str, Any] = {
        "table_id": TABLE, "match_number": 1, "kind": TableKind.RANKED, "variant": P,
        "seats": 2, "users_by_seat": [ana.id, bia.id], "termination": Termination.ABANDONMENT,
        "winner_team": 0, "forfeit_seat": 1, "restart_overlap": False, "evidence": EVIDENCE,
        "started_at": house.now(), "ended_at": house.now() + timedelta(minutes=5),
    } | change
    with pytest.raises((RankedError, review.ReviewStoreError)) as err:
        await settle_match(house.pool, **args)
    assert err.value.code == code
    assert [await ledger.balance(house.pool, u) for u in (ana.id, bia.id)] == [950, 950]
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_rating_history") == 0
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_abandonments") == 0


# --- standings and appeals --------------------------------------------------------------------


async def test_my_standing_shows_ratings_matches_chips_and_records(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    settled = await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)
    standing = await bia.json("/api/me/standing")
    [rating] = standing["ratings"]
    assert (rating["variant"], rating["seats"], rating["provisional"]) == ("paulista", 2, True)
    assert rating["rating"] == round(settled.changes[1].after.rating, 2) < 1500
    [match] = standing["matches"]
    assert match["won"] is False and match["table"] == TABLE
    assert standing["chips"]["balance"] == 950
    assert [line["reason"] for line in standing["chips"]["ledger"]] == ["hold", "grant"]
    [record] = standing["abandonments"]
    assert record["status"] == "pending" and record["can_appeal"] is True
    assert record["hands"] == [f"/hands/{TABLE}-3", f"/hands/{TABLE}-4"]
    assert standing["pause_remaining_s"] == 0
    assert (await ana.json("/api/me/standing"))["abandonments"] == []
    # one match's lines alone (the table page's end box asks so: however old the match)
    one = await bia.json(f"/api/me/standing?match=ranked:{TABLE}:1")
    assert [line["reason"] for line in one["chips"]["ledger"]] == ["hold"]
    assert [h["match"] for h in one["history"]] == [f"ranked:{TABLE}:1"]
    other = await bia.json(f"/api/me/standing?match=ranked:{TABLE}:2")
    assert other["chips"]["ledger"] == [] and other["history"] == []
    for bad in ("x", f"arena:{TABLE}:1", f"ranked:{TABLE}:0", f"ranked:{TABLE}:1%0a"):
        assert (await bia.json(f"/api/me/standing?match={bad}", status=400))["error"] == (
            "bad_match")
    page = await bia.get("/me")
    assert page.status == 200
    text = await page.text()
    assert "Registro " + str(record["id"]) in text and "950" in text
    assert (await house.client.get("/api/me/standing")).status == 401
    anonymous = await house.client.get("/me", allow_redirects=False)
    assert anonymous.status == 401 and 'name="next" value="/me"' in await anonymous.text()


async def test_a_player_appeals_a_record_once(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    path = f"/api/me/abandonments/{record.id}/appeal"
    for body, status, code in (({"text": "   "}, 400, "bad_text"),
                               ({"text": "x" * 2001}, 400, "bad_text")):
        resp = await bia.post(path, body)
        assert resp.status == status and (await resp.json())["error"] == code
    resp = await ana.post(path, {"text": "not mine"})
    assert resp.status == 403 and (await resp.json())["error"] == "forbidden"
    done = await bia.json(path, {"text": "Minha internet caiu no meio da mão."})
    assert done["abandonment"]["appeal"] == "Minha internet caiu no meio da mão."
    resp = await bia.post(path, {"text": "de novo"})
    assert resp.status == 409 and (await resp.json())["error"] == "already_appealed"
    # the form says so in pt-BR, on the page
    page = await bia.post(f"/me/abandonments/{record.id}/appeal", form={"text": "outra vez"})
    assert page.status == 409 and "já teve o seu recurso" in await page.text()
    missing = await bia.post("/api/me/abandonments/999999/appeal", {"text": "x"})
    assert missing.status == 404
    stored = await review.get_record(house.pool, record.id)
    assert stored.appeal_text == "Minha internet caiu no meio da mão."


async def test_an_appeal_is_counted_as_typed_and_never_lost(house: House) -> None:
    # a browser sends each line break as CRLF: 1999 characters with 9 line breaks, let through
    # by the textarea's maxlength, were refused as 2008, and the page came back with an empty box
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    too_long = "x" * 2001
    page = await bia.post(f"/me/abandonments/{record.id}/appeal", form={"text": too_long})
    assert page.status == 400 and f">{too_long}</textarea>" in await page.text()
    typed = "\r\n".join(["y" * 199] * 10)  # 1999 characters as the textarea counts them
    assert len(typed.replace("\r\n", "\n")) == 1999
    resp = await bia.post(f"/me/abandonments/{record.id}/appeal", form={"text": typed})
    assert resp.status == 303
    stored = await review.get_record(house.pool, record.id)
    assert stored.appeal_text == typed.replace("\r\n", "\n")


async def test_a_refused_note_keeps_the_decision_chosen(house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    page = await op.post(f"/operator/abandonments/{record.id}/decision",
                         form={"decision": "overturn", "note": "   "})
    text = await page.text()
    assert page.status == 400 and '<option value="overturn" selected>' in text
    assert (await review.get_record(house.pool, record.id)).status.value == "pending"


async def test_an_operator_does_not_decide_on_their_own_record(house: House) -> None:
    # a review found an operator could overturn their own abandonment (and get their stake,
    # rating points and pause back): it is another operator's to decide
    judge = await house.player("judge", operator=True)
    other = await house.player("other", operator=True)
    ana = await house.player("ana")
    record = (await settle_abandonment(house, TABLE, [ana.id, judge.id], 1)).record
    decision = {"decision": "overturn", "note": "my own"}
    # a misspelt field is refused, whoever sends it (the note would be taken as missing)
    resp = await other.post(f"/api/ranked/operator/abandonments/{record.id}/decision",
                            {"decision": "overturn", "nte": "x"})
    assert resp.status == 400 and (await resp.json())["error"] == "unknown_field"
    resp = await judge.post(f"/api/ranked/operator/abandonments/{record.id}/decision", decision)
    assert resp.status == 403 and (await resp.json())["error"] == "own_record"
    page = await judge.get(f"/operator/abandonments/{record.id}")
    text = await page.text()
    assert page.status == 200 and 'id="own-record"' in text and "/decision" not in text
    page = await judge.post(f"/operator/abandonments/{record.id}/decision",
                            form=decision | {"expected_state": "pending:none"})
    assert page.status == 403 and "quem decide sobre ele é outro operador" in await page.text()
    stored = await review.get_record(house.pool, record.id)
    assert stored.status.value == "pending" and stored.decided_by is None
    # another operator decides it
    page = await other.get(f"/operator/abandonments/{record.id}")
    assert 'id="own-record"' not in await page.text()
    done = await other.json(f"/api/ranked/operator/abandonments/{record.id}/decision", decision)
    assert done["abandonment"]["status"] == "overturned"


async def test_an_overturned_arena_record_does_not_say_it_gave_anything_back(
        house: House) -> None:
    # /me said "a casa devolveu o que ele custou" and "0 fichas e +0,0 pontos" for an arena
    # record: an arena has no stake nor rating, and its loss stays
    op = await house.player("judge", operator=True)
    ana, bia = await house.player("ana"), await house.player("bia")
    settled = await settle_match(
        house.pool, table_id=TABLE, match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
        users_by_seat=[ana.id, bia.id], termination=Termination.ABANDONMENT, winner_team=0,
        forfeit_seat=1, restart_overlap=False, evidence=EVIDENCE,
        started_at=house.now() - timedelta(minutes=10), ended_at=house.now())
    record = settled.record
    await op.json(f"/api/ranked/operator/abandonments/{record.id}/decision",
                  {"decision": "overturn", "note": "Queda geral de energia."})
    text = await (await bia.get("/me")).text()
    assert "na arena não há aposta nem pontos de classificação a devolver" in text
    assert "devolveu o que ele custou" not in text
    assert f'id="record-{record.id}-returned"' not in text


async def test_a_forms_address_opened_again_leads_to_its_page(house: House) -> None:
    # a refused form's page stays at the form's address; opened again (Enter, a restored tab)
    # it answered a 405 in English JSON
    op = await house.player("judge", operator=True)
    for path, page in (("/ranked/queue", "/ranked"), ("/ranked/queue/leave", "/ranked"),
                       ("/me/abandonments/7/appeal", "/me"),
                       ("/operator/abandonments/7/decision", "/operator/abandonments/7"),
                       ("/operator/abandonments/x/decision", "/operator/abandonments"),
                       ("/signup", "/"), ("/login", "/"), ("/logout", "/"),
                       ("/account/password", "/account"), ("/arena/3/join", "/arena")):
        resp = await op.get(path)
        assert (resp.status, resp.headers.get("Location")) == (303, page), path


async def test_the_appeal_form_redirects_back_to_the_record(house: House) -> None:
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    resp = await bia.post(f"/me/abandonments/{record.id}/appeal", form={"text": "caiu a luz"})
    assert resp.status == 303
    assert resp.headers["Location"] == f"/me?appealed={record.id}#record-{record.id}"
    assert (await review.get_record(house.pool, record.id)).appeal_text == "caiu a luz"


async def test_leaderboard_lists_established_ratings(house: House) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await house.rate(ana, 1600)
    await house.rate(bia, 1700)
    await house.rate(caio, 1800, rd=200)  # provisional: not listed
    board = await ana.json("/api/ranked/leaderboard?variant=paulista&seats=2")
    assert [(r["rank"], r["player"]) for r in board["leaderboard"]] == [(1, "bia"), (2, "ana")]
    page = await house.client.get("/leaderboard?variant=paulista&seats=2")
    text = await page.text()
    assert page.status == 200 and text.index("bia") < text.index("ana") and "caio" not in text
    bad = await house.client.get("/api/ranked/leaderboard?variant=x")
    assert bad.status == 400 and (await bad.json())["error"] == "bad_queue"


# --- the arena --------------------------------------------------------------------------------


async def test_an_arena_pairs_scores_and_closes_with_a_podium(staffed: House) -> None:
    op = await staffed.player("judge", operator=True)
    ana, bia = await staffed.player("ana"), await staffed.player("bia")
    refused = await ana.post("/api/ranked/arenas", {"variant": "paulista", "seats": 2})
    assert refused.status == 403
    created = await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                   "minutes": 10}, status=201)
    arena_id = created["arena"]["id"]
    for player in (ana, bia):
        await player.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await staffed.clock.advance(1)
    assert staffed.launcher is not None
    [(kind, _, _, seating, stake)] = staffed.launcher.launched
    assert kind is TableKind.ARENA and stake == 0
    await staffed.app[RANKED].match_ended(
        table_id=f"{1:016x}", match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
        users_by_seat=seating, termination=Termination.TARGET, winner_team=0,
        forfeit_seat=None, restart_overlap=False, evidence=(), started_at=staffed.now(),
        ended_at=staffed.now())
    standings = (await ana.json("/api/ranked/arenas"))["arenas"][0]["standings"]
    winner = "ana" if seating[0] == ana.id else "bia"
    assert standings[0] == {"rank": 1, "player": winner, "points": 2, "wins": 1, "games": 1,
                            "streak": 1, "on_fire": False}
    await staffed.clock.advance(10 * 60)
    [event] = (await ana.json("/api/ranked/arenas"))["arenas"]
    assert event["state"] == "closed" and event["podium"] == [winner]
    stored = await staffed.pool.fetchval("SELECT count(*) FROM arena_standings "
                                         "WHERE arena_id = $1 AND podium", arena_id)
    assert stored == 1
    late = await bia.post(f"/api/ranked/arenas/{arena_id}/join", {})
    assert late.status == 409
    # each entrant's own page keeps where they finished (the arena list shows only the newest)
    loser = bia if winner == "ana" else ana
    for player, rank, points, wins in ((ana if winner == "ana" else bia, 1, 2, 1),
                                       (loser, 2, 0, 0)):
        [mine] = (await player.json("/api/me/standing"))["arenas"]
        assert mine == {"id": arena_id, "variant": "paulista", "seats": 2,
                        "starts_at": event["starts_at"], "ends_at": event["ends_at"],
                        "rank": rank, "entrants": 2, "points": points, "wins": wins,
                        "games": 1, "podium": rank == 1}
        page = await (await player.get("/me")).text()
        assert f"{rank}º lugar</strong> de 2" in page
        assert ("pódio</span>" in page) == (rank == 1)
    assert (await op.json("/api/me/standing"))["arenas"] == []
    assert "Nenhuma arena encerrada com você inscrito" in await (await op.get("/me")).text()


async def test_an_arena_says_why_an_entrant_is_no_longer_paired(staffed: House) -> None:
    # the page gave the three possible reasons to every entrant out of the pairing
    op = await staffed.player("judge", operator=True)
    ana, bia = await staffed.player("ana"), await staffed.player("bia")
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                     "minutes": 30}, status=201))["arena"]["id"]
    for player in (ana, bia):
        await player.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await staffed.clock.advance(1)
    assert staffed.launcher is not None
    [(_, _, _, seating, _)] = staffed.launcher.launched
    quitter = 1 if seating[1] == ana.id else 0  # ana abandons her table
    await staffed.app[RANKED].match_ended(
        table_id=f"{1:016x}", match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
        users_by_seat=seating, termination=Termination.ABANDONMENT, winner_team=1 - quitter,
        forfeit_seat=quitter, restart_overlap=False, evidence=(), started_at=staffed.now(),
        ended_at=staffed.now())
    for player, why in ((ana, "abandoned"), (bia, None)):
        [event] = (await player.json("/api/ranked/arenas"))["arenas"]
        assert (event["left"], event["left_why"]) == (why is not None, why)
    page = await (await ana.get("/arena")).text()
    assert ("Você não está mais sendo emparelhado nesta arena: você perdeu uma partida dela por "
            "abandono") in page
    # joining again brings her back, and the line goes
    await ana.json(f"/api/ranked/arenas/{arena_id}/join", {})
    [event] = (await ana.json("/api/ranked/arenas"))["arenas"]
    assert (event["joined"], event["left"], event["left_why"]) == (True, False, None)
    assert "não está mais sendo emparelhado" not in await (await ana.get("/arena")).text()


async def test_an_operator_ends_an_arena_early(staffed: House) -> None:
    # a review's operator could not stop an arena made by mistake
    op = await staffed.player("judge", operator=True)
    ana, bia = await staffed.player("ana"), await staffed.player("bia")
    arena_id = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                     "minutes": 60}, status=201))["arena"]["id"]
    later = (await op.json("/api/ranked/arenas", {"variant": "mineiro", "seats": 2,
                                                  "minutes": 60, "starts_in_minutes": 30},
                          status=201))["arena"]["id"]
    for player in (ana, bia):
        await player.json(f"/api/ranked/arenas/{arena_id}/join", {})
    await staffed.clock.advance(1)
    assert staffed.launcher is not None
    [(_, _, _, seating, _)] = staffed.launcher.launched
    await staffed.app[RANKED].match_ended(
        table_id=f"{1:016x}", match_number=1, kind=TableKind.ARENA, variant=P, seats=2,
        users_by_seat=seating, termination=Termination.TARGET, winner_team=0,
        forfeit_seat=None, restart_overlap=False, evidence=(), started_at=staffed.now(),
        ended_at=staffed.now())
    page = await (await op.get("/arena")).text()
    assert "Encerrar esta arena agora (operação)" in page
    # asked again before it is done (forms.js): it cannot be undone
    assert ('data-confirm="Encerrar esta arena (Paulista 1x1) agora, para todos os jogadores?'
            ' Isso não se desfaz."') in page
    assert "Encerrar esta arena agora" not in await (await ana.get("/arena")).text()
    # players may not; the operator's form ends it, and the next round closes it
    assert (await ana.post(f"/api/ranked/arenas/{arena_id}/end", {})).status == 403
    assert (await ana.post(f"/arena/{arena_id}/end", form={})).status == 403
    assert (await op.post(f"/arena/{arena_id}/end", form={})).status == 303
    await staffed.clock.advance(2)
    events = {e["id"]: e for e in (await ana.json("/api/ranked/arenas"))["arenas"]}
    winner = "ana" if seating[0] == ana.id else "bia"
    assert events[arena_id]["state"] == "closed" and events[arena_id]["podium"] == [winner]
    assert len(staffed.launcher.launched) == 1  # no table after the end
    body = await op.json(f"/api/ranked/arenas/{arena_id}/end", {}, status=409)
    assert body["error"] == "closed"
    # an upcoming one never starts; the end is stored (a restart keeps it)
    ended = (await op.json(f"/api/ranked/arenas/{later}/end", {}))["arena"]
    assert ended["state"] in ("closed", "ending")
    row = await staffed.pool.fetchrow("SELECT starts_at, ends_at FROM ranked_arenas"
                                      " WHERE id = $1", later)
    assert row["ends_at"] <= staffed.now() and row["starts_at"] < row["ends_at"]
    await staffed.clock.advance(2)
    events = {e["id"]: e for e in (await ana.json("/api/ranked/arenas"))["arenas"]}
    assert events[later]["state"] == "closed" and events[later]["podium"] == []


# --- operators --------------------------------------------------------------------------------


OPERATOR_PAGES = ("/operator/abandonments", "/operator/abandonments/1", "/operator/audit")
OPERATOR_API = ("/api/ranked/operator/abandonments", "/api/ranked/operator/abandonments/1",
                "/api/ranked/operator/audit")


async def test_operator_pages_refuse_players_anonymous_users_and_forged_csrf(
    house: House,
) -> None:
    op = await house.player("judge", operator=True)
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    assert record.id == 1
    for path in OPERATOR_PAGES:
        anonymous = await house.client.get(path, allow_redirects=False)
        assert anonymous.status == 401 and 'name="next"' in await anonymous.text()
        assert (await ana.get(path)).status == 403
        assert (await op.get(path)).status == 200
    for path in OPERATOR_API:
        assert (await house.client.get(path)).status == 401
        assert (await ana.get(path)).status == 403
        assert (await op.get(path)).status == 200
    decision = "/operator/abandonments/1/decision"
    refused = await ana.post(decision, form={"decision": "overturn", "note": "x"})
    assert refused.status == 403
    forged = await op.post(decision, form={"decision": "overturn", "note": "x"}, csrf="forged")
    assert forged.status == 403 and (await forged.json())["error"] == "csrf_failed"
    forged = await op.post("/api/ranked/operator/abandonments/1/decision",
                           {"decision": "overturn", "note": "x"}, csrf="forged")
    assert forged.status == 403
    assert (await review.get_record(house.pool, 1)).status.value == "pending"
    assert await ledger.balance(house.pool, bia.id) == 950


async def test_operator_filters_the_review_queue(house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await settle_abandonment(house, "00000000000000c1", [ana.id, bia.id], 1)
    await house.clock.advance(3600)
    await settle_abandonment(house, "00000000000000c2", [caio.id, ana.id], 0)

    async def ids(query: str) -> list[int]:
        body = await op.json("/api/ranked/operator/abandonments" + query)
        return [r["id"] for r in body["abandonments"]]

    assert await ids("") == [2, 1]
    assert await ids("?player=BIA") == [1]
    assert await ids("?player=nobody") == []
    assert await ids("?kind=ranked&variant=paulista") == [2, 1]
    assert await ids("?kind=arena") == []
    assert await ids("?status=pending&appealed=no") == [2, 1]
    day = house.now().date().isoformat()
    assert await ids(f"?since={day}&until={day}") == [2, 1]
    assert await ids("?since=" + quote(house.now().isoformat())) == [2]
    assert await ids("?until=2020-01-01") == []
    for bad in ("?status=lost", "?since=yesterday", "?kind=private", "?before=x",
                "?until=9999-12-31T23:59:59-14:00", "?since=0001-01-01T00:00:00%2B14:00"):
        resp = await op.get("/api/ranked/operator/abandonments" + bad)
        assert resp.status == 400, bad
    for bad in ("?until=9999-12-31T23:59:59-14:00",
                "?list=free&since=0001-01-01T00:00:00%2B14:00"):
        assert (await op.get("/operator/abandonments" + bad)).status == 400, bad
    page = await op.get("/operator/abandonments?player=caio")
    text = await page.text()
    assert "Registro 2" in text and "Registro 1" not in text
    assert (await op.get("/operator/abandonments?since=ontem")).status == 400


async def test_an_overturn_gives_back_rating_chips_and_pause_exactly_once(house: House) -> None:
    op = await house.player("judge", operator=True)
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await settle_abandonment(house, "00000000000000d1", [ana.id, bia.id], 1)
    before = await ratings.rating_of(house.pool, bia.id, P, 2)
    second = await settle_abandonment(house, "00000000000000d2", [caio.id, bia.id], 1)
    after = await ratings.rating_of(house.pool, bia.id, P, 2)
    assert await ledger.balance(house.pool, bia.id) == 900
    assert (await bia.json("/api/me/standing"))["pause_remaining_s"] == 15 * 60
    page = await op.get(f"/operator/abandonments/{second.record.id}")
    text = await page.text()
    assert "/hands/00000000000000d2-3" in text and "Ação automática" in text
    # a decision without a note is refused; the page says why and nothing changes
    refused = await op.post(f"/operator/abandonments/{second.record.id}/decision",
                            form={"decision": "overturn", "note": " "})
    assert refused.status == 400 and "Escreva o texto" in await refused.text()
    resp = await op.post(f"/operator/abandonments/{second.record.id}/decision",
                         form={"decision": "overturn", "note": "Queda do provedor confirmada."})
    assert resp.status == 303
    assert await ledger.balance(house.pool, bia.id) == 950
    restored = await ratings.rating_of(house.pool, bia.id, P, 2)
    assert restored.rating == pytest.approx(after.rating - second.changes[1].delta)
    assert restored.rating == pytest.approx(before.rating)
    assert (await bia.json("/api/me/standing"))["pause_remaining_s"] == 0
    # a second overturn, by form or API, is refused and gives nothing twice
    again = await op.post(f"/api/ranked/operator/abandonments/{second.record.id}/decision",
                          {"decision": "overturn", "note": "de novo"})
    assert again.status == 409 and (await again.json())["error"] == "already_overturned"
    page = await op.post(f"/operator/abandonments/{second.record.id}/decision",
                         form={"decision": "uphold", "note": "mudei de ideia"})
    assert page.status == 409
    assert await ledger.balance(house.pool, bia.id) == 950
    assert (await ratings.rating_of(house.pool, bia.id, P, 2)).rating == restored.rating
    audit = await op.json("/api/ranked/operator/audit")
    actions = [(a["record"], a["action"]) for a in audit["audit"]]
    assert actions == [(2, "overturn"), (2, "created"), (1, "created")]
    assert audit["audit"][0]["detail"]["chips_returned"] == 50
    detail = await op.json(f"/api/ranked/operator/abandonments/{second.record.id}")
    assert detail["abandonment"]["status"] == "overturned"
    assert "Revertido" in await (await op.get("/operator/audit")).text()


async def forfeit(house: House, table: str, users: Sequence[int], last: dict[str, Any]) -> Any:
    """A staked ranked 1v1 on `table` that seat 1 lost by abandonment just now, its evidence
    ending with the item the live house marks as the abandonment (`last`)."""
    ref = f"ranked:{table}:1"
    await ledger.hold_stakes(house.pool, ref, users, 50)
    return await settle_match(
        house.pool, table_id=table, match_number=1, kind=TableKind.RANKED, variant=P, seats=2,
        users_by_seat=users, termination=Termination.ABANDONMENT, winner_team=0,
        forfeit_seat=1, restart_overlap=False,
        evidence=[*EVIDENCE, {"at_ms": 1_800_000_120_000, "seat": 1, **last,
                              "abandonment": "forfeit"}],
        started_at=house.now() - timedelta(minutes=10), ended_at=house.now())


def pt(value: float, fmt: str = "{:+.1f}") -> str:
    return fmt.format(value).replace(".", ",").replace("-", "\u2212")


async def test_my_page_explains_each_record_and_what_an_overturn_gave_back(
    house: House,
) -> None:
    """`/me` (and `/api/me/standing`) say what made each record, the match's result, the
    strike and the pause it set, the hands' pages, what the status means, the operator's note
    once decided and what an overturn gave back; the reversal's rating row is dated at the
    decision and the annulled match is marked; pt-BR decimals and plurals; no raw match codes
    or raw JSON links."""
    op = await house.player("judge", operator=True)
    ana, bia, caio = await house.players("ana", "bia", "caio")
    d1, d2, d3 = "00000000000000d1", "00000000000000d2", "00000000000000d3"
    await forfeit(house, d1, [ana.id, bia.id], {"kind": "left", "hand": 2})
    await house.clock.advance(600)
    second = await forfeit(house, d2, [caio.id, bia.id], {"kind": "deadline", "hand": 5})
    await house.clock.advance(600)
    # a later match bia wins: the reversal starts from the rating she has then
    await ratings.rate_match(house.pool, f"ranked:{d3}:1", P, 2, ([caio.id], [bia.id]), 1,
                             house.now())
    then = await ratings.rating_of(house.pool, bia.id, P, 2)
    resp = await op.post(f"/operator/abandonments/{second.record.id}/decision",
                         form={"decision": "overturn", "note": "Queda do provedor confirmada."})
    assert resp.status == 303
    decided = await review.get_record(house.pool, second.record.id)
    assert decided.decided_at is not None
    lost = second.changes[1].delta
    standing = await bia.json("/api/me/standing")
    newer, older = standing["abandonments"]
    assert newer["id"] == second.record.id and newer["status"] == "overturned"
    assert (newer["kind"], newer["trigger"], newer["strikes"], newer["pause_s"]) == (
        "ranked", "automatic_actions", 2, 900)
    assert newer["hand_pages"] == [f"/h/{d2}/3", f"/h/{d2}/4", f"/h/{d2}/5"]
    assert newer["stake_lost"] == 50 and newer["rating_change"] == round(lost, 2)
    assert newer["decisions"] == [{"decision": "overturn", "note": "Queda do provedor confirmada.",
                                   "at": decided.decided_at.isoformat()}]
    assert newer["stake_returned"] == 50
    assert newer["rating_returned"] == round(-lost, 2)  # 2 decimals, as every rating field
    assert newer["pause_lifted_at"] == decided.decided_at.isoformat()
    assert (older["status"], older["trigger"], older["strikes"], older["pause_s"]) == (
        "pending", "left", 1, 0)
    assert older["decisions"] == [] and older["stake_returned"] is None
    # the reversal's row: dated at the decision, from the rating then (after the d3 match)
    reversal = standing["history"][0]
    assert reversal["reason"] == "reversal" and reversal["match"] == f"ranked:{d2}:1"
    assert reversal["at"] == decided.decided_at.isoformat()
    assert reversal["before"] == round(then.rating, 2)
    assert reversal["after"] == round(then.rating - lost, 2)
    marked = {m["match"]: m["overturned"] for m in standing["matches"]}
    assert marked == {f"ranked:{d3}:1": False, f"ranked:{d2}:1": True, f"ranked:{d1}:1": False}
    [annulled] = [m for m in standing["matches"] if m["overturned"]]
    assert annulled["overturned_at"] == decided.decided_at.isoformat()
    line = next(x for x in standing["chips"]["ledger"] if x["reason"] == "reversal")
    assert (line["match_kind"], line["match_table"]) == ("ranked", d2)

    text = await (await bia.get("/me")).text()
    for said in (
        # what each record is, in words
        "Revertido: a operação da casa anulou o registro",
        "Pendente: a operação da casa ainda vai revisar este registro",
        "você pode contestá-lo uma vez",
        "O seu tempo de decisão se esgotou 6 vezes seguidas",
        "Você saiu da mesa com a partida em andamento",
        f"Derrota: 50 fichas da aposta e {pt(lost)} pontos de classificação",
        "2º abandono contado em 7 dias: suspensão de 15 min da fila ranqueada e da arena",
        "1º abandono contado em 7 dias: sem suspensão",
        f'<a href="/h/{d2}/5">mão 5</a>',
        # the decision: the note, and what came back
        "<q>Queda do provedor confirmada.</q>",
        f"50 fichas e {pt(-lost)} pontos de classificação; suspensão retirada",
        # the annulled match, and the reversal row in pt-BR decimals
        "anulada na revisão: pontos devolvidos",
        f"{pt(then.rating, '{:.1f}')} → {pt(then.rating - lost, '{:.1f}')}",
        # the statement names matches for people and links their hands' page
        f'<a href="/me/hands?table={d2}">partida ranqueada</a>',
        f'<a href="/me/hands?table={d1}">registros da mesa</a>',
        "3 partidas",
    ):
        assert said in text, said
    for raw in (f"{lost:+.1f}", "partida <code>", "/chain", "partida(s)", "(respondido)"):
        assert raw not in text, raw
    assert ", 1 partida <span" in await (await ana.get("/me")).text()


def test_decimals_are_written_as_pt_br() -> None:
    assert decimal_pt(162.34, sign=True) == "+162,3"
    assert decimal_pt(-229.25, sign=True) == "\u2212229,2"  # a minus sign, not a hyphen
    assert decimal_pt(-0.04) == "0,0" and decimal_pt(-0.04, sign=True) == "+0,0"
    assert decimal_pt(1581.66) == "1581,7" and decimal_pt(3.14159, 2) == "3,14"


# --- the players' pages -----------------------------------------------------------------------


async def test_the_queue_and_arena_pages_work_with_plain_forms(house: House) -> None:
    ana = await house.player("ana")
    op = await house.player("judge", operator=True)
    page = await ana.get("/ranked")
    assert page.status == 200 and 'data-state="idle"' in await page.text()
    joined = await ana.post("/ranked/queue", form={"variant": "mineiro", "seats": "4",
                                                    "partner": ""})
    assert joined.status == 303 and joined.headers["Location"] == "/ranked"
    text = await (await ana.get("/ranked")).text()
    assert 'data-state="queued"' in text and "Mineiro 2x2" in text
    twice = await ana.post("/ranked/queue", form={"variant": "mineiro", "seats": "4"})
    assert twice.status == 409 and "Você já está na fila" in await twice.text()
    left = await ana.post("/ranked/queue/leave", form={})
    assert left.status == 303
    assert 'data-state="idle"' in await (await ana.get("/ranked")).text()
    # an invitation lapses after ten minutes without an answer
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4, "partner": "judge"})
    await house.clock.advance(601)
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    # arenas: operators create them from the page, players join and leave
    refused = await ana.post("/arena", form={"variant": "paulista", "seats": "2"})
    assert refused.status == 403
    bad = await op.post("/arena", form={"variant": "paulista", "seats": "2", "minutes": "0"})
    assert bad.status == 400 and "Dados da arena inválidos" in await bad.text()
    made = await op.post("/arena", form={"variant": "paulista", "seats": "2", "minutes": "30",
                                         "starts_in_minutes": "5"})
    assert made.status == 303
    [arena] = (await ana.json("/api/ranked/arenas"))["arenas"]
    assert arena["state"] == "upcoming"
    assert (await ana.post(f"/arena/{arena['id']}/join", form={})).status == 303
    text = await (await ana.get("/arena")).text()
    assert "Sair da arena" in text and "ana" in text
    again = await ana.post(f"/arena/{arena['id']}/join", form={})
    assert again.status == 409 and "Você já está nessa arena" in await again.text()
    assert (await ana.post("/arena/arena-nope/join", form={})).status == 404


# --- what a player's review of the queue and arena pages found --------------------------------

QUEUE_FORM = {"variant": "paulista", "seats": "2", "partner": ""}


async def test_the_queue_page_polls_and_says_when_the_match_started(staffed: House) -> None:
    # the page reloaded itself (Refresh header) every 2 s, throwing the keyboard focus to the
    # top; once the table opened it stopped, with nothing saying the match's clock was running
    ana, bia = await staffed.players("ana", "bia")
    assert (await ana.post("/ranked/queue", form=QUEUE_FORM)).status == 303
    waiting = await ana.get("/ranked")
    text = await waiting.text()
    assert "Refresh" not in waiting.headers
    assert '<script type="module" src="/static/js/ranked.js"></script>' in text
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in text
    assert "<title>Fila ranqueada · Barajamos</title>" in text
    assert (await bia.post("/ranked/queue", form=QUEUE_FORM)).status == 303
    await staffed.clock.advance(1)
    table = f"{1:016x}"
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "seated" and status["table"] == table
    assert "Sua partida começou" in status["message"]
    found = await (await ana.get("/ranked")).text()
    assert "<title>(Partida encontrada) Fila ranqueada · Barajamos</title>" in found
    assert (f'<a class="button" id="queue-table-link" href="/t/{table}">'
            "Sua partida começou: ir para a mesa</a>") in found
    assert "relógio" in found and 'http-equiv="refresh"' not in found
    # the script knows not to poll a page loaded at the table: it only links it
    assert 'data-state="seated"' in found


async def test_a_paused_player_is_told_how_long_on_the_queue_page(house: House) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await settle_abandonment(house, "00000000000000d1", [ana.id, bia.id], 0)
    await settle_abandonment(house, "00000000000000d2", [ana.id, caio.id], 0)
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "idle" and status["pause_remaining_s"] == 15 * 60
    assert status["message"] == ("Você está suspenso da fila ranqueada e da arena por abandonos"
                                 " repetidos: faltam 15 min 00 s.")
    await house.clock.advance(2)
    page = await (await ana.get("/ranked")).text()
    assert "Fora da fila" not in page and "faltam 14 min 58 s" in page
    assert 'id="queue-variant"' not in page and 'data-paused="yes"' in page
    refused = await ana.post("/ranked/queue", form=QUEUE_FORM)
    text = await refused.text()
    assert refused.status == 409
    assert ("Você está suspenso da fila ranqueada e da arena por abandonos repetidos: faltam"
            " 14 min 58 s." in text)
    # the arena's form says it too
    op = await house.player("judge", operator=True)
    arena = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                           status=201))["arena"]["id"]
    refused = await ana.post(f"/arena/{arena}/join", form={})
    assert refused.status == 409 and "faltam 14 min 58 s" in await refused.text()
    # a player who is not paused sees the form
    assert (await bia.json("/api/ranked/queue"))["queue"]["pause_remaining_s"] == 0
    assert 'id="queue-variant"' in await (await bia.get("/ranked")).text()


async def test_the_invited_partner_sees_the_invitation_and_accepts_it(house: House) -> None:
    ana, gil = await house.players("ana", "gil")
    invite = {"variant": "paulista", "seats": "4", "partner": "gil"}
    assert (await ana.post("/ranked/queue", form=invite)).status == 303
    mine = await (await ana.get("/ranked")).text()
    assert "Esperando a sua dupla" in mine and "O convite expira em 10 min 00 s." in mine
    await house.clock.advance(60)
    status = (await gil.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "idle"
    assert status["invitations"] == [{
        "from": "ana", "variant": "paulista", "seats": 4, "expires_in_s": 540,
        "text": "ana convidou você para uma dupla (Paulista 2x2); expira em 9 min 00 s."}]
    assert (await ana.json("/api/ranked/queue"))["queue"]["expires_in_s"] == 540
    page = await (await gil.get("/ranked")).text()
    assert "ana convidou você para uma dupla (Paulista 2x2); expira em 9 min 00 s." in page
    assert "Aceitar o convite de ana" in page
    for hidden in ('name="variant" value="paulista"', 'name="seats" value="4"',
                   'name="partner" value="ana"'):
        assert hidden in page
    # accepting is queueing with ana as the partner, as the accept form posts
    assert (await gil.post("/ranked/queue", form={"variant": "paulista", "seats": "4",
                                                  "partner": "ana"})).status == 303
    for player, partner in ((ana, "gil"), (gil, "ana")):
        status = (await player.json("/api/ranked/queue"))["queue"]
        assert status["state"] == "queued" and status["partner"] == partner
        assert status["invitations"] == []
    await ana.json("/api/ranked/queue/leave", {})  # the duo leaves together
    # gil was not the one who left: his page says why he is out of the queue
    left = (await gil.json("/api/ranked/queue"))["queue"]
    assert left["state"] == "idle" and left["news"]["kind"] == "partner_left"
    assert left["news"]["text"].startswith("ana, da sua dupla, saiu da fila ranqueada")
    assert "da sua dupla, saiu da fila ranqueada" in await (await gil.get("/ranked")).text()
    assert (await ana.json("/api/ranked/queue"))["queue"]["news"] is None
    # queueing again is a new start: the news is gone
    await gil.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert (await gil.json("/api/ranked/queue"))["queue"]["news"] is None
    await gil.json("/api/ranked/queue/leave", {})
    # an invitation declined: gone for both, and the inviter told
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4, "partner": "gil"})
    page = await (await gil.get("/ranked")).text()
    assert "Recusar o convite de ana" in page
    for form, code in (({"partner": "nobody"}, "no_invitation"),
                       ({"partner": "x" * 99}, "no_invitation"),
                       ({}, "no_invitation")):
        refused = await gil.post("/ranked/invitations/decline", form=form)
        assert refused.status == 409, code
        assert "Esse convite não existe mais" in await refused.text()
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "inviting"
    # (the name as typed, in another case: the page names her as she is)
    declined = await gil.post("/ranked/invitations/decline", form={"partner": "ANA"})
    assert declined.status == 303 and declined.headers["Location"] == "/ranked?declined=ana"
    assert (await gil.json("/api/ranked/queue"))["queue"]["invitations"] == []
    # the page says it was done; the address alone says nothing (another name, another player)
    confirm = ("Você recusou o convite de ana para jogar em dupla (o aviso aparece na página da "
               "fila de ana).")
    assert confirm in await (await gil.get("/ranked?declined=ana")).text()
    for forged in ("/ranked?declined=caio", "/ranked?declined=nobody", "/ranked?declined=%00"):
        assert "Você recusou o convite" not in await (await gil.get(forged)).text()
    assert "Você recusou o convite" not in await (await ana.get("/ranked?declined=ana")).text()
    told = (await ana.json("/api/ranked/queue"))["queue"]
    assert told["state"] == "idle"
    assert told["news"] == {"kind": "declined", "who": "gil",
                            "text": "gil recusou o seu convite para jogar em dupla."}
    # declining again (or an invitation never sent) is refused and changes nothing
    body = await gil.json("/api/ranked/invitations/decline", {"from": "ana"}, status=409)
    assert body["error"] == "no_invitation"
    # invited again: the invitation is what the page shows, not the old decline
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4, "partner": "gil"})
    assert "Você recusou o convite" not in await (await gil.get("/ranked?declined=ana")).text()
    await ana.json("/api/ranked/queue/leave", {})
    assert confirm in await (await gil.get("/ranked?declined=ana")).text()
    # the news lapses after 10 minutes, and so does the decline's confirmation
    await house.clock.advance(601)
    assert (await ana.json("/api/ranked/queue"))["queue"]["news"] is None
    assert "Você recusou o convite" not in await (await gil.get("/ranked?declined=ana")).text()
    # an invitation not answered lapses, for both sides
    caio, bob = await house.players("caio", "bob")
    await caio.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4, "partner": "bob"})
    assert len((await bob.json("/api/ranked/queue"))["queue"]["invitations"]) == 1
    await house.clock.advance(601)
    lapsed = (await caio.json("/api/ranked/queue"))["queue"]
    assert lapsed["state"] == "idle"
    assert lapsed["news"] == {"kind": "expired", "who": "bob", "text": (
        "Seu convite para bob jogar em dupla expirou: ficou 10 min sem resposta.")}
    assert (await bob.json("/api/ranked/queue"))["queue"]["invitations"] == []
    assert "convidou você" not in await (await bob.get("/ranked")).text()


async def test_a_player_whose_queue_page_is_closed_leaves_the_queue(house: House) -> None:
    # a review's player closed the queue's tab: the ticket stayed for ever, across restarts,
    # and was paired into a table nobody would play
    ana, gil, caio = await house.players("ana", "gil", "caio")
    service = house.app[RANKED]
    service.settings = replace(service.settings, tick=10.0)  # fewer rounds to run
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    # a page that polls (every 2 s, or once a minute when the browser hides the tab) stays
    for _ in range(5):
        await house.clock.advance(60)
        assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "queued"
    # a duo of which one page is gone: both leave, each told why
    await caio.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4, "partner": "gil"})
    await gil.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4, "partner": "caio"})
    for _ in range(3):
        await house.clock.advance(50)
        assert (await caio.json("/api/ranked/queue"))["queue"]["state"] == "queued"
        await ana.json("/api/ranked/queue")
    await house.clock.advance(40)  # gil's page: gone 190 s
    told = (await caio.json("/api/ranked/queue"))["queue"]
    assert told["state"] == "idle" and told["news"]["kind"] == "partner_away"
    assert told["news"]["text"].startswith("gil, da sua dupla, fechou a página da fila")
    back = (await gil.json("/api/ranked/queue"))["queue"]
    assert back["state"] == "idle" and back["news"]["kind"] == "away"
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "queued"
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_queue_tickets") == 1
    # what the house keeps of the players out of the queue goes once no page needs it
    await house.clock.advance(11 * 60)  # ana's page polls no more: she leaves too
    await ana.json("/api/ranked/queue/leave", {}, status=409)
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await house.clock.advance(10)  # a round (every 10 s here): gil's news is past 10 minutes
    assert set(service.news) == {ana.id} and set(service.last_seen) == {caio.id}
    await house.clock.advance(11 * 60)
    assert set(service.news) == {caio.id} and not service.last_seen  # caio's page: gone too


async def test_invitations_that_cannot_be_accepted_are_refused_or_lapse(
        staffed: House) -> None:
    house = staffed
    ana, bia, caio, duda = await house.players("ana", "bia", "caio", "duda")
    op = await house.player("judge", operator=True)
    # duda joins an arena with an invitation open: she cannot accept it from there, so it
    # lapses and its sender is told; inviting her now is refused at once
    await op.json("/api/ranked/queue", {"variant": "paulista", "seats": 4, "partner": "duda"})
    arena = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                           status=201))["arena"]["id"]
    assert (await duda.post(f"/api/ranked/arenas/{arena}/join", {})).status == 200
    told = (await op.json("/api/ranked/queue"))["queue"]
    assert told["state"] == "idle" and told["news"]["kind"] == "taken"
    body = await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                                "partner": "duda"}, status=409)
    assert body["error"] == "partner_in_arena"
    # crossed invitations: bia invited ana to Mineiro; ana's invitation to another queue
    # is refused (both sat waiting), with what to do
    await bia.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4, "partner": "ana"})
    body = await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 4,
                                                "partner": "bia"}, status=409)
    assert body["error"] == "crossed_invitation"
    page = await (await ana.post("/ranked/queue", form={"variant": "paulista", "seats": "4",
                                                        "partner": "bia"})).text()
    assert "já convidou você para outra fila" in page
    # caio invited ana too; ana queues with bia instead: caio's invitation lapses, and he is told
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 4, "partner": "ana"})
    await ana.json("/api/ranked/queue", {"variant": "mineiro", "seats": 4, "partner": "bia"})
    told = (await caio.json("/api/ranked/queue"))["queue"]
    assert told["state"] == "idle" and told["news"]["kind"] == "taken"
    assert told["news"]["text"].startswith("ana entrou na fila sem você")
    assert (await ana.json("/api/ranked/queue"))["queue"]["invitations"] == []


async def test_the_queue_says_when_nobody_is_within_the_window(house: House) -> None:
    ana, bia, caio = await house.players("ana", "bia", "caio")
    await house.rate(ana, 1500)
    await house.rate(bia, 1913)  # 413 points apart: beyond the widest window, 400
    await house.rate(caio, 1550)
    await ana.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    alone = (await ana.json("/api/ranked/queue"))["queue"]
    assert alone["notice"].startswith("Ninguém mais está nesta fila agora")
    await bia.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["notice"] == ("Ninguém na fila está na sua faixa de pontos agora; a faixa "
                                "aumenta com a espera, até 400 pontos.")
    await house.clock.advance(65)  # both windows at 400 now: still no pair
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "queued" and status["window"] == 400
    assert status["notice"] == ("Ninguém na fila está na sua faixa de pontos, que já é a maior "
                                "(400 pontos): a partida sai quando entrar alguém nessa faixa.")
    page = await (await ana.get("/ranked")).text()
    assert "que já é a maior (400 pontos)" in page
    assert "1913" not in page and "1500" not in page  # nobody's rating is shown
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert (await ana.json("/api/ranked/queue"))["queue"]["notice"] is None


async def test_a_refused_join_keeps_the_form_and_points_at_the_field(house: House) -> None:
    ana = await house.player("ana")
    resp = await ana.post("/ranked/queue", form={"variant": "mineiro", "seats": "4",
                                                 "partner": "nobody"})
    text = await resp.text()
    assert resp.status == 404
    assert '<option value="mineiro" selected>' in text and '<option value="4" selected>' in text
    assert 'value="nobody"' in text
    assert 'aria-describedby="queue-partner-error queue-partner-help" aria-invalid="true"' in text
    assert ('<p class="error" role="alert" id="queue-partner-error">Não existe jogador com '
            "esse nome.</p>") in text
    assert 'id="queue-error"' not in text
    # an error that is not the partner's stays at the top
    resp = await ana.post("/ranked/queue", form={"variant": "truco", "seats": "2"})
    text = await resp.text()
    assert resp.status == 400 and 'id="queue-error"' in text
    assert 'id="queue-partner-error"' not in text


async def test_pages_ask_anonymous_visitors_to_log_in(house: House) -> None:
    await house.player("ana")
    for path in ("/ranked", "/me", "/arena", "/operator/audit"):
        resp = await house.client.get(path, allow_redirects=False)
        text = await resp.text()
        assert resp.status == 401, path
        assert "Entre ou crie uma conta para ver esta página." in text, path
        assert f'name="next" value="{path}"' in text, path
    # a form posted after the session ended goes to the login page, which says so too
    token = (await (await house.client.get("/api/session")).json())["csrf"]
    resp = await house.client.post("/ranked/queue", data={**QUEUE_FORM, "csrf": token},
                                   allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/?next=/ranked"
    home = await (await house.client.get("/?next=/ranked")).text()
    assert "Entre ou crie uma conta para ver esta página." in home
    assert "Entre ou crie uma conta" not in await (await house.client.get("/")).text()


async def test_the_arena_page_shows_and_follows_the_players_table(staffed: House) -> None:
    op = await staffed.player("judge", operator=True)
    ana, bia, caio = await staffed.players("ana", "bia", "caio")
    arena = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                           status=201))["arena"]["id"]
    for player in (ana, bia):
        assert (await player.post(f"/arena/{arena}/join", form={})).status == 303
    page = await (await ana.get("/arena")).text()
    assert 'data-follow="yes"' in page and 'data-table=""' in page
    assert '<noscript><meta http-equiv="refresh" content="3"></noscript>' in page
    assert 'id="standings-' + arena + '"' in page
    # caio is not in it: with script his page follows the arena (its standings, its moment),
    # without script it does not reload itself
    watching = await (await caio.get("/arena")).text()
    assert 'data-follow="yes"' in watching and "<noscript><meta http-equiv" not in watching
    assert "Agora: 2 jogadores esperando mesa, 0 mesas em jogo." in watching
    assert "Você está esperando a próxima mesa (2 jogadores esperando mesa agora" in page
    await staffed.clock.advance(1)
    table = f"{1:016x}"
    for player, mine in ((ana, table), (bia, table), (caio, None)):
        [event] = (await player.json("/api/ranked/arenas"))["arenas"]
        assert event["table"] == mine and event["joined"] is (mine is not None)
        assert (event["waiting"], event["playing"], event["left"]) == (0, 1, False)
        assert event["now_text"] == "Agora: 0 jogadores esperando mesa, 1 mesa em jogo."
    page = await (await ana.get("/arena")).text()
    assert "<title>(Partida encontrada) Arena · Barajamos</title>" in page
    assert f'<a class="button" href="/t/{table}">Ir para a mesa</a>' in page
    assert f'data-table="{table}"' in page
    # /ranked: out of the queue because of the arena, which it says, and follows its table
    queue = (await ana.json("/api/ranked/queue"))["queue"]
    assert queue["state"] == "idle"
    assert queue["arena"] == {"id": arena, "name": "Paulista 1x1", "table": table}
    assert queue["message"].startswith("Sua partida da arena (Paulista 1x1) começou")
    ranked = await (await ana.get("/ranked")).text()
    assert f'data-arena="yes" data-arena-table="{table}"' in ranked
    assert f'href="/t/{table}">Ir para a mesa da arena</a>' in ranked
    assert "Entrar na fila</button>" not in ranked and "Você está numa arena" in ranked
    assert (await caio.json("/api/ranked/queue"))["queue"]["arena"] is None
    # an entrant who left is told they are no longer paired, and how to come back
    assert (await caio.post(f"/arena/{arena}/join", form={})).status == 303
    assert (await caio.post(f"/arena/{arena}/leave", form={})).status == 303
    [event] = (await caio.json("/api/ranked/arenas"))["arenas"]
    assert event["left"] is True and event["joined"] is False and event["left_why"] == "left"
    assert "Você não está mais sendo emparelhado nesta arena: você saiu dela." in await (
        await caio.get("/arena")).text()


# --- with the live house ----------------------------------------------------------------------


@pytest.fixture
async def wired(make_app: Callable[..., web.Application],
                aiohttp_client: Callable[..., Awaitable[TestClient]]  # type: ignore[type-arg]
                ) -> AsyncIterator[House]:
    """The app as the factory wires it: the live house opens the ranked tables and reports
    their results."""
    clock = VirtualClock()
    app = make_app(clock=clock)
    if RANKED_SETTINGS not in app:
        ranked_http.setup(app)
    if LAUNCHER not in app:
        pytest.skip("the live house does not open ranked tables in this build")
    house = House(await aiohttp_client(app), clock, None)
    try:
        yield house
    finally:
        for session in house.sessions:
            await session.close()


async def test_a_closed_arenas_table_in_play_still_holds_its_players(wired: House) -> None:
    # a review ended an arena while its table played on (it no longer counts): the service
    # forgot the table, and ana, still playing it, joined the ranked queue and was seated at a
    # ranked table as well: two clocks, one of them a staked match
    op = await wired.player("judge", operator=True)
    ana, bia, caio = await wired.players("ana", "bia", "caio")
    arena = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                  "minutes": 60}, status=201))["arena"]["id"]
    for player in (ana, bia):
        await player.json(f"/api/ranked/arenas/{arena}/join", {})
    await wired.clock.advance(1)
    [table] = list(wired.app[RANKED].arena_tables)
    await op.json(f"/api/ranked/arenas/{arena}/end", {})
    await wired.clock.advance(2)
    assert await wired.pool.fetchval(
        "SELECT status FROM live_tables WHERE id = $1", table) == "playing"
    resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    assert resp.status == 409 and (await resp.json())["error"] == "at_table"
    later = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2,
                                                  "minutes": 60}, status=201))["arena"]["id"]
    resp = await ana.post(f"/api/ranked/arenas/{later}/join", {})
    assert resp.status == 409 and (await resp.json())["error"] == "at_table"
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await wired.clock.advance(1)
    assert await wired.pool.fetchval(
        "SELECT count(*) FROM live_seats s JOIN live_tables t ON t.id = s.table_id"
        " WHERE s.user_id = $1 AND t.status = 'playing'", ana.id) == 1


async def test_a_ranked_match_through_the_live_house_ends_by_abandonment(wired: House) -> None:
    ana, bia = await wired.players("ana", "bia")
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await wired.clock.advance(1)
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "seated", status
    table = status["table"]
    listed = await ana.json(f"/api/tables/{table}")
    assert listed["table"]["kind"] == "ranked" and listed["table"]["status"] == "playing"
    assert await ledger.balance(wired.pool, ana.id) == 950
    # bia leaves mid-match: she resigns by abandonment; the house reports it, the service settles
    seat_of = {p["name"]: p["seat"] for p in listed["table"]["players"]}
    await bia.json(f"/api/tables/{table}/leave", {})
    await wired.clock.advance(1)
    assert await ledger.balance(wired.pool, ana.id) == 1050
    assert await ledger.balance(wired.pool, bia.id) == 950
    [record] = (await bia.json("/api/me/standing"))["abandonments"]
    assert record["match"] == f"ranked:{table}:1" and record["status"] == "pending"
    assert record["source"] == f"live:{table}:1:{seat_of['bia']}"
    # her page says what made it, from the live house's record of the match, and names the
    # match in her statement by its start, linking its hands
    assert record["trigger"] == "left" and record["stake_lost"] == 50
    started = await wired.pool.fetchval(
        "SELECT started_at FROM live_matches WHERE table_id = $1 AND number = 1", table)
    [hold] = [x for x in (await bia.json("/api/me/standing"))["chips"]["ledger"]
              if x["reason"] == "hold"]
    assert hold["match_started_at"] == started.isoformat()
    text = await (await bia.get("/me")).text()
    assert "Você saiu da mesa com a partida em andamento" in text
    at = started.astimezone(UTC)
    assert (f'<a href="/me/hands?table={table}">partida ranqueada de '
            f'<time datetime="{at:%Y-%m-%dT%H:%M:%SZ}" data-local="short">'
            f'{at:%d/%m %H:%M} UTC</time></a>') in text
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"
    assert (await ratings.rating_of(wired.pool, ana.id, P, 2)).rating > 1500


async def test_a_first_deal_that_cannot_be_saved_gives_the_stakes_back(
        wired: House, monkeypatch: pytest.MonkeyPatch) -> None:
    ana, bia = await wired.players("ana", "bia")
    original = TableActor._write
    refused: list[str] = []

    async def blip(self: TableActor, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
        if not refused and any("INSERT INTO live_matches" in sql for sql, _ in statements):
            refused.append(self.id)
            raise WriteRefused()  # the database blips just as the first match starts
        await original(self, statements)

    monkeypatch.setattr(TableActor, "_write", blip)
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await wired.clock.advance(1)  # the stakes are held, the start is refused
    assert refused
    # the table closed unplayed and its stakes came back (they were held once more per round)
    assert await ledger.balance(wired.pool, ana.id) == 1000
    assert await ledger.balance(wired.pool, bia.id) == 1000
    assert await wired.pool.fetchval(
        "SELECT status FROM live_tables WHERE id = $1", refused[0]) == "closed"
    await wired.clock.advance(1)  # the next round opens another table, staked once
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "seated" and status["table"] != refused[0], status
    assert await ledger.balance(wired.pool, ana.id) == 950
    assert await ledger.balance(wired.pool, bia.id) == 950


async def test_stakes_held_by_a_commit_whose_answer_was_lost_come_back_at_once(
        wired: House, monkeypatch: pytest.MonkeyPatch) -> None:
    # a review: the hold committed, then the connection broke before its answer came; the
    # launch failed, and those stakes stayed held until the server restarted
    ana, bia = await wired.players("ana", "bia")
    original = ledger.hold_stakes
    broke: list[str] = []

    async def committed_then_lost(db: Any, match: str, users: Sequence[int],
                                  stake: int) -> ledger.Posting:
        posting = await original(db, match, users, stake)
        if not broke:
            broke.append(match)
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle")
        return posting

    monkeypatch.setattr(ledger, "hold_stakes", committed_then_lost)
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await wired.clock.advance(1)  # held, the answer lost: the table does not open
    assert broke
    assert await ledger.balance(wired.pool, ana.id) == 1000
    assert await ledger.balance(wired.pool, bia.id) == 1000
    reasons = await wired.pool.fetch(
        "SELECT reason FROM chip_entries WHERE match_ref = $1 ORDER BY id", broke[0])
    assert [r["reason"] for r in reasons] == ["hold", "refund"]
    await wired.clock.advance(1)  # the next round opens another table, staked once
    status = (await ana.json("/api/ranked/queue"))["queue"]
    assert status["state"] == "seated", status
    assert await ledger.balance(wired.pool, ana.id) == 950


async def test_a_stake_refused_before_it_is_held_has_nothing_to_give_back(
        wired: House, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    ana, bia, caio = await wired.players("ana", "bia", "caio")
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    # bia's chips go to a stake elsewhere between the eligibility check and the hold
    await ledger.hold_stakes(wired.pool, "ranked:00000000000000aa:1", [bia.id, caio.id], 1000)
    monkeypatch.setattr(wired.app[RANKED], "eligible", _always_eligible)
    await wired.clock.advance(1)  # the hold is refused: nothing was taken, nothing to refund
    assert await ledger.balance(wired.pool, ana.id) == 1000
    assert not [r for r in caplog.records if r.getMessage() == "ranked_refund_failed"]


async def _always_eligible(user: int, stake: int) -> None:
    return None


async def test_one_arena_at_a_time_and_its_table_played_out(staffed: House) -> None:
    op = await staffed.player("judge", operator=True)
    ana, bia, caio = await staffed.players("ana", "bia", "caio")
    first = (await op.json("/api/ranked/arenas", {"variant": "paulista", "seats": 2},
                           status=201))["arena"]["id"]
    second = (await op.json("/api/ranked/arenas", {"variant": "mineiro", "seats": 2},
                            status=201))["arena"]["id"]
    await ana.json(f"/api/ranked/arenas/{first}/join", {})
    refused = await ana.post(f"/api/ranked/arenas/{second}/join", {})
    assert refused.status == 409 and (await refused.json())["error"] == "in_arena"
    await bia.json(f"/api/ranked/arenas/{first}/join", {})
    await staffed.clock.advance(1)  # ana and bia are paired at a table of the first arena
    assert [seating for *_, seating, _ in staffed.launcher.launched] == [(ana.id, bia.id)] or [
        seating for *_, seating, _ in staffed.launcher.launched] == [(bia.id, ana.id)]
    await ana.json(f"/api/ranked/arenas/{first}/leave", {})  # she still sits at that table
    for path, body in (("/api/ranked/queue", {"variant": "paulista", "seats": 2}),
                       (f"/api/ranked/arenas/{second}/join", {})):
        refused = await ana.post(path, body)
        assert refused.status == 409 and (await refused.json())["error"] == "in_arena", path
    await caio.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await staffed.clock.advance(1)
    assert len(staffed.launcher.launched) == 1  # nobody sat her at a second table


async def test_players_are_free_to_queue_while_their_settlement_is_retried(
        wired: House, monkeypatch: pytest.MonkeyPatch) -> None:
    ana, bia = await wired.players("ana", "bia")
    for player in (ana, bia):
        await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
    await wired.clock.advance(1)
    table = (await ana.json("/api/ranked/queue"))["queue"]["table"]
    real = ranked_service.settle_match
    attempts: list[str] = []

    async def away(pool: Any, **end: Any) -> Any:
        attempts.append(end["table_id"])
        raise OSError("the database is away (injected)")

    monkeypatch.setattr(ranked_service, "settle_match", away)
    await bia.json(f"/api/tables/{table}/leave", {})  # the match ends; its settlement fails
    await wired.clock.advance(1)
    assert attempts == [table]
    # the match is over: both may queue again while the house retries the settlement
    for player in (ana, bia):
        status = await player.json("/api/ranked/queue", {"variant": "paulista", "seats": 2})
        assert status["queue"]["state"] == "queued", status
        await player.json("/api/ranked/queue/leave", {})
    monkeypatch.setattr(ranked_service, "settle_match", real)
    await wired.clock.advance(6)  # the first retry
    assert await ledger.balance(wired.pool, ana.id) == 1050
    assert await ledger.balance(wired.pool, bia.id) == 950


# --- malformed input: a clear 4xx that changes nothing ------------------------------------------


async def test_queue_seats_are_whole_numbers(house: House) -> None:
    # 2.0 passed `in (2, 4)` and "²" passed isdigit(): both ended in a plain-text 500
    ana = await house.player("ana")
    for seats in (2.0, 4.0, "²", "02", " 2", False):
        resp = await ana.post("/api/ranked/queue", {"variant": "paulista", "seats": seats})
        assert resp.status == 400 and (await resp.json())["error"] == "bad_queue", seats
    page = await ana.post("/ranked/queue", form={"variant": "paulista", "seats": "²"})
    assert page.status == 400 and "Escolha uma variante" in await page.text()
    assert (await ana.json("/api/ranked/queue"))["queue"]["state"] == "idle"


async def test_numbers_in_the_query_and_path_are_ascii_digits(house: House) -> None:
    # "²".isdigit() is true but int("²") raises: every one of these was a plain-text 500
    op = await house.player("judge", operator=True)
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    sup = "%C2%B2"
    for path in (f"/api/ranked/leaderboard?offset={sup}",
                 f"/api/ranked/operator/abandonments?before={sup}",
                 f"/api/ranked/operator/audit?before={sup}",
                 f"/api/ranked/operator/audit?record={sup}",
                 "/api/ranked/leaderboard?offset=" + "1" * 19):
        resp = await op.get(path)
        assert resp.status == 400 and (await resp.json())["error"] == "bad_filter", path
    for path in (f"/api/ranked/operator/abandonments/{sup}",
                 "/api/ranked/operator/abandonments/" + "1" * 5000):
        resp = await op.get(path)
        assert resp.status == 404 and (await resp.json())["error"] == "not_found", path[:40]
    resp = await bia.post(f"/api/me/abandonments/{sup}/appeal", {"text": "caiu a luz"})
    assert resp.status == 404 and (await resp.json())["error"] == "not_found"
    page = await bia.post(f"/me/abandonments/{sup}/appeal", form={"text": "caiu a luz"})
    assert page.status == 404
    # the pages: an error page or a 404 (the audit page no longer leaves a refused `before` out)
    page = await op.get(f"/leaderboard?offset={sup}")
    assert page.status == 400 and page.content_type == "text/html"
    page = await op.get(f"/operator/abandonments/{sup}")
    assert page.status == 404 and "Registro não encontrado" in await page.text()
    page = await op.get(f"/operator/abandonments?before={sup}")
    assert page.status == 400 and page.content_type == "text/html"
    page = await op.get(f"/operator/audit?before={sup}")
    assert page.status == 400 and page.content_type == "text/html"
    assert (await review.get_record(house.pool, record.id)).appeal_text is None


async def test_record_ids_count_from_one_and_pages_say_what_they_refuse(house: House) -> None:
    # before=0 passed the query's parsing and the store refused it: a 500 page on the operators'
    # list and audit log; an appeal form to an id that is no number answered raw JSON, and one
    # to a record not listed on the player's page rendered it with no message at all
    op = await house.player("judge", operator=True)
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    for path in ("/api/ranked/operator/abandonments?before=0",
                 "/api/ranked/operator/audit?before=0", "/api/ranked/operator/audit?record=0",
                 "/api/operator/abandonments?before=0"):
        resp = await op.get(path)
        assert resp.status == 400 and (await resp.json())["error"] == "bad_filter", path
    for listing in ("review", "free"):
        page = await op.get(f"/operator/abandonments?list={listing}&before=0")
        assert page.status == 400 and "Essa página da lista não existe" in await page.text()
    page = await op.get("/operator/audit?before=0")
    assert page.status == 400 and page.content_type == "text/html"
    assert "Essa página do registro de auditoria não existe" in await page.text()
    for path in ("/me/abandonments/abc/appeal", "/me/abandonments/999999/appeal",
                 f"/me/abandonments/{record.id}/appeal"):  # ana's own record is bia's
        who = ana if path.endswith(f"/{record.id}/appeal") else bia
        page = await who.post(path, form={"text": "caiu a luz"})
        assert page.status in (403, 404) and page.content_type == "text/html", path
        text = await page.text()
        assert 'id="me-error"' in text and "<h1>Meu desempenho</h1>" in text, path
    assert (await review.get_record(house.pool, record.id)).appeal_text is None


async def test_an_arena_starts_within_a_day(house: House) -> None:
    # 5000000000 minutes ahead was a "year out of range" 500
    op = await house.player("judge", operator=True)
    good = {"variant": "paulista", "seats": 2, "minutes": 60}
    for change in ({"starts_in_minutes": 5_000_000_000}, {"starts_in_minutes": 10**400},
                   {"starts_in_minutes": 24 * 60 + 1}, {"starts_in_minutes": -1},
                   {"minutes": 10**400}, {"minutes": 24 * 60 + 1}, {"minutes": 0},
                   {"seats": 2.0}, {"starts_in_minutes": "²"}):
        resp = await op.post("/api/ranked/arenas", {**good, **change})
        assert resp.status == 400, change
        assert (await resp.json())["error"] in ("bad_arena", "bad_filter"), change
    page = await op.post("/arena", form={"variant": "paulista", "seats": "2", "minutes": "60",
                                         "starts_in_minutes": "5000000000"})
    assert page.status == 400 and "Dados da arena inválidos" in await page.text()
    resp = await op.post("/api/ranked/arenas", form={"variant": "paulista", "seats": "2",
                                                     "starts_in_minutes": "9" * 20})
    assert resp.status == 400  # a whole number, too large (it was told it is no whole number)
    assert (await resp.json())["message"] == "starts_in_minutes is too large."
    assert (await op.json("/api/ranked/arenas"))["arenas"] == []
    assert await house.pool.fetchval("SELECT count(*) FROM ranked_arenas") == 0
    # a day ahead is fine
    made = await op.json("/api/ranked/arenas", {**good, "starts_in_minutes": 24 * 60},
                         status=201)
    assert made["arena"]["state"] == "upcoming"
    with pytest.raises(RankedError, match="within 24 hours"):
        now = house.clock.now()
        await house.app[RANKED].create_arena(P, 2, now + 86_401, now + 90_000)


async def test_the_login_wall_keeps_the_whole_page_address(house: House) -> None:
    # the address went back unencoded in `next`: "&variant=..." became a parameter of its own
    await house.player("judge", operator=True)
    wanted = "/operator/abandonments?player=ana&variant=paulista"
    anonymous = house.client
    # the login wall answers in place (as `/me/hands` does), its form coming back to it all
    resp = await anonymous.get(wanted, allow_redirects=False)
    assert resp.status == 401
    assert f'name="next" value="{wanted.replace("&", "&amp;")}"' in await resp.text()
    # a form posted without a session is sent to the login page, `next` encoded whole
    token = (await (await anonymous.get("/api/session")).json())["csrf"]
    resp = await anonymous.post("/operator/abandonments/1/decision",
                                data={"decision": "uphold", "note": "x", "csrf": token},
                                allow_redirects=False)
    assert resp.status == 303
    location = resp.headers["Location"]
    assert URL(location).path == "/"
    assert URL(location).query["next"] == "/operator/abandonments/1"
    token = (await (await anonymous.get("/api/session")).json())["csrf"]
    login = await anonymous.post("/login", data={"name": "judge", "password": PASSWORD,
                                                 "csrf": token, "next": wanted},
                                 allow_redirects=False)
    assert login.status == 303 and login.headers["Location"] == wanted
    page = await anonymous.get(wanted)
    assert page.status == 200


async def test_a_refused_new_arena_names_its_field_and_keeps_the_form(house: House) -> None:
    # the page said only "Dados da arena inválidos." whichever field it was, and the form came
    # back with its defaults (a 2x2 Argentino of 3 hours became a 1x1 Paulista of 60 minutes)
    op = await house.player("judge", operator=True)
    sent = {"variant": "argentino", "seats": "4", "starts_in_minutes": "10", "minutes": "180"}
    for name, value, said in (
            ("minutes", "0", "De 1 a 1440 minutos"),
            ("minutes", "1441", "De 1 a 1440 minutos"),
            ("minutes", "uma hora", "De 1 a 1440 minutos"),
            ("starts_in_minutes", "5000000000", "De 0 a 1440 minutos"),
            ("seats", "3", "O formato é 1x1 ou 2x2."),
            ("variant", "truco-gaudério", "Escolha uma das variantes")):
        page = await op.post("/arena", form={**sent, name: value})
        assert page.status == 400, (name, value)
        text = await page.text()
        assert "Dados da arena inválidos." in text
        # said next to the field, which points at it; no other field is marked
        assert f'<p class="error" role="alert" id="arena-{name}-error">{said}' in text, text
        assert text.count('aria-invalid="true"') == 1
        assert f'aria-invalid="true" aria-describedby="arena-{name}-error"' in text
        # the form keeps what was sent
        if name != "variant":
            assert '<option value="argentino" selected>' in text
        if name != "seats":
            assert '<option value="4" selected>2x2</option>' in text
        if name != "minutes":
            assert 'name="minutes" type="number" min="1" max="1440" value="180"' in text
        if name != "starts_in_minutes":
            assert 'name="starts_in_minutes" type="number" min="0" max="1440" value="10"' in text
    assert (await op.json("/api/ranked/arenas"))["arenas"] == []
    # a fresh page has the defaults and marks nothing
    text = await (await op.get("/arena")).text()
    assert 'aria-invalid' not in text and 'value="60"' in text and "<option value=\"4\">" in text


async def test_a_players_data_download_carries_their_ranked_records(house: House) -> None:
    """/account/data (server.account_data): a player's ratings and their history, chips and
    every movement, abandonment records with their appeals; nothing of another player's."""
    ana, bia = await house.player("ana"), await house.player("bia")
    record = (await settle_abandonment(house, TABLE, [ana.id, bia.id], 1)).record
    await bia.json(f"/api/me/abandonments/{record.id}/appeal", {"text": "Caiu a luz."})
    resp = await bia.get("/account/data")
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    assert doc["account"]["name"] == "bia"
    [rating] = doc["ratings"]
    assert (rating["variant"], rating["seats"], rating["games"]) == ("paulista", 2, 1)
    [change] = doc["rating_history"]
    assert change["match_ref"] == f"ranked:{TABLE}:1"
    assert change["rating_after"] == rating["rating"] < change["rating_before"]
    assert doc["chips"]["balance"] == 950
    assert [(m["reason"], m["amount"], m["balance_after"])
            for m in doc["chips"]["movements"]] == [("grant", 1000, 1000), ("hold", -50, 950)]
    [kept] = doc["ranked_abandonments"]
    assert (kept["id"], kept["status"], kept["appeal_text"]) == (record.id, "pending",
                                                                "Caiu a luz.")
    assert kept["evidence"] == json.loads(await house.pool.fetchval(
        "SELECT evidence FROM ranked_abandonments WHERE id = $1", record.id))
    assert kept["evidence"][0]["kind"] == "disconnected"
    other = await (await ana.get("/account/data")).json()
    assert other["ranked_abandonments"] == [] and other["account"]["name"] == "ana"
    assert [m["reason"] for m in other["chips"]["movements"]] == ["grant", "hold", "payout"]


async def test_the_queue_page_says_the_clock_and_what_abandoning_costs(house: House) -> None:
    """A new player met the 10 s clock only at the table ("Sua vez — 10 s" after 20 s at
    training), and the abandonment rule not at all. The figures are the house's own."""
    ana = await house.player("ana")
    page = await (await ana.get("/ranked")).text()
    said = re.search(r'<p id="queue-clocks">(.*?)</p>', page, re.S)
    assert said, page
    text = re.sub(r"<[^>]+>|\s+", " ", said.group(1))
    config = house.app[CONFIG]
    assert f"{round(config.clock_ranked)} s por decisão" in text
    assert f"nas mesas de treino e privadas, {round(config.clock_casual)} s" in text
    assert f"{abandon_limit(TableKind.RANKED)} jogadas automáticas seguidas são abandono" in text
