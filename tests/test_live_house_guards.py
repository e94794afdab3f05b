"""What keeps one database with one house and its keys: the serving lock is watched (a house
whose lock connection went, by a database restart, an idle-session killer or an operator's
pg_terminate_backend, takes the lock again, and stops when another house took it meanwhile, so
two houses never deal one database's tables), and a house started with keys other than the ones
the database was served with refuses to serve it."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestServer

from server.clock import VirtualClock
from server.live import house as house_module
from server.live.house import _SERVING_LOCK, LOCK_TRIES_SAID, KeysChanged
from tests.conftest import AppFactory
from tests.test_live_helpers import Live, start_live

LOCK_HOLDER = ("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1"
               " AND granted")


@pytest.fixture
async def live(make_app: AppFactory, aiohttp_client: Callable[..., Any],
               vclock: VirtualClock) -> Live:
    return await start_live(make_app, aiohttp_client, vclock)


def held(live: Live) -> float | None:
    value: float | None = live.house.metrics.registry.get_sample_value(
        "barajamos_serving_lock_held")
    return value


async def until(check: Callable[[], Any], seconds: float = 15.0) -> None:
    for _ in range(int(seconds * 20)):
        if await check() if asyncio.iscoroutinefunction(check) else check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never happened")


async def test_a_lost_lock_is_taken_again(live: Live, database_url: str) -> None:
    stopped: list[str] = []
    assert live.house._serving is not None
    live.house._serving.on_lost = stopped.append
    admin = await asyncpg.connect(database_url)
    try:
        first = await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK)
        assert first is not None and held(live) == 1
        await admin.execute("SELECT pg_terminate_backend($1)", first)

        async def retaken() -> bool:
            pid = await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK)
            return pid is not None and pid != first and held(live) == 1

        await until(retaken)
        assert stopped == []
        # and it still serves: a new account and a table
        status = (await live.client.get("/health")).status
        assert status == 200
    finally:
        await admin.close()


async def test_an_outage_says_the_lost_lock_once_and_why_it_is_not_taken_again(
        live: Live, database_url: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # the log said "serving lock lost" every 5 s through an outage, and "not taken again yet"
    # with an empty error
    serving = live.house._serving
    assert serving is not None
    monkeypatch.setattr(house_module, "LOCK_CHECK_EVERY", 0.02)
    with socket.socket() as probe:  # a port nothing listens on: the database is away
        probe.bind(("127.0.0.1", 0))
        away = f"postgresql://postgres@127.0.0.1:{probe.getsockname()[1]}/postgres"
    serving._dsn, real = away, serving._dsn
    admin = await asyncpg.connect(database_url)
    try:
        caplog.set_level(logging.WARNING, logger="barajamos.live")
        await admin.execute("SELECT pg_terminate_backend($1)",
                            await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK))
        await until(lambda: serving._tries > 2 * LOCK_TRIES_SAID)
        serving._dsn = real
        await until(lambda: held(live) == 1)
    finally:
        await admin.close()
    said = [r for r in caplog.records if r.name == "barajamos.live"]
    assert [r.getMessage() for r in said].count("serving lock lost: taking it again") == 1
    waits = [r for r in said if r.getMessage() == "serving lock not taken again yet"]
    assert [r.tries for r in waits][:3] == [1, 1 + LOCK_TRIES_SAID,  # type: ignore[attr-defined]
                                            1 + 2 * LOCK_TRIES_SAID]
    assert all(r.error.startswith(("ConnectionRefusedError", "OSError"))  # type: ignore[attr-defined]
               for r in waits)
    [back] = [r for r in said if r.getMessage() == "serving lock taken again"]
    assert back.tries > 2 * LOCK_TRIES_SAID  # type: ignore[attr-defined]
    assert serving._tries == 0


async def test_the_database_back_checks_the_lock_at_once(
        live: Live, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the writer wrote again after a fault while the lock's connection was still lost: the lock
    # was taken again only at its next check (up to LOCK_CHECK_EVERY later) while the tables
    # already wrote; the house's `database_back` now checks it at once
    serving = live.house._serving
    assert serving is not None
    with socket.socket() as probe:  # a port nothing listens on: the database is away
        probe.bind(("127.0.0.1", 0))
        away = f"postgresql://postgres@127.0.0.1:{probe.getsockname()[1]}/postgres"
    serving._dsn, real = away, serving._dsn
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)",
                            await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK))
        await until(lambda: serving._tries >= 1 and held(live) == 0)
        # the next check would come only in an hour: only the fault's end can bring it sooner
        monkeypatch.setattr(house_module, "LOCK_CHECK_EVERY", 3600.0)
        await until(lambda: serving._tries >= 2)  # (the watcher now waits an hour)
        serving._dsn = real
        live.house.database_fault()
        await asyncio.sleep(0.3)
        assert held(live) == 0  # a fault alone checks nothing
        live.house.database_back()
        await until(lambda: held(live) == 1, seconds=10)
        assert await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK) is not None
    finally:
        await admin.close()


async def test_a_house_whose_lock_another_took_stops(live: Live, database_url: str) -> None:
    stopped: list[str] = []
    assert live.house._serving is not None
    live.house._serving.on_lost = stopped.append
    admin = await asyncpg.connect(database_url)
    second = await asyncpg.connect(database_url)  # another house, waiting for the lock
    try:
        holder = await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK)
        waiting = asyncio.create_task(second.fetchval("SELECT pg_advisory_lock($1)",
                                                      _SERVING_LOCK))

        async def queued() -> bool:
            return bool(await admin.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1"
                " AND NOT granted", _SERVING_LOCK))

        await until(queued)
        await admin.execute("SELECT pg_terminate_backend($1)", holder)
        await asyncio.wait_for(waiting, 10)  # the other house has the database now
        await until(lambda: bool(stopped))
        assert stopped == ["another house took this database"] and held(live) == 0
    finally:
        await admin.close()
        await second.close()


async def test_a_lock_another_session_holds_is_not_this_houses(
        live: Live, database_url: str) -> None:
    # the lock is this house's only when its own connection holds it: another session holding
    # it (the lock let go on the house's connection, taken by another house) is lost
    stopped: list[str] = []
    serving = live.house._serving
    assert serving is not None and serving._conn is not None
    serving.on_lost = stopped.append
    second = await asyncpg.connect(database_url)  # another house
    try:
        assert await serving._conn.fetchval("SELECT pg_advisory_unlock($1)", _SERVING_LOCK)
        assert await second.fetchval("SELECT pg_try_advisory_lock($1)", _SERVING_LOCK)
        serving.check_now()
        await until(lambda: bool(stopped), seconds=5)
        assert stopped == ["another house took this database"] and held(live) == 0
    finally:
        await second.close()


async def test_a_house_with_other_keys_refuses_the_database(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str) -> None:
    first = await aiohttp_client(make_app(clock=vclock))
    await first.close()  # served once: its keys are the database's now
    admin = await asyncpg.connect(database_url)
    try:
        kept = dict(await admin.fetch("SELECT name, key_id FROM house_keys"))
        assert set(kept) == {"seed", "signing"}
        assert b"s" * 32 not in kept["seed"].encode()  # an id, never the key
        for changed, named in (({"seed_key": b"t" * 32}, "seed key"),
                               ({"signing_key": bytes(range(1, 33))}, "signing key")):
            server = TestServer(make_app(clock=vclock, **changed))
            try:
                with pytest.raises(KeysChanged, match=f"another {named}"):
                    await server.start_server()
            finally:
                await server.close()
            # nothing was recorded, and the lock went with the refusal: its connection is
            # terminated, and its backend lets go of the lock a moment later (a loaded machine
            # still showed it held when asked at once)
            assert dict(await admin.fetch("SELECT name, key_id FROM house_keys")) == kept

            async def released() -> bool:
                return await admin.fetchval(LOCK_HOLDER, _SERVING_LOCK) is None

            await until(released)
        again = await aiohttp_client(make_app(clock=vclock))  # the right keys: served
        assert (await again.get("/health")).status == 200
    finally:
        await admin.close()


async def test_a_stop_gives_up_on_work_the_database_holds(
        caplog: pytest.LogCaptureFixture) -> None:
    """A house stopped while its database hangs (stopped, not gone) waited for ever on a
    table's re-read, its port already closed, saying nothing (a review's drill): each part of
    the stop is bounded, and what is cut off is said."""
    done: list[str] = []

    async def quick() -> None:
        await asyncio.sleep(0.01)
        done.append("quick")

    async def hung() -> None:
        try:
            await asyncio.Event().wait()  # a query to a database that never answers
        finally:
            done.append("hung cancelled")

    caplog.set_level(logging.ERROR, logger="barajamos.live.house")
    started = asyncio.get_running_loop().time()
    await house_module._bounded("tables", [quick(), hung()], 0.2)
    assert 0.2 <= asyncio.get_running_loop().time() - started < 3
    assert sorted(done) == ["hung cancelled", "quick"]
    [record] = [r for r in caplog.records if "gave up" in r.getMessage()]
    assert (record.what, record.left) == ("tables", 1)  # type: ignore[attr-defined]
