"""Closed arenas in PostgreSQL (migration 023): the final standings and the podium, recorded
once when the event closes; a second recording of the same event returns the first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

from server.ranked.arena import Arena
from server.ranked.store import Db, StoreError, check_match, transaction
from truco.variants import Variant


class ArenaResultsError(StoreError):
    """Codes: bad_match (a bad arena id), bad_event, not_closed, unknown_user, conflict."""


@dataclass(frozen=True, slots=True)
class Result:
    rank: int
    user_id: int
    name: str
    points: int
    wins: int
    games: int
    podium: bool


@dataclass(frozen=True, slots=True)
class Played:
    """One closed arena as one of its entrants finished it."""
    arena_id: str
    variant: str
    seats: int
    starts_at: datetime
    ends_at: datetime
    rank: int
    entrants: int
    points: int
    wins: int
    games: int
    podium: bool


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


async def record_close(
    db: Db, arena_id: str, variant: Variant, arena: Arena, closed_at: float
) -> tuple[Result, ...]:
    """Record a closed arena's standings and podium, once."""
    arena_id = check_match(arena_id, ArenaResultsError)
    if not isinstance(variant, Variant):
        raise ArenaResultsError("bad_event", f"Unknown variant {variant!r}.")
    if not arena.closed:
        raise ArenaResultsError("not_closed", "Only a closed arena has final standings.")
    if closed_at < arena.ends_at:
        raise ArenaResultsError("bad_event", "An arena closes at or after its end.")
    on_podium = {s.player for s in arena.podium}
    async with transaction(db) as conn:
        created = await conn.fetchval(
            "INSERT INTO arena_events (id, variant, seats, starts_at, ends_at, closed_at) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING id",
            arena_id, variant.value, arena.seats, _at(arena.starts_at), _at(arena.ends_at),
            _at(closed_at),
        )
        if created is None:
            stored = await conn.fetchrow(
                "SELECT variant, seats, starts_at, ends_at FROM arena_events WHERE id = $1",
                arena_id,
            )
            assert stored is not None
            if (stored["variant"], stored["seats"], stored["starts_at"], stored["ends_at"]) != (
                variant.value, arena.seats, _at(arena.starts_at), _at(arena.ends_at)
            ):
                raise ArenaResultsError("conflict", f"Arena {arena_id} was another event.")
        else:
            try:
                await conn.executemany(
                    "INSERT INTO arena_standings (arena_id, rank, user_id, points, wins, games, "
                    "podium) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    [(arena_id, s.rank, s.player, s.points, s.wins, s.games,
                      s.player in on_podium) for s in arena.standings()],
                )
            except asyncpg.ForeignKeyViolationError as exc:
                raise ArenaResultsError("unknown_user", "An entrant is not a user.") from exc
    return await results(db, arena_id)


async def results(db: Db, arena_id: str) -> tuple[Result, ...]:
    """A closed arena's final standings, first place first (empty for an unknown arena)."""
    arena_id = check_match(arena_id, ArenaResultsError)
    rows = await db.fetch(
        "SELECT s.rank, s.user_id, u.name, s.points, s.wins, s.games, s.podium "
        "FROM arena_standings s JOIN users u ON u.id = s.user_id WHERE s.arena_id = $1 "
        "ORDER BY s.rank",
        arena_id,
    )
    return tuple(Result(r["rank"], r["user_id"], r["name"], r["points"], r["wins"], r["games"],
                        r["podium"]) for r in rows)


async def of_player(db: Db, user_id: int, limit: int) -> tuple[Played, ...]:
    """The closed arenas a player entered, the newest first, with where they finished."""
    rows = await db.fetch(
        "SELECT e.id, e.variant, e.seats, e.starts_at, e.ends_at, s.rank, s.points, s.wins, "
        "s.games, s.podium, (SELECT count(*) FROM arena_standings c WHERE c.arena_id = e.id) "
        "AS entrants FROM arena_standings s JOIN arena_events e ON e.id = s.arena_id "
        "WHERE s.user_id = $1 ORDER BY e.closed_at DESC, e.id LIMIT $2",
        user_id, limit,
    )
    return tuple(Played(r["id"], r["variant"], r["seats"], r["starts_at"], r["ends_at"],
                        r["rank"], r["entrants"], r["points"], r["wins"], r["games"],
                        r["podium"]) for r in rows)
