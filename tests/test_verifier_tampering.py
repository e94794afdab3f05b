"""Tampering with a valid signed record, byte by byte and leaf by leaf, and with chains."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import verifier.check as verifier_check
from truco.cards import CANONICAL_DECK
from truco.fairness import MAX_HAND_NUMBER, draw_first_dealer, seed_chain
from truco.records import (
    MAX_SEED_CHAIN_LENGTH,
    DealerChoice,
    RecordEnd,
    build_key_handover,
    build_ledger_head,
    build_record,
    build_seed_anchor,
    record_hash,
)
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.check import CheckName, Report, Status, check_chain, check_hand
from verifier.cli import main
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import sign_record, sign_statement, signing_key_from_seed
from verifier.sources import InputError, parse_json
from verifier.vectors_run import load_vectors

VECTOR = load_vectors("hand.json")
RECORD: dict[str, Any] = VECTOR["record"]
KEY = bytes.fromhex(VECTOR["public_key"])
CARDS = [str(card) for card in CANONICAL_DECK]

Path = tuple[str | int, ...]


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


LEAVES = dict(leaves(RECORD))


def with_leaf(path: Path, value: Any) -> dict[str, Any]:
    record = copy.deepcopy(RECORD)
    target: Any = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return record


# What a change of each top-level field must be caught by, besides the signature, whenever
# the changed record still reads as a record. Fields not listed are caught by the signature only
# (e.g. `mode` in a hand where no team vote disagreed, or `prev` outside a chain).
SPECIFIC: dict[str, CheckName] = {
    "seed": CheckName.COMMITMENT,
    "commitment": CheckName.COMMITMENT,
    "deck": CheckName.DECK,
    "table": CheckName.DECK,
    "hand": CheckName.DECK,
    "contributions": CheckName.DECK,
    "deal": CheckName.DEAL,
    "key_id": CheckName.KEY,
    "public_key": CheckName.KEY,
    "score_after": CheckName.REPLAY,
    "match_winner": CheckName.REPLAY,
}


def verdict(record: dict[str, Any]) -> Report | None:
    """The report, or None when the verifier refuses the input as unreadable (exit 2)."""
    try:
        return check_hand(record, pinned=[KEY])
    except InputError:
        return None


def assert_caught(path: Path, record: dict[str, Any]) -> None:
    report = verdict(record)
    if report is None:
        return
    failed = {check.name for _, check in report.failures}
    assert not report.ok, path
    assert CheckName.SIGNATURE in failed, (path, failed)
    expected = SPECIFIC.get(str(path[0]))
    if expected is not None:
        assert expected in failed, (path, failed)


def natural_change(path: Path, value: Any) -> Any:
    """A change that keeps the leaf well formed, so the specific check is what catches it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        if path[0] == "hand":
            return value + 1
        if path[0] in ("score_after", "match_winner"):
            return 1 - value if path[0] == "match_winner" else value + 1
        return value ^ 1
    if value is None:
        return 1 if path[0] == "match_winner" else "00"
    if value in CARDS:
        return CARDS[(CARDS.index(value) + 1) % len(CARDS)]
    if isinstance(value, str) and value and all(c in "0123456789abcdef" for c in value):
        return ("1" if value[0] != "1" else "2") + value[1:]
    return value + "x"


def test_the_vector_verifies_untouched():
    report = check_hand(RECORD, pinned=[KEY])
    assert report.ok
    assert len(LEAVES) > 100


@pytest.mark.parametrize("path", list(LEAVES), ids=lambda p: ".".join(map(str, p)))
def test_every_leaf_changed_naturally_is_caught(path):
    assert_caught(path, with_leaf(path, natural_change(path, LEAVES[path])))


def _replacement(original: Any) -> st.SearchStrategy[Any]:
    anything = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**40), max_value=2**40),
        st.text(max_size=70),
        st.sampled_from(CARDS),
        st.text(alphabet="0123456789abcdef", min_size=1, max_size=130),
    )
    return anything.filter(lambda value: value != original or type(value) is not type(original))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(list(LEAVES)).flatmap(lambda p: st.tuples(st.just(p), _replacement(LEAVES[p])))
)
def test_any_leaf_replaced_by_anything_is_caught(change):
    path, value = change
    assert_caught(path, with_leaf(path, value))


CANONICAL_BYTES = json.dumps(RECORD, sort_keys=True, separators=(",", ":")).encode()


def test_every_single_byte_change_of_the_file_fails():
    # Flip one bit of each byte in turn: the result is unreadable (exit 2) or fails a check.
    for position in range(len(CANONICAL_BYTES)):
        data = bytearray(CANONICAL_BYTES)
        data[position] ^= 0x01
        try:
            obj = parse_json(bytes(data), "file")
            if not isinstance(obj, dict):
                continue
            report = check_hand(obj, pinned=[KEY])
        except InputError:
            continue
        assert not report.ok, position


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(CANONICAL_BYTES) - 1), st.integers(0, 255))
def test_any_byte_replaced_never_verifies(position, byte):
    data = bytearray(CANONICAL_BYTES)
    if data[position] == byte:
        return
    data[position] = byte
    try:
        obj = parse_json(bytes(data), "file")
        report = check_hand(obj, pinned=[KEY]) if isinstance(obj, dict) else None
    except InputError:
        return
    assert report is None or not report.ok


def test_byte_changes_through_the_cli(tmp_path, capsys):
    path = tmp_path / "hand.json"
    path.write_bytes(CANONICAL_BYTES)
    assert main(["hand", str(path), "--key", KEY.hex()]) == 0
    for position, expected in ((CANONICAL_BYTES.index(b'"seed":"') + 9, 1), (0, 2), (-1, 2)):
        data = bytearray(CANONICAL_BYTES)
        data[position] = ord("0") if data[position] != ord("0") else ord("1")
        path.write_bytes(bytes(data))
        assert main(["hand", str(path), "--key", KEY.hex()]) == expected
    capsys.readouterr()


# --------------------------------------------------------------------------- chains

CONFIG = MatchConfig(Variant.ARGENTINO, 2, TeamMode.VOTE)


@pytest.fixture(scope="module")
def table():
    return sample_table(table_id="mesa-t", config=CONFIG, hands=5, seed=7)


def failed(report: Report) -> set[tuple[str, CheckName]]:
    return {(label, check.name) for label, check in report.failures}


def test_a_whole_chain_verifies(table):
    report = check_chain([table.anchor_statement, *table.records], pinned=[KEY])
    assert report.ok
    statuses = {c.status for e in report.entries for c in e.checks}
    assert Status.WARN not in statuses


def test_a_missing_record_breaks_the_link(table):
    records = [table.records[0], table.records[1], *table.records[3:]]
    report = check_chain(records, pinned=[KEY])
    assert failed(report) == {("table mesa-t hand 4", CheckName.LINK)}
    assert "missing" in report.entries[2].check(CheckName.LINK).reason


def test_a_reordered_record_breaks_the_link(table):
    records = list(table.records)
    records[1], records[2] = records[2], records[1]
    report = check_chain(records, pinned=[KEY])
    assert ("table mesa-t hand 3", CheckName.LINK) in failed(report)
    assert not report.ok


def test_a_record_from_another_table_is_refused(table):
    other = sample_table(table_id="mesa-other", config=CONFIG, hands=2, seed=8)
    records = [*table.records[:2], other.records[1], *table.records[3:]]
    report = check_chain(records, pinned=[KEY])
    reasons = [check.reason for _, check in report.failures if check.name is CheckName.LINK]
    assert any("of table 'mesa-other'" in reason for reason in reasons)


def resign(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    unsigned = {k: v for k, v in record.items() if k not in ("key_id", "public_key", "signature")}
    unsigned.update(changes)
    return sign_record(unsigned, sample_signing_key())


def test_a_broken_link_even_with_a_valid_signature(table):
    records = list(table.records)
    records[2] = resign(records[2], prev="ab" * 32)
    report = check_chain(records, pinned=[KEY])
    assert failed(report) >= {("table mesa-t hand 3", CheckName.LINK)}
    # hand 4 pointed at the original hand 3, so its link breaks too
    assert ("table mesa-t hand 4", CheckName.LINK) in failed(report)
    assert ("table mesa-t hand 3", CheckName.SIGNATURE) not in failed(report)


def test_hand_1_must_carry_the_genesis_prev(table):
    first = resign(table.records[0], prev="ab" * 32)
    report = check_chain([first], pinned=[KEY])
    assert ("table mesa-t hand 1", CheckName.LINK) in failed(report)
    assert "genesis" in report.entries[0].check(CheckName.LINK).reason


def test_a_seed_outside_the_committed_chain_is_caught(table):
    records = list(table.records)
    fresh = bytes(range(32))
    records[3] = resign(records[3], seed=fresh.hex(), commitment=hashlib.sha256(fresh).hexdigest())
    records[4] = resign(records[4], prev=record_hash(records[3]).hex())
    report = check_chain(records, pinned=[KEY])
    assert ("table mesa-t hand 4", CheckName.SEED_CHAIN) in failed(report)
    assert ("table mesa-t hand 5", CheckName.SEED_CHAIN) in failed(report)


def test_the_anchor_statement_must_name_the_first_commitment(table):
    anchor = dict(table.anchor_statement)
    anchor.pop("signature"), anchor.pop("key_id"), anchor.pop("public_key")
    anchor["anchor"] = "cd" * 32
    forged = sign_statement(anchor, sample_signing_key())
    report = check_chain([forged, *table.records], pinned=[KEY])
    assert ("table mesa-t hand 1", CheckName.SEED_CHAIN) in failed(report)


def test_match_continuity_is_checked(table):
    records = list(table.records)
    index = next(i for i, r in enumerate(records) if r["dealer"]["by"] == "rotation")
    before = records[index]["score_before"]
    records[index] = resign(records[index], score_before=[before[0], before[1] + 1])
    for later in range(index + 1, len(records)):
        records[later] = resign(records[later], prev=record_hash(records[later - 1]).hex())
    report = check_chain(records, pinned=[KEY])
    assert (f"table mesa-t hand {index + 1}", CheckName.MATCH) in failed(report)
    reason = report.entries[index].check(CheckName.MATCH).reason
    assert "is not the previous score_after" in reason


def test_a_wrong_dealer_by_rotation_fails_the_dealer_and_the_match_checks(table):
    # either check alone fails the hand, so each must be pinned by itself
    records = list(table.records)
    index = next(i for i, r in enumerate(records) if r["dealer"]["by"] == "rotation")
    dealer = records[index]["dealer"]
    wrong = (dealer["seat"] + 1) % CONFIG.seats
    records[index] = resign(records[index], dealer={"seat": wrong, "by": "rotation"})
    for later in range(index + 1, len(records)):
        records[later] = resign(records[later], prev=record_hash(records[later - 1]).hex())
    report = check_chain(records, pinned=[KEY])
    assert (f"table mesa-t hand {index + 1}", CheckName.DEALER) in failed(report)
    assert (f"table mesa-t hand {index + 1}", CheckName.MATCH) in failed(report)
    reason = report.entries[index].check(CheckName.MATCH).reason
    assert f"the dealer should be seat {dealer['seat']}, not {wrong}" in reason


def rechain(records: list[dict[str, Any]], keys: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for record, key in zip(records, keys, strict=True):
        unsigned = {
            k: v for k, v in record.items() if k not in ("key_id", "public_key", "signature")
        }
        if out:
            unsigned["prev"] = record_hash(out[-1]).hex()
        out.append(sign_record(unsigned, key))
    return out


def test_key_rotation_follows_a_signed_handover(table):
    old = sample_signing_key()
    new = signing_key_from_seed(bytes(range(1, 33)))
    records = rechain(list(table.records), [old, old, new, new, new])
    without = check_chain(records, pinned=[KEY])
    assert ("table mesa-t hand 3", CheckName.KEY) in failed(without)
    handover = sign_statement(build_key_handover(1_800_000_000, bytes(new.verify_key)), old)
    report = check_chain([handover, *records], pinned=[KEY])
    assert report.ok, report.failures
    assert "handed over" in report.entries[-1].check(CheckName.KEY).reason
    # a hand-over signed by the new key itself proves nothing
    self_signed = sign_statement(build_key_handover(1_800_000_000, bytes(new.verify_key)), new)
    assert not check_chain([self_signed, *records], pinned=[KEY]).ok


def test_a_chain_starting_mid_table_says_so(table):
    report = check_chain(list(table.records[2:]), pinned=[KEY])
    assert report.ok
    link = report.entries[0].check(CheckName.LINK)
    assert link.status is Status.WARN and "starts at hand 3" in link.reason


def test_a_ledger_head_must_match_the_records(table):
    last = table.records[-1]
    good = sign_statement(
        build_ledger_head(1, {"mesa-t": (last["hand"], record_hash(last))}), sample_signing_key()
    )
    assert check_chain([*table.records, good], pinned=[KEY]).ok
    bad = sign_statement(
        build_ledger_head(1, {"mesa-t": (last["hand"], bytes(32))}), sample_signing_key()
    )
    report = check_chain([*table.records, bad], pinned=[KEY])
    assert [check.name for _, check in report.failures] == [CheckName.LEDGER]


def test_two_ledger_heads_that_disagree_fail_even_without_the_hand(table):
    # the hand they name is not in the input: neither can be checked against its record, but
    # two signed hashes for one hand are proof the house published two histories
    hand = table.records[-1]["hand"] + 1
    heads = [sign_statement(build_ledger_head(at, {"mesa-t": (hand, digest)}),
                            sample_signing_key())
             for at, digest in ((1, bytes(32)), (2, bytes([1]) * 32))]
    report = check_chain([*table.records, *heads], pinned=[KEY])
    assert [check.name for _, check in report.failures] == [CheckName.LEDGER] * 2
    assert "another trusted ledger head" in report.failures[0][1].reason
    same = check_chain([*table.records, heads[0], heads[0]], pinned=[KEY])
    assert same.ok  # the same head twice is no contradiction (each warns: past the input)


def test_a_chain_checks_each_dealer_by_rotation_itself(table):
    # a review: every hand of `barajamos-verify chain` said "skip dealer ... checked against
    # the previous hand by the chain verification", while that verification was running
    report = check_chain(table.records, pinned=[KEY])
    assert report.ok
    for record, entry in zip(table.records, report.entries, strict=True):
        dealer = entry.check(CheckName.DEALER)
        assert dealer.status is Status.PASS, (record["hand"], dealer.reason)
        if record["dealer"]["by"] == "rotation":
            assert dealer.reason.startswith(f"dealer by rotation: seat {record['dealer']['seat']}")
    # a hand alone still points to the chain for it
    rotated = next(r for r in table.records if r["dealer"]["by"] == "rotation")
    assert check_hand(rotated, pinned=[KEY]).entries[0].check(CheckName.DEALER).status is (
        Status.SKIP)


def test_the_first_hand_of_a_table_must_draw_its_dealer(table):
    first = resign(table.records[0], dealer={"seat": table.records[0]["dealer"]["seat"],
                                             "by": "rotation"})  # fmt: skip
    report = check_hand(first, pinned=[KEY])
    assert [check.name for _, check in report.failures] == [CheckName.DEALER]


# --------------------------------------------------------------------------- seed anchors


def anchor_with(table, **changes: Any) -> dict[str, Any]:
    unsigned = {
        k: v
        for k, v in table.anchor_statement.items()
        if k not in ("key_id", "public_key", "signature")
    }
    unsigned.update(changes)
    return sign_statement(unsigned, sample_signing_key())


ANCHOR_LABEL = "seed anchor of table mesa-t from hand {}"


@pytest.mark.parametrize("bogus_first", [True, False])
def test_two_disagreeing_anchors_of_one_chain_fail_in_any_order(table, bogus_first):
    # The house signed two anchors for the same hands: evidence, whichever the file gives last.
    bogus = anchor_with(table, anchor="cd" * 32)
    pair = [bogus, table.anchor_statement] if bogus_first else [table.anchor_statement, bogus]
    report = check_chain([*pair, *table.records], pinned=[KEY])
    assert (ANCHOR_LABEL.format(1), CheckName.SEED_CHAIN) in failed(report)
    for entry in report.entries[:2]:
        reason = entry.check(CheckName.SEED_CHAIN).reason
        assert entry.check(CheckName.SEED_CHAIN).failed and "two seed chains" in reason
    assert report.entries[2].check(CheckName.SEED_CHAIN).failed  # hand 1: which anchor holds?


def test_the_same_anchor_twice_is_no_contradiction(table):
    report = check_chain([table.anchor_statement, *table.records, table.anchor_statement],
                         pinned=[KEY])  # fmt: skip
    assert report.ok, report.failures


def test_an_anchor_must_match_the_hand_it_names(table):
    # A signed anchor for a chain "starting" at hand 3, while hand 3 goes on with chain 1.
    stray = anchor_with(table, chain_start=3)
    report = check_chain([table.anchor_statement, stray, *table.records], pinned=[KEY])
    assert failed(report) == {(ANCHOR_LABEL.format(3), CheckName.SEED_CHAIN)}
    assert "starts at hand 1" in report.entries[1].check(CheckName.SEED_CHAIN).reason
    # a hand that does start a chain there, but commits to something else, fails it too
    third = resign(table.records[2], chain_start=3)
    wrong = anchor_with(table, chain_start=3, anchor="cd" * 32)
    report = check_chain([wrong, third], pinned=[KEY])
    assert (ANCHOR_LABEL.format(3), CheckName.SEED_CHAIN) in failed(report)
    assert "not this anchor" in report.entries[0].check(CheckName.SEED_CHAIN).reason


def test_an_anchor_is_matched_with_its_hand_or_skipped(table):
    report = check_chain([table.anchor_statement, *table.records], pinned=[KEY])
    assert report.entries[0].check(CheckName.SEED_CHAIN).status is Status.PASS
    report = check_chain([table.anchor_statement, *table.records[2:]], pinned=[KEY])
    assert report.ok
    assert report.entries[0].check(CheckName.SEED_CHAIN).status is Status.SKIP
    # the first record given still hashes down to the anchor
    assert report.entries[1].check(CheckName.SEED_CHAIN).status is Status.PASS


def test_hands_past_the_anchored_length_fail(table):
    short = anchor_with(table, length=3)
    report = check_chain([short, *table.records], pinned=[KEY])
    assert failed(report) == {
        ("table mesa-t hand 4", CheckName.SEED_CHAIN),
        ("table mesa-t hand 5", CheckName.SEED_CHAIN),
    }
    assert "past its end" in report.entries[4].check(CheckName.SEED_CHAIN).reason
    # a file starting mid-table is caught the same way, without hashing down
    report = check_chain([short, *table.records[3:]], pinned=[KEY])
    assert ("table mesa-t hand 4", CheckName.SEED_CHAIN) in failed(report)


def bare_record(hand: int, seed: bytes, chain_start: int = 1) -> dict[str, Any]:
    """A signed record of a cancelled hand with no action, at any hand number."""
    contributions: list[bytes | None] = [None, None]
    dealer = draw_first_dealer(seed, "mesa-t", contributions, 2)
    unsigned = build_record(
        table_id="mesa-t", hand_number=hand, chain_start=chain_start, config=CONFIG,
        dealer=dealer, dealer_by=DealerChoice.DRAW, score_before=(0, 0),
        contributions=contributions, seed=seed, actions=[], end=RecordEnd.CANCELLED,
        forfeit_team=None, score_after=(0, 0), match_winner=None, prev_hash=bytes(32),
    )  # fmt: skip
    return sign_record(unsigned, sample_signing_key())


def test_a_huge_chain_index_fails_before_any_hashing():
    # hand 2^32 - 1 on a chain from hand 1: the old verifier hashed its seed 4 billion times
    anchor = sign_statement(
        build_seed_anchor("mesa-t", 1, MAX_SEED_CHAIN_LENGTH, bytes(32)), sample_signing_key()
    )
    started = time.monotonic()
    report = check_chain([anchor, bare_record(MAX_HAND_NUMBER, bytes(range(32)))], pinned=[KEY])
    assert time.monotonic() - started < 30  # 4 billion hashes take hours: a wide bound tells
    reason = report.entries[1].check(CheckName.SEED_CHAIN).reason
    assert report.entries[1].check(CheckName.SEED_CHAIN).failed and "past its end" in reason


def test_hashing_down_after_gaps_is_bounded(monkeypatch):
    # Records after a gap hash down to the anchor; a hostile file of many such records gets a
    # bounded total (a chain that verifies needs one walk, for its first record).
    seeds = seed_chain(bytes(range(32)), 20)
    anchor = sign_statement(build_seed_anchor("mesa-t", 1, 20, seeds[0]), sample_signing_key())
    monkeypatch.setattr(verifier_check, "_HASH_BUDGET", 12)
    records = [bare_record(10, seeds[10]), bare_record(8, seeds[8]), bare_record(6, seeds[6])]
    report = check_chain([anchor, *records], pinned=[KEY])
    statuses = [entry.check(CheckName.SEED_CHAIN).status for entry in report.entries[1:]]
    assert statuses == [Status.PASS, Status.SKIP, Status.SKIP]
    assert "a bound against hostile input" in report.entries[2].check(CheckName.SEED_CHAIN).reason


def test_handovers_in_any_order_are_followed_in_one_walk(table, monkeypatch):
    # key 0 -> key 1 -> ... -> key N, given newest first: the old loop made a pass over every
    # statement per hand-over it learnt (quadratic); now each is looked at once.
    keys = [sample_signing_key()] + [signing_key_from_seed(bytes([i]) * 32) for i in range(1, 41)]
    handovers = [
        sign_statement(build_key_handover(1_800_000_000, bytes(new.verify_key)), old)
        for old, new in itertools.pairwise(keys)
    ]
    records = rechain(list(table.records), [keys[-1]] * len(table.records))
    lookups = 0

    class CountingSet(set[bytes]):
        def __contains__(self, key: object) -> bool:
            nonlocal lookups
            lookups += 1
            return super().__contains__(key)

    class CountingTrust(verifier_check.KeyTrust):
        def __post_init__(self) -> None:
            self.trusted = CountingSet(self.pinned)

    monkeypatch.setattr(verifier_check, "KeyTrust", CountingTrust)
    report = check_chain([*reversed(handovers), *records], pinned=[KEY])
    assert report.ok, report.failures
    assert "handed over" in report.entries[-1].check(CheckName.KEY).reason
    # following: once per hand-over; then the key check of every entry
    assert lookups <= 2 * len(handovers) + len(records) + 5, lookups
