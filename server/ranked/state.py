"""The ranked house's acknowledged state in PostgreSQL (migrations 024, 036), so a restart
rebuilds it: the queue tickets (with their original join times), the duo invitations waiting
for an answer (with theirs) and the running arenas (entrants with
their points and streaks, and the arena tables the live house still plays). The service writes
a change before it answers the request that made it; `load_*` read it back at start."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from server.ranked.arena import Arena, Entrant, Table
from server.ranked.matchmaking import QueueKey, Ticket
from server.ranked.store import Db, transaction
from truco.variants import Variant

# one ticket as stored: queue, players (a duo's inviter first), their ratings, join time
TicketRow = tuple[QueueKey, tuple[int, ...], tuple[float, ...], float]
# one duo invitation as stored, by its inviter: the partner invited, the queue, when
InvitationRow = tuple[int, QueueKey, float]


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def ticket_rows(tickets: Sequence[Ticket]) -> dict[int, TicketRow]:
    """The stored form of tickets, by their first player (what `sync_tickets` compares)."""
    return {t.players[0]: (t.key, t.players, t.ratings, t.joined_at) for t in tickets}


async def sync_queue(db: Db, rows: Mapping[int, TicketRow], stored: Mapping[int, TicketRow],
                     invitations: Mapping[int, InvitationRow],
                     stored_invitations: Mapping[int, InvitationRow]) -> None:
    """Turn the stored tickets and invitations, `stored` and `stored_invitations` (what the last
    successful call wrote), into `rows` and `invitations`, in one transaction: only those that
    went or changed are deleted, only the new or changed ones inserted."""
    gone = [user for user, row in stored.items() if rows.get(user) != row]
    new = [row for user, row in rows.items() if stored.get(user) != row]
    gone_invitations = [user for user, row in stored_invitations.items()
                        if invitations.get(user) != row]
    new_invitations = [(user, *row) for user, row in invitations.items()
                       if stored_invitations.get(user) != row]
    async with transaction(db) as conn:
        # only what has rows: a change is mostly one ticket or one invitation, one round trip
        if gone_invitations:
            await conn.execute("DELETE FROM ranked_invitations"
                               " WHERE inviter_id = ANY($1::bigint[])", gone_invitations)
        if new_invitations:
            await conn.executemany(
                "INSERT INTO ranked_invitations (inviter_id, partner_id, variant, seats,"
                " invited_at) VALUES ($1, $2, $3, $4, $5)",
                [(inviter, partner, key.variant.value, key.seats, _at(at))
                 for inviter, partner, key, at in new_invitations])
        if gone:
            await conn.execute("DELETE FROM ranked_queue_tickets"
                               " WHERE user_id = ANY($1::bigint[])", gone)
        if new:
            await conn.executemany(
                "INSERT INTO ranked_queue_tickets (user_id, variant, seats, rating, enqueued_at,"
                " partner_id, partner_rating) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                [(players[0], key.variant.value, key.seats, ratings[0], _at(joined),
                  players[1] if len(players) > 1 else None,
                  ratings[1] if len(ratings) > 1 else None)
                 for key, players, ratings, joined in new])


async def load_invitations(db: Db) -> dict[int, InvitationRow]:
    """The stored duo invitations, by inviter, oldest first."""
    return {r["inviter_id"]: (r["partner_id"], QueueKey(Variant(r["variant"]), r["seats"]),
                              r["invited_at"].timestamp())
            for r in await db.fetch(
                "SELECT inviter_id, partner_id, variant, seats, invited_at FROM"
                " ranked_invitations ORDER BY invited_at, inviter_id")}


async def load_tickets(db: Db) -> list[TicketRow]:
    """The stored tickets, longest waiting first (then by player id, a stable queue order)."""
    rows = await db.fetch(
        "SELECT user_id, variant, seats, rating, enqueued_at, partner_id, partner_rating "
        "FROM ranked_queue_tickets ORDER BY enqueued_at, user_id")
    loaded: list[TicketRow] = []
    for r in rows:
        players: tuple[int, ...] = (r["user_id"],)
        ratings: tuple[float, ...] = (r["rating"],)
        if r["partner_id"] is not None:
            players, ratings = (*players, r["partner_id"]), (*ratings, r["partner_rating"])
        loaded.append((QueueKey(Variant(r["variant"]), r["seats"]), players, ratings,
                       r["enqueued_at"].timestamp()))
    return loaded


@dataclass(frozen=True, slots=True)
class StoredArena:
    id: str
    variant: Variant
    arena: Arena
    tables: dict[str, int]  # live table id -> the arena's table number


async def save_arena(db: Db, arena_id: str, variant: Variant, arena: Arena,
                     tables: Mapping[str, int], now: float, before: Arena | None) -> None:
    """Store a running arena: the event, the entrants that changed since `before` (all when
    None), and the arena tables the live house has opened (a table formed but not opened yet is
    formed again after a restart)."""
    old = {} if before is None else {e.player: e for e in before.entrants}
    changed = [e for e in arena.entrants if old.get(e.player) != e]
    by_number = {t.id: t for t in arena.tables}
    async with transaction(db) as conn:
        await conn.execute(
            "INSERT INTO ranked_arenas (id, variant, seats, starts_at, ends_at, next_table) "
            "VALUES ($1, $2, $3, $4, $5, $6) "
            "ON CONFLICT (id) DO UPDATE SET next_table = EXCLUDED.next_table, "
            "starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at",
            arena_id, variant.value, arena.seats, _at(arena.starts_at), _at(arena.ends_at),
            arena.next_table)
        await conn.executemany(
            "INSERT INTO ranked_arena_entries (arena_id, user_id, seq, rating, active, points, "
            "wins, games, streak, last_opponents, joined_at, left_at, left_why) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
            "CASE WHEN $5::boolean THEN NULL ELSE $11::timestamptz END, $12) "
            "ON CONFLICT (arena_id, user_id) DO UPDATE SET active = EXCLUDED.active, "
            "left_why = EXCLUDED.left_why, "
            "points = EXCLUDED.points, wins = EXCLUDED.wins, games = EXCLUDED.games, "
            "streak = EXCLUDED.streak, last_opponents = EXCLUDED.last_opponents, "
            "left_at = CASE WHEN EXCLUDED.active THEN NULL "
            "ELSE coalesce(ranked_arena_entries.left_at, EXCLUDED.joined_at) END",
            [(arena_id, e.player, e.seq, e.rating, e.active, e.points, e.wins, e.games,
              e.streak, list(e.last_opponents), _at(now), None if e.active else e.out or None)
             for e in changed])
        await conn.execute("DELETE FROM ranked_arena_tables WHERE arena_id = $1", arena_id)
        await conn.executemany(
            "INSERT INTO ranked_arena_tables (arena_id, number, live_table_id, team0, team1, "
            "started_at) VALUES ($1, $2, $3, $4, $5, $6)",
            [(arena_id, number, live_id, list(by_number[number].teams[0]),
              list(by_number[number].teams[1]), _at(by_number[number].started_at))
             for live_id, number in tables.items() if number in by_number])


async def close_arena(db: Db, arena_id: str) -> None:
    """The arena's results are recorded: it is not rebuilt any more."""
    async with transaction(db) as conn:
        await conn.execute("UPDATE ranked_arenas SET status = 'closed' WHERE id = $1", arena_id)
        await conn.execute("DELETE FROM ranked_arena_tables WHERE arena_id = $1", arena_id)


async def load_arenas(db: Db, now: float) -> list[StoredArena]:
    """The arenas not closed yet, with their entrants and the tables still playing. How long
    each entrant has waited is not stored: they all wait from `now` on (the start)."""
    events = await db.fetch(
        "SELECT id, variant, seats, starts_at, ends_at, next_table FROM ranked_arenas "
        "WHERE status = 'open' ORDER BY starts_at, id")
    loaded: list[StoredArena] = []
    for ev in events:
        table_rows = await db.fetch(
            "SELECT number, live_table_id, team0, team1, started_at FROM ranked_arena_tables "
            "WHERE arena_id = $1 ORDER BY number", ev["id"])
        tables = tuple(Table(r["number"], (tuple(r["team0"]), tuple(r["team1"])),
                             r["started_at"].timestamp()) for r in table_rows)
        busy = {p for t in tables for p in t.players}
        entrants = tuple(
            Entrant(r["user_id"], r["rating"], r["seq"], active=r["active"],
                    busy=r["user_id"] in busy, points=r["points"], wins=r["wins"],
                    games=r["games"], streak=r["streak"],
                    last_opponents=tuple(r["last_opponents"]), free_since=now,
                    out=r["left_why"] or "")
            for r in await db.fetch(
                "SELECT user_id, seq, rating, active, points, wins, games, streak, "
                "last_opponents, left_why FROM ranked_arena_entries WHERE arena_id = $1 "
                "ORDER BY seq",
                ev["id"]))
        arena = Arena(ev["starts_at"].timestamp(), ev["ends_at"].timestamp(), ev["seats"],
                      entrants=entrants, tables=tables, next_table=ev["next_table"])
        loaded.append(StoredArena(ev["id"], Variant(ev["variant"]), arena,
                                  {r["live_table_id"]: r["number"] for r in table_rows}))
    return loaded
