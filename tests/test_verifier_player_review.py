"""Defects a review playing a player found in the verifier, each with its regression test.

A record served for another hand, minus zero, a finished hand recorded as abandoned, error
wording, non-http URLs, misleading chain reasons, and a seed chain re-anchored early.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_verifier_cli import serve_folder
from truco.fairness import draw_first_dealer, seed_chain
from truco.records import (
    GENESIS_HASH,
    DealerChoice,
    RecordEnd,
    ReplayError,
    build_record,
    build_seed_anchor,
    parse_record,
    record_hash,
    replay,
)
from truco.variants import MatchConfig, TeamMode, Variant
from verifier import check as check_module
from verifier.check import CheckName, CheckResult, Status, check_chain, check_hand
from verifier.cli import main
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import sign_record, sign_statement
from verifier.sources import named_hand, named_table
from verifier.vectors_run import load_vectors

VECTOR = load_vectors("hand.json")
KEY_HEX = VECTOR["public_key"]
KEY = bytes.fromhex(KEY_HEX)
CONFIG = MatchConfig(Variant.ARGENTINO, 2, TeamMode.VOTE)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def table() -> Any:
    return sample_table(table_id="mesa-t", config=CONFIG, hands=5, seed=7)


# --------------------------------------------------------------------- 1. the hand asked for


@pytest.fixture
def served(tmp_path: Path, table: Any) -> Iterator[str]:
    """A server answering /hands/mesa-t-3 with hand 5's genuine record, /hands/mesa-t-5 with it
    too, and /tables/mesa-t/chain with another table's chain."""
    (tmp_path / "hands").mkdir()
    (tmp_path / "hands" / "mesa-t-3").write_text(json.dumps(table.records[4]))
    (tmp_path / "hands" / "mesa-t-5").write_text(json.dumps(table.records[4]))
    other = sample_table(table_id="mesa-u", config=CONFIG, hands=2, seed=8)
    for name, chain in (("mesa-t", table), ("mesa-x", other)):
        (tmp_path / "tables" / name).mkdir(parents=True)
        (tmp_path / "tables" / name / "chain").write_text(json.dumps(list(chain.records)))

    with serve_folder(tmp_path) as url:
        yield url


def test_a_record_served_for_another_hand_fails(capsys, served):
    status, out, _ = run(capsys, "hand", f"{served}/hands/mesa-t-3", "--key", KEY_HEX)
    assert status == 1, out
    assert "FAIL  source" in out
    assert "asked for hand 3 of table mesa-t, the record is hand 5 of table mesa-t" in out
    # the right hand passes, and says it is the one asked for
    status, out, _ = run(capsys, "hand", f"{served}/hands/mesa-t-5", "--key", KEY_HEX)
    assert status == 0, out
    assert "PASS  source" in out
    status, out, _ = run(capsys, "--json", "hand", f"{served}/hands/mesa-t-3", "--key", KEY_HEX)
    checks = json.loads(out)["entries"][0]["checks"]
    assert checks[0] == {
        "check": "source",
        "status": "fail",
        "reason": "asked for hand 3 of table mesa-t, the record is hand 5 of table mesa-t",
    }


def test_a_file_saved_under_the_hands_name_is_checked_too(capsys, tmp_path, table):
    (tmp_path / "hands").mkdir()
    path = tmp_path / "hands" / "mesa-t-3.json"
    path.write_text(json.dumps(table.records[4]))
    status, out, _ = run(capsys, "hand", str(path), "--key", KEY_HEX)
    assert status == 1 and "FAIL  source" in out
    # any other file name says nothing about the hand: no source check
    other = tmp_path / "mesa-t-3.json"
    other.write_text(json.dumps(table.records[4]))
    status, out, _ = run(capsys, "hand", str(other), "--key", KEY_HEX)
    assert status == 0 and "source" not in out


def test_a_chain_served_for_another_table_fails(capsys, served):
    status, out, _ = run(capsys, "chain", f"{served}/tables/mesa-x/chain", "--key", KEY_HEX)
    assert status == 1, out
    assert "record of table 'mesa-u' in a chain of table 'mesa-x'" in out
    status, out, _ = run(capsys, "chain", f"{served}/tables/mesa-t/chain", "--key", KEY_HEX)
    assert status == 0, out


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("http://h/hands/0123456789abcdef-3", ("0123456789abcdef", 3)),
        ("https://h:8443/x/hands/T-1-12?download=1", ("T-1", 12)),
        ("http://h/hands/mesa%20%C3%B1-7", ("mesa ñ", 7)),
        ("dir/hands/T-3.json", ("T", 3)),
        ("http://h/hands/T-03", None),  # the house writes no leading zero
        ("http://h/hands/T-0", None),
        ("http://h/hand/T-3", None),
        ("http://h/hands/T", None),
        ("T-3.json", None),
        ("http://h/hands/%FF-3", None),
    ],
)
def test_which_sources_name_a_hand(source, named):
    assert named_hand(source) == named


def test_which_sources_name_a_table():
    assert named_table("http://h/tables/0123456789abcdef/chain") == "0123456789abcdef"
    assert named_table("mirror/tables/T/chain") == "T"
    assert named_table("http://h/tables/T/chain.json") is None
    assert named_table("chain.json") is None


def test_check_hand_compares_only_when_asked(table):
    record = table.records[2]
    assert check_hand(record, pinned=[KEY]).entries[0].checks[0].name is CheckName.KEY
    report = check_hand(record, pinned=[KEY], asked=("mesa-t", 3))
    assert report.ok and report.entries[0].check(CheckName.SOURCE).status is Status.PASS
    report = check_hand(record, pinned=[KEY], asked=("mesa-u", 3))
    assert [check.name for _, check in report.failures] == [CheckName.SOURCE]
    assert "the record is hand 3 of table mesa-t" in report.failures[0][1].reason


# --------------------------------------------------------------------------- 2. minus zero


def _vector_text() -> str:
    text = json.dumps(VECTOR["record"])
    assert '"score_before": [0, 0]' in text
    return text


@pytest.mark.parametrize(
    ("command", "layout"),
    [("hand", "object"), ("chain", "object"), ("chain", "list"), ("chain", "lines")],
)
def test_minus_zero_is_unreadable(capsys, tmp_path, command, layout):
    bad = _vector_text().replace('"score_before": [0, 0]', '"score_before": [-0, 0]')
    text = {"object": bad, "list": f"[{bad}]", "lines": f"{_vector_text()}\n{bad}\n"}[layout]
    path = tmp_path / "minus-zero.json"
    path.write_text(text)
    status, out, err = run(capsys, command, str(path))
    assert status == 2 and out == ""
    line = one_error_line(err)
    assert "minus zero" in line and str(path) in line
    if layout == "lines":
        assert "line 2" in line


def test_minus_zero_inside_a_string_is_only_text(capsys, tmp_path):
    # "-0" in a table id is no number: the record still verifies
    record = sample_table(table_id="mesa-0", config=CONFIG, hands=1, seed=3).records[0]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(record))
    assert run(capsys, "hand", str(path), "--key", KEY_HEX)[0] == 0


# ------------------------------------------------------ 3. a finished hand is never abandoned


def _vector_ended(end: RecordEnd) -> dict[str, Any]:
    """The vector's hand (completed by the rules, match not over), re-recorded as `end`."""
    record = parse_record(VECTOR["record"])
    assert record.end is RecordEnd.COMPLETED and record.match_winner is None
    forfeit_team = 1 if end is RecordEnd.ABANDONMENT else None
    unsigned = build_record(
        table_id=record.table, hand_number=record.hand, chain_start=record.chain_start,
        config=record.config, dealer=record.dealer, dealer_by=record.dealer_by,
        score_before=record.score_before, contributions=record.contributions, seed=record.seed,
        actions=record.actions, end=end, forfeit_team=forfeit_team,
        score_after=record.score_after, match_winner=None if forfeit_team is None else 0,
        prev_hash=record.prev,
    )  # fmt: skip
    return sign_record(unsigned, sample_signing_key())


@pytest.mark.parametrize("end", [RecordEnd.CANCELLED, RecordEnd.ABANDONMENT])
def test_a_hand_the_rules_finished_cannot_be_recorded_as_ended_early(capsys, tmp_path, end):
    record = _vector_ended(end)
    with pytest.raises(ReplayError, match="had already finished the hand by the rules"):
        replay(parse_record(record))
    report = check_hand(record, pinned=[KEY])
    assert [check.name for _, check in report.failures] == [CheckName.REPLAY]
    path = tmp_path / "early.json"
    path.write_text(json.dumps(record))
    status, out, _ = run(capsys, "hand", str(path), "--key", KEY_HEX)
    assert status == 1 and f"end is '{end.value}'" in out


def test_a_hand_ended_early_while_in_play_still_verifies():
    # the sample tables end their last hand early, always before the rules end it
    for seed in range(12):
        for end in (RecordEnd.ABANDONMENT, RecordEnd.CANCELLED):
            table = sample_table(table_id=f"e-{seed}", config=CONFIG, hands=2, seed=seed,
                                 last_end=end)  # fmt: skip
            report = check_chain([table.anchor_statement, *table.records], pinned=[KEY])
            assert report.ok, report.failures


# ---------------------------------------------------------------------------- 4. wording


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("null", "expected a JSON object, got null"),
        ('"x"', "expected a JSON object, got a string"),
        ("[1]", "expected a JSON object, got a list"),
        ("5", "expected a JSON object, got an integer"),
        ("true", "expected a JSON object, got a boolean"),
    ],
)
def test_the_wrong_kind_of_json_is_named_in_words(capsys, tmp_path, text, expected):
    path = tmp_path / "value.json"
    path.write_text(text)
    status, _, err = run(capsys, "hand", str(path))
    # a list given to `hand` is most likely a chain: the message points to the command for it
    told = expected if text != "[1]" else (
        "expected a JSON object (one hand record), got a list: a table's chain is checked with"
        " `barajamos-verify chain`"
    )
    assert status == 2 and one_error_line(err).endswith(f"{path}: {told}")
    status, _, err = run(capsys, "chain", str(path))
    line = one_error_line(err)
    assert status == 2 and not re.search(r"NoneType|\ba (str|int|bool|float)\b", line), line
    # a chain file of one value is JSON lines, except a list, whose entries are then the records
    wanted = f"{path} entry 0: expected a JSON object, got an integer" if text == "[1]" else (
        f"{path} line 1: {expected}"
    )
    assert line.endswith(wanted), line


def test_a_file_cut_inside_a_string_reads_once_at(capsys, tmp_path):
    text = _vector_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index('"seed": "') + 20])
    status, _, err = run(capsys, "hand", str(path))
    line = one_error_line(err)
    assert status == 2 and "at at" not in line
    assert "truncated JSON: Unterminated string starting at line 1 column" in line


def test_a_file_cut_inside_a_literal_is_truncated(capsys, tmp_path):
    text = _vector_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index("true") + 2])
    status, _, err = run(capsys, "hand", str(path))
    assert status == 2 and "truncated JSON" in one_error_line(err)


def test_a_number_of_thousands_of_digits_is_named_plainly(capsys, tmp_path):
    path = tmp_path / "digits.json"
    path.write_text(_vector_text().replace('"hand": 1,', '"hand": ' + "9" * 5000 + ","))
    for command in ("hand", "chain"):
        status, _, err = run(capsys, command, str(path))
        line = one_error_line(err)
        assert status == 2 and "a number with more than 4300 digits" in line
        assert "set_int_max_str_digits" not in line and "Exceeds the limit" not in line


def test_a_long_number_is_quoted_short(capsys, tmp_path):
    path = tmp_path / "long.json"
    path.write_text(_vector_text().replace('"hand": 1,', '"hand": ' + "9" * 450 + ","))
    status, _, err = run(capsys, "hand", str(path))
    line = one_error_line(err)
    assert status == 2 and len(line) < 200, line
    assert "$.hand: 99999999999999999999… (450 digits) is outside 1..4294967295" in line


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("actions", 0, "do"), "x" * 450),
        (("actions", 0, "do"), "x " * 225),
        (("actions", 0, "seat"), -(10**400)),
        (("deck", 3), "y" * 1000),
        (("variant",), "z" * 300),
        (("version",), 7 * 10**300),
    ],
)
def test_no_echoed_value_fills_the_line(capsys, tmp_path, path, value):
    record = copy.deepcopy(VECTOR["record"])
    target: Any = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    file = tmp_path / "echo.json"
    file.write_text(json.dumps(record))
    status, _, err = run(capsys, "hand", str(file))
    line = one_error_line(err)
    assert status == 2 and len(line) < 250 and "…" in line, line


def test_a_byte_order_mark_is_named(capsys, tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + _vector_text().encode())
    for command in ("hand", "chain"):
        status, _, err = run(capsys, command, str(path))
        line = one_error_line(err)
        assert status == 2
        assert line.endswith(
            f"{path}: starts with a byte-order mark (BOM); save it as plain UTF-8 without one"
        )


# --------------------------------------------------------------------- 5. non-http URLs


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///tmp/x.json", "data://x"])
@pytest.mark.parametrize("command", ["hand", "chain"])
def test_other_url_schemes_are_refused_as_such(capsys, url, command):
    status, out, err = run(capsys, command, url)
    line = one_error_line(err)
    assert status == 2 and out == ""
    assert line == (
        f"barajamos-verify: {url}: only http and https URLs are read (a file: give its path)"
    )
    assert "No such file" not in line


def test_an_uppercase_http_url_is_a_url(capsys):
    status, _, err = run(capsys, "hand", "HTTP://127.0.0.1:1/hands/x-1")
    assert status == 2 and "cannot fetch" in one_error_line(err)


# ------------------------------------------------------------------ 6. chain reasons


def test_an_anchor_is_compared_with_its_own_tables_hand(table):
    other = sample_table(table_id="mesa-b", config=CONFIG, hands=2, seed=8)
    entries = [table.anchor_statement, *table.records, other.anchor_statement, *other.records]
    report = check_chain(entries, pinned=[KEY])
    anchor = report.entries[0]
    assert anchor.check(CheckName.SEED_CHAIN).status is Status.PASS, anchor.checks
    # the input fails, as a mix of tables, on the other table's records and nothing else
    assert {(label, check.name) for label, check in report.failures} == {
        ("table mesa-b hand 1", CheckName.LINK),
        ("table mesa-b hand 2", CheckName.LINK),
    }
    for _, check in report.failures:
        assert "record of table 'mesa-b' in a chain of table 'mesa-t'" in check.reason
    foreign = report.entries[-1].check(CheckName.SEED_CHAIN)
    assert foreign.status is Status.SKIP and "not compared" in foreign.reason


def test_a_ledger_head_is_compared_with_its_own_tables_hand(table):
    from truco.records import build_ledger_head

    other = sample_table(table_id="mesa-b", config=CONFIG, hands=5, seed=8)
    last = table.records[-1]
    head = sign_statement(
        build_ledger_head(1, {"mesa-t": (last["hand"], record_hash(last))}), sample_signing_key()
    )
    report = check_chain([*table.records, *other.records, head], pinned=[KEY])
    ledger = next(e for e in report.entries if e.kind.value == "ledger_head")
    assert ledger.check(CheckName.LEDGER).status is Status.PASS, ledger.checks


def test_a_repeated_record_is_the_failure_and_its_seed_still_compared(table):
    records = [*table.records, table.records[-1]]
    report = check_chain([table.anchor_statement, *records], pinned=[KEY])
    assert {(label, check.name) for label, check in report.failures} == {
        ("table mesa-t hand 5", CheckName.LINK)
    }
    copy_entry = report.entries[-1]
    link = copy_entry.check(CheckName.LINK)
    assert link.failed and link.reason == "hand 5 again: the same record is in the input twice"
    seed = copy_entry.check(CheckName.SEED_CHAIN)
    assert seed.status is Status.PASS and "previous hand's revealed seed" in seed.reason
    assert copy_entry.check(CheckName.MATCH).status is Status.PASS
    # a repeat further on is named the same way
    records = [*table.records, table.records[2]]
    report = check_chain(records, pinned=[KEY])
    assert report.entries[-1].check(CheckName.LINK).reason == (
        "hand 3 again: the same record is in the input twice"
    )


def test_two_versions_of_a_hand_are_named(table):
    unsigned = {k: v for k, v in table.records[4].items()
                if k not in ("key_id", "public_key", "signature")}  # fmt: skip
    unsigned["prev"] = "ab" * 32
    second = sign_record(unsigned, sample_signing_key())
    report = check_chain([*table.records, second], pinned=[KEY])
    reason = report.entries[-1].check(CheckName.LINK).reason
    assert reason.startswith("a second, different signed record of hand 5")


def test_a_reordered_chain_says_out_of_order_not_missing(table):
    records = list(table.records)
    records[1], records[2] = records[2], records[1]
    report = check_chain(records, pinned=[KEY])
    reasons = [report.entries[i].check(CheckName.LINK).reason for i in (1, 2)]
    assert "out of order: hand 2 comes later in the input" in reasons[0]
    assert "missing" not in " ".join(reasons)
    # hand 2, given after hand 3, is still compared with hand 1's seed
    assert report.entries[2].check(CheckName.SEED_CHAIN).status is Status.PASS


# --------------------------------------------------------------------- 8. early re-anchor


def _cancelled(hand: int, seed: bytes, chain_start: int, prev: bytes) -> dict[str, Any]:
    contributions: list[bytes | None] = [None, None]
    unsigned = build_record(
        table_id="mesa-r", hand_number=hand, chain_start=chain_start, config=CONFIG,
        dealer=draw_first_dealer(seed, "mesa-r", contributions, 2), dealer_by=DealerChoice.DRAW,
        score_before=(0, 0), contributions=contributions, seed=seed, actions=[],
        end=RecordEnd.CANCELLED, forfeit_team=None, score_after=(0, 0), match_winner=None,
        prev_hash=prev,
    )  # fmt: skip
    return sign_record(unsigned, sample_signing_key())


def _reanchored_chain(first_length: int) -> list[dict[str, Any]]:
    """Hands 1..6 of table mesa-r (each a cancelled match), hand 6 starting a new seed chain."""
    key = sample_signing_key()
    old = seed_chain(bytes(range(32)), first_length)
    new = seed_chain(bytes(range(1, 33)), 10)
    entries = [sign_statement(build_seed_anchor("mesa-r", 1, first_length, old[0]), key)]
    prev = GENESIS_HASH
    for hand in range(1, 7):
        if hand == 6:
            entries.append(sign_statement(build_seed_anchor("mesa-r", 6, 10, new[0]), key))
            record = _cancelled(hand, new[1], 6, prev)
        else:
            record = _cancelled(hand, old[hand], 1, prev)
        entries.append(record)
        prev = record_hash(record)
    return entries


def _hand_6_anchor_check(entries: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The report of `_reanchored_chain`'s entries, and its check of the anchor of hand 6."""
    report = check_chain(entries, pinned=[KEY])
    assert report.ok, report.failures
    anchor = next(e for e in report.entries if e.label == "seed anchor of table mesa-r from hand 6")
    return report, anchor.check(CheckName.SEED_CHAIN)


def test_a_chain_re_anchored_before_it_ran_out_is_a_warning(capsys, tmp_path):
    entries = _reanchored_chain(first_length=10_000)
    report, check = _hand_6_anchor_check(entries)
    assert check.status is Status.WARN
    assert check.reason.startswith(
        "a new seed chain anchored at hand 6 while the previous one (from hand 1, 10000 seeds)"
        " still covered it: FAIRNESS.md 3.5 allows this only when the tip was lost"
    )
    warnings = [c for e in report.entries for c in e.checks if c.status is Status.WARN]
    assert warnings == [check]
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(entries))
    status, out, _ = run(capsys, "chain", str(path), "--key", KEY_HEX)
    assert status == 0 and "WARN  seed-chain  a new seed chain anchored at hand 6" in out
    assert out.strip().endswith(
        "no check failed; 1 warning(s): each warning above says what this input could not"
        " prove"
    )


def test_a_new_seed_chain_without_its_anchor_says_the_old_one_still_covered_it():
    # the house's anchor of hand 6's new chain left out: hand 6 said only "its signed anchor
    # statement is not in the input", as for any chain cut from its anchor, where the signed
    # chain from hand 1 still reached hand 6 (the house set those seeds aside unannounced)
    entries = [e for e in _reanchored_chain(first_length=10_000)
               if not (e.get("kind") == "seed_anchor" and e["chain_start"] == 6)]
    report = check_chain(entries, pinned=[KEY])
    assert report.ok, report.failures
    hand_6 = next(e for e in report.entries if e.label == "table mesa-r hand 6")
    assert hand_6.check(CheckName.SEED_CHAIN) == CheckResult(
        CheckName.SEED_CHAIN, Status.WARN,
        "a new seed chain starts at this hand, while the previous one (from hand 1, 10000"
        " seeds), signed in the input, still covered it (FAIRNESS.md 3.5 allows a new chain"
        " then only when the tip was lost, and anchored); its signed anchor statement is not in"
        " the input, so the commitment's publication time is not checked")
    # once the old chain was used up, only the missing anchor is said
    ran_out = [e for e in _reanchored_chain(first_length=5)
               if not (e.get("kind") == "seed_anchor" and e["chain_start"] == 6)]
    hand_6 = next(e for e in check_chain(ran_out, pinned=[KEY]).entries
                  if e.label == "table mesa-r hand 6")
    assert hand_6.check(CheckName.SEED_CHAIN).reason == (
        "a new seed chain starts at this hand; its signed anchor statement is not in the input,"
        " so the commitment's publication time is not checked")


def test_a_chain_re_anchored_once_used_up_is_no_warning(monkeypatch):
    # a house whose chains are 5 seeds long (the verifier's own expects 1024: below)
    monkeypatch.setattr("verifier.check.HOUSE_CHAIN_LENGTH", 5)
    report = check_chain(_reanchored_chain(first_length=5), pinned=[KEY])
    assert report.ok, report.failures
    assert not [c for e in report.entries for c in e.checks if c.status is Status.WARN]


def test_a_chain_re_anchored_after_a_short_one_is_a_warning(capsys, tmp_path):
    # a review anchored a new chain of one seed at every hand: each seed drawn just before its
    # hand, which the chain is there to prevent, and every check passed without a warning
    entries = _reanchored_chain(first_length=5)
    _, check = _hand_6_anchor_check(entries)
    assert check.status is Status.WARN
    assert check.reason.startswith(
        "a new seed chain anchored at hand 6 after the previous one (from hand 1) ran out at"
        " only 5 seeds: the house anchors 1024 a chain (FAIRNESS.md 3.1)")
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(entries))
    status, out, _ = run(capsys, "chain", str(path), "--key", KEY_HEX)
    assert status == 0 and out.strip().endswith(
        "no check failed; 1 warning(s): each warning above says what this input could not"
        " prove"
    )


def test_many_anchors_cost_linear_work(monkeypatch):
    # a review signed thousands of anchors of one table: each was compared with every one before
    # it (8,000 took 11.6 s; a 64 MiB chain would take an hour). Counted, not timed: comparisons
    # of two anchors stay a few per anchor, however many there are
    key = sample_signing_key()
    calls = 0
    compare = check_module._same_anchor

    def counted(one: Any, other: Any) -> bool:
        nonlocal calls
        calls += 1
        return compare(one, other)

    monkeypatch.setattr(check_module, "_same_anchor", counted)
    entries = _reanchored_chain(first_length=10)
    extra = [sign_statement(build_seed_anchor("mesa-r", start, 1, bytes([n % 256]) * 32), key)
             for n in range(300) for start in (6, 7 + n)]
    report = check_chain(entries + extra, pinned=[KEY])
    assert not report.ok  # hand 6's chain now has anchors that disagree
    assert calls <= 3 * len(extra)


def test_an_early_anchor_whose_hand_is_not_given_still_warns(table, monkeypatch):
    monkeypatch.setattr("verifier.check.HOUSE_CHAIN_LENGTH", 3)  # the sample's chains are short
    key = sample_signing_key()
    later = sign_statement(build_seed_anchor("mesa-t", 4, 10, bytes(32)), key)
    long_first = sign_statement(
        build_seed_anchor("mesa-t", 1, 3, bytes.fromhex(table.anchor_statement["anchor"])), key
    )
    # the first chain (3 seeds) ended at hand 3: an anchor from hand 4 is on time
    report = check_chain([long_first, later, *table.records[:3]], pinned=[KEY])
    assert report.entries[1].check(CheckName.SEED_CHAIN).status is Status.SKIP
    # the sample's own anchor covers hands 1..5: from hand 4 is early
    report = check_chain([table.anchor_statement, later, *table.records[:3]], pinned=[KEY])
    check = report.entries[1].check(CheckName.SEED_CHAIN)
    assert check.status is Status.WARN and "from hand 1, 5 seeds" in check.reason
