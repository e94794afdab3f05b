"""Abandonment records and their review, in PostgreSQL (migration 022); the rules are in
`penalties`. Each operation is one transaction: a decision, its audit row, and (for an overturn)
the reversal of the stake and the rating change commit together or not at all.

The record row is locked for every change, and the table's trigger refuses any transition the
rules forbid, so two operators deciding at once cannot both overturn: the second waits, then
finds the record overturned and is refused. The audit log takes rows and never loses one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from server.db import Conn
from server.ranked import ledger, penalties, ratings
from server.ranked.penalties import Decision, RecordStatus, ReviewError
from server.ranked.store import Db, StoreError, check_id, check_match, transaction
from truco.variants import Variant

# the advisory-lock space of abandonment bookkeeping ("rank"); the low bits are the user id, so
# one player's records are counted for strikes one at a time
_LOCK_SPACE = 0x72616E6B << 32
MAX_EVIDENCE = 500
_MAX_PAGE = 500


class ReviewStoreError(StoreError):
    """Codes: not_found, forbidden, bad_id, bad_record, bad_filter, bad_page, and the codes of
    `penalties.ReviewError`."""


@dataclass(frozen=True, slots=True)
class AbandonmentRecord:
    id: int
    user_id: int
    match_ref: str
    variant: Variant
    seats: int
    match_started_at: datetime
    abandoned_at: datetime
    source_ref: str | None
    evidence: tuple[Mapping[str, Any], ...]
    status: RecordStatus
    strikes: int
    paused_until: datetime | None
    appeal_text: str | None
    appealed_at: datetime | None
    appeal_answered: bool
    decided_at: datetime | None
    decided_by: int | None
    reversed_at: datetime | None

    @property
    def review_state(self) -> penalties.ReviewState:
        return penalties.ReviewState(self.status, self.appeal_text is not None,
                                     self.appeal_answered)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    record_id: int
    actor_id: int | None
    actor_name: str | None
    action: str
    note: str
    detail: Mapping[str, Any]
    at: datetime


def _record(row: asyncpg.Record) -> AbandonmentRecord:
    return AbandonmentRecord(
        id=row["id"], user_id=row["user_id"], match_ref=row["match_ref"],
        variant=Variant(row["variant"]), seats=row["seats"],
        match_started_at=row["match_started_at"], abandoned_at=row["abandoned_at"],
        source_ref=row["source_ref"], evidence=tuple(json.loads(row["evidence"])),
        status=RecordStatus(row["status"]), strikes=row["strikes"],
        paused_until=row["paused_until"], appeal_text=row["appeal_text"],
        appealed_at=row["appealed_at"], appeal_answered=row["appeal_answered"],
        decided_at=row["decided_at"], decided_by=row["decided_by"],
        reversed_at=row["reversed_at"],
    )


def _aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ReviewStoreError("bad_record", f"{what} must be a datetime with its time zone.")
    return value


def _evidence(evidence: object) -> list[dict[str, Any]]:
    if not isinstance(evidence, Sequence) or isinstance(evidence, str | bytes):
        raise ReviewStoreError("bad_record", "Evidence is a list of timeline events.")
    if len(evidence) > MAX_EVIDENCE:
        raise ReviewStoreError("bad_record", f"Evidence holds at most {MAX_EVIDENCE} events.")
    # the live house's evidence items (docs/PROTOCOL.md, operators): {"kind", "at_ms", ...}
    for event in evidence:
        if (not isinstance(event, Mapping) or not isinstance(event.get("kind"), str)
                or isinstance(event.get("at_ms"), bool) or not isinstance(event.get("at_ms"), int)):
            raise ReviewStoreError("bad_record",
                                   "Each evidence item has a 'kind' and an integer 'at_ms'.")
    items = [dict(event) for event in evidence]
    _dump(items)
    return items


def _dump(items: list[dict[str, Any]]) -> str:
    try:
        return json.dumps(items, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ReviewStoreError("bad_record", f"Evidence is not plain JSON: {exc}") from exc


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


# the server runs that began while a match was on (after its start, up to its abandonment), each
# with the run before it: when that one stopped (NULL: it crashed, no clean stop was recorded)
_RESTARTS = """
SELECT r.id, r.started_at, p.id AS previous, p.stopped_at AS previous_stopped_at,
       coalesce(p.clean, false) AS previous_clean
FROM server_runs r
LEFT JOIN LATERAL (SELECT q.id, q.stopped_at, q.clean FROM server_runs q WHERE q.id < r.id
                   ORDER BY q.id DESC LIMIT 1) p ON true
WHERE r.started_at > $1 AND r.started_at <= $2
ORDER BY r.id
"""


def _restart_item(row: asyncpg.Record) -> dict[str, Any]:
    """A `server_restart` evidence item: the run that started, and the downtime before it."""
    stopped = row["previous_stopped_at"]
    return {
        "kind": "server_restart", "at_ms": _ms(row["started_at"]), "seat": None,
        "run": row["id"], "previous_run": row["previous"],
        "down_since_ms": None if stopped is None else _ms(stopped),
        "downtime_ms": None if stopped is None else _ms(row["started_at"]) - _ms(stopped),
        "clean_stop": bool(row["previous_clean"]) and stopped is not None,
    }


async def restarts_during(db: Db, started: datetime, ended: datetime) -> list[dict[str, Any]]:
    """The server restarts inside [started, ended], as `server_restart` evidence items."""
    return [_restart_item(r) for r in await db.fetch(_RESTARTS, started, ended)]


def _with_house_items(items: list[dict[str, Any]], restarts: list[dict[str, Any]],
                      exempt: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The evidence with what the house knows besides the seat's own events: each restart
    during the match (merged into the live house's item for the same run, which names the run
    only) and, for an exempt record, why it is exempt; in time order."""
    added: list[dict[str, Any]] = []
    for restart in restarts:
        known = next((e for e in items if e.get("kind") == "server_restart"
                      and e.get("run") == restart["run"]), None)
        if known is not None:
            known.update({k: v for k, v in restart.items() if k not in known})
        else:
            added.append(restart)
    if exempt is not None:
        added.append(exempt)
    if not added:
        return items
    # stable: items of the same instant keep their order, the house's after the seat's
    return sorted(items + added, key=lambda e: int(e["at_ms"]))


async def _audit(conn: Conn, record_id: int, actor: int | None, action: str, note: str,
                 detail: Mapping[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO ranked_review_audit (record_id, actor_id, action, note, detail) "
        "VALUES ($1, $2, $3, $4, $5::jsonb)",
        record_id, actor, action, note, json.dumps(dict(detail)),
    )


async def record_fault(
    db: Db, kind: str, started_at: datetime, ended_at: datetime | None, note: str = ""
) -> int:
    """Write down a server fault or restart by hand (an outage outside the house's own runs).
    The house's restarts reach a record through its `restart_overlap` flag instead: live, or
    from `server_runs` when a match is settled at the next start."""
    if kind not in ("restart", "fault"):
        raise ReviewStoreError("bad_record", "A fault is a 'restart' or a 'fault'.")
    started_at = _aware(started_at, "started_at")
    if ended_at is not None and _aware(ended_at, "ended_at") < started_at:
        raise ReviewStoreError("bad_record", "A fault cannot end before it started.")
    value = await db.fetchval(
        "INSERT INTO server_faults (kind, started_at, ended_at, note) VALUES ($1, $2, $3, $4) "
        "RETURNING id",
        kind, started_at, ended_at, note,
    )
    assert isinstance(value, int)
    return value


async def record_abandonment(
    db: Db,
    *,
    user_id: int,
    match_ref: str,
    variant: Variant,
    seats: int,
    match_started_at: datetime,
    abandoned_at: datetime,
    evidence: Sequence[Mapping[str, Any]] = (),
    source_ref: str | None = None,
    fault_overlap: bool = False,
    arena_over: bool = False,
) -> AbandonmentRecord:
    """The record of a ranked abandonment, with its pause; once per player and match.
    `arena_over`: an arena table whose arena ended while it was in play, so its match could not
    count: the record is exempt (reason `arena_over`).

    A fault overlaps when a `server_faults` interval touches [match start, abandonment], or when
    the caller already knows it did (`fault_overlap`: the live house flags a streak of automatic
    actions that began before the current server run)."""
    match_ref = check_match(match_ref, ReviewStoreError)
    user_id = check_id(user_id, "user", ReviewStoreError)
    if not isinstance(variant, Variant) or seats not in (2, 4):
        raise ReviewStoreError("bad_record", "A ranked match is a known variant with 2 or 4 seats.")
    started = _aware(match_started_at, "match_started_at")
    at = _aware(abandoned_at, "abandoned_at")
    items = _evidence(evidence)
    async with transaction(db) as conn:
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_SPACE | user_id)
        existing = await conn.fetchrow(
            "SELECT * FROM ranked_abandonments WHERE match_ref = $1 AND user_id = $2",
            match_ref, user_id,
        )
        if existing is not None:
            return _record(existing)
        prior = await conn.fetch(
            "SELECT abandoned_at, status FROM ranked_abandonments "
            "WHERE user_id = $1 AND abandoned_at > $2 AND abandoned_at <= $3",
            user_id, at - timedelta(seconds=penalties.ROLLING_WINDOW), at,
        )
        faults = await conn.fetch(
            "SELECT id, kind, started_at, ended_at, note FROM server_faults "
            "WHERE started_at <= $2 AND (ended_at IS NULL OR ended_at >= $1) ORDER BY id",
            started, at,
        )
        try:
            verdict = penalties.assess(
                at.timestamp(), started.timestamp(),
                [penalties.PriorRecord(r["abandoned_at"].timestamp(), RecordStatus(r["status"]))
                 for r in prior],
                [penalties.Interval(f["started_at"].timestamp(),
                                    None if f["ended_at"] is None else f["ended_at"].timestamp())
                 for f in faults]
                + ([penalties.Interval(started.timestamp(), at.timestamp())]
                   if fault_overlap else []),
                void=arena_over,
            )
        except ReviewError as exc:
            raise ReviewStoreError(exc.code, exc.message) from exc
        paused_until = (None if verdict.paused_until is None
                        else at + timedelta(seconds=verdict.pause))
        restarts: list[dict[str, Any]] = []
        exempt = None
        if verdict.status is RecordStatus.EXEMPT:
            # the record says why it has no penalty: the restarts the match outlived (with the
            # downtime), the faults it touched
            restarts = await restarts_during(conn, started, at)
            exempt = _exemption(at, fault_overlap, restarts, faults, arena_over)
        timeline = _dump(_with_house_items(items, restarts, exempt))
        try:
            row = await conn.fetchrow(
                "INSERT INTO ranked_abandonments (user_id, match_ref, variant, seats, "
                "match_started_at, abandoned_at, source_ref, evidence, status, strikes, "
                "paused_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11) "
                "RETURNING *",
                user_id, match_ref, variant.value, seats, started, at, source_ref, timeline,
                verdict.status.value, verdict.strikes, paused_until,
            )
        except asyncpg.ForeignKeyViolationError as exc:
            raise ReviewStoreError("not_found", f"No user with id {user_id}.") from exc
        assert row is not None
        record = _record(row)
        await _audit(conn, record.id, None, "created", "", {
            "status": verdict.status.value, "strikes": verdict.strikes, "pause_s": verdict.pause,
            **({} if exempt is None else {"exempt_reasons": exempt["reasons"]}),
        })
        return record


def _exemption(at: datetime, restart_overlap: bool, restarts: list[dict[str, Any]],
               faults: Sequence[asyncpg.Record], arena_over: bool = False) -> dict[str, Any]:
    """The `exempt` evidence item: why the record carries no penalty. `server_restart`: the
    match outlived a server run (the live house's flag; `runs`: the runs that began during it);
    `server_fault`: a recorded fault or restart touched the match (`faults`); `arena_over`: an
    arena table its arena's end left in play, whose match could not count."""
    reasons = (["server_restart"] if restart_overlap else []) + (
        ["server_fault"] if faults else []) + (["arena_over"] if arena_over else [])
    return {
        "kind": "exempt", "at_ms": _ms(at), "seat": None, "reasons": reasons,
        "runs": [r["run"] for r in restarts] if restart_overlap else [],
        "faults": [{"id": f["id"], "kind": f["kind"], "started_ms": _ms(f["started_at"]),
                    "ended_ms": None if f["ended_at"] is None else _ms(f["ended_at"]),
                    "note": f["note"]} for f in faults],
    }


async def _locked(conn: Conn, record_id: int) -> AbandonmentRecord:
    row = await conn.fetchrow(
        "SELECT * FROM ranked_abandonments WHERE id = $1 FOR UPDATE", record_id
    )
    if row is None:
        raise ReviewStoreError("not_found", f"No abandonment record {record_id}.")
    return _record(row)


async def appeal(db: Db, record_id: int, user_id: int, text: object) -> AbandonmentRecord:
    """The player's one appeal against their own record."""
    record_id = check_id(record_id, "record", ReviewStoreError)
    user_id = check_id(user_id, "user", ReviewStoreError)
    async with transaction(db) as conn:
        record = await _locked(conn, record_id)
        if record.user_id != user_id:
            raise ReviewStoreError("forbidden", "Players appeal only their own records.")
        try:
            _, clean = penalties.appeal(record.review_state, text)
        except ReviewError as exc:
            raise ReviewStoreError(exc.code, exc.message) from exc
        row = await conn.fetchrow(
            "UPDATE ranked_abandonments SET appeal_text = $2, appealed_at = now(), "
            "appeal_answered = false WHERE id = $1 RETURNING *",
            record_id, clean,
        )
        assert row is not None
        await _audit(conn, record_id, user_id, "appeal", clean, {})
        return _record(row)


# why an exempt record has no penalty, said by the refusal of a decision on it
_EXEMPT_WHY = {"server_restart": "its match spanned a server restart",
               "server_fault": "a recorded server fault touched its match",
               "arena_over": "its arena ended with the table in play: the match could not count"}


def _exempt_message(record: AbandonmentRecord) -> str:
    """The refusal of a decision on an exempt record, with the reasons its `exempt` evidence
    item names (a restart is not a fault: the operator checks the one that happened)."""
    item = next((e for e in record.evidence if e.get("kind") == "exempt"), None)
    reasons = item.get("reasons") if item is not None else None
    why = [_EXEMPT_WHY[r] for r in reasons or () if r in _EXEMPT_WHY]
    if not why:
        why = ["its match spanned a server restart or a recorded server fault"]
    return f"This record is exempt ({' and '.join(why)}): it has no penalty to review."


async def decide(
    db: Db, record_id: int, operator_id: int, decision: Decision, note: object,
    expected: object = None,
) -> AbandonmentRecord:
    """An operator upholds or overturns a record, with a note. Overturning gives back the stake
    the player lost (from the house) and the rating points the match cost them, and lifts the
    pause; all of it once, in the same transaction as the decision and its audit row.
    `expected`: the state token the operator read (`penalties.decide`), checked under the
    record's lock, so that of two decisions on the same reading only the first is taken."""
    if not isinstance(decision, Decision):
        raise ReviewStoreError("bad_record", f"Unknown decision {decision!r}.")
    record_id = check_id(record_id, "record", ReviewStoreError)
    operator_id = check_id(operator_id, "user", ReviewStoreError)
    async with transaction(db) as conn:
        role = await conn.fetchval("SELECT role FROM users WHERE id = $1", operator_id)
        if role != "operator":
            raise ReviewStoreError("forbidden", "Only operators review abandonment records.")
        record = await _locked(conn, record_id)
        if record.user_id == operator_id:
            # a judge of their own case: an operator's own abandonment is another's to review
            raise ReviewStoreError("own_record", "An operator does not review their own"
                                   " abandonment record: another operator does.")
        try:
            ruling, clean = penalties.decide(record.review_state, decision, note, expected)
        except ReviewError as exc:
            message = _exempt_message(record) if exc.code == "exempt" else exc.message
            raise ReviewStoreError(exc.code, message) from exc
        detail: dict[str, Any] = {"from": record.status.value}
        reversed_at = None
        if ruling.reverse:
            # the decision's time (the transaction's `now()`, as `decided_at`): the rating's
            # reversal row is dated when the points came back, not at the abandonment
            reversed_at = await conn.fetchval("SELECT now()")
            detail |= await _reverse(conn, record, reversed_at)
        row = await conn.fetchrow(
            "UPDATE ranked_abandonments SET status = $2, appeal_answered = $3, "
            "decided_at = now(), decided_by = $4, reversed_at = coalesce($5, reversed_at) "
            "WHERE id = $1 RETURNING *",
            record_id, ruling.state.status.value, ruling.state.appeal_answered, operator_id,
            reversed_at,
        )
        assert row is not None
        await _audit(conn, record_id, operator_id, decision.value, clean, detail)
        return _record(row)


async def _reverse(conn: Conn, record: AbandonmentRecord, at: datetime) -> dict[str, Any]:
    try:
        posting = await ledger.reverse_forfeit(conn, record.match_ref, record.user_id)
        chips = posting.amount_for(ledger.wallet(record.user_id))
    except ledger.LedgerError as exc:
        # no stake was held, or the match was refunded: there is no lost stake to give back
        if exc.code not in ("not_held", "not_forfeited"):
            raise
        chips = 0
    change = await ratings.reverse_match(
        conn, f"abandonment:{record.id}", record.user_id, record.match_ref, at,
    )
    return {"chips_returned": chips, "rating_returned": 0.0 if change is None else change.delta,
            "pause_lifted": record.paused_until is not None}


async def get_record(db: Db, record_id: int) -> AbandonmentRecord:
    record_id = check_id(record_id, "record", ReviewStoreError)
    row = await db.fetchrow("SELECT * FROM ranked_abandonments WHERE id = $1", record_id)
    if row is None:
        raise ReviewStoreError("not_found", f"No abandonment record {record_id}.")
    return _record(row)


async def list_records(
    db: Db,
    *,
    status: RecordStatus | None = None,
    user_id: int | None = None,
    variant: Variant | None = None,
    seats: int | None = None,
    appealed: bool | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    before_id: int | None = None,
    match_prefix: str | None = None,
    appeal_open: bool = False,
) -> tuple[AbandonmentRecord, ...]:
    """Records for the review queue or a player's page, newest first; every filter optional.
    `match_prefix` keeps the matches whose reference starts with it and a ':' (the server names
    its matches `<table kind>:<table id>:<match number>`, so this filters by table kind).
    `appeal_open` keeps the records whose appeal waits for a decision (`appealed` takes the
    answered ones too)."""
    if status is not None and not isinstance(status, RecordStatus):
        raise ReviewStoreError("bad_filter", f"Unknown status {status!r}.")
    if variant is not None and not isinstance(variant, Variant):
        raise ReviewStoreError("bad_filter", f"Unknown variant {variant!r}.")
    if seats not in (None, 2, 4):
        raise ReviewStoreError("bad_filter", "Seats are 2 or 4.")
    for value, what in ((user_id, "user"), (before_id, "record")):
        if value is not None:
            check_id(value, what, ReviewStoreError)
    if not 1 <= limit <= _MAX_PAGE:
        raise ReviewStoreError("bad_page", f"A page holds 1 to {_MAX_PAGE} records.")
    for bound in (since, until):
        if bound is not None:
            _aware(bound, "a time filter")
    if match_prefix is not None and (
        not isinstance(match_prefix, str) or not match_prefix.isalnum()
    ):
        raise ReviewStoreError("bad_filter", "A match prefix is letters and digits.")
    rows = await db.fetch(
        "SELECT * FROM ranked_abandonments WHERE "
        "($1::text IS NULL OR status = $1) AND ($2::bigint IS NULL OR user_id = $2) "
        "AND ($3::text IS NULL OR variant = $3) AND ($4::smallint IS NULL OR seats = $4) "
        "AND ($5::boolean IS NULL OR (appeal_text IS NOT NULL) = $5) "
        "AND ($6::timestamptz IS NULL OR abandoned_at >= $6) "
        "AND ($7::timestamptz IS NULL OR abandoned_at < $7) "
        "AND ($8::bigint IS NULL OR id < $8) "
        "AND ($10::text IS NULL OR starts_with(match_ref, $10 || ':')) "
        "AND (NOT $11::boolean OR (appeal_text IS NOT NULL AND NOT appeal_answered)) "
        "ORDER BY id DESC LIMIT $9",
        None if status is None else status.value, user_id,
        None if variant is None else variant.value, seats, appealed, since, until,
        before_id, limit, match_prefix, bool(appeal_open),
    )
    return tuple(_record(r) for r in rows)


async def decisions(db: Db, record_ids: Sequence[int]) -> dict[int, tuple[AuditEntry, ...]]:
    """The operators' decisions (uphold, overturn) on each of these records, oldest first, with
    their notes and details (an overturn's: what it gave back); a record without one is absent.
    What a player's own page shows them of the review: not who decided."""
    ids = [check_id(i, "record", ReviewStoreError) for i in record_ids]
    rows = await db.fetch(
        "SELECT * FROM ranked_review_audit WHERE record_id = ANY($1::bigint[]) "
        "AND action IN ('uphold', 'overturn') ORDER BY id",
        ids,
    )
    found: dict[int, list[AuditEntry]] = {}
    for r in rows:
        found.setdefault(r["record_id"], []).append(AuditEntry(
            r["id"], r["record_id"], None, None, r["action"], r["note"],
            json.loads(r["detail"]), r["at"]))
    return {record: tuple(entries) for record, entries in found.items()}


async def audit_log(
    db: Db, *, record_id: int | None = None, limit: int = 100, before_id: int | None = None
) -> tuple[AuditEntry, ...]:
    """The audit log (of one record, or all), newest first."""
    for value in (record_id, before_id):
        if value is not None:
            check_id(value, "record", ReviewStoreError)
    if not 1 <= limit <= _MAX_PAGE:
        raise ReviewStoreError("bad_page", f"A page holds 1 to {_MAX_PAGE} entries.")
    rows = await db.fetch(
        "SELECT a.*, u.name AS actor_name FROM ranked_review_audit a "
        "LEFT JOIN users u ON u.id = a.actor_id "
        "WHERE ($1::bigint IS NULL OR a.record_id = $1) AND ($2::bigint IS NULL OR a.id < $2) "
        "ORDER BY a.id DESC LIMIT $3",
        record_id, before_id, limit,
    )
    return tuple(
        AuditEntry(r["id"], r["record_id"], r["actor_id"], r["actor_name"], r["action"],
                   r["note"], json.loads(r["detail"]), r["at"])
        for r in rows
    )


async def pause_remaining(db: Db, user_id: int, now: datetime) -> timedelta:
    """How long the player is still kept out of the ranked queues (zero: free to queue)."""
    user_id = check_id(user_id, "user", ReviewStoreError)
    now = _aware(now, "now")
    rows = await db.fetch(
        "SELECT status, paused_until FROM ranked_abandonments "
        "WHERE user_id = $1 AND paused_until > $2",
        user_id, now,
    )
    seconds = penalties.pause_remaining(
        [penalties.PauseRecord(RecordStatus(r["status"]), r["paused_until"].timestamp())
         for r in rows],
        now.timestamp(),
    )
    return timedelta(seconds=seconds)
