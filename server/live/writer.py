"""Group commit: one writer task turns the rows of many tables into one transaction.

Table actors hand their rows to `write()` and wait; the writer takes everything pending (up to
`write_batch_max` jobs), runs it in one transaction (the statements of one SQL text as one
`executemany` round trip) and resolves each waiter after COMMIT, so an action is durable before
it is acknowledged or broadcast and the fsync is shared. If a batch fails, its jobs are retried
one by one so one bad job cannot sink its neighbours.
"""

from __future__ import annotations

import asyncio
import logging
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
    def __init__(self, pool: asyncpg.Pool, metrics: Metrics, batch_max: int) -> None:
        self._pool = pool
        self._metrics = metrics
        self._batch_max = max(1, batch_max)
        self._queue: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="group-writer")

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
        if self._task is None or self._closed:
            return
        self._closed = True
        self._queue.put_nowait(None)
        await self._task

    async def _run(self) -> None:
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
            await self._commit(batch)
            if stop:
                return

    async def _commit(self, batch: list[_Job]) -> None:
        self._metrics.write_batch_size.observe(len(batch))
        try:
            await self._transaction(batch)
        except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as exc:
            if len(batch) == 1:
                log.error("write failed", extra={"error": str(exc)})
                if not batch[0].done.done():
                    batch[0].done.set_exception(exc)
                return
            for job in batch:
                await self._commit([job])
            return
        for job in batch:
            if not job.done.done():
                job.done.set_result(None)

    async def _transaction(self, batch: list[_Job]) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            for query, rows in group_statements([job.statements for job in batch]):
                if len(rows) == 1:
                    await conn.execute(query, *rows[0])
                else:
                    await conn.executemany(query, rows)


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
