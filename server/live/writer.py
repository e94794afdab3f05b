"""Group commit: one writer task turns the rows of many tables into one transaction.

Table actors hand their rows to `write()` and wait; the writer takes everything pending (up to
`write_batch_max` jobs), commits it at once and resolves each waiter after the commit, so an
action is durable before it is acknowledged or broadcast and the fsync is shared. If a batch
fails, its jobs are retried one by one so one bad job cannot sink its neighbours.

Round trips are what a commit costs (each is a wake-up of the database and of this process), so
each committer keeps a connection of its own, outside the pool (a pool's release would add a
reset round trip per batch), and a batch whose statements all share one SQL text (the common
case: only played moves) is one pipelined `executemany`, which PostgreSQL runs as one implicit
transaction: one round trip instead of BEGIN, the rows and COMMIT.

When the connection breaks while a batch is on it (the database restarted, the network
failed, or the watchdog cut a commit that outlived `timeout`), nobody can know whether the
commit happened: those jobs fail with `WriteInDoubt`, and their tables re-read what was written
(`TableActor`) instead of guessing. Nothing is retried on another connection then, since a
retry could write a committed job twice. A connection found closed before a batch is sent is
simply replaced.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg

from server.db import DATABASE_UNREACHABLE
from server.live.model import LiveError
from server.metrics import Metrics

log = logging.getLogger("barajamos.live.writer")

Statement = tuple[str, tuple[Any, ...]]
Connect = Callable[[], Awaitable[asyncpg.Connection]]

# the connection itself failed (as opposed to a statement the database refused)
CONNECTION_ERRORS = (OSError, *DATABASE_UNREACHABLE)
WRITE_ERRORS = (asyncpg.PostgresError, *CONNECTION_ERRORS)


class WriteInDoubt(LiveError):
    """The connection broke during the commit: the rows may or may not have been written."""

    def __init__(self) -> None:
        super().__init__("in_doubt", "The database connection broke while this was being"
                         " saved; the table is reloading what was saved. Check it, then go on.",
                         503)


class WriteRefused(LiveError):
    """The database refused the write, or could not be reached: nothing of it was written."""

    def __init__(self) -> None:
        super().__init__("unavailable", "That could not be saved; nothing changed. Try again.",
                         503)


class PartlySaved(LiveError):
    """A change of several writes stopped after some of them were saved (`TableActor`)."""

    def __init__(self) -> None:
        super().__init__("in_doubt", "The database refused part of this after the rest was"
                         " saved; the table is reloading what was saved. Check it, then go on.",
                         503)


# the write failures after which a table re-reads what was written (`TableActor._run`)
WRITE_FAILURES = (WriteInDoubt, WriteRefused, PartlySaved)


class _InDoubt(Exception):
    """A committer's internal signal: the batch's fate is unknown."""


class _Job:
    __slots__ = ("done", "statements")

    def __init__(self, statements: Sequence[Statement], done: asyncio.Future[None]) -> None:
        self.statements = statements
        self.done = done


class GroupWriter:
    """`connections` committers share one queue: while one batch waits for its commit, the next
    one is already being written on another connection, so a slow commit does not hold up every
    table behind it. A table has at most one job in flight (its actor waits for the write), so
    batches committed side by side never hold two jobs of one table."""

    def __init__(self, connect: Connect, metrics: Metrics, batch_max: int,
                 connections: int = 1, timeout: float = 15.0, *,
                 on_fault: Callable[[], None] | None = None,
                 on_back: Callable[[], None] | None = None) -> None:
        self._connect = connect
        # the database stopped taking writes (a connection lost, a commit in doubt), and took
        # them again: the house restarts its players' clocks and records the fault (`House`)
        self._on_fault = on_fault
        self._on_back = on_back
        self._faulted = False
        # when each committer's commit under way began (time.monotonic): /health says a write
        # stuck for long (a lock, a hung database) before the watchdog cuts it
        self._committing: dict[int, float] = {}
        self._metrics = metrics
        self._batch_max = max(1, batch_max)
        self._connections = max(1, connections)
        self._timeout = timeout
        self._queue: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        # set when the house stops: a committer waiting for an absent database to settle a
        # batch's fate (`_Committer._fence`) gives up after a while instead of holding the
        # shutdown for as long as the database is away
        self._stopping = asyncio.Event()
        # kept: asking asyncio for the running loop is a getpid() system call each time
        self._loop: asyncio.AbstractEventLoop | None = None

    def stopping(self) -> None:
        """The house is stopping: batches in doubt are not waited on for ever (nothing will
        re-read them; the next start rebuilds its tables from what was written by then)."""
        self._stopping.set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tasks = [asyncio.create_task(self._run(), name=f"group-writer-{i}")
                       for i in range(self._connections)]

    async def write(self, statements: Sequence[Statement]) -> None:
        """Return once the statements are committed. A LiveError (503) if they were not:
        `WriteRefused` when surely not, `WriteInDoubt` when the connection broke meanwhile."""
        if self._closed:
            raise _shutting_down()
        job = _Job(statements, (self._loop or asyncio.get_running_loop()).create_future())
        self._queue.put_nowait(job)
        try:
            await job.done
        except _InDoubt:
            raise WriteInDoubt() from None
        except WRITE_ERRORS as exc:
            raise WriteRefused() from exc
        finally:
            del job  # its failure's traceback holds this frame: no reference cycle through it

    async def close(self) -> None:
        """Flush what is pending, then stop."""
        if not self._tasks or self._closed:
            return
        self._closed = True
        for _ in self._tasks:
            self._queue.put_nowait(None)  # after every job: each committer drains, then stops
        _, stuck = await asyncio.wait(self._tasks, timeout=self._timeout * 2)
        for task in stuck:  # waiting for a database that does not answer: give up on it
            log.error("writer stopped with writes pending")
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        while not self._queue.empty():
            if (job := self._queue.get_nowait()) is not None:  # never sent: surely not written
                _fail([job], _shutting_down())

    async def _run(self) -> None:
        committer = _Committer(self._connect, self._timeout, self._stopping)
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
            await committer.close()

    def stuck_for(self) -> float:
        """How long the oldest commit under way has waited (0: none)."""
        oldest = min(self._committing.values(), default=None)
        return 0.0 if oldest is None else time.monotonic() - oldest

    async def _commit(self, committer: _Committer, batch: list[_Job]) -> None:
        self._committing[id(committer)] = time.monotonic()
        try:
            await self._commit_batch(committer, batch)
        finally:
            del self._committing[id(committer)]

    async def _commit_batch(self, committer: _Committer, batch: list[_Job]) -> None:
        self._metrics.write_batch_size.observe(len(batch))
        started = time.perf_counter()
        try:
            await committer.commit(batch)
            self._metrics.write_seconds.observe(time.perf_counter() - started)
        except _InDoubt as exc:
            log.error("write in doubt", extra={"jobs": len(batch),
                                               "error": error_text(exc.__cause__ or exc)})
            self._metrics.write_failures.labels("in_doubt").inc(len(batch))
            self._fault()
            _fail(batch, exc)
            return
        except asyncio.CancelledError:  # stopped waiting for a database that does not answer
            _fail(batch, _InDoubt("the writer stopped"))
            raise
        except WRITE_ERRORS as exc:
            if len(batch) == 1 or isinstance(exc, CONNECTION_ERRORS):
                # refused as a whole (or never sent: no connection): nothing was written
                log.error("write failed", extra={"jobs": len(batch), "error": error_text(exc)})
                self._metrics.write_failures.labels("refused").inc(len(batch))
                if isinstance(exc, CONNECTION_ERRORS):
                    self._fault()
                _fail(batch, exc)
                return
            for job in batch:  # the transaction was rolled back: find the job it was
                await self._commit_batch(committer, [job])
            return
        except Exception as exc:  # a bug, not the database: the committer must live on
            log.exception("write failed unexpectedly", extra={"jobs": len(batch)})
            self._metrics.write_failures.labels("in_doubt").inc(len(batch))
            _fail(batch, _InDoubt(str(exc)))  # its tables re-read what was written
            return
        if self._faulted:
            self._faulted = False
            if self._on_back is not None:
                self._on_back()
        for job in batch:
            if not job.done.done():
                job.done.set_result(None)

    def _fault(self) -> None:
        if not self._faulted:
            self._faulted = True
            if self._on_fault is not None:
                self._on_fault()


def error_text(exc: BaseException) -> str:
    """An error for the log: its message, or its type when it has none (a timeout's is empty:
    the log said `"error": ""`)."""
    return str(exc) or type(exc).__name__


def _shutting_down() -> LiveError:
    return LiveError("shutting_down", "The server is shutting down; nothing changed. Try again"
                     " soon.", 503)


def _fail(batch: list[_Job], exc: BaseException) -> None:
    for job in batch:
        if not job.done.done():
            job.done.set_exception(exc)


class _Committer:
    """One connection of the writer's own, opened when first needed and replaced when it
    breaks; a watchdog terminates it when a commit outlives `timeout`.

    Closing a socket does not stop its backend: a statement stuck on a lock or a slow disk may
    still commit after the client gave up on it. So a batch is declared in doubt only once its
    backend is gone (`_fence`); from then on, what was written stays what was written, and a
    table that re-reads it sees the final truth. Two exceptions, where nothing of this run will
    re-read it: a house that is stopping stops waiting for an absent database
    (`GroupWriter.stopping`), and a failure of the writer's own code (`GroupWriter._commit`).
    """

    def __init__(self, connect: Connect, timeout: float, stopping: asyncio.Event) -> None:
        self._connect = connect
        self._timeout = timeout
        self._stopping = stopping
        self._conn: asyncpg.Connection | None = None
        self._backend: tuple[int, Any] = (0, None)  # pid and start time of its server process

    async def commit(self, batch: list[_Job]) -> None:
        if self._conn is not None and self._conn.is_closed():
            self._conn = None  # closed while idle: nothing of this batch was sent on it
        if self._conn is None:
            await self._open()
        conn = self._conn
        assert conn is not None
        watchdog = asyncio.get_running_loop().call_later(self._timeout, conn.terminate)
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
        except Exception as exc:
            if isinstance(exc, asyncpg.PostgresError) and not isinstance(exc, CONNECTION_ERRORS):
                raise  # the database refused the batch: rolled back, nothing of it written
            # the connection broke (or asyncpg itself failed, e.g. "cannot switch to state":
            # a batch sent just as the database dropped an idle connection) with the batch on
            # it: anything but the database's own refusal leaves its fate unknown (escaping
            # here, such an error killed the committer, and every write behind it waited for
            # ever)
            broke = exc
        else:
            return
        finally:
            watchdog.cancel()
        # the connection broke with the batch on it: its fate is sealed once its backend is
        # gone; the next batch takes the fresh connection that saw it go
        conn.terminate()
        self._conn = None
        await self._fence()
        raise _InDoubt(str(broke)) from broke

    async def _open(self) -> None:
        conn = await self._connect()
        try:
            started = await conn.fetchval(
                "SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()",
                timeout=self._timeout)
        except BaseException:
            conn.terminate()
            raise
        self._conn, self._backend = conn, (conn.get_server_pid(), started)

    async def _fence(self) -> None:
        """Wait until the old backend has ended (ending it if need be), however long the
        database takes to answer: until then a job of it may still commit. Once the house
        stops, for about twice the commit timeout at most (a connection being opened may add
        its own timeout): nothing of this run re-reads it."""
        pid, started = self._backend
        delay = 0.05
        loop = asyncio.get_running_loop()
        give_up: float | None = None
        while True:
            if self._stopping.is_set() and give_up is None:  # see `GroupWriter.stopping`
                give_up = loop.time() + 2 * self._timeout
            try:
                async with asyncio.timeout_at(give_up):
                    if self._conn is None:
                        await self._open()
                    assert self._conn is not None
                    alive = await self._conn.fetchval(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE pid = $1 AND backend_start = $2", pid, started,
                        timeout=self._timeout)
                if alive is None:
                    return
            except Exception as exc:  # any failure: not settled yet (a fresh connection next)
                if self._conn is not None:
                    self._conn.terminate()
                    self._conn = None
                log.warning("writer waits for the database", extra={"error": error_text(exc)})
            if give_up is not None and loop.time() >= give_up:
                log.error("writer stopped waiting for the database to settle a batch")
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close(timeout=5)
            except (*WRITE_ERRORS, TimeoutError):
                conn.terminate()


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
