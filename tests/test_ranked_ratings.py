"""Ratings in PostgreSQL: one update per match, idle periods, reversal once, leaderboards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.ranked import glicko2, ratings
from server.ranked.glicko2 import Rating
from server.ranked.ratings import RatingStoreError
from tests.test_ranked_ledger import make_users, pool  # noqa: F401  (the pool fixture)
from truco.variants import Variant

AT = datetime(2027, 3, 1, 20, 0, tzinfo=UTC)
P = Variant.PAULISTA


async def test_a_1v1_match_moves_both_ratings_once(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia, caio = await make_users(pool, 3)
    changes = await ratings.rate_match(pool, "m1", P, 2, ([ana], [bia]), 0, AT)
    (exp_a,), (exp_b,) = glicko2.rate_match([Rating()], [Rating()], 1)
    assert [(c.user_id, c.team, c.before, c.after) for c in changes] == [
        (ana, 0, 1500, exp_a), (bia, 1, 1500, exp_b),
    ]
    assert changes[0].delta > 0 > changes[1].delta
    again = await ratings.rate_match(pool, "m1", P, 2, ([ana], [bia]), 0, AT)
    assert again == changes
    assert await ratings.rating_of(pool, ana, P, 2) == exp_a
    games = await pool.fetchval("SELECT sum(games) FROM ranked_ratings")
    assert games == 2
    # other queues are other ratings
    assert await ratings.rating_of(pool, ana, P, 4) == Rating()
    assert await ratings.rating_of(pool, ana, Variant.MINEIRO, 2) == Rating()
    with pytest.raises(RatingStoreError) as err:
        await ratings.rate_match(pool, "m1", P, 2, ([ana], [caio]), 0, AT)
    assert err.value.code == "bad_players"
    with pytest.raises(RatingStoreError) as err:
        await ratings.rate_match(pool, "m2", P, 2, ([ana], [caio + 99]), 0, AT)
    assert err.value.code == "unknown_user"


async def test_concurrent_twins_rate_once(pool: asyncpg.Pool) -> None:  # noqa: F811
    a, b, c, d = await make_users(pool, 4)
    first, second = await asyncio.gather(
        ratings.rate_match(pool, "duo", P, 4, ([a, c], [b, d]), 1, AT),
        ratings.rate_match(pool, "duo", P, 4, ([a, c], [b, d]), 1, AT),
    )
    assert first == second
    assert await pool.fetchval("SELECT count(*) FROM ranked_rating_history") == 4
    new_a, new_b = glicko2.rate_match([Rating()] * 2, [Rating()] * 2, 0)
    assert [c.after for c in first] == [*new_a, *new_b]


async def test_idle_days_grow_the_deviation_before_the_next_match(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    ana, bia, caio = await make_users(pool, 3)
    await ratings.rate_match(pool, "first", P, 2, ([ana], [bia]), 0, AT)
    before_a = await ratings.rating_of(pool, ana, P, 2)
    later = AT + timedelta(days=10, hours=5)
    changes = await ratings.rate_match(pool, "second", P, 2, ([ana], [caio]), 1, later)
    expected, _ = glicko2.rate_match([glicko2.idle(before_a, 10)], [Rating()], 0)
    assert changes[0].after == expected[0]
    assert ratings.idle_periods(None, later) == 0
    assert ratings.idle_periods(AT, AT - timedelta(days=3)) == 0
    assert ratings.idle_periods(AT, AT + timedelta(hours=23)) == 0


async def test_every_rated_match_moves_the_idle_clock(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia, caio = await make_users(pool, 3)
    await ratings.rate_match(pool, "first", P, 2, ([ana], [bia]), 0, AT)
    later = AT + timedelta(days=5)
    await ratings.rate_match(pool, "second", P, 2, ([ana], [caio]), 1, later)
    # idle periods count from the latest match, not the first
    last = await pool.fetchval(
        "SELECT last_played_at FROM ranked_ratings WHERE user_id = $1 AND variant = 'paulista' "
        "AND seats = 2", ana)
    assert last == later


async def test_reversal_gives_back_the_rating_change_once(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia = await make_users(pool, 2)
    (_, lost) = await ratings.rate_match(pool, "m", P, 2, ([ana], [bia]), 0, AT)
    back = await ratings.reverse_match(pool, "abandonment:1", bia, "m", AT)
    assert back is not None and back.delta == pytest.approx(-lost.delta)
    assert (await ratings.rating_of(pool, bia, P, 2)).rating == pytest.approx(1500)
    assert await ratings.reverse_match(pool, "abandonment:1", bia, "m", AT) == back
    assert (await ratings.rating_of(pool, bia, P, 2)).rating == pytest.approx(1500)
    assert await ratings.reverse_match(pool, "abandonment:2", bia, "never", AT) is None
    lines = await ratings.history(pool, bia, P, 2)
    assert [x.reason for x in lines] == ["reversal", "match"]


async def test_leaderboard_lists_established_ratings_best_first(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    users = await make_users(pool, 5)
    rows = [(1610.0, 60.0), (1720.0, 90.0), (1800.0, 200.0), (1610.0, 110.0), (1400.0, 45.0)]
    for user, (rating, rd) in zip(users, rows, strict=True):
        await pool.execute(
            "INSERT INTO ranked_ratings (user_id, variant, seats, rating, rd, volatility, games) "
            "VALUES ($1, 'paulista', 2, $2, $3, 0.06, 30)",
            user, rating, rd,
        )
    board = await ratings.leaderboard(pool, P, 2)
    # the 1800 is provisional (RD 200); equal ratings in user id order
    assert [(s.user_id, s.rating.rating) for s in board] == [
        (users[1], 1720), (users[0], 1610), (users[3], 1610), (users[4], 1400),
    ]
    assert board[0].name == "player2" and board[0].games == 30
    assert [s.user_id for s in await ratings.leaderboard(pool, P, 2, limit=2, offset=1)] == [
        users[0], users[3],
    ]
    assert await ratings.leaderboard(pool, Variant.ARGENTINO, 2) == ()
    with pytest.raises(RatingStoreError):
        await ratings.leaderboard(pool, P, 2, limit=0)


@pytest.mark.parametrize(
    ("teams", "seats", "winner", "at", "code"),
    [
        (([1], [2, 3]), 2, 0, AT, "bad_players"),
        (([1, 2], [3, 4]), 2, 0, AT, "bad_players"),
        (([1], [1]), 2, 0, AT, "bad_players"),
        (([1], [2]), 3, 0, AT, "bad_variant"),
        (([1], [2]), 2, 2, AT, "bad_result"),
        (([1], [2]), 2, True, AT, "bad_result"),
        (([1], [2]), 2, 0, datetime(2027, 3, 1), "bad_result"),
        ((["1"], [2]), 2, 0, AT, "bad_id"),
        (([1], [0]), 2, 0, AT, "bad_id"),
    ],
)
async def test_bad_matches_are_refused(
    pool: asyncpg.Pool,  # noqa: F811
    teams: tuple[list[int], list[int]], seats: int, winner: int, at: datetime, code: str,
) -> None:
    await make_users(pool, 4)
    with pytest.raises(RatingStoreError) as err:
        await ratings.rate_match(pool, "bad", P, seats, teams, winner, at)
    assert err.value.code == code
    assert await pool.fetchval("SELECT count(*) FROM ranked_ratings") == 0


async def test_history_is_append_only(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia = await make_users(pool, 2)
    await ratings.rate_match(pool, "m", P, 2, ([ana], [bia]), 0, AT)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("UPDATE ranked_rating_history SET rating_after = 3000")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("DELETE FROM ranked_rating_history")
