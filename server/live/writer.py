"""Group commit: one writer task turns the rows of many tables into one transaction.

Table actors hand their rows to `write()` and wait; the writer takes everything pending (up to
`write_batch_max` jobs), commits it at once and resolves each waiter after the commit, so an
action is durable before it is acknowledged or broadcast and the fsync is shared. If a batch
fails, its jobs are retried one by one so one bad job cannot sink its neighbours.

Round trips are what a commit costs (each is a wake-up of the database and of this process), so
each committer keeps a connection of its own (a pool's release would add a reset round trip per
batch), and a batch whose statements all share one SQL text (the common case: only played
moves) is one pipelined `executemany`, which PostgreSQL runs as one implicit transaction: one
round trip instead of BEGIN, the rows and COMMIT.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from server.live.model import LiveError
from server.metrics import Metrics

log = logging.getLogger("barajamos.live.writer")

Statement = tuple[str, tuple[Any, ...]]


@dataclass
class _Job:
    statements: Sequence[Statement]
    done: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class GroupWriter:
    """`connections` committers share one queue: while one batch waits for its commit, the next
    one is already being written on another connection, so a slow commit does not hold up every
    table behind it. A table has at most one job in flight (its actor waits for the write), so
    batches committed side by side never hold two jobs of one table."""

    def __init__(self, pool: asyncpg.Pool, metrics: Metrics, batch_max: int,
                 connections: int = 1) -> None:
        self._pool = pool
        self._metrics = metrics
        self._batch_max = max(1, batch_max)
        self._connections = max(1, connections)
        self._queue: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run(), name=f"group-writer-{i}")
                       for i in range(self._connections)]

    async def write(self, statements: Sequence[Statement]) -> None:
        """Return once the statements are committed; a LiveError (503) if they could not be."""
        if self._closed:
            raise LiveError("shutting_down", "The server is shutting down; try again soon.", 503)
        job = _Job(statements)
        self._queue.put_nowait(job)
        try:
            await job.done
        except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as exc:
            raise LiveError("unavailable", "That could not be saved; nothing changed. Try"
                            " again.", 503) from exc

    async def close(self) -> None:
        """Flush what is pending, then stop."""
        if not self._tasks or self._closed:
            return
        self._closed = True
        for _ in self._tasks:
            self._queue.put_nowait(None)  # after every job: each committer drains, then stops
        await asyncio.gather(*self._tasks)

    async def _run(self) -> None:
        committer = _Committer(self._pool)
        try:
            while True:
                job = await self._queue.get()
                if job is None:
                    return
                batch = [job]
                stop = False
                while len(batch) < self._batch_max and not self._queue.empty():
                    more = self._queue.get_nowait()
                    if more is None:
                        stop = True
                        break
                    batch.append(more)
                await self._commit(committer, batch)
                if stop:
                    return
        finally:
            await committer.release()

    async def _commit(self, committer: _Committer, batch: list[_Job]) -> None:
        self._metrics.write_batch_size.observe(len(batch))
        started = time.perf_counter()
        try:
            await committer.commit(batch)
            self._metrics.write_seconds.observe(time.perf_counter() - started)
        except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as exc:
            if len(batch) == 1:
                log.error("write failed", extra={"error": str(exc)})
                if not batch[0].done.done():
                    batch[0].done.set_exception(exc)
                return
            for job in batch:
                await self._commit(committer, [job])
            return
        for job in batch:
            if not job.done.done():
                job.done.set_result(None)


class _Committer:
    """One connection of the writer's own, taken from the pool when first needed and given back
    (to be replaced) when it breaks."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._conn: asyncpg.pool.PoolConnectionProxy[Any] | None = None

    async def commit(self, batch: list[_Job]) -> None:
        if self._conn is not None and self._conn.is_closed():
            await self.release()
        if self._conn is None:
            self._conn = await self._pool.acquire()
        conn = self._conn
        try:
            runs = group_statements([job.statements for job in batch])
            if len(runs) == 1:
                # one SQL text: executemany is atomic on its own (one implicit transaction)
                await conn.executemany(*runs[0])
                return
            async with conn.transaction():
                for query, rows in runs:
                    if len(rows) == 1:
                        await conn.execute(query, *rows[0])
                    else:
                        await conn.executemany(query, rows)
        except (OSError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError):
            # the connection is gone or unusable: the next batch takes a fresh one
            await self.release()
            raise

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await self._pool.release(conn)
            except (OSError, asyncpg.InterfaceError, asyncpg.PostgresError):
                log.warning("writer connection dropped", exc_info=True)


def group_statements(
    jobs: Sequence[Sequence[Statement]],
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The jobs' statements as runs of one SQL text each: one round trip per run.

    Each job keeps its own order (a job's statement may need the row its previous one wrote,
    e.g. a hand after its seed chain): a statement joins the latest run of its SQL text only
    if that run does not come before the run of the job's previous statement; otherwise it
    starts a new run. Jobs of one batch come from different waiters (a table actor waits for
    its write before sending the next), so no order is owed between them.
    """
    runs: list[tuple[str, list[tuple[Any, ...]]]] = []
    latest: dict[str, int] = {}  # SQL text -> index of its latest run
    for statements in jobs:
        floor = 0
        for query, args in statements:
            index = latest.get(query, -1)
            if index < floor:
                index = latest[query] = len(runs)
                runs.append((query, []))
            runs[index][1].append(args)
            floor = index
    return runs
