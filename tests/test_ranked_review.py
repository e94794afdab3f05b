"""Abandonment records and their review on PostgreSQL: strikes and pauses, exemption by server
faults, one appeal, decisions with notes, reversal exactly once, an append-only audit log."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.ranked import ledger, ratings, review
from server.ranked.penalties import Decision, RecordStatus
from server.ranked.review import ReviewStoreError
from tests.test_ranked_ledger import make_users, pool  # noqa: F401  (the pool fixture)
from truco.variants import Variant

T = datetime(2027, 3, 1, 20, 0, tzinfo=UTC)
P = Variant.PAULISTA
EVIDENCE = [
    {"kind": "disconnected", "at_ms": 1_803_000_000_000, "seat": 1},
    {"kind": "deadline", "at_ms": 1_803_000_010_000, "seat": 1},
    {"kind": "automatic", "at_ms": 1_803_000_010_004, "seat": 1, "streak": 1},
]


async def abandon(pool: asyncpg.Pool, user: int, match: str, at: datetime,  # noqa: F811
                  minutes: int = 10) -> review.AbandonmentRecord:
    return await review.record_abandonment(
        pool, user_id=user, match_ref=match, variant=P, seats=2,
        match_started_at=at - timedelta(minutes=minutes), abandoned_at=at, evidence=EVIDENCE,
        source_ref=f"live:{match}",
    )


async def operator(pool: asyncpg.Pool) -> int:  # noqa: F811
    (op,) = await pool.fetch(
        "INSERT INTO users (name, password_hash, role) VALUES ('judge', 'x', 'operator') "
        "RETURNING id"
    )
    value: int = op["id"]
    return value


async def test_strikes_escalate_and_pauses_run_out(pool: asyncpg.Pool) -> None:  # noqa: F811
    (ana,) = await make_users(pool, 1)
    first = await abandon(pool, ana, "m1", T)
    assert (first.status, first.strikes, first.paused_until) == (RecordStatus.PENDING, 1, None)
    assert first.evidence == tuple(EVIDENCE) and first.source_ref == "live:m1"
    assert await review.pause_remaining(pool, ana, T) == timedelta(0)
    second = await abandon(pool, ana, "m2", T + timedelta(hours=1))
    assert second.strikes == 2 and second.paused_until == T + timedelta(hours=1, minutes=15)
    third = await abandon(pool, ana, "m3", T + timedelta(hours=2))
    assert third.paused_until == T + timedelta(hours=2, minutes=30)
    assert await review.pause_remaining(pool, ana, T + timedelta(hours=2, minutes=10)) == (
        timedelta(minutes=20)
    )
    assert await review.pause_remaining(pool, ana, T + timedelta(hours=3)) == timedelta(0)
    # the same match reported twice is one record
    assert await abandon(pool, ana, "m3", T + timedelta(hours=2)) == third
    # a week later the window has rolled past all three
    later = await abandon(pool, ana, "m4", T + timedelta(days=7, hours=3))
    assert later.strikes == 1 and later.paused_until is None


async def test_a_restart_during_the_match_exempts_the_record(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    (ana,) = await make_users(pool, 1)
    await abandon(pool, ana, "m1", T)
    await review.record_fault(pool, "restart", T + timedelta(minutes=55),
                              T + timedelta(minutes=56), "deploy")
    record = await abandon(pool, ana, "m2", T + timedelta(hours=1))
    assert record.status is RecordStatus.EXEMPT and record.paused_until is None
    # an exempt record is no strike either
    after = await abandon(pool, ana, "m3", T + timedelta(hours=2))
    assert after.strikes == 2
    with pytest.raises(ReviewStoreError) as err:
        await review.decide(pool, record.id, await operator(pool), Decision.UPHOLD, "x")
    assert err.value.code == "exempt"
    flagged = await review.record_abandonment(
        pool, user_id=ana, match_ref="m4", variant=P, seats=2,
        match_started_at=T + timedelta(hours=3), abandoned_at=T + timedelta(hours=3, minutes=9),
        fault_overlap=True,
    )
    assert flagged.status is RecordStatus.EXEMPT and flagged.strikes == 0
    with pytest.raises(ReviewStoreError) as err:
        await review.record_fault(pool, "meteor", T, None)
    assert err.value.code == "bad_record"


async def test_one_appeal_by_the_owner(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia = await make_users(pool, 2)
    record = await abandon(pool, ana, "m1", T)
    with pytest.raises(ReviewStoreError) as err:
        await review.appeal(pool, record.id, bia, "not me")
    assert err.value.code == "forbidden"
    appealed = await review.appeal(pool, record.id, ana, "  my router died  ")
    assert appealed.appeal_text == "my router died" and appealed.appealed_at is not None
    for text, code in (("again", "already_appealed"), ("", "already_appealed")):
        with pytest.raises(ReviewStoreError) as err:
            await review.appeal(pool, record.id, ana, text)
        assert err.value.code == code
    with pytest.raises(ReviewStoreError) as err:
        await review.appeal(pool, 9999, ana, "x")
    assert err.value.code == "not_found"
    assert (await review.get_record(pool, record.id)).appeal_text == "my router died"


async def test_only_operators_decide_and_every_decision_needs_a_note(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    ana, bia = await make_users(pool, 2)
    record = await abandon(pool, ana, "m1", T)
    with pytest.raises(ReviewStoreError) as err:
        await review.decide(pool, record.id, bia, Decision.UPHOLD, "looks fine")
    assert err.value.code == "forbidden"
    op = await operator(pool)
    with pytest.raises(ReviewStoreError) as err:
        await review.decide(pool, record.id, op, Decision.UPHOLD, "   ")
    assert err.value.code == "bad_text"
    for record_id, by, decision, code in ((str(record.id), op, Decision.UPHOLD, "bad_id"),
                                          (record.id, "judge", Decision.UPHOLD, "bad_id"),
                                          (record.id, op, "uphold", "bad_record"),
                                          (record.id + 7, op, Decision.UPHOLD, "not_found")):
        with pytest.raises(ReviewStoreError) as err:
            await review.decide(pool, record_id, by, decision, "note")  # type: ignore[arg-type]
        assert err.value.code == code
    upheld = await review.decide(pool, record.id, op, Decision.UPHOLD, "six timeouts in a row")
    assert upheld.status is RecordStatus.UPHELD and upheld.decided_by == op
    with pytest.raises(ReviewStoreError) as err:
        await review.decide(pool, record.id, op, Decision.UPHOLD, "again")
    assert err.value.code == "already_upheld"
    # an appeal after the decision may be answered by upholding again
    await review.appeal(pool, record.id, ana, "please look again")
    again = await review.decide(pool, record.id, op, Decision.UPHOLD, "checked the evidence")
    assert again.appeal_answered
    log = await review.audit_log(pool, record_id=record.id)
    assert [(e.action, e.actor_name) for e in log] == [
        ("uphold", "judge"), ("appeal", "player1"), ("uphold", "judge"), ("created", None),
    ]
    assert log[0].note == "checked the evidence" and log[0].at is not None


async def test_overturn_reverses_stake_rating_and_pause_exactly_once(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    ana, bia = await make_users(pool, 2)
    op = await operator(pool)
    # an earlier abandonment, so this one pauses
    await abandon(pool, bia, "old", T - timedelta(hours=1))
    # the ranked match: stakes held, bia abandons, ana wins, ratings move
    await ledger.hold_stakes(pool, "m1", [ana, bia], 200)
    await ledger.pay_winners(pool, "m1", [ana])
    (_, lost) = await ratings.rate_match(pool, "m1", P, 2, ([ana], [bia]), 0, T)
    record = await abandon(pool, bia, "m1", T)
    assert record.paused_until is not None
    assert await review.pause_remaining(pool, bia, T) == timedelta(minutes=15)
    # two operators overturn at the same moment: one wins, the other is refused
    results = await asyncio.gather(
        review.decide(pool, record.id, op, Decision.OVERTURN, "house network fault"),
        review.decide(pool, record.id, op, Decision.OVERTURN, "same, second click"),
        return_exceptions=True,
    )
    done = [r for r in results if isinstance(r, review.AbandonmentRecord)]
    refused = [r for r in results if isinstance(r, ReviewStoreError)]
    assert len(done) == 1 and len(refused) == 1 and refused[0].code == "already_overturned"
    assert done[0].status is RecordStatus.OVERTURNED and done[0].reversed_at is not None
    assert await ledger.balance(pool, bia) == ledger.STARTING_GRANT
    assert await ledger.balance(pool, ana) == ledger.STARTING_GRANT + 200
    assert (await ratings.rating_of(pool, bia, P, 2)).rating == pytest.approx(lost.before)
    assert await review.pause_remaining(pool, bia, T) == timedelta(0)
    entries = await pool.fetchval("SELECT count(*) FROM chip_entries WHERE reason = 'reversal'")
    assert entries == 1
    log = await review.audit_log(pool, record_id=record.id)
    assert log[0].action == "overturn" and log[0].detail["chips_returned"] == 200
    assert log[0].detail["rating_returned"] == pytest.approx(-lost.delta)
    assert log[0].detail["pause_lifted"] is True
    with pytest.raises(ReviewStoreError) as err:
        await review.appeal(pool, record.id, bia, "thanks")
    assert err.value.code == "nothing_to_appeal"


async def test_the_overturns_rating_row_is_dated_at_the_decision_from_the_rating_then(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    """The reversal is a change made when the operator decides: its history row is dated then
    (as the record's `decided_at` and `reversed_at`), not at the abandonment, and it starts
    from the rating the player has then (after later matches); only the rating moves back."""
    ana, bia = await make_users(pool, 2)
    op = await operator(pool)
    (_, lost) = await ratings.rate_match(pool, "m1", P, 2, ([ana], [bia]), 0, T)
    record = await abandon(pool, bia, "m1", T)
    # a later match, which bia wins: her rating now is not the one the abandonment left
    await ratings.rate_match(pool, "m2", P, 2, ([ana], [bia]), 1, T + timedelta(hours=1))
    then = await ratings.rating_of(pool, bia, P, 2)
    games = await pool.fetchval("SELECT games FROM ranked_ratings WHERE user_id = $1", bia)
    done = await review.decide(pool, record.id, op, Decision.OVERTURN, "queda do provedor")
    assert done.reversed_at is not None and done.reversed_at == done.decided_at
    reversal, later, first = await ratings.history(pool, bia, P, 2)
    assert [reversal.reason, later.match_ref, first.match_ref] == ["reversal", "m2", "m1"]
    assert reversal.at == done.decided_at and reversal.at != record.abandoned_at
    assert reversal.rating_before == pytest.approx(then.rating)
    assert reversal.rating_after == pytest.approx(then.rating - lost.delta)
    # the deviation, volatility and games stay: later matches were built on them
    now = await ratings.rating_of(pool, bia, P, 2)
    assert (now.rd, now.volatility) == (then.rd, then.volatility)
    assert now.rating == pytest.approx(then.rating - lost.delta)
    assert await pool.fetchval(
        "SELECT games FROM ranked_ratings WHERE user_id = $1", bia) == games
    # the decisions a player's page shows: the note and what came back, not who decided
    decided = await review.decisions(pool, [record.id, record.id + 99])
    [entry] = decided[record.id]
    assert (entry.action, entry.note, entry.actor_id, entry.actor_name) == (
        "overturn", "queda do provedor", None, None)
    assert entry.detail["rating_returned"] == pytest.approx(-lost.delta)
    assert record.id + 99 not in decided and await review.decisions(pool, []) == {}


async def test_overturn_without_stake_or_rating_still_lifts_the_pause(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    (ana,) = await make_users(pool, 1)
    op = await operator(pool)
    await abandon(pool, ana, "a", T)
    record = await abandon(pool, ana, "b", T + timedelta(minutes=30))
    done = await review.decide(pool, record.id, op, Decision.OVERTURN, "reviewed")
    assert done.status is RecordStatus.OVERTURNED
    assert await review.pause_remaining(pool, ana, T + timedelta(minutes=31)) == timedelta(0)
    log = await review.audit_log(pool, record_id=record.id)
    assert log[0].detail == {"from": "pending", "chips_returned": 0, "rating_returned": 0.0,
                             "pause_lifted": True}


async def test_filters(pool: asyncpg.Pool) -> None:  # noqa: F811
    ana, bia = await make_users(pool, 2)
    op = await operator(pool)
    a1 = await abandon(pool, ana, "a1", T)
    b1 = await abandon(pool, bia, "b1", T + timedelta(hours=1))
    await review.record_abandonment(
        pool, user_id=bia, match_ref="b2", variant=Variant.MINEIRO, seats=4,
        match_started_at=T + timedelta(hours=2), abandoned_at=T + timedelta(hours=3),
    )
    await review.appeal(pool, b1.id, bia, "why")
    await review.decide(pool, a1.id, op, Decision.UPHOLD, "ok")

    async def ids(**filters: object) -> list[str]:
        found = await review.list_records(pool, **filters)  # type: ignore[arg-type]
        return [r.match_ref for r in found]

    assert await ids() == ["b2", "b1", "a1"]
    assert await ids(user_id=bia) == ["b2", "b1"]
    assert await ids(status=RecordStatus.UPHELD) == ["a1"]
    assert await ids(variant=Variant.MINEIRO, seats=4) == ["b2"]
    assert await ids(appealed=True) == ["b1"]
    assert await ids(since=T + timedelta(minutes=30), until=T + timedelta(hours=2)) == ["b1"]
    assert await ids(limit=1) == ["b2"]
    page = await review.list_records(pool, limit=1)
    assert await ids(before_id=page[0].id) == ["b1", "a1"]
    for bad in ({"status": "lost"}, {"seats": 3}, {"limit": 0}, {"since": datetime(2027, 1, 1)}):
        with pytest.raises(ReviewStoreError):
            await review.list_records(pool, **bad)


async def test_bad_records_are_refused(pool: asyncpg.Pool) -> None:  # noqa: F811
    (ana,) = await make_users(pool, 1)
    good = {"user_id": ana, "match_ref": "m", "variant": P, "seats": 2,
            "match_started_at": T, "abandoned_at": T + timedelta(minutes=5)}
    for change in ({"match_ref": "no spaces"}, {"variant": "truco"}, {"seats": 3},
                   {"abandoned_at": T - timedelta(minutes=5)},
                   {"match_started_at": datetime(2027, 3, 1)},
                   {"evidence": [{"at_ms": 1}]}, {"evidence": "timeout"},
                   {"evidence": [{"kind": "deadline", "at_ms": 1.5}]},
                   {"evidence": [{"kind": "deadline", "at_ms": 1, "x": float("nan")}]},
                   {"evidence": [{"kind": "deadline", "at_ms": 1, "x": object()}]},
                   {"user_id": ana + 50}, {"user_id": str(ana)}, {"user_id": True}):
        with pytest.raises(ReviewStoreError):
            await review.record_abandonment(pool, **{**good, **change})  # type: ignore[arg-type]
    assert await pool.fetchval("SELECT count(*) FROM ranked_abandonments") == 0
    assert await pool.fetchval("SELECT count(*) FROM ranked_review_audit") == 0


async def test_the_database_keeps_the_audit_log_and_the_rules(
    pool: asyncpg.Pool,  # noqa: F811
) -> None:
    (ana,) = await make_users(pool, 1)
    op = await operator(pool)
    record = await abandon(pool, ana, "m1", T)
    await review.decide(pool, record.id, op, Decision.OVERTURN, "fault")
    for sql in ("UPDATE ranked_review_audit SET note = 'edited'",
                "DELETE FROM ranked_review_audit",
                "TRUNCATE ranked_review_audit",
                "DELETE FROM ranked_abandonments",
                "UPDATE ranked_abandonments SET strikes = 0",
                "UPDATE ranked_abandonments SET evidence = '[]'"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await pool.execute(sql)
    for sql in ("UPDATE ranked_abandonments SET status = 'upheld'",
                "UPDATE ranked_abandonments SET reversed_at = now() + interval '1 day'"):
        with pytest.raises(asyncpg.CheckViolationError):
            await pool.execute(sql)
    assert len(await review.audit_log(pool)) == 2
    assert (await review.get_record(pool, record.id)).status is RecordStatus.OVERTURNED
