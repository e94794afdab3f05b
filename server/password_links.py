"""One-time links to set a new password: how a player who forgot theirs gets the account back.

The house has no e-mail: a player asks an operator, who knows them by some other way (docs/
OPERATIONS.md, "A forgotten password"), and makes a link on the operators' accounts page (a
player's account) or with `barajamos password-link NAME` on the house's machine (any account,
an operator's too). The operator hands the link over; opening it, the player chooses a new
password. Then every session of the account ends (its sockets close as at a logout) and every
device cookie of it stops counting (they are bound to the password's hash).

A link is good once, for `LIFETIME`, and only the newest of its account: making one replaces
the account's unused ones. Only the token's SHA-256 is kept. Who made which link, for whom, and
whether it was used is kept for good: the operators' page lists it, and the account's own page
shows its newest link (a player sees that their password was reset, and by whom).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

import asyncpg

from server.accounts import (
    ERASED_PREFIX,
    AccountError,
    PasswordCost,
    Role,
    User,
    check_password,
    hash_password,
    token_hash,
)

LIFETIME: Final = timedelta(hours=24)
# the link's path; its token, 43 URL-safe characters (`secrets.token_urlsafe(32)`)
PATH: Final = "/account/reset/"
TOKEN_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
TOKEN_LENGTH: Final = 43


class LinkState(StrEnum):
    GOOD = "good"
    USED = "used"
    EXPIRED = "expired"
    REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class Link:
    """A link as kept (its token never is)."""

    id: int
    user_id: int
    user_name: str
    made_by: str | None  # the operator's name; None: the command line
    made_at: datetime
    expires_at: datetime
    used_at: datetime | None
    replaced_at: datetime | None
    state: LinkState


_SELECT: Final = (
    "SELECT l.id, l.user_id, u.name AS user_name, m.name AS made_by, l.made_at, l.expires_at,"
    " l.used_at, l.replaced_at, CASE WHEN l.used_at IS NOT NULL THEN 'used'"
    " WHEN l.replaced_at IS NOT NULL THEN 'replaced' WHEN l.expires_at <= now() THEN 'expired'"
    " ELSE 'good' END AS state"
    " FROM password_links l JOIN users u ON u.id = l.user_id"
    " LEFT JOIN users m ON m.id = l.made_by"
)


def _link(row: asyncpg.Record) -> Link:
    return Link(row["id"], row["user_id"], row["user_name"], row["made_by"], row["made_at"],
                row["expires_at"], row["used_at"], row["replaced_at"], LinkState(row["state"]))


def well_formed(token: str) -> bool:
    """Whether `token` could be one of ours (else it is not looked up)."""
    return len(token) == TOKEN_LENGTH and set(token) <= TOKEN_CHARS


async def make(pool: asyncpg.Pool, name: object, made_by: User | None) -> tuple[str, Link]:
    """A new link for the account named `name` (any case), made by the operator `made_by` or,
    when None, by the command line. Returns the token (shown once, never kept) and the link.

    Refused: 404 `no_such_account`; 403 `operator_account` when an operator makes one for an
    operator's account (the command line only: an operator's page may not take over another
    operator's account). The account's unused links are replaced, in the same commit."""
    if not isinstance(name, str) or not name.strip():
        raise AccountError("no_such_account", "Give the account's name.", 404)
    token = secrets.token_urlsafe(32)
    async with pool.acquire() as conn, conn.transaction():
        user = await conn.fetchrow(
            "SELECT id, name, role FROM users WHERE lower(name) = lower($1) FOR UPDATE",
            name.strip())
        if user is None:
            raise AccountError("no_such_account", f"No account is named {name.strip()!r}.",
                               404)
        if user["name"].lower().startswith(ERASED_PREFIX):
            raise AccountError("erased_account", "That account was erased at its owner's"
                               " request: nobody enters it again.", 410)
        if made_by is not None and Role(user["role"]) is Role.OPERATOR:
            raise AccountError("operator_account", "An operator's password is reset on the"
                               " house's machine (barajamos password-link), not here.", 403)
        await conn.execute(
            "UPDATE password_links SET replaced_at = now() WHERE user_id = $1"
            " AND used_at IS NULL AND replaced_at IS NULL AND expires_at > now()", user["id"])
        link_id = await conn.fetchval(
            "INSERT INTO password_links (token_hash, user_id, made_by, expires_at)"
            " VALUES ($1, $2, $3, now() + $4::interval) RETURNING id",
            token_hash(token), user["id"], None if made_by is None else made_by.id, LIFETIME)
        row = await conn.fetchrow(_SELECT + " WHERE l.id = $1", link_id)
    assert row is not None  # written just now
    return token, _link(row)


async def find(pool: asyncpg.Pool, token: str) -> Link | None:
    """The link of `token`, whatever its state; None when there is none."""
    if not well_formed(token):
        return None
    row = await pool.fetchrow(_SELECT + " WHERE l.token_hash = $1", token_hash(token))
    return None if row is None else _link(row)


def refusal(link: Link | None) -> AccountError | None:
    """Why `link` can no longer set a password, or None when it can."""
    if link is None:
        return AccountError("link_unknown", "That is not a password link of this house.", 404)
    if link.state is LinkState.USED:
        return AccountError("link_used", "That link was used already: each works once.", 410)
    if link.state is LinkState.REPLACED:
        return AccountError("link_replaced", "A newer link was made for that account: only"
                            " the newest works.", 410)
    if link.state is LinkState.EXPIRED:
        return AccountError("link_expired", "That link expired (it works for 24 hours).", 410)
    return None


async def use(pool: asyncpg.Pool, token: str, new: object, cost: PasswordCost
              ) -> tuple[User, list[bytes]]:
    """Set the password of the link's account to `new` (checked as at sign-up) and end every
    session of the account; the link is used. Returns the account and the hashes of the
    sessions ended (`token_hash`), whose sockets the caller closes.

    Refused, changing nothing: the link's `refusal` (also when it was used, replaced or expired
    while the password was being hashed), 400 `weak_password`, 410 `link_operator` (an
    operator's link for an account made an operator since)."""
    link = await find(pool, token)
    problem = refusal(link)
    if problem is not None:
        raise problem
    assert link is not None
    password = check_password(new, link.user_name)
    digest = await hash_password(password, cost)
    async with pool.acquire() as conn, conn.transaction():
        # the account first, then its link: the order `make` and `erase` lock them in (the
        # other order could deadlock with them)
        role = await conn.fetchval("SELECT role FROM users WHERE id = $1 FOR UPDATE",
                                   link.user_id)
        row = await conn.fetchrow(_SELECT + " WHERE l.id = $1 FOR UPDATE OF l", link.id)
        problem = refusal(None if row is None else _link(row))
        if problem is not None:
            raise problem
        if link.made_by is not None and Role(role) is Role.OPERATOR:
            # made by an operator for a player who became an operator since: an operator's
            # page may not take over another operator's account (`make`)
            raise AccountError("link_operator", "That account is an operator's now: its"
                               " password is reset on the house's machine.", 410)
        user = await conn.fetchrow(
            "UPDATE users SET password_hash = $2 WHERE id = $1 RETURNING id, name, role",
            link.user_id, digest)
        assert user is not None  # an account with links is never deleted (their foreign key)
        await conn.execute("UPDATE password_links SET used_at = now() WHERE id = $1", link.id)
        ended = await conn.fetch(
            "DELETE FROM sessions WHERE user_id = $1 RETURNING token_hash", link.user_id)
    return (User(user["id"], user["name"], Role(user["role"])),
            [bytes(r["token_hash"]) for r in ended])


async def newest(pool: asyncpg.Pool, limit: int) -> list[Link]:
    """The newest links made, newest first (the operators' accounts page)."""
    rows = await pool.fetch(_SELECT + " ORDER BY l.id DESC LIMIT $1", limit)
    return [_link(row) for row in rows]


async def newest_of(pool: asyncpg.Pool, user_id: int) -> Link | None:
    """The newest link made for the account `user_id` (its own page says it), or None."""
    row = await pool.fetchrow(_SELECT + " WHERE l.user_id = $1 ORDER BY l.id DESC LIMIT 1",
                              user_id)
    return None if row is None else _link(row)
