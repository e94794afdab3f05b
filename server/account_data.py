"""Everything the house keeps about one account, as one JSON document its owner downloads from
the account page (LGPD art. 18: access, portability).

It is read in one read-only snapshot (REPEATABLE READ), so its parts agree with each other:
the account, its open sessions, its recent logins, the password links made for it, the tables
it owns and the seats it holds, every match it played (who sat where, the result, the hands'
public pages) with its own seat's events (connections, missed deadlines), its chips (balance
and every movement), its ratings and their history, its abandonment records (the evidence,
its appeals and their decisions), arenas, and its place in the ranked queue.

Left out, and why: the password and the session and link tokens (only their hashes are kept,
and they would help nobody); the addresses of failed logins on the account's name (whoever
tried may be someone else: the times are given); the hand records themselves (public, named
by their page, `hand_url`); the server's logs (kept outside the database, by the operation).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import asyncpg
import orjson

from server.db import Conn

FORMAT: Final = "barajamos-account-data/1"

_MATCHES_SQL: Final = (
    "SELECT m.table_id, m.number, t.variant, t.seats, t.kind, m.started_at, m.ended_at,"
    "       m.termination, m.winner, m.players,"
    "       array_position(m.players, $1::bigint) - 1 AS seat,"
    "       (SELECT array_agg(coalesce(u.name, '') ORDER BY p.i)"
    "          FROM unnest(m.players) WITH ORDINALITY AS p(uid, i)"
    "          LEFT JOIN users u ON u.id = p.uid) AS names,"
    "       (SELECT min(h.hand) FROM live_hands h"
    "         WHERE h.table_id = m.table_id AND h.match_number = m.number) AS first_hand,"
    "       (SELECT max(h.hand) FROM live_hands h"
    "         WHERE h.table_id = m.table_id AND h.match_number = m.number"
    "           AND h.record IS NOT NULL) AS last_hand"
    "  FROM live_matches m JOIN live_tables t ON t.id = m.table_id"
    " WHERE m.players @> ARRAY[$1::bigint]"  # (its GIN index)
    " ORDER BY m.started_at, m.table_id, m.number"
)


async def _rows(conn: Conn, query: str, *args: object) -> list[dict[str, Any]]:
    """Every row of `query` as a dict."""
    return [_row(r) for r in await conn.fetch(query, *args)]


def _row(record: asyncpg.Record) -> dict[str, Any]:
    """A row as a dict, by column; a jsonb `evidence` as its JSON value."""
    row = dict(record.items())
    if "evidence" in row:
        row["evidence"] = _json(row["evidence"])
    return row


async def collect(conn: Conn, user_id: int, *, session_hash: bytes | None,
                  now: datetime) -> dict[str, Any] | None:
    """The document for `user_id` (None: no such account). `session_hash`: the requesting
    session's token hash, marked `this_one` in the list of sessions. Run inside a
    transaction, for one snapshot."""
    account = await conn.fetchrow(
        "SELECT id, name, role, created_at FROM users WHERE id = $1", user_id)
    if account is None:
        return None
    name: str = account["name"]
    doc: dict[str, Any] = {"format": FORMAT, "exported_at": now, "account": _row(account)}

    doc["sessions"] = [
        {"created_at": r["created_at"], "expires_at": r["expires_at"], "agent": r["agent"],
         "this_one": session_hash is not None and bytes(r["token_hash"]) == session_hash}
        for r in await conn.fetch(
            "SELECT token_hash, created_at, expires_at, agent FROM sessions"
            " WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at", user_id, now)]
    # the house keeps login attempts for a day (the login limits): a successful one's address
    # was this account's owner's; a failed one may be anyone's, so only its time is given
    doc["logins"] = [
        {"at": r["at"], "succeeded": r["succeeded"],
         "address": r["remote"] if r["succeeded"] else None}
        for r in await conn.fetch(
            # by name (as the login limits keep them), since this account was made: a name
            # taken again is another person's (an erased account's go with its erasure too)
            "SELECT at, succeeded, remote FROM login_attempts WHERE name_lower = lower($1)"
            " AND at >= $2 ORDER BY at", name, account["created_at"])]
    doc["password_links"] = await _rows(
        conn,
        "SELECT l.made_at, m.name AS made_by, l.expires_at, l.used_at, l.replaced_at"
        "  FROM password_links l LEFT JOIN users m ON m.id = l.made_by"
        " WHERE l.user_id = $1 ORDER BY l.made_at", user_id)

    doc["tables_owned"] = await _rows(
        conn,
        "SELECT id AS table_id, variant, seats, kind, status, created_at, closed_at"
        "  FROM live_tables WHERE owner_id = $1 ORDER BY created_at", user_id)
    doc["seats_held"] = await _rows(
        conn,
        "SELECT s.table_id, s.seat, t.variant, t.kind, t.status FROM live_seats s"
        "  JOIN live_tables t ON t.id = s.table_id WHERE s.user_id = $1"
        " ORDER BY s.table_id", user_id)

    matches = await conn.fetch(_MATCHES_SQL, user_id)
    events = await conn.fetch(
        "SELECT e.table_id, e.match_number, e.kind, e.at, e.detail FROM seat_events e"
        "  JOIN live_matches m ON m.table_id = e.table_id AND m.number = e.match_number"
        " WHERE m.players @> ARRAY[$1::bigint] AND m.players[e.seat + 1] = $1"
        " ORDER BY e.id", user_id)
    by_match: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in events:
        by_match.setdefault((e["table_id"], e["match_number"]), []).append(
            {"kind": e["kind"], "at": e["at"], "detail": _json(e["detail"])})
    doc["matches"] = [_match(m, by_match.get((m["table_id"], m["number"]), []))
                      for m in matches]

    doc["chips"] = {
        "balance": await conn.fetchval(
            "SELECT balance FROM chip_accounts WHERE kind = 'wallet' AND user_id = $1",
            user_id),
        "movements": await _rows(
            conn,
            "SELECT e.created_at AS at, e.reason, e.match_ref, l.amount, l.balance_after"
            "  FROM chip_lines l JOIN chip_accounts a ON a.id = l.account_id"
            "  JOIN chip_entries e ON e.id = l.entry_id"
            " WHERE a.kind = 'wallet' AND a.user_id = $1 ORDER BY l.entry_id", user_id)}
    doc["ratings"] = await _rows(
        conn,
        "SELECT variant, seats, rating, rd, volatility, games, last_played_at"
        "  FROM ranked_ratings WHERE user_id = $1 ORDER BY variant, seats", user_id)
    doc["rating_history"] = await _rows(
        conn,
        "SELECT at, variant, seats, reason, match_ref, rating_before, rating_after,"
        "       rd_after, volatility_after"
        "  FROM ranked_rating_history WHERE user_id = $1 ORDER BY id", user_id)

    doc["abandonments"] = await _rows(
        conn,
        "SELECT id, created_at, table_id, match_number, seat, team, variant, kind, trigger,"
        "       consequence, restart_overlap, evidence"
        "  FROM abandonments WHERE user_id = $1 ORDER BY id", user_id)
    doc["ranked_abandonments"] = await _rows(
        conn,
        "SELECT a.id, a.match_ref, a.variant, a.seats, a.match_started_at, a.abandoned_at,"
        "       a.status, a.strikes, a.paused_until, a.appeal_text, a.appealed_at,"
        "       a.appeal_answered, a.decided_at, d.name AS decided_by, a.reversed_at,"
        "       a.evidence"
        "  FROM ranked_abandonments a LEFT JOIN users d ON d.id = a.decided_by"
        " WHERE a.user_id = $1 ORDER BY a.id", user_id)

    doc["arenas"] = await _rows(
        conn,
        "SELECT e.arena_id, a.variant, a.seats, a.starts_at, a.ends_at, e.joined_at,"
        "       e.left_at, e.left_why, e.active, e.points, e.wins, e.games,"
        "       s.rank AS final_rank, s.podium"
        "  FROM ranked_arena_entries e JOIN ranked_arenas a ON a.id = e.arena_id"
        "  LEFT JOIN arena_standings s ON s.arena_id = e.arena_id AND s.user_id = e.user_id"
        " WHERE e.user_id = $1 ORDER BY e.joined_at", user_id)
    ticket = await conn.fetchrow(
        "SELECT t.variant, t.seats, t.enqueued_at, p.name AS partner"
        "  FROM ranked_queue_tickets t LEFT JOIN users p ON p.id = t.partner_id"
        " WHERE t.user_id = $1 OR t.partner_id = $1", user_id)
    doc["ranked_queue"] = None if ticket is None else _row(ticket)
    doc["ranked_invitations"] = await _rows(
        conn,
        "SELECT i.variant, i.seats, i.invited_at, f.name AS inviter, p.name AS partner"
        "  FROM ranked_invitations i JOIN users f ON f.id = i.inviter_id"
        "  JOIN users p ON p.id = i.partner_id"
        " WHERE i.inviter_id = $1 OR i.partner_id = $1 ORDER BY i.invited_at", user_id)
    return doc


def _match(m: asyncpg.Record, events: list[dict[str, Any]]) -> dict[str, Any]:
    seat: int = m["seat"]
    seats: int = m["seats"]
    winner = m["winner"]
    first, last = m["first_hand"], m["last_hand"]
    return {
        "table_id": m["table_id"], "match": m["number"], "variant": m["variant"],
        "seats": seats, "kind": m["kind"], "started_at": m["started_at"],
        "ended_at": m["ended_at"], "termination": m["termination"],
        # seat order; null for a bot's seat
        "players": [None if uid is None else name
                    for uid, name in zip(m["players"], m["names"], strict=True)],
        "my_seat": seat, "my_team": seat % 2,
        "won": None if winner is None else winner == seat % 2,
        "hands": [] if first is None or last is None else [
            {"hand": hand, "hand_url": f"/h/{m['table_id']}/{hand}"}
            for hand in range(first, last + 1)],
        "my_seat_events": events,
    }


def _json(value: object) -> object:
    """A jsonb column: asyncpg gives its text unless a codec is set."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def encode(doc: Mapping[str, Any]) -> bytes:
    """The document as indented JSON (UTC times in ISO 8601)."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_UTC_Z)
