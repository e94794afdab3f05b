"""Shared fixtures. Tests that need PostgreSQL get a real one: `DATABASE_URL` when set, else an
embedded PostgreSQL started once for the run. Each test gets its own fresh database, cloned from a
migrated template, so tests never see each other's rows."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from server.accounts import MINIMUM
from server.app import create_app
from server.clock import Clock, VirtualClock
from server.config import Config
from server.db import EmbeddedPostgres, migrate
from server.live import HOUSE

# one template per pytest-xdist worker: workers sharing a `DATABASE_URL` server never drop or
# clone each other's template mid-run
TEMPLATE_DB = "barajamos_template_" + os.environ.get("PYTEST_XDIST_WORKER", "main")


def with_database(url: str, name: str) -> str:
    """The same server URL pointing at another database (also for socket-dir URLs)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


async def _make_template(admin_url: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
        await conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    finally:
        await conn.close()
    conn = await asyncpg.connect(with_database(admin_url, TEMPLATE_DB))
    try:
        await migrate(conn)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server for the whole run, with a migrated template database."""
    embedded: EmbeddedPostgres | None = None
    url = os.environ.get("DATABASE_URL")
    if not url:
        embedded = EmbeddedPostgres(tmp_path_factory.mktemp("pg") / "data")
        url = embedded.start()
    asyncio.run(_make_template(url))
    try:
        yield url
    finally:
        if embedded is not None:
            embedded.stop()


@pytest.fixture
async def database_url(pg_admin_url: str) -> AsyncIterator[str]:
    name = "t_" + uuid.uuid4().hex[:16]
    conn = await asyncpg.connect(pg_admin_url)
    try:
        await conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")
    finally:
        await conn.close()
    yield with_database(pg_admin_url, name)
    conn = await asyncpg.connect(pg_admin_url)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        await conn.close()


@pytest.fixture
def config(database_url: str, tmp_path: Path) -> Config:
    return Config(
        database_url=database_url,
        data_dir=tmp_path,
        cookie_key=b"c" * 32,
        seed_key=b"s" * 32,
        signing_key=bytes(range(32)),
    )


@pytest.fixture
def vclock() -> VirtualClock:
    return VirtualClock()


AppFactory = Callable[..., web.Application]


def _tables_idle(app: web.Application) -> bool:
    house = app.get(HOUSE)
    return house is None or all(actor.idle for actor in list(house.tables.values()))


async def _seating_indexed(app: web.Application) -> None:
    """At every test app's shutdown: the house's index of who sits where (`House.tables_of`),
    and each table's own (`TableActor.seat_of`), are what a scan of every served table finds,
    whatever the test did to its tables."""
    house = app.get(HOUSE)
    if house is None:
        return
    scanned: dict[int, list[str]] = {}
    for actor in house.tables.values():
        for user_id in dict.fromkeys(s.user_id for s in actor.seats if s.user_id is not None):
            scanned.setdefault(user_id, []).append(actor.id)
            first = next(i for i, s in enumerate(actor.seats) if s.user_id == user_id)
            assert actor.seat_of(user_id) == first, "a table's seat index went out of step"
    indexed = {user_id: [actor.id for actor in house.tables_of(user_id)]
               for user_id in house.seated_users()}
    assert indexed == scanned, "the house's seating index went out of step with its tables"


@pytest.fixture
def make_app(config: Config) -> AppFactory:
    def factory(clock: Clock | None = None, **overrides: object) -> web.Application:
        cfg = dataclasses.replace(config, **overrides)  # type: ignore[arg-type]
        app = create_app(cfg, clock=clock, password_cost=MINIMUM)
        app.on_shutdown.insert(0, _seating_indexed)
        if isinstance(clock, VirtualClock):
            # time moves on only once the tables have done what it woke (`VirtualClock.quiet`)
            clock.quiet = functools.partial(_tables_idle, app)
        return app

    return factory


@pytest.fixture
async def client(
    make_app: AppFactory, vclock: VirtualClock, aiohttp_client: Callable[..., object]
) -> TestClient:  # type: ignore[type-arg]
    # make_app (hence the database) is requested before aiohttp_client, so the client and its
    # app's pool are closed before the test database is dropped
    result = await aiohttp_client(make_app(clock=vclock))  # type: ignore[operator]
    assert isinstance(result, TestClient)
    return result


@contextlib.contextmanager
def cyclic_garbage() -> Iterator[list[object]]:
    """What the cyclic garbage collector finds once the block ends (`gc.DEBUG_SAVEALL`): objects
    that reference counting did not free. The house runs the collector seldom
    (`server.loops.quiet_gc`), so what it serves must leave none."""
    gc.collect()
    found: list[object] = []
    gc.set_debug(gc.DEBUG_SAVEALL)  # a collection keeps what it finds in gc.garbage
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def csrf(client: TestClient) -> str:  # type: ignore[type-arg]
    """Fetch the session's CSRF token (also sets the CSRF cookie)."""
    resp = await client.get("/api/session")
    body = await resp.json()
    token = body["csrf"]
    assert isinstance(token, str)
    return token


async def signup(client: TestClient, name: str, password: str = "correct horse 42") -> str:  # type: ignore[type-arg]
    """Register and log in `name` on this client; return its CSRF token (a new one: the login
    changes it)."""
    token = await csrf(client)
    resp = await client.post("/api/register", json={"name": name, "password": password},
                             headers={"X-CSRF-Token": token})
    assert resp.status == 201, await resp.text()
    fresh = (await resp.json())["csrf"]
    assert isinstance(fresh, str) and fresh != token
    return fresh


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs `serve` (or `setup_logging`) replaces the root logger's handlers with
    one writing to the stderr pytest captured for that test: restored after it, so that later
    tests do not log to a closed stream ("--- Logging error --- I/O operation on closed file")."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
