"""The house: every live table's actor, the group-commit writer, the signing key, server runs.

Created by `server.live.setup`; started once the database pool exists (rebuilding every live
table from what was written) and stopped after the sockets were closed (flushing writes and
recording a clean stop).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import asyncpg
from aiohttp import WSCloseCode, web

from server.clock import Clock
from server.config import Config
from server.live.model import LiveError, LiveSettings, TableKind, TableStatus
from server.live.table import MatchResult, Seat, TableActor, at, ms
from server.live.writer import GroupWriter
from server.metrics import Metrics
from truco import MatchConfig, Variant
from truco.records import key_id_for
from verifier.signing import SigningKey, signing_key_from_seed

log = logging.getLogger("barajamos.live")

INVITE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud safely


def new_invite() -> str:
    chars = "".join(secrets.choice(INVITE_ALPHABET) for _ in range(8))
    return f"{chars[:4]}-{chars[4:]}"


class House:
    def __init__(self, config: Config, clock: Clock, metrics: Metrics,
                 settings: LiveSettings) -> None:
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.settings = settings
        self.signing_key: SigningKey = signing_key_from_seed(config.signing_key)
        self.public_key = bytes(self.signing_key.verify_key)
        self.key_id = key_id_for(self.public_key)
        self.tables: dict[str, TableActor] = {}
        self.sockets: set[web.WebSocketResponse] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self._pool: asyncpg.Pool | None = None
        self._writer: GroupWriter | None = None
        self.run_id = 0
        self.run_started_at = 0.0
        # settles finished ranked and arena matches (the ranked service, when there is one)
        self.settler: Callable[[MatchResult], Awaitable[None]] | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        assert self._pool is not None, "the house has not started"
        return self._pool

    @property
    def writer(self) -> GroupWriter:
        assert self._writer is not None, "the house has not started"
        return self._writer

    @property
    def epoch(self) -> int:
        """Event numbers belong to one server run: a client from another run gets a snapshot."""
        return self.run_id

    async def start(self, pool: asyncpg.Pool) -> None:
        from server.live.recovery import restore_tables

        self._pool = pool
        self.run_started_at = self.clock.now()
        self.run_id = await pool.fetchval(
            "INSERT INTO server_runs (started_at) VALUES ($1) RETURNING id",
            at(self.run_started_at))
        self._writer = GroupWriter(pool, self.metrics, self.config.write_batch_max)
        self._writer.start()
        for actor in await restore_tables(self, pool):
            self.tables[actor.id] = actor
        log.info("house started", extra={"run": self.run_id, "tables": len(self.tables)})

    async def close_sockets(self) -> None:
        for ws in list(self.sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")

    async def stop(self) -> None:
        for actor in list(self.tables.values()):
            await actor.stop()
        if self._closing:
            await asyncio.gather(*self._closing)
        if self._writer is not None:
            await self._writer.close()
        if self._pool is not None and self.run_id:
            await self._pool.execute(
                "UPDATE server_runs SET stopped_at = $2, clean = true WHERE id = $1",
                self.run_id, at(self.clock.now()))
        log.info("house stopped", extra={"run": self.run_id})

    def get(self, table_id: str) -> TableActor:
        actor = self.tables.get(table_id)
        if actor is None:
            raise LiveError("table_not_found", "No such table (or it is closed).", 404)
        return actor

    def forget(self, actor: TableActor) -> None:
        """A closed table: stop its actor once the command that closed it has returned."""
        if self.tables.pop(actor.id, None) is not None:
            task = asyncio.create_task(actor.stop())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def create_table(
        self, owner_id: int, owner_name: str, config: MatchConfig, kind: TableKind
    ) -> TableActor:
        table_id = secrets.token_hex(8)
        invite = new_invite() if kind is TableKind.PRIVATE else None
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO live_tables (id, variant, seats, mode, kind, invite_code, owner_id)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                table_id, config.variant.value, config.seats, config.mode.value, kind.value,
                invite, owner_id)
            await conn.executemany(
                "INSERT INTO live_seats (table_id, seat, user_id) VALUES ($1, $2, $3)",
                [(table_id, s, owner_id if s == 0 else None) for s in range(config.seats)])
        actor = TableActor(self, table_id, config, kind, invite, owner_name, TableStatus.OPEN)
        actor.seats[0] = Seat(user_id=owner_id, name=owner_name)
        actor.start()
        self.tables[table_id] = actor
        log.info("table_created", extra={"table": table_id, "variant": config.variant.value,
                                         "seats": config.seats, "kind": kind.value})
        return actor

    async def launch(
        self, kind: TableKind, variant: Variant, seats: int, users_by_seat: Sequence[int],
        stake: int,
    ) -> str:
        """Open a table for players the house did not seat itself (the ranked service's
        `TableLauncher`): seat them in order, start the match, return the table id. The stake
        is the ranked service's business (held in its ledger); the table does not need it."""
        del stake
        config = MatchConfig(variant, seats)
        if len(users_by_seat) != seats or len(set(users_by_seat)) != seats:
            raise LiveError("bad_players", f"A {seats}-seat table needs {seats} different players")
        rows = await self.pool.fetch("SELECT id, name FROM users WHERE id = ANY($1::bigint[])",
                                     list(users_by_seat))
        names = {row["id"]: row["name"] for row in rows}
        if len(names) != seats:
            raise LiveError("unknown_user", "Every seat needs an existing player")
        first = users_by_seat[0]
        actor = await self.create_table(first, names[first], config, kind)
        for seat, user in enumerate(users_by_seat[1:], start=1):
            await actor.call(partial(actor.join, user, names[user], None, seat))
        await actor.call(partial(actor.start_match, first))
        return actor.id

    async def settle(self, result: MatchResult) -> None:
        """Hand a finished ranked or arena match to the ranked service (chips, ratings,
        penalties). A failure there is logged: the table and its records stand regardless."""
        if self.settler is None:
            log.warning("no ranked service to settle a match",
                        extra={"table": result.table_id, "match": result.match_number})
            return
        try:
            await self.settler(result)
        except Exception:
            log.exception("settlement failed",
                          extra={"table": result.table_id, "match": result.match_number})

    async def evidence(
        self, table_id: str, match_number: int, seat: int, since: float
    ) -> list[dict[str, Any]]:
        """What an abandonment review needs: the seat's clock and connection events of the
        match (deadlines and automatic actions since the streak began) and server restarts."""
        rows = await self.pool.fetch(
            "SELECT kind, at, detail FROM seat_events WHERE table_id = $1 AND match_number = $2"
            " AND seat = $3 AND (at >= $4 OR kind IN ('connected', 'disconnected'))"
            " ORDER BY id",
            table_id, match_number, seat, at(since))
        items: list[tuple[datetime, dict[str, Any]]] = []
        for row in rows:
            detail = _json(row["detail"])
            items.append((row["at"], {**detail, "kind": row["kind"],
                                      "at_ms": ms(row["at"].timestamp()), "seat": seat}))
        runs = await self.pool.fetch(
            "SELECT id, started_at FROM server_runs WHERE started_at >= $1 ORDER BY id",
            at(since))
        for run in runs:
            items.append((run["started_at"], {"kind": "server_restart", "run": run["id"],
                                              "at_ms": ms(run["started_at"].timestamp()),
                                              "seat": None}))
        items.sort(key=lambda item: item[0])
        return [item for _, item in items]


def _json(value: object) -> dict[str, Any]:
    import json

    if isinstance(value, str):
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}
    return value if isinstance(value, dict) else {}
