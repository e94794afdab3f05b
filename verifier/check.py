"""The verifier's checks (docs/FAIRNESS.md 9): each a named result with its status and reason.

`check_hand` verifies one signed hand record; `check_chain` verifies a table's records in order
(links, seed chain, match continuity, keys) plus any statements found among them. Input that
cannot be read as a record at all raises `verifier.sources.InputError` (exit 2 in the CLI); a
record that reads fine but does not verify yields failed checks (exit 1).
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import shlex
import urllib.parse
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from truco.cards import Card
from truco.fairness import (
    Contribution,
    commitment,
    deal_cards,
    deck_message,
    derive_deck,
    draw_first_dealer,
    first_dealer_message,
    shuffle_trace,
)
from truco.records import (
    GENESIS_HASH,
    MAX_SEED_CHAIN_LENGTH,
    DealerChoice,
    HandRecord,
    KeyHandover,
    LedgerHead,
    RecordEnd,
    RecordError,
    RecordKind,
    ReplayError,
    SeedAnchor,
    Signature,
    Statement,
    key_id_for,
    parse_record,
    parse_statement,
    record_hash,
    record_kind,
    replay,
)
from truco.state import Deal
from truco.variants import Variant
from verifier.sources import InputError


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"  # verified as far as possible, with a caveat the user must read
    SKIP = "skip"  # not checkable from this input (e.g. a link to a record not given)


def rebuild_deal(
    seed: bytes,
    table_id: str,
    hand_number: int,
    variant: Variant,
    contributions: Sequence[Contribution],
    dealer: int | None,
) -> dict[str, Any]:
    """What anyone rebuilds from a revealed seed (FAIRNESS.md 5), as JSON: the deck with the
    stream bytes it rejected, the first-dealer draw, the deal from `dealer` (default: the drawn
    first dealer) and the vira; plus the messages and the first stream block, to debug another
    implementation against. ValueError on bad inputs."""
    seats = len(contributions)
    trace = shuffle_trace(seed, table_id, hand_number, contributions)
    first_dealer = draw_first_dealer(seed, table_id, contributions, seats)
    dealt_by = first_dealer if dealer is None else dealer
    deal = deal_cards(trace.deck, variant, seats, dealt_by)
    message = deck_message(table_id, hand_number, contributions)
    return {
        "commitment": commitment(seed).hex(),
        "deck_message": message.hex(),
        "first_dealer_message": first_dealer_message(table_id, contributions, seats).hex(),
        # straight from the spec (not through truco.fairness), so it can be compared on its own
        "deck_stream_block_0": hmac.digest(seed, message + bytes(4), "sha256").hex(),
        "deck": [str(card) for card in trace.deck],
        "bytes_read": trace.bytes_read,
        "rejections": [
            {"offset": r.offset, "byte": r.byte, "modulus": r.modulus, "bound": r.bound}
            for r in trace.rejections
        ],
        "first_dealer": first_dealer,
        "dealer": dealt_by,
        "hands": [[str(card) for card in hand] for hand in deal.hands],
        "vira": None if deal.vira is None else str(deal.vira),
    }


class CheckName(StrEnum):
    SOURCE = "source"
    KEY = "key"
    SIGNATURE = "signature"
    COMMITMENT = "commitment"
    DECK = "deck"
    DEALER = "dealer"
    DEAL = "deal"
    REPLAY = "replay"
    MINE = "mine"
    LINK = "link"
    SEED_CHAIN = "seed-chain"
    MATCH = "match"
    LEDGER = "ledger"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: CheckName
    status: Status
    reason: str

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    def to_json(self) -> dict[str, str]:
        return {"check": self.name.value, "status": self.status.value, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class EntryReport:
    """The checks of one record or statement."""

    label: str
    kind: RecordKind
    checks: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return not any(check.failed for check in self.checks)

    def check(self, name: CheckName) -> CheckResult:
        """The result of one named check (KeyError when it was not run)."""
        for result in self.checks:
            if result.name is name:
                return result
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.label,
            "kind": self.kind.value,
            "ok": self.ok,
            "checks": [check.to_json() for check in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Report:
    entries: tuple[EntryReport, ...]

    @property
    def ok(self) -> bool:
        return all(entry.ok for entry in self.entries)

    @property
    def failures(self) -> tuple[tuple[str, CheckResult], ...]:
        return tuple(
            (entry.label, check) for entry in self.entries for check in entry.checks if check.failed
        )

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": [entry.to_json() for entry in self.entries]}


def _pass(name: CheckName, reason: str) -> CheckResult:
    return CheckResult(name, Status.PASS, reason)


def _fail(name: CheckName, reason: str) -> CheckResult:
    return CheckResult(name, Status.FAIL, reason)


ROTATION_HINT = (
    "; what the house signed before a key rotation needs the older key pinned too (--key OLD"
    " --key NEW: the house's /api/key lists its hand-overs)"
)


@dataclass(slots=True)
class KeyTrust:
    """Which keys may sign: the pinned ones, plus keys they handed over to.

    With nothing pinned the first signer met is trusted, and every key check says so.
    """

    pinned: frozenset[bytes]
    trusted: set[bytes] = field(default_factory=set)
    # whether hand-overs were there to follow (`check_hand` without the table's chain: none)
    followed: bool = True
    # what a hand record's key check that fails with pinned keys adds: what to do
    hint: str = ROTATION_HINT

    def __post_init__(self) -> None:
        self.trusted |= set(self.pinned)

    def adopt_first_signer(self, public_key: bytes) -> None:
        if not self.pinned and not self.trusted:
            self.trusted.add(public_key)

    def check(self, signed: Signature, *, record: bool = False) -> CheckResult:
        """`key` of a record or statement; `record`: a hand record's, whose failure with pinned
        keys says what to do (`hint`)."""
        actual = key_id_for(signed.public_key)
        if signed.key_id != actual:
            return _fail(
                CheckName.KEY, f"key_id {signed.key_id} is not the id of public_key ({actual})"
            )
        if signed.public_key in self.trusted:
            if self.pinned:
                how = (
                    "pinned"
                    if signed.public_key in self.pinned
                    else "handed over from a pinned key"
                )
                return _pass(CheckName.KEY, f"signed by key {actual} ({how})")
            return CheckResult(
                CheckName.KEY,
                Status.WARN,
                f"key not pinned: trusting key {actual} found in the input; pin the house's"
                " published key with --key or --key-file",
            )
        if self.pinned:
            pinned = ", ".join(sorted(key_id_for(key) for key in self.pinned))
            return _fail(
                CheckName.KEY,
                f"signed by key {actual}, which is not the pinned key ({pinned})"
                + (" nor handed over from it" if self.followed else "")
                + (self.hint if record else ""),
            )
        return _fail(
            CheckName.KEY,
            f"signed by key {actual}, not by the chain's first signer nor a key it handed over to",
        )


def verify_signature(obj: Mapping[str, Any], public_key: bytes, *, parsed: bool = False) -> bool:
    """`verifier.signing.verify_signature`, imported where a signature is checked: it needs
    PyNaCl, which the commands that check no signature (deck, the derivation vectors) do not."""
    from verifier.signing import verify_signature as verify

    return verify(obj, public_key, parsed=parsed)


def _signature_check(obj: Mapping[str, Any], signed: Signature) -> CheckResult:
    if verify_signature(obj, signed.public_key, parsed=True):
        return _pass(CheckName.SIGNATURE, f"Ed25519 signature by key {signed.key_id} is valid")
    return _fail(
        CheckName.SIGNATURE,
        f"Ed25519 signature does not verify for key {key_id_for(signed.public_key)}:"
        " the signed content was altered or signed by another key",
    )


def _first_difference(derived: Sequence[Card], recorded: Sequence[Card]) -> str:
    for index, (mine, theirs) in enumerate(zip(derived, recorded, strict=True)):
        if mine != theirs:
            return f"position {index}: derived {mine}, the record has {theirs}"
    return "identical"


def _deal_difference(derived: Deal, recorded: Deal) -> str:
    for seat, (mine, theirs) in enumerate(zip(derived.hands, recorded.hands, strict=True)):
        for number, (card, other) in enumerate(zip(mine, theirs, strict=True)):
            if card != other:
                return f"seat {seat} card {number}: dealt {card}, the record has {other}"
    return f"vira: dealt {derived.vira}, the record has {recorded.vira}"


def _hand_checks(
    obj: Mapping[str, Any], record: HandRecord, trust: KeyTrust, mine: bytes | None
) -> list[CheckResult]:
    assert record.signed_by is not None  # parse_record(signed=True) guarantees it
    checks = [trust.check(record.signed_by, record=True), _signature_check(obj, record.signed_by)]

    if hashlib.sha256(record.seed).digest() == record.commitment:
        checks.append(_pass(CheckName.COMMITMENT, "SHA-256(seed) equals the commitment"))
    else:
        checks.append(
            _fail(
                CheckName.COMMITMENT,
                f"SHA-256(seed) is {hashlib.sha256(record.seed).hexdigest()},"
                f" the commitment is {record.commitment.hex()}",
            )
        )

    deck = derive_deck(record.seed, record.table, record.hand, record.contributions)
    if deck == record.deck:
        checks.append(_pass(CheckName.DECK, "the deck derived from seed and contributions matches"))
    else:
        checks.append(_fail(CheckName.DECK, _first_difference(deck, record.deck)))

    seats = record.config.seats
    if record.dealer_by is DealerChoice.DRAW:
        drawn = draw_first_dealer(record.seed, record.table, record.contributions, seats)
        if drawn == record.dealer:
            checks.append(_pass(CheckName.DEALER, f"first dealer drawn: seat {drawn}"))
        else:
            checks.append(
                _fail(
                    CheckName.DEALER, f"the draw gives seat {drawn}, the record has {record.dealer}"
                )
            )
    elif record.hand == 1:
        checks.append(
            _fail(CheckName.DEALER, "hand 1 of a table starts a match: its dealer must be drawn")
        )
    else:
        checks.append(
            CheckResult(
                CheckName.DEALER,
                Status.SKIP,
                "dealer by rotation: checked against the previous hand by the chain verification",
            )
        )

    deal = deal_cards(deck, record.config.variant, seats, record.dealer)
    if deal == record.deal:
        checks.append(
            _pass(CheckName.DEAL, f"dealt from mano (seat {(record.dealer + 1) % seats})")
        )
    else:
        checks.append(_fail(CheckName.DEAL, _deal_difference(deal, record.deal)))

    try:
        replay(record)
    except ReplayError as exc:
        checks.append(_fail(CheckName.REPLAY, str(exc)))
    else:
        ending = (
            "completed" if record.end is RecordEnd.COMPLETED else f"ended by {record.end.value}"
        )
        checks.append(
            _pass(
                CheckName.REPLAY,
                f"{len(record.actions)} action(s) legal, hand {ending},"
                f" score {list(record.score_after)}",
            )
        )

    if mine is not None:
        checks.append(_mine_check(record, mine))
    return checks


def _mine_check(record: HandRecord, mine: bytes) -> CheckResult:
    seats = [seat for seat, value in enumerate(record.contributions) if value == mine]
    if seats:
        where = ", ".join(str(seat) for seat in seats)
        return _pass(CheckName.MINE, f"your contribution is in the record (seat {where})")
    absent = [seat for seat, value in enumerate(record.contributions) if value is None]
    note = f"; seat(s) {', '.join(map(str, absent))} sent nothing" if absent else ""
    return _fail(
        CheckName.MINE, f"your contribution ({len(mine)} bytes) is not in the record{note}"
    )


def _label(record: HandRecord) -> str:
    return f"table {record.table} hand {record.hand}"


def parse_hand(obj: Mapping[str, Any], where: str) -> HandRecord:
    """The record `obj`, parsed (InputError naming `where` when it is not a valid hand record)."""
    return _parse_hand(obj, where)


def _parse_hand(obj: Mapping[str, Any], where: str) -> HandRecord:
    try:
        return parse_record(dict(obj))
    except RecordError as exc:
        raise InputError(f"{where}: not a valid hand record: {exc}") from None


def _source_check(record: HandRecord, asked: tuple[str, int]) -> CheckResult:
    """The record is the hand its source names (`/hands/{table}-{n}`), not another one."""
    table, hand = asked
    if (record.table, record.hand) == (table, hand):
        return _pass(CheckName.SOURCE, f"the record is hand {hand} of table {table}, as asked")
    return _fail(
        CheckName.SOURCE,
        f"asked for hand {hand} of table {table}, the record is hand {record.hand} of table"
        f" {record.table}",
    )


def chain_hint(table: str, source: str | None = None, keys: str | None = None) -> str:
    """The `chain` command that checks a hand's seed chain, in backticks, for a reason to quote:
    `source` is the chain's URL or file (default: where a house serves it, with the house's
    address to fill in), `keys` the pinning options (default: the house's key to fill in)."""
    where = source or f"HOUSE/tables/{urllib.parse.quote(table, safe='')}/chain"
    pins = keys or "--key HOUSE_KEY"
    blanks = [
        *([] if source else ["HOUSE is the address of the house that dealt the hand"]),
        *([] if keys else ["HOUSE_KEY is the house's published key, from /api/key"]),
    ]
    note = f" ({'; '.join(blanks)})" if blanks else ""
    return f"`barajamos-verify chain {shlex.quote(where)} {pins}`{note}"


@dataclass(frozen=True, slots=True)
class TableChain:
    """The chain of a hand's table, as its house serves it (`/tables/{table}/chain`), fetched
    for `check_hand`: its signed seed anchors (and key hand-overs) place the record's seed in the
    table's seed chain. `entries` is None when it could not be had, and `problem` says why."""

    where: str
    entries: Sequence[Mapping[str, Any]] | None
    problem: str = ""


def check_hand(
    obj: Mapping[str, Any],
    *,
    pinned: Iterable[bytes] = (),
    mine: bytes | None = None,
    where: str = "record",
    asked: tuple[str, int] | None = None,
    chain: TableChain | None = None,
    chain_command: str | None = None,
) -> Report:
    """Verify one signed hand record (InputError when it is not a well-formed record).

    `asked`: the (table, hand) the source names (its URL `/hands/{table}-{n}`); the record must
    be that hand (the `source` check).

    One record cannot show that its seed was fixed before the players' entropy (any seed has its
    own commitment, FAIRNESS.md 12): the `seed-chain` check places the seed in the table's
    signed seed chain when `chain` (the table's chain) is given, and is otherwise a warning
    naming `chain_command`, the command that checks it (default: a description of it).
    """
    record = _parse_hand(obj, where)
    command = chain_command or chain_hint(record.table)
    trust = KeyTrust(frozenset(pinned))
    assert record.signed_by is not None
    trust.adopt_first_signer(record.signed_by.public_key)
    statements: _ChainStatements | None = None
    if chain is not None and chain.entries is not None:
        statements = _chain_statements(chain.entries)
        # a record signed after a key rotation verifies for whoever pinned the key before it
        # through the hand-overs the table's chain carries, as `chain` verifies it
        _follow_handovers(statements.readable, trust)
    else:
        trust.followed = False
        trust.hint = (
            "; after a key rotation, pin the house's keys before and after it (--key OLD --key"
            " NEW: its /api/key lists its hand-overs) or check the table's chain, which carries"
            f" the hand-overs: {command}"
        )
    source = None if asked is None else _source_check(record, asked)
    checks = [] if source is None else [source]
    checks += _hand_checks(obj, record, trust, mine)
    if source is not None and source.failed:
        placed = CheckResult(
            CheckName.SEED_CHAIN, Status.SKIP, "the record is not the hand asked for"
        )
    elif chain is None:
        placed = CheckResult(
            CheckName.SEED_CHAIN,
            Status.WARN,
            "not checked from one record: any seed matches its own commitment, so only the"
            " seed's place in the table's signed seed chain shows it was fixed before the"
            f" players' entropy; check it with {command}",
        )
    else:
        placed = _placed_seed_check(record, chain, statements, trust, command)
    at = next(i for i, c in enumerate(checks) if c.name is CheckName.COMMITMENT) + 1
    checks.insert(at, placed)
    entry = EntryReport(_label(record), RecordKind.HAND, tuple(checks))
    return Report((entry,))


@dataclass(frozen=True, slots=True)
class _ChainStatements:
    """The seed anchors and key hand-overs among a fetched chain's entries that parse, and the
    first entry that does not, said (the `seed-chain` check names it)."""

    readable: list[tuple[Mapping[str, Any], Statement]]
    problem: str | None


def _chain_statements(entries: Sequence[Mapping[str, Any]]) -> _ChainStatements:
    readable: list[tuple[Mapping[str, Any], Statement]] = []
    problem = None
    for index, obj in enumerate(entries):
        try:
            if record_kind(dict(obj)) in (RecordKind.SEED_ANCHOR, RecordKind.KEY_HANDOVER):
                readable.append((obj, parse_statement(dict(obj))))
        except RecordError as exc:
            if problem is None:
                problem = f"entry {index} is not a valid statement ({exc})"
    return _ChainStatements(readable, problem)


def _placed_seed_check(
    record: HandRecord,
    chain: TableChain,
    statements: _ChainStatements | None,
    trust: KeyTrust,
    command: str,
) -> CheckResult:
    """`seed-chain` of one record against the signed seed anchors of its table's chain (as
    `check_chain` checks a record without the hand before it): hashed `hand - chain_start + 1`
    times, the seed gives the anchor of its chain. Anchors count when signed by a trusted key
    (`trust`, which `check_hand` widened by the key hand-overs in the chain)."""
    where = f"the table's chain at {chain.where}"
    not_checked = f"the seed's place in the table's signed seed chain is not checked; run {command}"
    if statements is None:
        return CheckResult(
            CheckName.SEED_CHAIN,
            Status.WARN,
            f"{where} could not be had ({chain.problem.removeprefix(f'{chain.where}: ')}):"
            f" {not_checked}",
        )
    if statements.problem is not None:
        return CheckResult(
            CheckName.SEED_CHAIN, Status.WARN, f"{where}: {statements.problem}: {not_checked}"
        )
    start = record.chain_start
    anchors = _Anchors()
    refused: list[str] = []  # why an anchor of this record's chain does not count
    for obj, statement in statements.readable:
        if not isinstance(statement, SeedAnchor) or statement.table != record.table:
            continue
        assert statement.signed_by is not None
        key = trust.check(statement.signed_by)
        signature = _signature_check(obj, statement.signed_by)
        if key.failed or signature.failed:
            if statement.chain_start == start:
                refused.append(key.reason if key.failed else signature.reason)
            continue
        anchors.add(statement)
    same = anchors.get(start, [])
    if not same:
        if refused:
            return _fail(
                CheckName.SEED_CHAIN,
                f"{where} holds the anchor of the seed chain from hand {start}, but it does not"
                f" count: {refused[0]}",
            )
        return CheckResult(
            CheckName.SEED_CHAIN,
            Status.WARN,
            f"{where} holds no signed anchor of the seed chain from hand {start}: {not_checked}",
        )
    if len(same) > 1:
        return _fail(
            CheckName.SEED_CHAIN,
            f"{where} holds signed anchors of the seed chain from hand {start} that disagree:"
            " the house committed to two seed chains",
        )
    anchor = same[0]
    index = record.hand - start + 1
    times = f"{index} time" + ("" if index == 1 else "s")
    if index > anchor.length:  # checked before any hashing
        return _fail(
            CheckName.SEED_CHAIN,
            f"hand {record.hand} is index {index} of the seed chain from hand {start}, whose"
            f" signed anchor, in {where}, gives it {anchor.length} seed(s): past its end",
        )
    if _hash_times(record.seed, index) != anchor.anchor:
        return _fail(
            CheckName.SEED_CHAIN,
            f"the seed, hashed {times}, does not give the anchor the house signed before hand"
            f" {start}, in {where}: it is not the seed fixed before the hand, and may have been"
            " chosen after the players' entropy",
        )
    placed = _pass(
        CheckName.SEED_CHAIN,
        f"the seed, hashed {times}, gives the anchor the house signed before hand {start},"
        f" in {where}: it was fixed before the players' entropy",
    )
    return _reanchored(anchor, anchors, placed)


# ---------------------------------------------------------------------------------------------
# Chains


@dataclass(frozen=True, slots=True)
class _Hand:
    obj: Mapping[str, Any]
    record: HandRecord
    digest: bytes


def _statement_label(statement: Statement) -> str:
    if isinstance(statement, SeedAnchor):
        return f"seed anchor of table {statement.table} from hand {statement.chain_start}"
    if isinstance(statement, LedgerHead):
        return f"ledger head at {_moment(statement.at)}"
    return f"key hand-over to {statement.new_key_id} at {_moment(statement.at)}"


def check_chain(
    entries: Sequence[Mapping[str, Any]],
    *,
    pinned: Iterable[bytes] = (),
    where: str = "chain",
    asked: str | None = None,
    served: bool = False,
) -> Report:
    """Verify a table's hand records in order, with any statements among them.

    `asked`: the table the source names (its URL `/tables/{table}/chain`); it is then the
    chain's table, so a record of any other table fails `link`. Otherwise the chain's table is
    the first record's. `served`: the input is the house's URL of the chain, which it serves with
    a signed ledger head naming the table; the table's last record warns when none is there.
    """
    hands: list[_Hand] = []
    statements: list[tuple[Mapping[str, Any], Statement]] = []
    for index, obj in enumerate(entries):
        entry_where = f"{where} entry {index}"
        try:
            kind = record_kind(dict(obj))
            if kind is RecordKind.HAND:
                record = parse_record(dict(obj))
                hands.append(_Hand(obj, record, record_hash(obj, checked=False)))
            else:
                statements.append((obj, parse_statement(dict(obj))))
        except RecordError as exc:
            raise InputError(f"{entry_where}: not a valid record or statement: {exc}") from None
    if not hands:
        raise InputError(f"{where}: no hand records")

    trust = KeyTrust(frozenset(pinned))
    first_signer = hands[0].record.signed_by
    assert first_signer is not None
    trust.adopt_first_signer(first_signer.public_key)
    _follow_handovers(statements, trust)

    table = hands[0].record.table if asked is None else asked
    # this table's records by hand number (a record of another table fails its link; it is
    # never what an anchor or a ledger head of this table is compared with)
    by_number: dict[int, list[_Hand]] = {}
    for hand in hands:
        if hand.record.table == table:
            by_number.setdefault(hand.record.hand, []).append(hand)
    statement_checks: list[list[CheckResult]] = []
    # chain_start -> the distinct anchors trusted statements give for it (more than one is a
    # contradiction the house signed, whatever their order in the file)
    anchors = _Anchors()
    # hand -> the hashes trusted ledger heads give this table's record of it (more than one:
    # the house published two histories)
    heads: dict[int, set[bytes]] = {}
    # chain_start -> why this table's anchors of that chain in the input do not count (a
    # signature that does not verify, an untrusted signer): the records say so, not "missing"
    refused: dict[int, list[str]] = {}
    for obj, statement in statements:
        assert statement.signed_by is not None
        checks = [_statement_key_check(statement, trust),
                  _signature_check(obj, statement.signed_by)]
        trusted = not any(check.failed for check in checks)
        if isinstance(statement, SeedAnchor) and statement.table == table and trusted:
            anchors.add(statement)
        elif isinstance(statement, SeedAnchor) and statement.table == table:
            failed = next(check for check in checks if check.failed)
            refused.setdefault(statement.chain_start, []).append(failed.reason)
        if isinstance(statement, LedgerHead) and trusted:
            for entry in statement.tables:
                if entry.table == table:
                    heads.setdefault(entry.hand, set()).add(entry.hash)
        statement_checks.append(checks)

    reports: list[EntryReport] = []
    for (_, statement), checks in zip(statements, statement_checks, strict=True):
        trusted = not any(check.failed for check in checks)
        if isinstance(statement, SeedAnchor) and statement.table == table and trusted:
            check = _anchor_check(statement, anchors[statement.chain_start], by_number)
            checks.append(_reanchored(statement, anchors, check))
        if isinstance(statement, LedgerHead):
            checks.append(_ledger_check(statement, table, by_number, heads, trusted))
        reports.append(EntryReport(_statement_label(statement), _kind_of(statement), tuple(checks)))

    budget = _HashBudget(_HASH_BUDGET)
    previous: _Hand | None = None
    # the latest record of each hand number met so far (this table's): a hand's seed and match
    # are compared with its predecessor's wherever that stands in the input
    seen: dict[int, _Hand] = {}
    for hand in hands:
        record = hand.record
        checks = _hand_checks(hand.obj, record, trust, None)
        checks.append(_link_check(hand, previous, table, seen, by_number))
        if record.table == table:
            before = seen.get(record.hand - 1)
            checks.append(_seed_chain_check(record, before, anchors, budget, refused))
            checks.append(_match_check(record, before))
            checks = _rotation_checked(checks, record, before)
        else:
            other = f"a record of table {record.table!r}: not compared with table {table!r}'s"
            checks.append(CheckResult(CheckName.SEED_CHAIN, Status.SKIP, f"{other} seed chain"))
            checks.append(CheckResult(CheckName.MATCH, Status.SKIP, f"{other} matches"))
        reports.append(EntryReport(_label(record), RecordKind.HAND, tuple(checks)))
        previous = hand
        if record.table == table:
            seen[record.hand] = hand
    if served and not heads and by_number:
        # what a saved copy of the chain would be compared with later (section 8) is missing
        # the reports are the statements', then the hands' in input order
        last = len(statements) + max(
            i for i, hand in enumerate(hands) if hand.record.table == table
        )
        missing = CheckResult(
            CheckName.LEDGER,
            Status.WARN,
            f"the house serves a table's chain with its signed ledger head, and {where} holds"
            f" none that names table {table}: nothing signed says how long its history was when"
            " it was served (a later download cannot be held to it)",
        )
        report = reports[last]
        reports[last] = EntryReport(report.label, report.kind, (*report.checks, missing))
    return Report(tuple(reports))


def _same_anchor(one: SeedAnchor, other: SeedAnchor) -> bool:
    return (one.anchor, one.length) == (other.anchor, other.length)


class _Anchors(dict[int, list[SeedAnchor]]):
    """A table's trusted seed anchors by `chain_start`, each distinct one once, and the longest
    of each start (`previous`). Built and asked in linear and logarithmic time: an input of
    many anchors (a chain file holds up to 64 MiB) must not cost quadratic work."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[int, bytes, int]] = set()
        self._longest: dict[int, SeedAnchor] = {}
        self._starts: list[int] | None = None

    def add(self, anchor: SeedAnchor) -> None:
        key = (anchor.chain_start, anchor.anchor, anchor.length)
        if key in self._seen:
            return
        self._seen.add(key)
        self.setdefault(anchor.chain_start, []).append(anchor)
        longest = self._longest.get(anchor.chain_start)
        if longest is None or anchor.length > longest.length:
            self._longest[anchor.chain_start] = anchor
        self._starts = None

    def previous(self, start: int) -> SeedAnchor | None:
        """The longest anchor of the nearest earlier chain_start than `start`, if any."""
        if self._starts is None:
            self._starts = sorted(self)
        index = bisect.bisect_left(self._starts, start)
        return None if index == 0 else self._longest[self._starts[index - 1]]


def _anchor_check(
    anchor: SeedAnchor, same_chain: Sequence[SeedAnchor], by_number: Mapping[int, Sequence[_Hand]]
) -> CheckResult:
    """A trusted seed anchor of this table against the other anchors of its chain and against
    the first hand of its chain (FAIRNESS.md 8)."""
    start = anchor.chain_start
    # the distinct anchors of a chain: the first or the second differs from this one, if any does
    other = next((other for other in same_chain[:2] if not _same_anchor(anchor, other)), None)
    if other is not None:
        what = (
            f"anchor {other.anchor.hex()}, this one {anchor.anchor.hex()}: the house committed"
            " to two seed chains"
            if other.anchor != anchor.anchor
            else f"length {other.length}, this one {anchor.length}"
        )
        return _fail(
            CheckName.SEED_CHAIN,
            f"another signed anchor of table {anchor.table} from hand {start} disagrees ({what})",
        )
    first_hands = by_number.get(start, ())
    if not first_hands:
        return CheckResult(
            CheckName.SEED_CHAIN,
            Status.SKIP,
            f"hand {start}, the first of this seed chain, is not in the input",
        )
    for hand in first_hands:
        record = hand.record
        if record.chain_start != start:
            return _fail(
                CheckName.SEED_CHAIN,
                f"hand {start} says its seed chain starts at hand {record.chain_start}, not at"
                f" this anchor's hand {start}",
            )
        if record.commitment != anchor.anchor:
            return _fail(
                CheckName.SEED_CHAIN,
                f"the commitment of hand {start} is {record.commitment.hex()}, not this anchor",
            )
    return _pass(
        CheckName.SEED_CHAIN,
        f"the commitment of hand {start}, the first of its chain, is this anchor",
    )


def _reanchored(anchor: SeedAnchor, anchors: _Anchors, check: CheckResult) -> CheckResult:
    """FAIRNESS.md 3.5: a new seed chain is anchored when the previous one is used up (or its
    tip lost). An anchor starting where the previous anchor's seeds still reached is a warning:
    allowed only for a lost tip, which the verifier cannot tell from a choice. So is one right
    after a chain shorter than the house's (`HOUSE_CHAIN_LENGTH`): each new chain's seeds were
    drawn later, so a house anchoring short chains (one hand each, say) commits less far ahead
    than it says."""
    start = anchor.chain_start
    previous = anchors.previous(start)
    if check.failed or previous is None:
        return check
    begin, length = previous.chain_start, previous.length
    seeds = f"{length} seed" + ("" if length == 1 else "s")
    if begin + length == start and length < HOUSE_CHAIN_LENGTH:
        return CheckResult(
            CheckName.SEED_CHAIN,
            Status.WARN,
            f"a new seed chain anchored at hand {start} after the previous one (from hand"
            f" {begin}) ran out at only {seeds}: the house anchors {HOUSE_CHAIN_LENGTH} a chain"
            f" (FAIRNESS.md 3.1), and each new chain's seeds were chosen later"
            f" ({check.reason})",
        )
    if begin + length - 1 < start:
        return check
    return CheckResult(
        CheckName.SEED_CHAIN,
        Status.WARN,
        f"a new seed chain anchored at hand {start} while the previous one (from hand {begin},"
        f" {seeds}) still covered it: FAIRNESS.md 3.5 allows this only when the tip was lost"
        f" ({check.reason})",
    )


def _kind_of(statement: Statement) -> RecordKind:
    if isinstance(statement, SeedAnchor):
        return RecordKind.SEED_ANCHOR
    if isinstance(statement, LedgerHead):
        return RecordKind.LEDGER_HEAD
    return RecordKind.KEY_HANDOVER


def _statement_key_check(statement: Statement, trust: KeyTrust) -> CheckResult:
    """A statement's `key` check. A hand-over from a key nobody trusts here is skipped, not
    failed: it adds no trust (`_follow_handovers`), and a chain served after a rotation carries
    the hand-overs from every earlier key, which whoever pinned only the current key (as section
    9 says to) does not trust."""
    signed = statement.signed_by
    assert signed is not None
    check = trust.check(signed)
    if (
        isinstance(statement, KeyHandover)
        and check.failed
        and signed.key_id == key_id_for(signed.public_key)
    ):
        return CheckResult(
            CheckName.KEY,
            Status.SKIP,
            f"a hand-over from key {signed.key_id}, which is not trusted here: it adds no trust"
            f" (pin key {signed.key_id} to check what it signed)",
        )
    return check


def _follow_handovers(
    statements: Sequence[tuple[Mapping[str, Any], Statement]],
    trust: KeyTrust,
) -> None:
    # A hand-over validly signed by a trusted key trusts the new key. Hand-overs are indexed by
    # their signer and walked breadth-first from the trusted keys, so the order of statements in
    # the file does not matter and each hand-over is verified at most once.
    by_signer: dict[bytes, list[tuple[Mapping[str, Any], KeyHandover]]] = {}
    for obj, statement in statements:
        if isinstance(statement, KeyHandover):
            assert statement.signed_by is not None
            by_signer.setdefault(statement.signed_by.public_key, []).append((obj, statement))
    queue = deque(trust.trusted)
    while queue:
        key = queue.popleft()
        for obj, handover in by_signer.pop(key, ()):
            signer = handover.signed_by
            assert signer is not None
            if (
                handover.new_public_key not in trust.trusted
                and signer.key_id == key_id_for(signer.public_key)
                and verify_signature(obj, signer.public_key, parsed=True)
            ):
                trust.trusted.add(handover.new_public_key)
                queue.append(handover.new_public_key)


def _moment(at: int) -> str:
    """A ledger head's `at` (unix seconds) as a player reads it."""
    try:
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):  # past year 9999: say the number
        return f"unix time {at}"


def _ledger_check(
    head: LedgerHead,
    table: str,
    by_number: Mapping[int, Sequence[_Hand]],
    heads: Mapping[int, set[bytes]],
    trusted: bool,
) -> CheckResult:
    for entry in head.tables:
        if entry.table != table:
            continue
        others = heads.get(entry.hand, set()) - {entry.hash}
        if others:  # whatever the records say: two signed histories of one hand
            return _fail(
                CheckName.LEDGER,
                f"names hand {entry.hand} with hash {entry.hash.hex()}, and another trusted"
                f" ledger head names it with {min(others).hex()}: the history was rewritten",
            )
        copies = by_number.get(entry.hand, ())
        last = max(by_number, default=0)
        if not copies and trusted and entry.hand > last:
            # The house signed that the table had this hand; the input stops before it. Not a
            # failure (the input may be a partial download), but the player must hear of it.
            ends = f"ends at hand {last}" if last else f"has no record of table {table}"
            return CheckResult(
                CheckName.LEDGER,
                Status.WARN,
                f"a signed ledger head (at {_moment(head.at)}) says hand {entry.hand} of table"
                f" {table} was written; this input {ends}: records may have been cut",
            )
        if not copies:
            return CheckResult(
                CheckName.LEDGER, Status.SKIP, f"names hand {entry.hand}, which is not in the input"
            )
        for hand in copies:
            if hand.digest != entry.hash:
                return _fail(
                    CheckName.LEDGER,
                    f"names hand {entry.hand} with hash {entry.hash.hex()}, the record's is"
                    f" {hand.digest.hex()}: the history was rewritten",
                )
        return _pass(CheckName.LEDGER, f"names hand {entry.hand} with its exact hash")
    return CheckResult(CheckName.LEDGER, Status.SKIP, f"does not name table {table}")


def _link_check(
    hand: _Hand,
    previous: _Hand | None,
    table: str,
    seen: Mapping[int, _Hand],
    by_number: Mapping[int, Sequence[_Hand]],
) -> CheckResult:
    """`seen`: this table's records before this one, by hand number; `by_number`: all of them."""
    record = hand.record
    if record.table != table:
        return _fail(
            CheckName.LINK, f"record of table {record.table!r} in a chain of table {table!r}"
        )
    earlier = seen.get(record.hand)
    if earlier is not None:
        if earlier.digest == hand.digest:
            return _fail(
                CheckName.LINK,
                f"hand {record.hand} again: the same record is in the input twice",
            )
        return _fail(
            CheckName.LINK,
            f"a second, different signed record of hand {record.hand}: the house signed two"
            " versions of this hand",
        )
    if previous is None:
        if record.hand == 1:
            if record.prev == GENESIS_HASH:
                return _pass(CheckName.LINK, "first hand of the table: prev is the genesis value")
            return _fail(CheckName.LINK, "hand 1 must carry the genesis prev (64 zeros)")
        return CheckResult(
            CheckName.LINK,
            Status.WARN,
            f"the chain given starts at hand {record.hand}: its link to hand"
            f" {record.hand - 1} is not checked",
        )
    expected = previous.record.hand + 1
    if record.hand != expected:
        if record.hand < expected:
            what = "out of order"
        elif expected in seen:  # 1, 3, 2, 4: hand 3 was given before hand 2
            what = f"out of order: hand {expected} came earlier in the input"
        elif expected in by_number:
            what = f"out of order: hand {expected} comes later in the input"
        else:
            what = "missing record(s)"
        return _fail(
            CheckName.LINK,
            f"expected hand {expected} after hand {previous.record.hand}, got"
            f" hand {record.hand} ({what})",
        )
    if record.prev != previous.digest:
        return _fail(
            CheckName.LINK,
            f"prev is {record.prev.hex()}, the hash of hand {previous.record.hand} is"
            f" {previous.digest.hex()}",
        )
    return _pass(CheckName.LINK, f"prev is the hash of hand {previous.record.hand}")


# Hashing a seed down to its anchor costs up to MAX_SEED_CHAIN_LENGTH hashes. A chain that
# verifies needs at most one such walk (its first record; any later record is compared with the
# one before it, or its link already fails), so a total of twice that bounds the work a hostile
# file of gapped records can cause without ever touching a chain that verifies.
_HASH_BUDGET: Final = 2 * MAX_SEED_CHAIN_LENGTH
# the seeds the house anchors in a chain (FAIRNESS.md 3.1): a new chain after a shorter one warns
HOUSE_CHAIN_LENGTH: Final = 1024


@dataclass(slots=True)
class _HashBudget:
    left: int


def _hash_times(seed: bytes, times: int) -> bytes:
    for _ in range(times):
        seed = hashlib.sha256(seed).digest()
    return seed


def _seed_chain_check(
    record: HandRecord,
    previous: _Hand | None,
    anchors: _Anchors,
    budget: _HashBudget,
    refused: Mapping[int, Sequence[str]] | None = None,
) -> CheckResult:
    """`previous`: the record of hand `record.hand - 1` found before this one, if any;
    `refused`: by chain_start, why this table's anchors in the input that are not trusted do not
    count (their own key or signature check fails)."""
    not_counted = (refused or {}).get(record.chain_start, ())
    # what became of the anchor of this record's chain, when it is not a trusted one
    if not_counted:
        why = f", in the input, does not count ({not_counted[0]})"
        absent = f"its anchor statement{why}"
    else:
        why = ""
        absent = "its signed anchor statement is not in the input"
    same_chain = anchors.get(record.chain_start, ())
    if len(same_chain) > 1:
        return _fail(
            CheckName.SEED_CHAIN,
            f"the signed anchors of the seed chain from hand {record.chain_start} disagree",
        )
    anchor = same_chain[0] if same_chain else None
    index = record.hand - record.chain_start + 1
    if anchor is not None and index > anchor.length:
        # checked before any hashing: the index alone can be billions
        return _fail(
            CheckName.SEED_CHAIN,
            f"hand {record.hand} is index {index} of the seed chain from hand"
            f" {record.chain_start}, whose anchor gives it {anchor.length} seed(s): past its end"
            " a new chain must be anchored",
        )
    if record.chain_start == record.hand:
        if anchor is None:
            before = anchors.previous(record.hand)
            covered = ""
            if before is not None and before.chain_start + before.length > record.hand:
                # the seeds the house signed for this hand were set aside unannounced
                covered = (
                    f", while the previous one (from hand {before.chain_start},"
                    f" {before.length} seed{'' if before.length == 1 else 's'}), signed in the"
                    " input, still covered it (FAIRNESS.md 3.5 allows a new chain then only"
                    " when the tip was lost, and anchored)"
                )
            return CheckResult(
                CheckName.SEED_CHAIN,
                Status.WARN,
                f"a new seed chain starts at this hand{covered}; {absent}, so the commitment's"
                " publication time is not checked",
            )
        if anchor.anchor == record.commitment:
            return _pass(
                CheckName.SEED_CHAIN, "commitment is the signed anchor of a new seed chain"
            )
        return _fail(CheckName.SEED_CHAIN, "commitment is not the anchor of its seed chain")
    if previous is not None:
        if previous.record.chain_start != record.chain_start:
            return _fail(
                CheckName.SEED_CHAIN,
                f"chain_start {record.chain_start} differs from the previous hand's"
                f" {previous.record.chain_start} without starting a new chain here",
            )
        if record.commitment == previous.record.seed:
            return _pass(CheckName.SEED_CHAIN, "commitment is the previous hand's revealed seed")
        return _fail(
            CheckName.SEED_CHAIN,
            "commitment is not the previous hand's revealed seed:"
            " the seed was not fixed in advance",
        )
    if anchor is not None:
        # Without the previous record, hash the seed back down to the signed anchor.
        if index > budget.left:
            return CheckResult(
                CheckName.SEED_CHAIN,
                Status.SKIP,
                "not hashed down to its anchor: this input already took"
                f" {_HASH_BUDGET - budget.left} hashes (a bound against hostile input; a chain"
                " given in order needs one walk)",
            )
        budget.left -= index
        if _hash_times(record.seed, index) == anchor.anchor:
            return _pass(CheckName.SEED_CHAIN, "the seed hashes down to its chain's signed anchor")
        return _fail(CheckName.SEED_CHAIN, "the seed does not hash down to its chain's anchor")
    also = f"; the anchor statement of its seed chain{why}" if why else ""
    return CheckResult(
        CheckName.SEED_CHAIN,
        Status.SKIP,
        f"hand {record.hand - 1} is not in the input before this record: nothing to compare"
        f" the commitment with{also}",
    )


def _next_dealer(before: HandRecord) -> int:
    """The dealer of the hand after `before` in its match: the deal passes to the next seat."""
    return (before.dealer + 1) % before.config.seats


def _rotation_checked(
    checks: list[CheckResult], record: HandRecord, previous: _Hand | None
) -> list[CheckResult]:
    """In a chain, a dealer by rotation is checked here, against the previous hand: the hand
    alone can only skip it, pointing to the chain verification (which this is)."""
    if previous is None or record.dealer_by is not DealerChoice.ROTATION:
        return checks
    before = previous.record
    expected = _next_dealer(before)
    if record.dealer == expected:
        dealer = _pass(CheckName.DEALER, f"dealer by rotation: seat {record.dealer}, after the"
                       f" previous hand's seat {before.dealer}")
    else:
        dealer = _fail(CheckName.DEALER, f"by rotation the dealer is seat {expected} (the"
                       f" previous hand's seat {before.dealer} + 1), not {record.dealer}")
    return [dealer if check.name is CheckName.DEALER and check.status is Status.SKIP else check
            for check in checks]


def _match_check(record: HandRecord, previous: _Hand | None) -> CheckResult:
    """`previous`: the record of hand `record.hand - 1` found before this one, if any."""
    if previous is None:
        if record.dealer_by is DealerChoice.DRAW:
            return _pass(CheckName.MATCH, "a match starts here (first dealer drawn)")
        return CheckResult(
            CheckName.MATCH, Status.SKIP, "the previous hand of this match is not in the input"
        )
    before = previous.record
    match_over = before.match_winner is not None or before.end is not RecordEnd.COMPLETED
    if record.dealer_by is DealerChoice.DRAW:
        if match_over:
            return _pass(CheckName.MATCH, "a new match starts after the previous one ended")
        return _fail(
            CheckName.MATCH, "a new first dealer was drawn while the previous match was not over"
        )
    if match_over:
        return _fail(CheckName.MATCH, "the previous hand ended the match; this one continues it")
    problems = []
    if record.config != before.config:
        problems.append("variant, seats or mode changed within the match")
    expected_dealer = _next_dealer(before)
    if record.dealer != expected_dealer:
        problems.append(f"the dealer should be seat {expected_dealer}, not {record.dealer}")
    if record.score_before != before.score_after:
        problems.append(
            f"score_before {list(record.score_before)} is not the previous score_after"
            f" {list(before.score_after)}"
        )
    if problems:
        return _fail(CheckName.MATCH, "; ".join(problems))
    return _pass(CheckName.MATCH, "continues the previous hand's match (dealer, score, rules)")
