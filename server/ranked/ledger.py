"""The chips ledger: double-entry bookkeeping in PostgreSQL (migration 020).

Accounts: `house` (issues every chip: its balance is minus the chips in circulation),
`wallet:<user>` (a player's chips) and `stake:<match>` (the chips held for a ranked match).
A movement is one journal entry whose lines sum to zero, posted in one transaction; the database
itself moves the balances (a trigger per line, under the row lock), refuses a negative balance,
an unbalanced entry, and any edit of the journal.

Every movement has an idempotency reference, unique in the journal, so it happens at most once:
    grant:<user>                      the starting grant, on a wallet's first use
    hold:<match>                      every seat's stake, moved from wallet to stake:<match>
    settle:<match>                    the payout to the winners OR the refund: a match is
                                      settled once, whichever comes first
    reversal:<match>:<user>           an overturned abandonment: the house gives the stake back
A second call with a reference already posted (a retry, a concurrent twin, a restart after a
crash) posts nothing and returns the first posting; the unique index makes the twin wait for the
first transaction and then see its row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import asyncpg

from server.db import Conn
from server.ranked.store import Db, StoreError, check_id, check_match, transaction

HOUSE = "house"
STARTING_GRANT = 1_000
# far above any table's stake; keeps an operator's typo from draining wallets in one match
MAX_STAKE = 1_000_000


class Reason(StrEnum):
    GRANT = "grant"
    HOLD = "hold"
    PAYOUT = "payout"
    REFUND = "refund"
    REVERSAL = "reversal"


class LedgerError(StoreError):
    """Codes: bad_match, bad_stake, bad_players, unknown_user, insufficient_chips, not_held,
    already_settled, conflict, not_forfeited, bad_page."""


def wallet(user_id: int) -> str:
    return f"wallet:{user_id}"


def stake_account(match_ref: str) -> str:
    return f"stake:{match_ref}"


@dataclass(frozen=True, slots=True)
class Line:
    account: str
    amount: int
    balance_after: int


@dataclass(frozen=True, slots=True)
class Posting:
    """One journal entry. `new` is False when this call found it already posted."""

    entry_id: int
    reference: str
    reason: Reason
    match_ref: str | None
    created_at: datetime
    lines: tuple[Line, ...]
    new: bool

    def amount_for(self, account: str) -> int:
        return sum(line.amount for line in self.lines if line.account == account)


@dataclass(frozen=True, slots=True)
class StatementLine:
    """A line of a player's wallet statement, newest first."""

    entry_id: int
    reason: Reason
    reference: str
    match_ref: str | None
    amount: int
    balance_after: int
    created_at: datetime


def _check_match(match_ref: object) -> str:
    return check_match(match_ref, LedgerError)


def _check_user(user_id: object) -> int:
    try:
        return check_id(user_id, "user", LedgerError)
    except LedgerError as exc:
        raise LedgerError("bad_players", exc.message) from exc


def _check_users(user_ids: Sequence[int], what: str) -> tuple[int, ...]:
    users = tuple(_check_user(u) for u in user_ids)
    if not users:
        raise LedgerError("bad_players", f"No {what} given.")
    if len(set(users)) != len(users):
        raise LedgerError("bad_players", f"A player appears twice among the {what}.")
    return users


async def _load(conn: Conn, reference: str, *, new: bool) -> Posting | None:
    entry = await conn.fetchrow(
        "SELECT id, reference, reason, match_ref, created_at FROM chip_entries "
        "WHERE reference = $1",
        reference,
    )
    if entry is None:
        return None
    lines = await conn.fetch(
        "SELECT a.code, l.amount, l.balance_after FROM chip_lines l "
        "JOIN chip_accounts a ON a.id = l.account_id WHERE l.entry_id = $1 ORDER BY a.id",
        entry["id"],
    )
    return Posting(
        entry_id=entry["id"],
        reference=entry["reference"],
        reason=Reason(entry["reason"]),
        match_ref=entry["match_ref"],
        created_at=entry["created_at"],
        lines=tuple(Line(r["code"], r["amount"], r["balance_after"]) for r in lines),
        new=new,
    )


Moves = dict[str, int]


async def _post(
    db: Db,
    reference: str,
    reason: Reason,
    match_ref: str | None,
    moves: Callable[[Conn], Awaitable[Moves]],
    *,
    same: Callable[[Posting], bool] = lambda posting: True,
) -> Posting:
    """Post one balanced entry exactly once under `reference`.

    The entry row is claimed first: a twin of this call blocks on the unique reference until this
    transaction ends, then finds the posted entry and returns it. `moves` runs only for the call
    that claimed the reference, and reads the immutable journal to decide the amounts.
    `same` says whether an already posted entry is this movement (a retry) or a different one that
    took the reference first (an error, not a silent success).
    """
    async with transaction(db) as conn:
        claimed = await conn.fetchval(
            "INSERT INTO chip_entries (reference, reason, match_ref) VALUES ($1, $2, $3) "
            "ON CONFLICT (reference) DO NOTHING RETURNING id",
            reference, reason.value, match_ref,
        )
        if claimed is None:
            posted = await _load(conn, reference, new=False)
            assert posted is not None  # the conflicting row is committed, so it is visible
            if posted.reason is not reason or not same(posted):
                raise LedgerError(
                    "already_settled" if reference.startswith("settle:") else "conflict",
                    f"{reference} was already posted as a {posted.reason} "
                    f"(entry {posted.entry_id}).",
                )
            return posted
        amounts = {code: amount for code, amount in (await moves(conn)).items() if amount}
        assert sum(amounts.values()) == 0, amounts  # the deferred trigger checks it again
        # lock every account of the entry in id order, so concurrent movements never deadlock
        accounts = await conn.fetch(
            "SELECT id, code, kind, balance FROM chip_accounts WHERE code = ANY($1::text[]) "
            "ORDER BY id FOR UPDATE",
            list(amounts),
        )
        if len(accounts) != len(amounts):
            missing = set(amounts) - {r["code"] for r in accounts}
            raise LedgerError("not_held", f"No such chip account: {', '.join(sorted(missing))}.")
        for row in accounts:
            if row["kind"] != "house" and row["balance"] + amounts[row["code"]] < 0:
                raise LedgerError(
                    "insufficient_chips",
                    f"{row['code']} holds {row['balance']} chips, "
                    f"{-amounts[row['code']]} needed.",
                )
        await conn.executemany(
            "INSERT INTO chip_lines (entry_id, account_id, amount, balance_after) "
            "VALUES ($1, $2, $3, 0)",
            [(claimed, row["id"], amounts[row["code"]]) for row in accounts],
        )
        posting = await _load(conn, reference, new=True)
        assert posting is not None
        return posting


async def ensure_wallet(db: Db, user_id: int) -> Posting:
    """Open the player's wallet with the starting grant, once; return the grant's posting."""
    user_id = _check_user(user_id)
    code = wallet(user_id)

    async def moves(conn: Conn) -> Moves:
        try:
            await conn.execute(
                "INSERT INTO chip_accounts (code, kind, user_id) VALUES ($1, 'wallet', $2) "
                "ON CONFLICT (code) DO NOTHING",
                code, user_id,
            )
        except asyncpg.ForeignKeyViolationError as exc:
            raise LedgerError("unknown_user", f"No user with id {user_id}.") from exc
        return {HOUSE: -STARTING_GRANT, code: STARTING_GRANT}

    return await _post(db, f"grant:{user_id}", Reason.GRANT, None, moves)


async def balance(db: Db, user_id: int) -> int:
    """The player's chips (the starting grant if they never used their wallet yet). A wallet
    is made with its grant, in one transaction: one found needs no write (every /me read
    posted a try at the grant, a transaction and a journal id each)."""
    user_id = _check_user(user_id)
    query = "SELECT balance FROM chip_accounts WHERE code = $1"
    value = await db.fetchval(query, wallet(user_id))
    if value is None:
        await ensure_wallet(db, user_id)
        value = await db.fetchval(query, wallet(user_id))
    assert isinstance(value, int)
    return value


async def _hold_of(conn: Conn, match_ref: str) -> dict[int, int]:
    """Who staked how much in this match, from its hold entry: {user id: chips}."""
    rows = await conn.fetch(
        "SELECT a.user_id, -l.amount AS staked FROM chip_entries e "
        "JOIN chip_lines l ON l.entry_id = e.id JOIN chip_accounts a ON a.id = l.account_id "
        "WHERE e.reference = $1 AND a.kind = 'wallet' ORDER BY a.user_id",
        f"hold:{match_ref}",
    )
    return {r["user_id"]: r["staked"] for r in rows}


async def hold_stakes(db: Db, match_ref: str, user_ids: Sequence[int], stake: int) -> Posting:
    """At match start, move `stake` chips from each player's wallet to `stake:<match>`.

    All or nothing: if one player lacks the chips, nobody's stake moves.
    """
    match_ref = _check_match(match_ref)
    users = _check_users(user_ids, "players")
    if len(users) < 2:
        raise LedgerError("bad_players", "A ranked match holds the stakes of at least 2 players.")
    if isinstance(stake, bool) or not isinstance(stake, int) or not 0 < stake <= MAX_STAKE:
        raise LedgerError("bad_stake", f"A stake is a whole number of chips, 1 to {MAX_STAKE}.")
    for user in users:
        await ensure_wallet(db, user)
    pot = stake_account(match_ref)

    async def moves(conn: Conn) -> Moves:
        await conn.execute(
            "INSERT INTO chip_accounts (code, kind) VALUES ($1, 'stake')", pot
        )
        return {pot: stake * len(users)} | {wallet(u): -stake for u in users}

    def same(posting: Posting) -> bool:
        return all(posting.amount_for(wallet(u)) == -stake for u in users) and (
            posting.amount_for(pot) == stake * len(users)
        )

    return await _post(db, f"hold:{match_ref}", Reason.HOLD, match_ref, moves, same=same)


def split(pot: int, winners: Sequence[int]) -> dict[int, int]:
    """The pot shared equally; the chips left over go one each to the first winners in the order
    given (the server passes seat order), so the split is deterministic and sums to the pot."""
    share, rest = divmod(pot, len(winners))
    return {user: share + (1 if i < rest else 0) for i, user in enumerate(winners)}


async def pay_winners(db: Db, match_ref: str, winners: Sequence[int]) -> Posting:
    """At match end, pay the whole stake pot to the winners (see `split`)."""
    match_ref = _check_match(match_ref)
    chosen = _check_users(winners, "winners")
    pot = stake_account(match_ref)

    async def moves(conn: Conn) -> Moves:
        held = await _hold_of(conn, match_ref)
        if not held:
            raise LedgerError("not_held", f"No stakes were held for match {match_ref}.")
        strangers = [u for u in chosen if u not in held]
        if strangers:
            raise LedgerError("bad_players", f"Not a player of {match_ref}: {strangers}.")
        if len(chosen) == len(held):
            raise LedgerError("bad_players", "Every player cannot win; cancel with a refund.")
        total = sum(held.values())
        return {pot: -total} | {wallet(u): amount for u, amount in split(total, chosen).items()}

    def same(posting: Posting) -> bool:
        paid = {line.account for line in posting.lines if line.amount > 0}
        return paid == {wallet(u) for u in chosen}

    return await _post(db, f"settle:{match_ref}", Reason.PAYOUT, match_ref, moves, same=same)


async def refund(db: Db, match_ref: str) -> Posting:
    """A match cancelled by a server fault: every player gets back exactly what they staked."""
    match_ref = _check_match(match_ref)
    pot = stake_account(match_ref)

    async def moves(conn: Conn) -> Moves:
        held = await _hold_of(conn, match_ref)
        if not held:
            raise LedgerError("not_held", f"No stakes were held for match {match_ref}.")
        return {pot: -sum(held.values())} | {wallet(u): amount for u, amount in held.items()}

    return await _post(db, f"settle:{match_ref}", Reason.REFUND, match_ref, moves)


async def reverse_forfeit(db: Db, match_ref: str, user_id: int) -> Posting:
    """An abandonment overturned on review: the house gives the player back the stake they lost
    in that match, once. The winners keep their payout: they did nothing wrong and may have spent
    it, so the house, not they, carries the correction."""
    match_ref = _check_match(match_ref)
    user_id = _check_user(user_id)

    async def moves(conn: Conn) -> Moves:
        held = await _hold_of(conn, match_ref)
        if user_id not in held:
            raise LedgerError("not_held", f"User {user_id} staked nothing in {match_ref}.")
        settled = await _load(conn, f"settle:{match_ref}", new=False)
        if settled is None or settled.reason is not Reason.PAYOUT:
            raise LedgerError("not_forfeited", f"Match {match_ref} has not been paid out.")
        if settled.amount_for(wallet(user_id)) > 0:
            raise LedgerError("not_forfeited", f"User {user_id} was paid in {match_ref}.")
        return {HOUSE: -held[user_id], wallet(user_id): held[user_id]}

    return await _post(
        db, f"reversal:{match_ref}:{user_id}", Reason.REVERSAL, match_ref, moves
    )


async def statement(
    db: Db, user_id: int, *, limit: int = 50, before_entry: int | None = None,
    match_ref: str | None = None,
) -> tuple[StatementLine, ...]:
    """The player's wallet lines, newest first; page on with `before_entry` (last id seen).
    `match_ref`: that match's lines only (its hold, payout or refund, a reversal)."""
    user_id = _check_user(user_id)
    if not 1 <= limit <= 500:
        raise LedgerError("bad_page", "A statement page holds 1 to 500 lines.")
    if before_entry is not None:
        check_id(before_entry, "entry", LedgerError)
    rows = await db.fetch(
        # the wallet's lines newest first straight from chip_lines_account (account_id,
        # entry_id): a page reads a page, not every line the player ever had
        "SELECT e.id, e.reason, e.reference, e.match_ref, e.created_at, l.amount, l.balance_after "
        "FROM chip_lines l JOIN chip_entries e ON e.id = l.entry_id "
        "WHERE l.account_id = (SELECT id FROM chip_accounts WHERE code = $1) "
        "AND ($2::bigint IS NULL OR l.entry_id < $2) "
        "AND ($4::text IS NULL OR e.match_ref = $4) "
        "ORDER BY l.entry_id DESC LIMIT $3",
        wallet(user_id), before_entry, limit, match_ref,
    )
    return tuple(
        StatementLine(
            entry_id=r["id"],
            reason=Reason(r["reason"]),
            reference=r["reference"],
            match_ref=r["match_ref"],
            amount=r["amount"],
            balance_after=r["balance_after"],
            created_at=r["created_at"],
        )
        for r in rows
    )
