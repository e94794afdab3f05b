"""The chips ledger on a real PostgreSQL: balanced entries, exactly-once movements, concurrency,
crashes between hold and payout, and a journal nobody can edit."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import asyncpg
import pytest

from server.ranked import ledger
from server.ranked.ledger import STARTING_GRANT, LedgerError, Reason


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    created = await asyncpg.create_pool(database_url, min_size=2, max_size=10)
    assert created is not None
    try:
        yield created
    finally:
        await created.close()


async def make_users(pool: asyncpg.Pool, n: int) -> list[int]:
    rows = await pool.fetch(
        "INSERT INTO users (name, password_hash) "
        "SELECT 'player' || i, 'x' FROM generate_series(1, $1) AS i RETURNING id",
        n,
    )
    return sorted(r["id"] for r in rows)


async def snapshot(pool: asyncpg.Pool) -> dict[str, int]:
    rows = await pool.fetch("SELECT code, balance FROM chip_accounts")
    return {r["code"]: r["balance"] for r in rows}


async def entry_count(pool: asyncpg.Pool) -> int:
    value = await pool.fetchval("SELECT count(*) FROM chip_entries")
    assert isinstance(value, int)
    return value


async def assert_books_balance(pool: asyncpg.Pool, users: int) -> None:
    """Chips are neither created nor destroyed: what the house issued is in wallets and stakes."""
    books = await snapshot(pool)
    assert sum(books.values()) == 0
    issued = -books["house"]
    opened = await pool.fetchval("SELECT count(*) FROM chip_accounts WHERE kind = 'wallet'")
    reversals = await pool.fetchval(
        "SELECT coalesce(sum(l.amount), 0) FROM chip_lines l JOIN chip_entries e "
        "ON e.id = l.entry_id JOIN chip_accounts a ON a.id = l.account_id "
        "WHERE e.reason = 'reversal' AND a.kind = 'wallet'"
    )
    assert issued == opened * STARTING_GRANT + reversals
    assert all(b >= 0 for code, b in books.items() if code != "house")
    unbalanced = await pool.fetchval(
        "SELECT count(*) FROM (SELECT entry_id FROM chip_lines GROUP BY entry_id "
        "HAVING sum(amount) <> 0) AS u"
    )
    assert unbalanced == 0
    assert opened <= users


async def test_starting_grant_once_on_first_use(pool: asyncpg.Pool) -> None:
    ana, bia = await make_users(pool, 2)
    first = await ledger.ensure_wallet(pool, ana)
    again = await ledger.ensure_wallet(pool, ana)
    assert first.new and not again.new and again.entry_id == first.entry_id
    assert first.reason is Reason.GRANT and first.amount_for(ledger.wallet(ana)) == STARTING_GRANT
    assert await ledger.balance(pool, ana) == STARTING_GRANT
    # reading a balance writes nothing once the wallet is there (it tried the grant each time:
    # a write transaction and a journal id per page view)
    entries = await pool.fetchval("SELECT last_value FROM chip_entries_id_seq")
    for _ in range(3):
        assert await ledger.balance(pool, ana) == STARTING_GRANT
    assert await pool.fetchval("SELECT last_value FROM chip_entries_id_seq") == entries
    # a first read opens the wallet, with its grant
    assert await ledger.balance(pool, bia) == STARTING_GRANT
    assert await pool.fetchval("SELECT last_value FROM chip_entries_id_seq") == entries + 1
    lines = await ledger.statement(pool, ana)
    assert [(x.reason, x.amount, x.balance_after) for x in lines] == [
        (Reason.GRANT, STARTING_GRANT, STARTING_GRANT)
    ]
    with pytest.raises(LedgerError) as err:
        await ledger.ensure_wallet(pool, ana + 1000)
    assert err.value.code == "unknown_user"


async def test_one_v_one_hold_and_payout(pool: asyncpg.Pool) -> None:
    ana, bia = await make_users(pool, 2)
    hold = await ledger.hold_stakes(pool, "m1", [ana, bia], 100)
    assert hold.reason is Reason.HOLD and hold.amount_for("stake:m1") == 200
    books = await snapshot(pool)
    assert books[ledger.wallet(ana)] == books[ledger.wallet(bia)] == STARTING_GRANT - 100
    paid = await ledger.pay_winners(pool, "m1", [bia])
    assert paid.new and paid.reason is Reason.PAYOUT
    books = await snapshot(pool)
    assert books["stake:m1"] == 0
    assert books[ledger.wallet(ana)] == STARTING_GRANT - 100
    assert books[ledger.wallet(bia)] == STARTING_GRANT + 100
    # the same payout again is a no-op returning the first posting
    again = await ledger.pay_winners(pool, "m1", [bia])
    assert not again.new and again.entry_id == paid.entry_id and again.lines == paid.lines
    assert await snapshot(pool) == books
    # a settled match cannot be settled another way
    for late in (ledger.refund(pool, "m1"), ledger.pay_winners(pool, "m1", [ana])):
        with pytest.raises(LedgerError) as err:
            await late
        assert err.value.code == "already_settled"
    assert await snapshot(pool) == books
    statement = await ledger.statement(pool, bia)
    assert [x.reason for x in statement] == [Reason.PAYOUT, Reason.HOLD, Reason.GRANT]
    assert [x.balance_after for x in statement] == [1100, 900, 1000]
    await assert_books_balance(pool, 2)


async def test_two_v_two_split_and_hold_retry(pool: asyncpg.Pool) -> None:
    seats = await make_users(pool, 4)
    hold = await ledger.hold_stakes(pool, "duo-7", seats, 50)
    retry = await ledger.hold_stakes(pool, "duo-7", seats, 50)
    assert not retry.new and retry.entry_id == hold.entry_id
    with pytest.raises(LedgerError) as err:
        await ledger.hold_stakes(pool, "duo-7", seats, 60)
    assert err.value.code == "conflict"
    await ledger.pay_winners(pool, "duo-7", [seats[0], seats[2]])
    books = await snapshot(pool)
    assert [books[ledger.wallet(u)] for u in seats] == [1050, 950, 1050, 950]
    await assert_books_balance(pool, 4)


async def test_a_repeated_hold_must_name_the_same_players_and_stake(pool: asyncpg.Pool) -> None:
    seats = await make_users(pool, 4)
    await ledger.hold_stakes(pool, "duo-8", seats, 50)
    books = await snapshot(pool)
    # the same pot (2 x 100 = 4 x 50) from other players is another movement, not a retry
    with pytest.raises(LedgerError) as err:
        await ledger.hold_stakes(pool, "duo-8", seats[:2], 100)
    assert err.value.code == "conflict"
    assert await snapshot(pool) == books


def test_split_hands_out_the_remainder_in_the_order_given() -> None:
    assert ledger.split(200, [7, 3]) == {7: 100, 3: 100}
    assert ledger.split(301, [7, 3]) == {7: 151, 3: 150}
    assert ledger.split(302, [3, 7, 5]) == {3: 101, 7: 101, 5: 100}
    assert sum(ledger.split(1001, [1, 2, 3]).values()) == 1001


async def test_refund_on_a_fault_returns_every_stake_once(pool: asyncpg.Pool) -> None:
    seats = await make_users(pool, 4)
    await ledger.hold_stakes(pool, "m-fault", seats, 250)
    first, second = await asyncio.gather(
        ledger.refund(pool, "m-fault"), ledger.refund(pool, "m-fault")
    )
    assert {first.new, second.new} == {True, False} and first.entry_id == second.entry_id
    books = await snapshot(pool)
    assert all(books[ledger.wallet(u)] == STARTING_GRANT for u in seats)
    assert books["stake:m-fault"] == 0
    with pytest.raises(LedgerError) as err:
        await ledger.pay_winners(pool, "m-fault", seats[:2])
    assert err.value.code == "already_settled"
    with pytest.raises(LedgerError) as err:
        await ledger.refund(pool, "never-held")
    assert err.value.code == "not_held"
    await assert_books_balance(pool, 4)


async def test_not_enough_chips_moves_nobodys_stake(pool: asyncpg.Pool) -> None:
    ana, bia, caio = await make_users(pool, 3)
    await ledger.hold_stakes(pool, "big", [ana, bia], 900)
    await ledger.pay_winners(pool, "big", [ana])  # bia is down to 100
    before, entries = await snapshot(pool), await entry_count(pool)
    with pytest.raises(LedgerError) as err:
        await ledger.hold_stakes(pool, "next", [caio, bia], 150)
    assert err.value.code == "insufficient_chips"
    assert ledger.wallet(bia) in err.value.message
    after = await snapshot(pool)
    # caio's wallet was opened by the attempt (the grant is his on first use); nothing else moved
    assert after.pop(ledger.wallet(caio)) == STARTING_GRANT
    assert after == {**before, "house": before["house"] - STARTING_GRANT}
    assert "stake:next" not in after
    assert await entry_count(pool) == entries + 1
    await assert_books_balance(pool, 3)


@pytest.mark.parametrize(
    ("match", "players", "stake", "code"),
    [
        ("", "ab", 10, "bad_match"),
        ("has space", "ab", 10, "bad_match"),
        ("x" * 65, "ab", 10, "bad_match"),
        ("ok", "ab", 0, "bad_stake"),
        ("ok", "ab", -5, "bad_stake"),
        ("ok", "ab", True, "bad_stake"),
        ("ok", "ab", ledger.MAX_STAKE + 1, "bad_stake"),
        ("ok", "a", 10, "bad_players"),
        ("ok", "aa", 10, "bad_players"),
        ("ok", "", 10, "bad_players"),
    ],
)
async def test_bad_holds_are_refused(
    pool: asyncpg.Pool, match: str, players: str, stake: int, code: str
) -> None:
    ana, bia = await make_users(pool, 2)
    ids = {"a": ana, "b": bia}
    with pytest.raises(LedgerError) as err:
        await ledger.hold_stakes(pool, match, [ids[p] for p in players], stake)
    assert err.value.code == code
    assert await pool.fetchval("SELECT count(*) FROM chip_entries WHERE reason = 'hold'") == 0


async def test_bad_payouts_are_refused(pool: asyncpg.Pool) -> None:
    ana, bia, caio = await make_users(pool, 3)
    await ledger.hold_stakes(pool, "m", [ana, bia], 10)
    for winners, code in [([caio], "bad_players"), ([ana, bia], "bad_players"),
                          ([], "bad_players"), ([ana, ana], "bad_players")]:
        with pytest.raises(LedgerError) as err:
            await ledger.pay_winners(pool, "m", winners)
        assert err.value.code == code
    with pytest.raises(LedgerError) as err:
        await ledger.pay_winners(pool, "other", [ana])
    assert err.value.code == "not_held"
    assert (await snapshot(pool))["stake:m"] == 20


async def test_concurrent_matches_keep_the_books(pool: asyncpg.Pool) -> None:
    users = await make_users(pool, 12)
    rng = random.Random(6)
    plans = []
    for n in range(40):
        seats = rng.sample(users, rng.choice([2, 4]))
        plans.append((f"c{n}", seats, rng.choice([100, 250, 400])))

    async def play(match: str, seats: list[int], stake: int) -> str:
        try:
            await ledger.hold_stakes(pool, match, seats, stake)
        except LedgerError as exc:
            assert exc.code == "insufficient_chips"
            return "refused"
        winners = seats[0::2] if rng.random() < 0.5 else seats[1::2]
        if match.endswith("7"):
            # a server fault: the refund races its own retry
            await asyncio.gather(ledger.refund(pool, match), ledger.refund(pool, match))
            return "refunded"
        # the payout races its own retry; exactly one posts
        a, b = await asyncio.gather(
            ledger.pay_winners(pool, match, winners), ledger.pay_winners(pool, match, winners)
        )
        assert a.entry_id == b.entry_id and {a.new, b.new} == {True, False}
        return "paid"

    outcomes = await asyncio.gather(*(play(*plan) for plan in plans))
    assert "paid" in outcomes and "refunded" in outcomes
    await assert_books_balance(pool, 12)
    books = await snapshot(pool)
    assert sum(books[ledger.wallet(u)] for u in users) == len(users) * STARTING_GRANT
    assert all(b == 0 for code, b in books.items() if code.startswith("stake:"))
    settled = await pool.fetchval(
        "SELECT count(*) FROM chip_entries WHERE reference LIKE 'settle:%'"
    )
    assert settled == outcomes.count("paid") + outcomes.count("refunded")


async def test_crash_between_hold_and_payout_pays_exactly_once(
    pool: asyncpg.Pool, database_url: str
) -> None:
    ana, bia = await make_users(pool, 2)
    await ledger.hold_stakes(pool, "crash", [ana, bia], 300)
    # the server dies in the middle of the payout: its connection drops before the commit
    doomed = await asyncpg.connect(database_url)
    unfinished = doomed.transaction()
    await unfinished.start()
    await ledger.pay_winners(doomed, "crash", [ana])
    doomed.terminate()
    books = await snapshot(pool)
    assert books["stake:crash"] == 600 and books[ledger.wallet(ana)] == 700
    # after the restart the settlement runs again: it pays, once
    restarted = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    assert restarted is not None
    try:
        paid = await ledger.pay_winners(restarted, "crash", [ana])
        assert paid.new
        # the server dies again right after the commit, before it learned of it; again a no-op
        replay = await ledger.pay_winners(restarted, "crash", [ana])
        assert not replay.new and replay.entry_id == paid.entry_id
    finally:
        await restarted.close()
    books = await snapshot(pool)
    assert books["stake:crash"] == 0
    assert books[ledger.wallet(ana)] == 1300 and books[ledger.wallet(bia)] == 700
    await assert_books_balance(pool, 2)


async def test_reversal_of_a_forfeit_happens_once(pool: asyncpg.Pool) -> None:
    ana, bia, caio, dora = await make_users(pool, 4)
    await ledger.hold_stakes(pool, "ab", [ana, bia], 200)
    await ledger.pay_winners(pool, "ab", [bia])  # ana "abandoned"
    first, second = await asyncio.gather(
        ledger.reverse_forfeit(pool, "ab", ana), ledger.reverse_forfeit(pool, "ab", ana)
    )
    assert {first.new, second.new} == {True, False}
    books = await snapshot(pool)
    assert books[ledger.wallet(ana)] == STARTING_GRANT  # made whole by the house
    assert books[ledger.wallet(bia)] == STARTING_GRANT + 200  # keeps the win
    for match, user in (("ab", bia), ("ab", caio)):
        with pytest.raises(LedgerError):
            await ledger.reverse_forfeit(pool, match, user)
    await ledger.hold_stakes(pool, "cd", [caio, dora], 100)
    await ledger.refund(pool, "cd")
    with pytest.raises(LedgerError) as err:
        await ledger.reverse_forfeit(pool, "cd", caio)
    assert err.value.code == "not_forfeited"
    await assert_books_balance(pool, 4)


async def test_statement_pages(pool: asyncpg.Pool) -> None:
    ana, bia = await make_users(pool, 2)
    for n in range(5):
        await ledger.hold_stakes(pool, f"p{n}", [ana, bia], 10)
        await ledger.refund(pool, f"p{n}")
    first = await ledger.statement(pool, ana, limit=4)
    rest = await ledger.statement(pool, ana, limit=100, before_entry=first[-1].entry_id)
    assert len(first) == 4 and len(rest) == 7
    ids = [x.entry_id for x in first + rest]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 11
    with pytest.raises(LedgerError):
        await ledger.statement(pool, ana, limit=0)


async def test_the_database_itself_refuses_bad_bookkeeping(pool: asyncpg.Pool) -> None:
    ana, bia = await make_users(pool, 2)
    await ledger.hold_stakes(pool, "g", [ana, bia], 10)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("UPDATE chip_entries SET reason = 'grant'")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("DELETE FROM chip_lines")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("TRUNCATE chip_entries CASCADE")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await pool.execute("UPDATE chip_accounts SET balance = balance + 1000000")
    # an account's identity is fixed (migration 039): a wallet made 'house' escaped the
    # non-negative check, a wallet's code could name another player, a second house be made
    for change in ("kind = 'house', user_id = NULL, code = 'house'", "code = 'wallet:999'",
                   "user_id = user_id + 1"):
        with pytest.raises(asyncpg.PostgresError) as refused:
            await pool.execute(f"UPDATE chip_accounts SET {change} WHERE code = $1",
                               ledger.wallet(ana))
        assert isinstance(refused.value, (asyncpg.InsufficientPrivilegeError,
                                          asyncpg.CheckViolationError,
                                          asyncpg.UniqueViolationError)), change
    for code, kind, user in (("house2", "house", None), ("house", "stake", None),
                             (f"wallet:{bia}", "wallet", ana), ("stake:", "stake", None)):
        with pytest.raises((asyncpg.CheckViolationError, asyncpg.UniqueViolationError)):
            await pool.execute("INSERT INTO chip_accounts (code, kind, user_id)"
                               " VALUES ($1, $2, $3)", code, kind, user)
    wallet_id = await pool.fetchval(
        "SELECT id FROM chip_accounts WHERE code = $1", ledger.wallet(ana)
    )
    house_id = await pool.fetchval("SELECT id FROM chip_accounts WHERE code = 'house'")
    async with pool.acquire() as conn:
        # an unbalanced entry is refused at commit
        with pytest.raises(asyncpg.CheckViolationError):
            async with conn.transaction():
                entry = await conn.fetchval(
                    "INSERT INTO chip_entries (reference, reason) VALUES ('x', 'grant') "
                    "RETURNING id"
                )
                await conn.execute(
                    "INSERT INTO chip_lines VALUES ($1, $2, 5, 0)", entry, wallet_id
                )
        # a balanced entry that overdraws a wallet is refused by the row's CHECK
        with pytest.raises(asyncpg.CheckViolationError):
            async with conn.transaction():
                entry = await conn.fetchval(
                    "INSERT INTO chip_entries (reference, reason) VALUES ('y', 'grant') "
                    "RETURNING id"
                )
                await conn.execute(
                    "INSERT INTO chip_lines VALUES ($1, $2, -5000, 0), ($1, $3, 5000, 0)",
                    entry, wallet_id, house_id,
                )
    assert (await snapshot(pool))[ledger.wallet(ana)] == STARTING_GRANT - 10
    await assert_books_balance(pool, 2)


async def test_the_database_keeps_the_books_whatever_the_caller(pool: asyncpg.Pool) -> None:
    ana, bia = await make_users(pool, 2)
    grant = await ledger.ensure_wallet(pool, ana)
    await pool.execute("INSERT INTO chip_accounts (code, kind) VALUES ('stake:x', 'stake')")
    before = await pool.fetchval("SELECT sum(balance) FROM chip_accounts")
    # a line added to an entry posted long ago: its entry no longer sums to zero
    with pytest.raises(asyncpg.CheckViolationError, match="unbalanced"):
        await pool.execute(
            "INSERT INTO chip_lines (entry_id, account_id, amount, balance_after)"
            " SELECT $1, id, 5000, 0 FROM chip_accounts WHERE code = 'stake:x'", grant.entry_id)
    # an account created holding chips no line put there
    with pytest.raises(asyncpg.CheckViolationError, match="open holding"):
        await pool.execute("INSERT INTO chip_accounts (code, kind, user_id, balance)"
                           " VALUES ($1, 'wallet', $2, 777777)", ledger.wallet(bia), bia)
    assert await pool.fetchval("SELECT sum(balance) FROM chip_accounts") == before == 0
