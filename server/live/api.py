"""HTTP views of the live house: the lobby, the public records, the operators' abandonments.

Thin: each view checks its input, asks the table's actor (which owns every change) and renders
JSON. Every refusal is `{"error": code, "message": ...}` (docs/PROTOCOL.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Final

from aiohttp import web

from server.app import (
    POOL,
    ApiError,
    ascii_uint,
    read_body,
    require_operator,
    require_user,
    time_filter,
)
from server.live.house import House
from server.live.model import LiveError, TableKind, TableStatus, counted
from server.live.table import TableActor, ms
from truco import MatchConfig, TeamMode, Variant
from truco.fairness import MAX_HAND_NUMBER, SHUFFLE_VERSION
from truco.records import build_ledger_head, record_hash
from verifier.signing import sign_statement

# used with fullmatch (`$` would also take a trailing newline)
HAND_ID = re.compile(r"([0-9a-f]{16})-([1-9][0-9]{0,9})")
TABLE_ID = re.compile(r"[0-9a-f]{16}")
# the highest hand a record can have: the fairness scheme's bound, and live_hands.hand is a
# PostgreSQL integer (int4), which a larger number would not even fit
MAX_STORED_HAND = min(MAX_HAND_NUMBER, 2**31 - 1)
LOBBY_KINDS = (TableKind.PRIVATE, TableKind.TRAINING)
# what the lobby list advertises (docs/PROTOCOL.md): open training tables with a free seat.
# Private tables are joined by invitation; ranked and arena tables are seated by the
# matchmaker (never joined here: 409; they play one match and never reopen)
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
            raise ApiError(exc.status, exc.code, exc.message, exc.headers) from None

    wrapped.__name__ = view.__name__
    return wrapped


async def _table_reply(actor: TableActor, user_id: int, status: int = 200) -> web.Response:
    body = await actor.call(lambda: _json_of(actor, user_id))
    return web.json_response({"table": body}, status=status)


async def _json_of(actor: TableActor, user_id: int | None) -> dict[str, Any]:
    return actor.table_json(user_id)


async def _leave(actor: TableActor, user_id: int, resign: bool) -> dict[str, Any]:
    # the table as the leaver last sees it, taken in the same command (it may close)
    await actor.leave(user_id, resign)
    return actor.table_json(user_id)


# --- lobby ------------------------------------------------------------------------------------

@live_errors
async def create_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request, ("variant", "seats", "mode", "kind"))
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
    house = house_of(request)
    # tables being created count as open ones: concurrent requests each passed the count while
    # the others waited for their insert (one account opened 93 tables at once)
    waiting = _seated_at(house, user.id, TableStatus.OPEN) + house.creating.get(user.id, 0)
    if waiting >= house.settings.max_open_tables:
        raise LiveError("too_many_tables",
                        f"You already sit at {waiting} tables waiting for players: start or"
                        " leave one of them first.", 409)
    _check_playing(house, user.id)
    with counted(house.creating, [user.id]):
        actor = await house.create_table(user.id, user.name, MatchConfig(variant, seats, mode),
                                         kind)
    return await _table_reply(actor, user.id, status=201)


def _seated_at(house: House, user_id: int, status: TableStatus) -> int:
    return sum(1 for actor in house.tables_of(user_id) if actor.status is status)


def _check_playing(house: House, user_id: int) -> None:
    """One account may play at so many tables at once (`max_playing_tables`), matches being
    started counted."""
    playing = house.playing_count(user_id)
    if playing >= house.settings.max_playing_tables:
        raise LiveError("too_many_matches",
                        f"You already play at {playing} tables: finish or leave one of them"
                        " first.", 409)


@live_errors
async def list_tables(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    house = house_of(request)
    mine = request.query.get("mine") in ("1", "true", "yes")
    tables: list[dict[str, Any]] = []
    # of my finished ranked and arena tables (one match each, no rematch; their results are on
    # /me), the latest only: an arena's player, taken from table to table, found 133 of them
    latest_done: tuple[float, dict[str, Any]] | None = None
    # mine: the tables I sit at (the house keeps them by player); the lobby: the tables open
    # for seating, their kind and status read here first, where every table's actor was asked
    candidates = (house.tables_of(user.id) if mine else
                  [actor for actor in house.tables.values()
                   if actor.kind in LISTED_KINDS and actor.status is TableStatus.OPEN])
    for actor in candidates:
        try:
            body = await actor.call(partial(_json_of, actor, user.id))
        except LiveError:
            continue  # closed meanwhile
        if mine:
            keep = body["you"] is not None and body["status"] != TableStatus.CLOSED.value
            if keep and actor.kind.competitive and body["status"] == TableStatus.FINISHED.value:
                if latest_done is None or actor.last_seen > latest_done[0]:
                    latest_done = (actor.last_seen, body)
                continue
        else:
            # private tables are joined by invitation: they are not advertised, so their ids
            # (and with them their public records) stay with their players; ranked and arena
            # tables are seated by the matchmaker alone. A table nobody seated has open (its
            # owner closed the page) is not offered: a player sitting down would start a
            # match against an empty seat, cancelled a minute later
            keep = (actor.kind in LISTED_KINDS
                    and body["status"] == TableStatus.OPEN.value
                    and any(p["name"] is None and not p["bot"] for p in body["players"])
                    and any(p["connected"] for p in body["players"]
                            if p["name"] is not None and not p["bot"]))
        if keep:
            tables.append(body)
        if len(tables) >= house.settings.list_limit:
            break
    if latest_done is not None and len(tables) < house.settings.list_limit:
        tables.append(latest_done[1])
    return web.json_response({"tables": tables})


PLAYED_PAGE: Final = 30
# `before` of `GET /api/me/tables`: the last listed table's newest match start (unix
# microseconds, as PostgreSQL keeps it: no two tables between pages are lost to rounding) and id
PLAYED_CURSOR: Final = re.compile(r"(0|[1-9][0-9]{0,17})-([0-9a-f]{16})")
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def played_cursor(before: str) -> tuple[datetime, str] | None:
    """A `before` of `GET /api/me/tables` (also /me/hands's), or None when it is not one."""
    match = PLAYED_CURSOR.fullmatch(before)
    if match is None:
        return None
    try:
        return EPOCH + timedelta(microseconds=int(match.group(1))), match.group(2)
    except OverflowError:
        return None


# a page of the tables I played at, newest match first, with their matches and hands
# (`barajamos bench queries` times it on a grown database)
PLAYED_TABLES_SQL: Final = (
    # the page of matches first, its tables joined after (not every table of the house
    # hashed); the hands counted as all of a table's hands but its one in play, both read
    # from indexes alone (the records themselves are not read)
    "SELECT t.id, t.variant, t.seats, t.kind, t.status, p.last_match, p.matches,"
    " (SELECT count(*) FROM live_hands h WHERE h.table_id = p.table_id)"
    " - (SELECT count(*) FROM live_hands h WHERE h.table_id = p.table_id"
    "    AND h.record IS NULL) AS hands FROM ("
    " SELECT m.table_id, max(m.started_at) AS last_match, count(*) AS matches"
    " FROM live_matches m"
    " WHERE m.players @> ARRAY[$1::bigint]"
    " GROUP BY m.table_id"
    " HAVING $2::timestamptz IS NULL OR (max(m.started_at), m.table_id) < ($2, $3)"
    " ORDER BY last_match DESC, m.table_id DESC LIMIT $4) p"
    " JOIN live_tables t ON t.id = p.table_id"
    " ORDER BY p.last_match DESC, p.table_id DESC"
)


async def played_tables(request: web.Request) -> web.StreamResponse:
    """The tables where I played a match, newest first, closed ones too: a player who lost a
    table's id (a private table is never listed, a closed one leaves `mine`) can still reach
    its chain and check its hands from any browser."""
    user = require_user(request)
    before = request.query.get("before")
    cursor: tuple[datetime, str] | None = None
    if before is not None:
        cursor = played_cursor(before)
        if cursor is None:
            raise ApiError(400, "bad_cursor",
                           "before is the `next` of the previous page.") from None
    rows = await request.app[POOL].fetch(
        PLAYED_TABLES_SQL,
        user.id, None if cursor is None else cursor[0], None if cursor is None else cursor[1],
        PLAYED_PAGE + 1)
    page = rows[:PLAYED_PAGE]
    tables = [{
        "id": row["id"], "variant": row["variant"], "seats": row["seats"], "kind": row["kind"],
        "status": row["status"], "matches": row["matches"], "hands": row["hands"],
        "last_match_ms": (row["last_match"] - EPOCH) // timedelta(milliseconds=1),
    } for row in page]
    after = page[-1] if len(rows) > PLAYED_PAGE else None
    return web.json_response({
        "tables": tables,
        "next": None if after is None
        else f"{(after['last_match'] - EPOCH) // timedelta(microseconds=1)}-{after['id']}",
    })


# one table where I played a match, live or closed, with my last match there and how it ended:
# nothing for a table I never played at (unknown, or somebody else's: a private table's existence
# is not told to someone without its invite)
PLAYED_TABLE_SQL: Final = (
    "SELECT t.id, t.variant, t.seats, t.kind, t.status, m.number, m.termination, m.winner,"
    " array_position(m.players, $2::bigint) - 1 AS seat,"
    " (SELECT count(*) FROM live_hands h WHERE h.table_id = t.id AND h.record IS NOT NULL)"
    " AS hands"
    " FROM live_tables t"
    " JOIN LATERAL (SELECT number, termination, winner, players FROM live_matches"
    "   WHERE table_id = t.id AND players @> ARRAY[$2::bigint]"
    "   ORDER BY number DESC LIMIT 1) m ON true"
    " WHERE t.id = $1"
)


async def played_table(request: web.Request) -> web.StreamResponse:
    """A table where I played a match, closed ones too: the table page, refused a table that is
    no longer served, says how it ended (a cancelled match, a finished one, everybody gone)
    instead of guessing, and links its hands."""
    user = require_user(request)
    table_id = request.match_info["table_id"]
    row = None
    if TABLE_ID.fullmatch(table_id):
        row = await request.app[POOL].fetchrow(PLAYED_TABLE_SQL, table_id, user.id)
    if row is None:
        raise ApiError(404, "table_not_found", "No table where you played a match.")
    seat = row["seat"]
    team = seat % 2 if seat is not None else None
    winner = row["winner"]
    return web.json_response({"table": {
        "id": row["id"], "variant": row["variant"], "seats": row["seats"], "kind": row["kind"],
        "status": row["status"], "hands": row["hands"],
        "last_match": {
            "number": row["number"], "termination": row["termination"], "winner": winner,
            "won": None if winner is None or team is None else winner == team,
        },
    }})


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
    invite = request.query.get("invite", "")
    house = house_of(request)
    if actor.kind is TableKind.PRIVATE and body["you"] is None and not (
            invite and house.invite_guesses.guess(user.id, invite, actor.invited,
                                                  house.clock.now())):
        raise LiveError("table_not_found", "No such table (or it is closed).", 404)
    return web.json_response({"table": body})


@live_errors
async def join_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request, ("invite", "seat"))
    actor = _lobby_actor(request)
    house = house_of(request)
    invite = body.get("invite")
    # a code is judged (and a wrong one counted) before the join is queued: counted after it,
    # many joins sent at once all passed the limit before the first was counted (no code is
    # no guess: the join refuses it)
    if actor.kind is TableKind.PRIVATE and invite and not house.invite_guesses.guess(
            user.id, invite, actor.invited, house.clock.now()):
        raise LiveError("wrong_invite", "That invite code is not this table's.", 403)
    await actor.call(lambda: actor.join(user.id, user.name, invite, body.get("seat")))
    return await _table_reply(actor, user.id)


@live_errors
async def pick_seat(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    body = await read_body(request, ("seat",))
    actor = _lobby_actor(request)
    await actor.call(lambda: actor.move(user.id, body.get("seat")))
    return await _table_reply(actor, user.id)


@live_errors
async def start_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _lobby_actor(request)
    # every player of the match is checked against the limit by the table, as it starts it
    # (`TableActor._new_match`): here the asker, at once
    _check_playing(house_of(request), user.id)
    await actor.call(lambda: actor.start_match(user.id))
    return await _table_reply(actor, user.id)


@live_errors
async def rematch(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    actor = _actor(request)
    _check_playing(house_of(request), user.id)
    await actor.call(lambda: actor.rematch(user.id))
    return await _table_reply(actor, user.id)


@live_errors
async def leave_table(request: web.Request) -> web.StreamResponse:
    user = require_user(request)
    resign = (await read_body(request, ("resign",))).get("resign", True)
    if not isinstance(resign, bool):
        raise LiveError("bad_resign", "resign is true or false.")
    actor = _actor(request)
    body = await actor.call(partial(_leave, actor, user.id, resign))
    return web.json_response({"table": body})


# --- public records ---------------------------------------------------------------------------

async def public_key(request: web.Request) -> web.StreamResponse:
    house = house_of(request)
    return web.json_response({"key_id": house.key_id, "public_key": house.public_key.hex(),
                              "scheme": SHUFFLE_VERSION, "handovers": house.handovers})


async def public_record(pool: Any, table_id: str, hand: int) -> str | None:
    """The signed record of a finished hand, as written (JSON text); None for a hand in play
    or one that never was: a hand in play is not public."""
    record = await pool.fetchval(
        "SELECT record::text FROM live_hands WHERE table_id = $1 AND hand = $2"
        " AND record IS NOT NULL", table_id, hand)
    return record if isinstance(record, str) else None


async def hand_record(request: web.Request) -> web.StreamResponse:
    match = HAND_ID.fullmatch(request.match_info["hand_id"])
    record = None
    if match is not None and int(match.group(2)) <= MAX_STORED_HAND:
        record = await public_record(request.app[POOL], match.group(1), int(match.group(2)))
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
    if chain:
        chain.append(await _ledger_head(request, table_id, chain[-1]))
        # the signing key's hand-overs: a player who pinned an older key follows them to the
        # key of the newer records (there are few: one per rotation)
        chain[:0] = house_of(request).handovers
    return web.json_response(chain)


async def _ledger_head(request: web.Request, table_id: str, last: dict[str, Any]) -> Any:
    """The house's signed word on this chain's length and last record (docs/FAIRNESS.md,
    section 8): whoever keeps it can later show a chain cut short or rewritten. Signed when a
    longer chain than the last one signed is first served, and kept, so that a busy chain page
    costs one signature per hand at most; its `at` says when that was."""
    pool = request.app[POOL]
    hand = last["hand"]
    kept = await pool.fetchrow(
        "SELECT hand, statement::text FROM ledger_heads WHERE table_id = $1", table_id)
    if kept is not None and kept["hand"] == hand:
        return json.loads(kept["statement"])
    house = house_of(request)
    head = sign_statement(
        build_ledger_head(int(house.clock.now()), {table_id: (hand, record_hash(last))}),
        house.signing_key)
    # two requests at once may both sign: either head is true, the first one stays
    await pool.execute(
        "INSERT INTO ledger_heads (table_id, hand, statement) VALUES ($1, $2, $3::jsonb)"
        " ON CONFLICT (table_id) DO UPDATE SET hand = EXCLUDED.hand,"
        " statement = EXCLUDED.statement WHERE ledger_heads.hand < EXCLUDED.hand",
        table_id, hand, json.dumps(head))
    return head


# --- operators --------------------------------------------------------------------------------

def review_link(record_id: int | None) -> dict[str, Any] | None:
    """Where the review record of an abandonment is (its own id: another numbering)."""
    if record_id is None:
        return None
    return {"id": record_id, "page": f"/operator/abandonments/{record_id}",
            "api": f"/api/ranked/operator/abandonments/{record_id}"}


def live_link(abandonment_id: int) -> dict[str, Any]:
    """Where a live abandonment record is, as JSON and as a page (numbered apart from review
    records)."""
    return {"id": abandonment_id, "api": f"/api/operator/abandonments/{abandonment_id}",
            "page": f"/operator/live-abandonments/{abandonment_id}"}


def _abandonment_json(row: Any, full: bool, spanned: frozenset[int]) -> dict[str, Any]:
    """A live record as JSON; `spanned`: the ids of the listed records whose match spanned a
    server restart (`restarts_spanned`)."""
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
        # the streak of automatic actions began before the server run that ended it (it crossed
        # a restart: `none_restart`, the match went on); always false for a leave, which has
        # no streak. Not whether the match spanned a restart: that is the next one
        "restart_overlap": row["restart_overlap"],
        # a server run began between the match's start and this abandonment
        "match_spanned_restart": row["id"] in spanned,
        "created_at": row["created_at"].isoformat(),
        "created_at_ms": ms(row["created_at"].timestamp()),
        # the ranked review record of this player's match, when there is one (ranked and arena
        # tables only): its id is a review id, not this one
        "review": review_link(row["review_id"]),
    }
    if full:
        out["evidence"] = json.loads(row["evidence"])
    return out


# a review record belongs to a player's ranked or arena match (`<kind>:<table>:<match>`): every
# live record of that player in that match names it (the forfeit it was made from, and an
# earlier abandonment a restart exempted)
_ABANDONMENT_SELECT = (
    "SELECT a.id, a.table_id, a.match_number, a.seat, a.user_id, u.name AS player, a.team,"
    " a.variant, a.kind, a.trigger, a.consequence, a.restart_overlap, a.created_at,"
    " a.evidence::text AS evidence, r.id AS review_id"
    " FROM abandonments a LEFT JOIN users u ON u.id = a.user_id"
    " LEFT JOIN ranked_abandonments r ON r.user_id = a.user_id"
    " AND r.match_ref = a.kind || ':' || a.table_id || ':' || a.match_number"
)
# what carries no penalty: an abandonment at a private or training table, or one a server
# restart exempted (`none_restart`); none of them has a review record of its own
PENALTY_FREE = "(a.kind IN ('private', 'training') OR a.consequence = 'none_restart')"
MAX_LISTED = 500


async def find_abandonments(
    pool: Any, *, player: str | None = None, variant: str | None = None,
    kind: str | None = None, since: datetime | None = None, until: datetime | None = None,
    penalty_free: bool = False, before: int | None = None, limit: int = MAX_LISTED,
) -> list[Any]:
    """Live abandonment records, newest first; every filter optional (checked by the caller:
    a variant and a kind are their enums' values). `penalty_free`: only those without a
    penalty (`PENALTY_FREE`); `before`: the records listed after that one (paging)."""
    clauses: list[str] = []
    args: list[Any] = []

    def where(clause: str, value: object) -> None:
        args.append(value)
        clauses.append(clause.format(f"${len(args)}"))

    if player:
        where("lower(u.name) = lower({})", player)
    if variant:
        where("a.variant = {}", variant)
    if kind:
        where("a.kind = {}", kind)
    if since is not None:
        where("a.created_at >= {}", since)
    if until is not None:
        where("a.created_at < {}", until)
    if before is not None:  # the page after record `before`, in the listing's order
        where("(a.created_at, a.id) < (SELECT b.created_at, b.id FROM abandonments b"
              " WHERE b.id = {})", before)
    if penalty_free:
        clauses.append(PENALTY_FREE)
    sql = _ABANDONMENT_SELECT
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    args.append(limit)
    sql += f" ORDER BY a.created_at DESC, a.id DESC LIMIT ${len(args)}"
    return list(await pool.fetch(sql, *args))


async def restarts_spanned(pool: Any, abandonment_ids: list[int]) -> frozenset[int]:
    """Those of these live records whose match spanned a server restart: a server run began
    after the match started and no later than the abandonment (what exempts a review record;
    a streak that crossed the restart is the record's own `restart_overlap`)."""
    if not abandonment_ids:
        return frozenset()
    rows = await pool.fetch(
        "SELECT a.id FROM abandonments a JOIN live_matches m ON m.table_id = a.table_id"
        " AND m.number = a.match_number WHERE a.id = ANY($1::bigint[]) AND EXISTS ("
        "SELECT 1 FROM server_runs r WHERE r.started_at > m.started_at"
        " AND r.started_at <= a.created_at)", abandonment_ids)
    return frozenset(r["id"] for r in rows)


async def get_abandonment_row(pool: Any, abandonment_id: int) -> Any:
    """One live abandonment record (with its evidence), or None."""
    return await pool.fetchrow(_ABANDONMENT_SELECT + " WHERE a.id = $1", abandonment_id)


def check_variant(value: str) -> str:
    if value not in {v.value for v in Variant}:
        raise ApiError(400, "bad_filter", "variant is paulista, mineiro or argentino")
    return value


def check_kind(value: str) -> str:
    if value not in {k.value for k in TableKind}:
        raise ApiError(400, "bad_filter", "kind is private, training, ranked or arena")
    return value


async def list_abandonments(request: web.Request) -> web.StreamResponse:
    """A page of live records (at most `MAX_LISTED`), newest first, and `next`: the `before`
    of the next page with the same filters (the last record's id), null on the last page."""
    require_operator(request)
    query = request.query
    if query.get("penalty") not in (None, "", "none"):
        raise ApiError(400, "bad_filter", "penalty is none (only records without a penalty)")
    before = None
    if query.get("before"):
        before = ascii_uint(query["before"])
        if not before:  # record ids count from 1
            raise ApiError(400, "bad_filter", "before is the `next` of the previous page.")
    pool = request.app[POOL]
    since = time_filter(query.get("since"), "since")
    until = time_filter(query.get("until"), "until", end=True)
    # a range that ends before it starts would find nothing, silently: refused, as the review
    # API (/api/ranked/operator/abandonments) and the operator's page refuse it
    if since is not None and until is not None and since >= until:
        raise ApiError(400, "bad_filter", "The end of the range (until) comes before its start "
                       "(since): swap them.")
    # one more than the page: whether another page follows
    rows = await find_abandonments(
        pool, player=query.get("player") or None,
        variant=check_variant(query["variant"]) if query.get("variant") else None,
        kind=check_kind(query["kind"]) if query.get("kind") else None,
        since=since, until=until,
        penalty_free=query.get("penalty") == "none", before=before, limit=MAX_LISTED + 1)
    page = rows[:MAX_LISTED]
    spanned = await restarts_spanned(pool, [r["id"] for r in page])
    return web.json_response({
        "abandonments": [_abandonment_json(r, False, spanned) for r in page],
        "next": page[-1]["id"] if len(rows) > MAX_LISTED else None,
    })


async def get_abandonment(request: web.Request) -> web.StreamResponse:
    require_operator(request)
    abandonment_id = ascii_uint(request.match_info["abandonment_id"])
    row = None
    if abandonment_id is not None:
        row = await get_abandonment_row(request.app[POOL], abandonment_id)
    if row is None:
        raise ApiError(404, "abandonment_not_found", "No abandonment record with that id.")
    spanned = await restarts_spanned(request.app[POOL], [row["id"]])
    return web.json_response(_abandonment_json(row, True, spanned))
