"""A closed arena's standings and podium, recorded once in PostgreSQL."""

from __future__ import annotations

import asyncpg
import pytest

from server.ranked import arena_results
from server.ranked.arena import Arena
from server.ranked.arena_results import ArenaResultsError
from tests.test_ranked_ledger import make_users, pool  # noqa: F401  (the pool fixture)
from truco.variants import Variant

START = 1_800_000_000.0
END = START + 3600


async def closed_arena(users: list[int]) -> Arena:
    a = Arena(START, END)
    for user in users:
        a = a.join(user, 1500, START)
    for round_start in (START, START + 600):
        a, tables = a.pair(round_start)
        for t in tables:
            a = a.finish(t.id, 0, round_start + 60)
    return a.close(END)


async def test_podium_is_recorded_once(pool: asyncpg.Pool) -> None:  # noqa: F811
    users = await make_users(pool, 5)
    arena = await closed_arena(users)
    first = await arena_results.record_close(pool, "arena-1", Variant.PAULISTA, arena, END + 5)
    assert [r.rank for r in first] == [1, 2, 3, 4, 5]
    assert [(r.user_id, r.points) for r in first] == [
        (s.player, s.points) for s in arena.standings()
    ]
    assert [r.user_id for r in first if r.podium] == [s.player for s in arena.podium]
    assert first[0].name.startswith("player")
    again = await arena_results.record_close(pool, "arena-1", Variant.PAULISTA, arena, END + 9)
    assert again == first
    with pytest.raises(ArenaResultsError) as err:
        await arena_results.record_close(pool, "arena-1", Variant.MINEIRO, arena, END + 9)
    assert err.value.code == "conflict"
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("UPDATE arena_standings SET points = 99")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("DELETE FROM arena_events")
    assert await arena_results.results(pool, "nothing") == ()


async def test_only_closed_arenas_of_real_users_are_recorded(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    users = await make_users(pool, 2)
    running = Arena(START, END).join(users[0], 1500, START)
    with pytest.raises(ArenaResultsError) as err:
        await arena_results.record_close(pool, "a", Variant.PAULISTA, running, END)
    assert err.value.code == "not_closed"
    closed = await closed_arena([*users, users[1] + 100])
    with pytest.raises(ArenaResultsError) as err:
        await arena_results.record_close(pool, "a", Variant.PAULISTA, closed, END)
    assert err.value.code == "unknown_user"
    for arena_id, at in (("bad id", END), ("a", END - 1)):
        with pytest.raises(ArenaResultsError):
            await arena_results.record_close(pool, arena_id, Variant.PAULISTA,
                                             await closed_arena(users), at)
    assert await pool.fetchval("SELECT count(*) FROM arena_events") == 0
