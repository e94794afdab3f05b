"""HTTP views of the live house: the lobby, the public records, the operators' abandonments.

Thin: each view checks its input, asks the table's actor (which owns every change) and renders
JSON. Every refusal is `{"error": code, "message": ...}` (docs/PROTOCOL.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from aiohttp import web

from server.app import POOL, ApiError, ascii_uint, read_body, require_operator, require_user
from server.live.house import House
from server.live.model import LiveError, TableKind, TableStatus
from server.live.table import TableActor, ms
from truco import MatchConfig, TeamMode, Variant
from truco.fairness import MAX_HAND_NUMBER, SHUFFLE_VERSION

# used with fullmatch (`$` would also take a trailing newline)
HAND_ID = re.compile(r"([0-9a-f]{16})-([1-9][0-9]{0,9})")
TABLE_ID = re.compile(r"[0-9a-f]{16}")
# the highest hand a record can have: the fairness scheme's bound, and live_hands.hand is a
# PostgreSQL integer (int4), which a larger number would not even fit
MAX_STORED_HAND = min(MAX_HAND_NUMBER, 2**31 - 1)
LOBBY_KINDS = (TableKind.PRIVATE, TableKind.TRAINING)
# what the lobby list advertises (docs/PROTOCOL.md): open training tables with a free seat.
# Private tables are joined by invitation; ranked and arena tables are seated by the
# matchmaker (an open one, after a player left a finished match, cannot be joined: 409)
LISTED_KINDS = (TableKind.TRAINING,)

View = Callable[[web.Request], Awaitable[web.StreamResponse]]


def house_of(request: web.Request) -> House:
    from server.live import HOUSE

    return request.app[HOUSE]


def live_errors(view: View) -> View:
    """Render the house's refusals as the API's JSON errors."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await view(request)
        except LiveError as exc:
            raise ApiError(exc.status, exc.code, exc.message) from None

    wrapped.__name__ = view.__name__
    return wrapped


async def _table_reply(actor: TableActor, user_id: int, status: int = 200) -> web.Response:
    body = await actor.call(lambda: _json_of(actor, user_id))
    return web.json_response({"table": body}, status=status)


async def _json_of(actor: TableActor, user_id: int | None) -> dict[str, Any]:
    return actor.table_json(user_id)


async def _leave(actor: TableActor, user_id: int) -> dict[str, Any]:
    # the table as the leaver last sees it, taken in the same command (it may close)
    await actor.leave(user_id)
    return actor.table_json(user_id)


# --- lobby ------------------------------------------------------------------------------------

@live_errors
async def create_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request)
    try:
        variant = Variant(str(body.get("variant")))
    except ValueError:
        raise LiveError("bad_variant", "variant is paulista, mineiro or argentino") from None
    seats = body.get("seats")
    # an int, not a bool or a float: 2.0 == 2 would pass `in (2, 4)` and break further on
    if type(seats) is not int or seats not in (2, 4):
        raise LiveError("bad_seats", "seats is 2 or 4")
    try:
        mode = TeamMode(str(body.get("mode", TeamMode.VOTE.value)))
    except ValueError:
        raise LiveError("bad_mode", "mode is vote or first") from None
    try:
        kind = TableKind(str(body.get("kind")))
    except ValueError:
        kind = None
    if kind not in LOBBY_KINDS:
        raise LiveError("bad_kind", "kind is private or training (ranked and arena tables"
                        " come from the matchmaker)")
    assert kind is not None
    actor = await house_of(request).create_table(
        user.id, user.name, MatchConfig(variant, seats, mode), kind)
    return await _table_reply(actor, user.id, status=201)


@live_errors
async def list_tables(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    house = house_of(request)
    mine = request.query.get("mine") in ("1", "true", "yes")
    tables: list[dict[str, Any]] = []
    for actor in list(house.tables.values()):
        try:
            body = await actor.call(partial(_json_of, actor, user.id))
        except LiveError:
            continue  # closed meanwhile
        if mine:
            keep = body["you"] is not None and body["status"] != TableStatus.CLOSED.value
        else:
            # private tables are joined by invitation: they are not advertised, so their ids
            # (and with them their public records) stay with their players; ranked and arena
            # tables are seated by the matchmaker alone
            keep = (actor.kind in LISTED_KINDS
                    and body["status"] == TableStatus.OPEN.value
                    and any(p["name"] is None and not p["bot"] for p in body["players"]))
        if keep:
            tables.append(body)
        if len(tables) >= house.settings.list_limit:
            break
    return web.json_response({"tables": tables})


def _actor(request: web.Request) -> TableActor:
    return house_of(request).get(request.match_info["table_id"])


def _lobby_actor(request: web.Request) -> TableActor:
    """A table the lobby may seat and start. Ranked and arena tables are seated by the
    matchmaker alone, for one match: a seat freed there is no lobby seat, or anyone could start
    an unpaired, unstaked match at a rated table."""
    actor = _actor(request)
    if actor.kind.competitive:
        raise LiveError("matchmaker_table",
                        "Ranked and arena tables are seated by the matchmaker.", 409)
    return actor


@live_errors
async def get_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _actor(request)
    body = await actor.call(lambda: _json_of(actor, user.id))
    invite = request.query.get("invite", "").strip().upper()
    if actor.kind is TableKind.PRIVATE and body["you"] is None and invite != actor.invite:
        raise LiveError("table_not_found", "No such table (or it is closed).", 404)
    return web.json_response({"table": body})


@live_errors
async def join_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request)
    actor = _lobby_actor(request)
    await actor.call(lambda: actor.join(user.id, user.name, body.get("invite"), body.get("seat")))
    return await _table_reply(actor, user.id)


@live_errors
async def pick_seat(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request)
    actor = _lobby_actor(request)
    await actor.call(lambda: actor.move(user.id, body.get("seat")))
    return await _table_reply(actor, user.id)


@live_errors
async def start_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _lobby_actor(request)
    await actor.call(lambda: actor.start_match(user.id))
    return await _table_reply(actor, user.id)


@live_errors
async def rematch(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _actor(request)
    await actor.call(lambda: actor.rematch(user.id))
    return await _table_reply(actor, user.id)


@live_errors
async def leave_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _actor(request)
    body = await actor.call(partial(_leave, actor, user.id))
    return web.json_response({"table": body})


# --- public records ---------------------------------------------------------------------------

async def public_key(request: web.Request) -> web.StreamResponse:
    house = house_of(request)
    return web.json_response({"key_id": house.key_id, "public_key": house.public_key.hex(),
                              "scheme": SHUFFLE_VERSION})


async def hand_record(request: web.Request) -> web.StreamResponse:
    match = HAND_ID.fullmatch(request.match_info["hand_id"])
    record = None
    if match is not None and int(match.group(2)) <= MAX_STORED_HAND:
        record = await request.app[POOL].fetchval(
            "SELECT record::text FROM live_hands WHERE table_id = $1 AND hand = $2"
            " AND record IS NOT NULL", match.group(1), int(match.group(2)))
    if record is None:
        # a hand in play is not public: it is as unknown as a hand that never was
        raise ApiError(404, "hand_not_found", "No finished hand with that id.")
    return web.Response(text=record, content_type="application/json")


async def table_chain(request: web.Request) -> web.StreamResponse:
    table_id = request.match_info["table_id"]
    pool = request.app[POOL]
    if not TABLE_ID.fullmatch(table_id) or not await pool.fetchval(
            "SELECT true FROM live_tables WHERE id = $1", table_id):
        raise ApiError(404, "table_not_found", "No such table.")
    anchors = {
        row["chain_start"]: json.loads(row["anchor"])
        for row in await pool.fetch(
            "SELECT chain_start, anchor::text FROM seed_chains WHERE table_id = $1", table_id)
    }
    chain: list[Any] = []
    for row in await pool.fetch(
            "SELECT hand, record::text FROM live_hands WHERE table_id = $1"
            " AND record IS NOT NULL ORDER BY hand", table_id):
        if row["hand"] in anchors:
            chain.append(anchors[row["hand"]])
        chain.append(json.loads(row["record"]))
    return web.json_response(chain)


# --- operators --------------------------------------------------------------------------------

def _when(value: str | None, name: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ApiError(400, "bad_filter", f"{name} must be an ISO 8601 date or time") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _abandonment_json(row: Any, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row["id"],
        "table": row["table_id"],
        "match": row["match_number"],
        "seat": row["seat"],
        "player": row["player"],
        "team": row["team"],
        "variant": row["variant"],
        "kind": row["kind"],
        "trigger": row["trigger"],
        "consequence": row["consequence"],
        "restart_overlap": row["restart_overlap"],
        "created_at": row["created_at"].isoformat(),
        "created_at_ms": ms(row["created_at"].timestamp()),
    }
    if full:
        out["evidence"] = json.loads(row["evidence"])
    return out


_ABANDONMENT_SELECT = (
    "SELECT a.id, a.table_id, a.match_number, a.seat, u.name AS player, a.team, a.variant,"
    " a.kind, a.trigger, a.consequence, a.restart_overlap, a.created_at,"
    " a.evidence::text AS evidence FROM abandonments a LEFT JOIN users u ON u.id = a.user_id"
)


async def list_abandonments(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    query = request.query
    clauses: list[str] = []
    args: list[Any] = []

    def where(clause: str, value: object) -> None:
        args.append(value)
        clauses.append(clause.format(f"${len(args)}"))

    if query.get("player"):
        where("lower(u.name) = lower({})", query["player"])
    if query.get("variant"):
        if query["variant"] not in {v.value for v in Variant}:
            raise ApiError(400, "bad_filter", "variant is paulista, mineiro or argentino")
        where("a.variant = {}", query["variant"])
    if query.get("kind"):
        if query["kind"] not in {k.value for k in TableKind}:
            raise ApiError(400, "bad_filter", "kind is private, training, ranked or arena")
        where("a.kind = {}", query["kind"])
    since = _when(query.get("since"), "since")
    until = _when(query.get("until"), "until")
    if since is not None:
        where("a.created_at >= {}", since)
    if until is not None:
        where("a.created_at < {}", until)
    sql = _ABANDONMENT_SELECT
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY a.created_at DESC, a.id DESC LIMIT 500"
    rows = await request.app[POOL].fetch(sql, *args)
    return web.json_response({"abandonments": [_abandonment_json(r, False) for r in rows]})


async def get_abandonment(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    abandonment_id = ascii_uint(request.match_info["abandonment_id"])
    row = None
    if abandonment_id is not None:
        row = await request.app[POOL].fetchrow(_ABANDONMENT_SELECT + " WHERE a.id = $1",
                                               abandonment_id)
    if row is None:
        raise ApiError(404, "abandonment_not_found", "No abandonment record with that id.")
    return web.json_response(_abandonment_json(row, True))
