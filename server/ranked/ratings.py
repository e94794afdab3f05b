"""Ratings in PostgreSQL (migration 021): one Glicko-2 rating per player, variant and seat count,
updated once when a ranked match ends, with an append-only history and the leaderboards.

A rating period is one match. Before a player's match is rated, each whole `RATING_PERIOD` since
their last rated match counts as an idle period, so a returning player's deviation has grown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

from server.db import Conn
from server.ranked import glicko2
from server.ranked.glicko2 import Rating
from server.ranked.store import Db, StoreError, check_id, check_match, transaction
from truco.variants import Variant

RATING_PERIOD = timedelta(days=1)


class RatingStoreError(StoreError):
    """Codes: bad_match, bad_id, bad_players, unknown_user, bad_variant, bad_result, bad_page."""


@dataclass(frozen=True, slots=True)
class Change:
    user_id: int
    team: int
    before: float
    after: Rating

    @property
    def delta(self) -> float:
        return self.after.rating - self.before


@dataclass(frozen=True, slots=True)
class Standing:
    user_id: int
    name: str
    rating: Rating
    games: int


@dataclass(frozen=True, slots=True)
class HistoryLine:
    id: int
    reason: str  # 'match' or 'reversal'
    match_ref: str
    rating_before: float
    rating_after: float
    rd_after: float
    at: datetime


def idle_periods(last_played_at: datetime | None, now: datetime) -> int:
    if last_played_at is None or now <= last_played_at:
        return 0
    return math.floor((now - last_played_at) / RATING_PERIOD)


def _check_queue(variant: object, seats: object) -> tuple[Variant, int]:
    if not isinstance(variant, Variant):
        raise RatingStoreError("bad_variant", f"Unknown variant {variant!r}.")
    if seats not in (2, 4) or isinstance(seats, bool) or not isinstance(seats, int):
        raise RatingStoreError("bad_variant", "Ranked tables have 2 or 4 seats.")
    return variant, seats


def _rating(row: asyncpg.Record) -> Rating:
    return Rating(row["rating"], row["rd"], row["volatility"])


async def _lock(
    conn: Conn, users: Sequence[int], variant: Variant, seats: int
) -> dict[int, asyncpg.Record]:
    """Create missing ratings at the defaults, then lock all of them in user id order."""
    for user in sorted(users):
        try:
            await conn.execute(
                "INSERT INTO ranked_ratings (user_id, variant, seats, rating, rd, volatility) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                user, variant.value, seats,
                glicko2.DEFAULT_RATING, glicko2.DEFAULT_RD, glicko2.DEFAULT_VOLATILITY,
            )
        except asyncpg.ForeignKeyViolationError as exc:
            raise RatingStoreError("unknown_user", f"No user with id {user}.") from exc
    rows = await conn.fetch(
        "SELECT * FROM ranked_ratings WHERE user_id = ANY($1::bigint[]) AND variant = $2 "
        "AND seats = $3 ORDER BY user_id FOR UPDATE",
        list(users), variant.value, seats,
    )
    return {r["user_id"]: r for r in rows}


async def rate_match(
    db: Db,
    match_ref: str,
    variant: Variant,
    seats: int,
    teams: tuple[Sequence[int], Sequence[int]],
    winner: int,
    at: datetime,
) -> tuple[Change, ...]:
    """Rate a finished ranked match once (team 0 against team 1; `winner` is 0 or 1).

    A second call for the same match changes nothing and returns the first call's changes.
    """
    match_ref = check_match(match_ref, RatingStoreError)
    variant, seats = _check_queue(variant, seats)
    if winner not in (0, 1) or isinstance(winner, bool):
        raise RatingStoreError("bad_result", "The winner is team 0 or team 1.")
    if at.tzinfo is None:
        raise RatingStoreError("bad_result", "The time of a match must carry its time zone.")
    sides = tuple(tuple(check_id(u, "user", RatingStoreError) for u in side) for side in teams)
    if len(sides) != 2:
        raise RatingStoreError("bad_players", "A match has two teams.")
    everyone = sides[0] + sides[1]
    if any(len(side) != seats // 2 for side in sides) or len(set(everyone)) != seats:
        raise RatingStoreError("bad_players", f"A {seats}-seat match has two teams of "
                                              f"{seats // 2} different players.")
    reference = f"match:{match_ref}"
    async with transaction(db) as conn:
        rows = await _lock(conn, everyone, variant, seats)
        done = await conn.fetch(
            "SELECT h.user_id, h.rating_before, h.rating_after, h.rd_after, h.volatility_after "
            "FROM ranked_rating_history h WHERE h.reference = $1",
            reference,
        )
        if done:
            by_user = {r["user_id"]: r for r in done}
            if set(by_user) != set(everyone):
                raise RatingStoreError("bad_players", f"{match_ref} was rated with other players.")
            return tuple(
                Change(u, team, by_user[u]["rating_before"],
                       Rating(by_user[u]["rating_after"], by_user[u]["rd_after"],
                              by_user[u]["volatility_after"]))
                for team, side in enumerate(sides) for u in side
            )
        current = {
            u: glicko2.idle(_rating(rows[u]), idle_periods(rows[u]["last_played_at"], at))
            for u in everyone
        }
        new_a, new_b = glicko2.rate_match(
            [current[u] for u in sides[0]], [current[u] for u in sides[1]],
            1.0 if winner == 0 else 0.0,
        )
        changes = tuple(
            Change(u, team, _rating(rows[u]).rating, new)
            for team, (side, news) in enumerate(zip(sides, (new_a, new_b), strict=True))
            for u, new in zip(side, news, strict=True)
        )
        for change in changes:
            await conn.execute(
                "UPDATE ranked_ratings SET rating = $4, rd = $5, volatility = $6, "
                "games = games + 1, last_played_at = $7 "
                "WHERE user_id = $1 AND variant = $2 AND seats = $3",
                change.user_id, variant.value, seats, change.after.rating, change.after.rd,
                change.after.volatility, at,
            )
            await conn.execute(
                "INSERT INTO ranked_rating_history (user_id, variant, seats, reference, reason, "
                "match_ref, rating_before, rating_after, rd_after, volatility_after, at) "
                "VALUES ($1, $2, $3, $4, 'match', $5, $6, $7, $8, $9, $10)",
                change.user_id, variant.value, seats, reference, match_ref, change.before,
                change.after.rating, change.after.rd, change.after.volatility, at,
            )
        return changes


async def reverse_match(
    db: Db, record_ref: str, user_id: int, match_ref: str, at: datetime
) -> Change | None:
    """Give back what `match_ref` changed in the player's rating (an overturned abandonment),
    once per record. Only the rating moves: the deviation and volatility stay as they are now,
    because later matches have already built on them. None when the match was never rated."""
    user_id = check_id(user_id, "user", RatingStoreError)
    match_ref = check_match(match_ref, RatingStoreError)
    async with transaction(db) as conn:
        rated = await conn.fetchrow(
            "SELECT variant, seats, rating_after - rating_before AS delta "
            "FROM ranked_rating_history WHERE reference = $1 AND user_id = $2",
            f"match:{match_ref}", user_id,
        )
        if rated is None:
            return None
        variant, seats = Variant(rated["variant"]), rated["seats"]
        rows = await _lock(conn, [user_id], variant, seats)
        row = rows[user_id]
        reference = f"reversal:{record_ref}"
        done = await conn.fetchrow(
            "SELECT rating_before, rating_after, rd_after, volatility_after "
            "FROM ranked_rating_history WHERE reference = $1 AND user_id = $2",
            reference, user_id,
        )
        if done is not None:
            return Change(user_id, 0, done["rating_before"],
                          Rating(done["rating_after"], done["rd_after"], done["volatility_after"]))
        now = _rating(row)
        after = Rating(now.rating - rated["delta"], now.rd, now.volatility)
        await conn.execute(
            "UPDATE ranked_ratings SET rating = $4 WHERE user_id = $1 AND variant = $2 "
            "AND seats = $3",
            user_id, variant.value, seats, after.rating,
        )
        await conn.execute(
            "INSERT INTO ranked_rating_history (user_id, variant, seats, reference, reason, "
            "match_ref, rating_before, rating_after, rd_after, volatility_after, at) "
            "VALUES ($1, $2, $3, $4, 'reversal', $5, $6, $7, $8, $9, $10)",
            user_id, variant.value, seats, reference, match_ref, now.rating, after.rating,
            after.rd, after.volatility, at,
        )
        return Change(user_id, 0, now.rating, after)


async def rating_of(db: Db, user_id: int, variant: Variant, seats: int) -> Rating:
    variant, seats = _check_queue(variant, seats)
    user_id = check_id(user_id, "user", RatingStoreError)
    row = await db.fetchrow(
        "SELECT rating, rd, volatility FROM ranked_ratings "
        "WHERE user_id = $1 AND variant = $2 AND seats = $3",
        user_id, variant.value, seats,
    )
    return Rating() if row is None else _rating(row)


async def leaderboard(
    db: Db, variant: Variant, seats: int, *, limit: int = 50, offset: int = 0
) -> tuple[Standing, ...]:
    """Established ratings (deviation at most `glicko2.PROVISIONAL_RD`), best first."""
    variant, seats = _check_queue(variant, seats)
    if not (1 <= limit <= 500 and offset >= 0):
        raise RatingStoreError("bad_page", "A page holds 1 to 500 rows from offset 0 on.")
    rows = await db.fetch(
        "SELECT r.user_id, u.name, r.rating, r.rd, r.volatility, r.games "
        "FROM ranked_ratings r JOIN users u ON u.id = r.user_id "
        "WHERE r.variant = $1 AND r.seats = $2 AND r.rd <= $3 "
        "ORDER BY r.rating DESC, r.user_id LIMIT $4 OFFSET $5",
        variant.value, seats, glicko2.PROVISIONAL_RD, limit, offset,
    )
    return tuple(Standing(r["user_id"], r["name"], _rating(r), r["games"]) for r in rows)


async def history(
    db: Db, user_id: int, variant: Variant, seats: int, *, limit: int = 50
) -> tuple[HistoryLine, ...]:
    """The player's rating changes in one queue, newest first."""
    variant, seats = _check_queue(variant, seats)
    user_id = check_id(user_id, "user", RatingStoreError)
    if not 1 <= limit <= 500:
        raise RatingStoreError("bad_page", "A page holds 1 to 500 rows.")
    rows = await db.fetch(
        "SELECT id, reason, match_ref, rating_before, rating_after, rd_after, at "
        "FROM ranked_rating_history WHERE user_id = $1 AND variant = $2 AND seats = $3 "
        "ORDER BY id DESC LIMIT $4",
        user_id, variant.value, seats, limit,
    )
    return tuple(
        HistoryLine(r["id"], r["reason"], r["match_ref"], r["rating_before"], r["rating_after"],
                    r["rd_after"], r["at"])
        for r in rows
    )
