"""What the ranked stores share: a database handle that is a pool or a connection, and one
transaction around each movement (a savepoint when the caller already holds a transaction, so a
review decision can post its ledger reversal inside its own transaction)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from server.db import Conn

Db = asyncpg.Pool | Conn


@asynccontextmanager
async def transaction(db: Db) -> AsyncIterator[Conn]:
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn, conn.transaction():
            yield conn
    else:
        async with db.transaction():
            yield db


class StoreError(ValueError):
    """A refused ranked operation: `code` is stable, `message` is for people. Nothing changed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_MATCH_REF = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def check_match(match_ref: object, error: type[StoreError] = StoreError) -> str:
    """A match reference as the live house names matches: 1 to 64 of [A-Za-z0-9_.:-]."""
    if not isinstance(match_ref, str) or not _MATCH_REF.fullmatch(match_ref):
        raise error("bad_match", "A match reference is 1 to 64 letters, digits or _.:-")
    return match_ref


def check_id(value: object, what: str, error: type[StoreError] = StoreError) -> int:
    """A database id: a positive int (bools are not ids)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise error("bad_id", f"Not a {what} id: {value!r}")
    return value
