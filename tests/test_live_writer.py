"""The group writer against a real PostgreSQL: jobs share commits, a bad job alone is refused."""

from __future__ import annotations

import asyncio

import asyncpg

from server.live.model import LiveError
from server.live.writer import GroupWriter
from server.metrics import Metrics

INSERT = "INSERT INTO scratch (id, note) VALUES ($1, $2)"


async def _setup(database_url: str) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    assert pool is not None
    await pool.execute("CREATE TABLE scratch (id integer PRIMARY KEY, note text NOT NULL)")
    return pool


async def test_jobs_commit_together_and_a_bad_one_fails_alone(database_url: str) -> None:
    pool = await _setup(database_url)
    writer = GroupWriter(pool, Metrics(), batch_max=64, connections=2)
    writer.start()
    try:
        await writer.write([(INSERT, (1, "first"))])
        # queued in one turn: they share commits; the duplicate key fails only its own job
        results = await asyncio.gather(
            *(writer.write([(INSERT, (i, f"row {i}"))]) for i in range(2, 12)),
            writer.write([(INSERT, (1, "again"))]),
            writer.write([(INSERT, (20, "two statements")),
                          ("UPDATE scratch SET note = $2 WHERE id = $1", (20, "updated"))]),
            return_exceptions=True,
        )
        assert [type(r).__name__ for r in results] == ["NoneType"] * 10 + [
            "LiveError", "NoneType"]
        assert isinstance(results[10], LiveError) and results[10].code == "unavailable"
        rows = dict(await pool.fetch("SELECT id, note FROM scratch"))
        assert rows[1] == "first" and rows[20] == "updated" and len(rows) == 12
    finally:
        await writer.close()
        await pool.close()  # the committers gave their connections back: close does not hang
