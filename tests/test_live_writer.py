"""The group writer against a real PostgreSQL: jobs share commits, a bad job alone is refused,
a broken or stuck connection is replaced and its batch declared in doubt only once its fate is
sealed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import asyncpg
import pytest
from asyncpg.transaction import Transaction

from server.live.model import LiveError
from server.live.writer import GroupWriter, WriteInDoubt, WriteRefused
from server.metrics import Metrics

INSERT = "INSERT INTO scratch (id, note) VALUES ($1, $2)"


async def _setup(database_url: str) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
    assert pool is not None
    await pool.execute("CREATE TABLE scratch (id integer PRIMARY KEY, note text NOT NULL)")
    return pool


async def test_jobs_commit_together_and_a_bad_one_fails_alone(database_url: str) -> None:
    pool = await _setup(database_url)
    metrics = Metrics()
    writer = GroupWriter(partial(asyncpg.connect, database_url), metrics, batch_max=64,
                         connections=2)
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
            "WriteRefused", "NoneType"]
        assert isinstance(results[10], LiveError) and results[10].code == "unavailable"
        assert metrics.registry.get_sample_value(
            "barajamos_write_failures_total", {"outcome": "refused"}) == 1
        rows = dict(await pool.fetch("SELECT id, note FROM scratch"))
        assert rows[1] == "first" and rows[20] == "updated" and len(rows) == 12
    finally:
        await writer.close()
        await pool.close()


async def _writer_backends(admin: asyncpg.Connection) -> list[int]:
    return [r["pid"] for r in await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid() AND backend_type = 'client backend'")]


async def _scratch_writer(database_url: str, metrics: Metrics | None = None,
                          **options: Any) -> tuple[GroupWriter, asyncpg.Connection]:
    """A started writer over a fresh `scratch` table, and an admin connection to watch it."""
    pool = await _setup(database_url)
    await pool.close()
    writer = GroupWriter(partial(asyncpg.connect, database_url), metrics or Metrics(),
                         batch_max=64, **options)
    writer.start()
    return writer, await asyncpg.connect(database_url)


async def _lock_scratch(admin: asyncpg.Connection) -> Transaction:
    """Hold `scratch` so reads go on and writes wait (until the transaction is rolled back)."""
    lock = admin.transaction()
    await lock.start()
    await admin.execute("LOCK TABLE scratch IN EXCLUSIVE MODE")
    return lock


async def test_a_job_of_several_sql_texts_is_refused_whole(database_url: str) -> None:
    # its statements run in one transaction: the duplicate key takes the valid row with it
    writer, admin = await _scratch_writer(database_url)
    try:
        with pytest.raises(WriteRefused):
            await writer.write([(INSERT, (40, "valid")),
                                ("INSERT INTO scratch (note, id) VALUES ($2, $1)",
                                 (40, "duplicate"))])
        assert await admin.fetchval("SELECT count(*) FROM scratch WHERE id = 40") == 0
    finally:
        await writer.close()
        await admin.close()


async def test_a_connection_killed_while_idle_is_replaced(database_url: str) -> None:
    writer, admin = await _scratch_writer(database_url)
    try:
        await writer.write([(INSERT, (1, "first"))])
        [old] = await _writer_backends(admin)
        await admin.execute("SELECT pg_terminate_backend($1)", old)
        await asyncio.sleep(0.2)  # the writer's side sees its socket close
        # found closed before the batch went out: replaced, and the write simply succeeds
        await asyncio.wait_for(writer.write([(INSERT, (2, "second"))]), 10)
        [new] = await _writer_backends(admin)
        assert new != old
        assert await admin.fetchval("SELECT count(*) FROM scratch") == 2
    finally:
        await writer.close()
        await admin.close()


async def test_a_batch_sent_as_its_connection_is_killed_never_stops_the_writer(
    database_url: str,
) -> None:
    # a review: written at once after the kill (no time for asyncpg to see the socket close),
    # the batch met asyncpg's InternalClientError ("cannot switch to state 13"), which killed
    # the committer: that write, and every one after it, waited for ever
    writer, admin = await _scratch_writer(database_url)
    try:
        for attempt in range(8):
            await writer.write([(INSERT, (100 + 2 * attempt, "before"))])
            [old] = await _writer_backends(admin)
            await admin.execute("SELECT pg_terminate_backend($1)", old)
            # written, replaced first, or in doubt: anything but waiting for ever
            with contextlib.suppress(WriteInDoubt):
                await asyncio.wait_for(writer.write([(INSERT, (101 + 2 * attempt, "x"))]), 20)
        await asyncio.wait_for(writer.write([(INSERT, (1, "after"))]), 20)
        assert await admin.fetchval("SELECT count(*) FROM scratch WHERE id = 1") == 1
    finally:
        await writer.close()
        await admin.close()


async def test_a_stuck_commit_is_cut_and_declared_in_doubt_only_once_settled(
    database_url: str,
) -> None:
    metrics = Metrics()
    writer, admin = await _scratch_writer(database_url, metrics, timeout=0.5)
    try:
        await writer.write([(INSERT, (1, "first"))])
        [old] = await _writer_backends(admin)
        lock = await _lock_scratch(admin)
        started = asyncio.get_running_loop().time()
        with pytest.raises(WriteInDoubt) as refused:
            await asyncio.wait_for(writer.write([(INSERT, (2, "stuck"))]), 10)
        assert refused.value.code == "in_doubt" and refused.value.status == 503
        assert metrics.registry.get_sample_value(
            "barajamos_write_failures_total", {"outcome": "in_doubt"}) == 1
        assert asyncio.get_running_loop().time() - started >= 0.5  # the watchdog, not sooner
        # in doubt means settled: the stuck backend is gone, so nothing of it can still commit
        # once the lock goes (a closed socket alone would have let it commit later)
        assert old not in await _writer_backends(admin)
        await lock.rollback()
        await asyncio.sleep(0.2)
        assert await admin.fetchval("SELECT count(*) FROM scratch WHERE id = 2") == 0
        # the next write goes out on a fresh connection
        await asyncio.wait_for(writer.write([(INSERT, (3, "third"))]), 10)
        assert sorted(r["id"] for r in await admin.fetch("SELECT id FROM scratch")) == [1, 3]
    finally:
        await writer.close()
        await admin.close()


def _fence_query_fails(monkeypatch: pytest.MonkeyPatch,
                       fail: Callable[[float | None], Awaitable[None]], times: int) -> None:
    """The fence's `pg_terminate_backend` query, on a real connection, meets `fail` (given
    the query's timeout) `times` times, then runs as ever."""
    real = asyncpg.Connection.fetchval
    left = [times]

    async def fetchval(self: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
        if "pg_terminate_backend" in query and left[0] > 0:
            left[0] -= 1
            await fail(kw.get("timeout"))
        return await real(self, query, *args, **kw)

    monkeypatch.setattr(asyncpg.Connection, "fetchval", fetchval)


async def test_the_fence_outlives_asyncpgs_own_errors(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a review: the fence caught only the database's errors; asyncpg's InternalClientError
    # escaped it, and the batch was declared in doubt while its backend could still commit
    writer, admin = await _scratch_writer(database_url, timeout=0.5)
    try:
        await writer.write([(INSERT, (1, "first"))])
        [old] = await _writer_backends(admin)
        lock = await _lock_scratch(admin)

        async def internal(timeout: float | None) -> None:
            raise asyncpg.exceptions.InternalClientError("cannot switch to state 13")

        _fence_query_fails(monkeypatch, internal, times=2)
        with pytest.raises(WriteInDoubt):
            await asyncio.wait_for(writer.write([(INSERT, (2, "stuck"))]), 20)
        assert old not in await _writer_backends(admin)  # in doubt only once settled
        await lock.rollback()
        await asyncio.wait_for(writer.write([(INSERT, (3, "third"))]), 10)
    finally:
        await writer.close()
        await admin.close()


async def test_a_stopping_writer_gives_up_on_a_database_that_froze(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a review: the fence's own query had no timeout, so a database that froze after the
    # fence's connection opened held a stopping house for ever (it was to wait twice the
    # commit timeout at most)
    writer, admin = await _scratch_writer(database_url, timeout=0.5)
    lock = admin.transaction()
    try:
        await writer.write([(INSERT, (1, "first"))])
        await lock.start()
        await admin.execute("LOCK TABLE scratch IN EXCLUSIVE MODE")

        async def frozen(timeout: float | None) -> None:
            # no answer, ever: asyncpg gives up after the query's timeout, if it has one
            await asyncio.wait_for(asyncio.Event().wait(), timeout)

        _fence_query_fails(monkeypatch, frozen, times=1_000)
        stuck = asyncio.create_task(writer.write([(INSERT, (2, "stuck"))]))
        await asyncio.sleep(1.0)  # the watchdog cut the commit; the fence waits
        assert not stuck.done()
        writer.stopping()
        started = asyncio.get_running_loop().time()
        with pytest.raises(WriteInDoubt):
            await asyncio.wait_for(stuck, 10)
        assert asyncio.get_running_loop().time() - started < 5  # about 1 s: twice 0.5 s
    finally:
        monkeypatch.undo()
        await lock.rollback()
        await writer.close()
        await admin.close()


async def test_the_writer_says_when_the_database_fails_and_when_it_writes_again(
    database_url: str,
) -> None:
    """The house restarts its players' clocks after a database fault (`House.database_back`):
    the writer tells it once when writes stop going through (a commit cut in doubt, a
    connection lost) and once when one goes through again; a statement the database refuses
    is no fault."""
    said: list[str] = []
    writer, admin = await _scratch_writer(
        database_url, timeout=0.5, on_fault=lambda: said.append("fault"),
        on_back=lambda: said.append("back"))
    try:
        await writer.write([(INSERT, (1, "first"))])
        with pytest.raises(WriteRefused):  # a duplicate key: the database is fine
            await writer.write([(INSERT, (1, "again"))])
        assert said == []
        lock = await _lock_scratch(admin)
        stuck = asyncio.ensure_future(writer.write([(INSERT, (2, "stuck"))]))
        await asyncio.sleep(0.3)
        assert 0.2 < writer.stuck_for() < 5  # (/health says a write stuck this long)
        with pytest.raises(WriteInDoubt):
            await asyncio.wait_for(stuck, 10)
        assert said == ["fault"] and writer.stuck_for() == 0
        await lock.rollback()
        await asyncio.wait_for(writer.write([(INSERT, (3, "third"))]), 10)
        await asyncio.wait_for(writer.write([(INSERT, (4, "fourth"))]), 10)
        assert said == ["fault", "back"]  # once each
        # a connection lost under the writer, found as the next batch goes out
        [old] = await _writer_backends(admin)
        await admin.execute("SELECT pg_terminate_backend($1)", old)
        with contextlib.suppress(WriteInDoubt):
            await asyncio.wait_for(writer.write([(INSERT, (5, "x"))]), 20)
        await asyncio.wait_for(writer.write([(INSERT, (6, "after"))]), 20)
        assert said in (["fault", "back"], ["fault", "back", "fault", "back"])
    finally:
        await writer.close()
        await admin.close()
