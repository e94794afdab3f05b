"""Regenerate the known-answer vectors shipped in this directory.

    .venv/bin/python verifier/vectors/generate.py          # rewrite the *.json files
    .venv/bin/python verifier/vectors/generate.py --check  # exit 1 if they would change

Everything is deterministic: seeds come from SHA-256 of fixed labels, the hands are played by a
seeded random policy, and records are signed with the published TEST key
(`verifier.samples.TEST_KEY_SEED`). Changing anything here changes the contract: the vectors
are what another implementation (the browser's) must reproduce byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from truco.actions import ActionKind, action_from_json
from truco.fairness import SHUFFLE_VERSION, Contribution, canonical_json, shuffle_trace
from truco.records import build_ledger_head, record_hash, signed_bytes
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.samples import TEST_KEY_SEED, sample_signing_key, sample_table
from verifier.signing import sign_statement
from verifier.vectors_run import derive_case

HERE = Path(__file__).resolve().parent


def _vector_seed(label: str) -> bytes:
    return hashlib.sha256(f"{SHUFFLE_VERSION} vector seed: {label}".encode()).digest()


def _contribution_bytes(label: str, size: int = 32) -> bytes:
    return hashlib.sha256(f"contribution {label}".encode()).digest()[:size]


def _case(
    name: str,
    seed: bytes,
    table: str,
    hand: int,
    variant: Variant,
    contributions: list[Contribution],
    dealer: int | None,
    note: str = "",
) -> dict[str, Any]:
    case: dict[str, Any] = {
        "name": name,
        "seed": seed.hex(),
        "table": table,
        "hand": hand,
        "variant": variant.value,
        "contributions": [None if c is None else c.hex() for c in contributions],
        "dealer": dealer,
    }
    expect = derive_case(case)
    rejected = "; ".join(
        f"stream byte {r['offset']} = {r['byte']} rejected (>= {r['bound']}) while drawing"
        f" j in [0, {r['modulus'] - 1}]"
        for r in expect["rejections"]
    )
    case["note"] = " ".join(
        part
        for part in (note, f"Rejections: {rejected}." if rejected else "No byte rejected.")
        if part
    )
    case["expect"] = expect
    return case


def _find_seed(
    prefix: str, contributions: list[Contribution], table: str, wanted: Callable[[int], bool]
) -> bytes:
    """The first labelled seed whose shuffle rejects a number of bytes that `wanted` accepts."""
    for attempt in range(100_000):
        seed = _vector_seed(f"{prefix} {attempt}")
        if wanted(len(shuffle_trace(seed, table, 1, contributions).rejections)):
            return seed
    raise RuntimeError(f"no seed found for {prefix}")


def deck_cases() -> list[dict[str, Any]]:
    a, b, c = (_contribution_bytes(x) for x in "abc")
    phrase = "Truco! ñandú 🂡".encode()
    cases = [
        _case("paulista, 2 seats, both absent, first dealer drawn", _vector_seed("1"), "mesa-1", 1,
              Variant.PAULISTA, [None, None], None),
        _case("paulista, 4 seats, bytes / phrase / absent / bytes", _vector_seed("2"), "mesa-2", 7,
              Variant.PAULISTA, [a, phrase, None, b], None,
              "Seat 1 typed the phrase 'Truco! ñandú 🂡' (UTF-8, no normalisation)."),
        _case("mineiro, 2 seats, seat 0 absent, dealer 1", _vector_seed("3"), "mesa-3", 2,
              Variant.MINEIRO, [None, c], 1),
        _case("mineiro, 4 seats, all present, dealer 3", _vector_seed("4"), "mesa-4", 12,
              Variant.MINEIRO, [a, b, c, _contribution_bytes("d")], 3),
        _case("argentino, 2 seats, both present, first dealer drawn", _vector_seed("5"), "mesa-5",
              1, Variant.ARGENTINO, [a, b], None),
        _case("argentino, 4 seats, all absent, dealer 0", _vector_seed("6"), "mesa-6", 3,
              Variant.ARGENTINO, [None, None, None, None], 0),
        _case("non-ASCII table id, highest hand number, 1- and 256-byte contributions",
              _vector_seed("7"), "mesa ñ ☕", 2**32 - 1, Variant.PAULISTA,
              [b"\x00", bytes(range(256))], None),
        _case("absent is not a zero byte (1/2)", _vector_seed("8"), "mesa-8", 1, Variant.MINEIRO,
              [None, b"\x00"], 0, "Same inputs as (2/2) with the seats swapped: another deck."),
        _case("absent is not a zero byte (2/2)", _vector_seed("8"), "mesa-8", 1, Variant.MINEIRO,
              [b"\x00", None], 0),
    ]  # fmt: skip
    none = _find_seed("no rejection", [a, None, b, c], "mesa-9", lambda n: n == 0)
    cases.append(
        _case("no byte rejected: exactly 39 bytes read", none, "mesa-9", 1, Variant.PAULISTA,
              [a, None, b, c], None, "Found by searching seeds.")
    )  # fmt: skip
    many = _find_seed("many rejections", [a, b], "mesa-10", lambda n: n >= 7)
    cases.append(
        _case("seven or more bytes rejected", many, "mesa-10", 1, Variant.ARGENTINO, [a, b], 1,
              "Found by searching seeds.")
    )  # fmt: skip
    return cases


def canonical_cases() -> list[dict[str, Any]]:
    values: list[tuple[str, Any]] = [
        ("sorted keys, no whitespace", {"b": 1, "a": [True, False, None], "c": {"z": 0, "y": -1}}),
        ("non-ASCII stays raw UTF-8", {"table": "mesa ñ ☕ 🂡"}),
        ("escapes as JSON.stringify",
         {"s": 'quote " backslash \\ tab \t nl \n ctl \u0001 del \u007f'}),
        ("largest safe integer", {"n": 2**53 - 1, "m": -(2**53 - 1)}),
        ("empty containers", {"list": [], "object": {}, "string": ""}),
    ]  # fmt: skip
    cases = []
    for name, value in values:
        encoded = canonical_json(value)
        cases.append(
            {
                "name": name,
                "value": value,
                "canonical": encoded.decode("utf-8"),
                "sha256": hashlib.sha256(encoded).hexdigest(),
            }
        )
    return cases


def _interesting(record: dict[str, Any]) -> bool:
    actions = [action_from_json(a) for a in record["actions"]]
    kinds = {a.kind for a in actions}
    return (
        any(a.covered for a in actions)
        and ActionKind.RAISE in kinds
        and ActionKind.ACCEPT in kinds
        and record["contributions"].count(None) == 1
    )


def hand_vector() -> dict[str, Any]:
    """A Paulista 4-seat hand with a raise accepted, a covered card and one absent seat."""
    config = MatchConfig(Variant.PAULISTA, 4, TeamMode.VOTE)
    for attempt in range(10_000):
        table = sample_table(table_id="mesa-vector", config=config, hands=1, seed=attempt)
        record = table.records[0]
        if _interesting(record):
            return _signed_vector(
                record,
                "Paulista, 4 seats, vote mode: a raise accepted, a covered card, one seat absent."
                f" Played by verifier.samples with generator seed {attempt}.",
            )
    raise RuntimeError("no interesting hand found")


def _signed_vector(record: dict[str, Any], note: str) -> dict[str, Any]:
    return {
        "note": note,
        "test_key_seed": TEST_KEY_SEED.hex(),
        "public_key": record["public_key"],
        "signed_bytes_sha256": hashlib.sha256(signed_bytes(record)).hexdigest(),
        "record_hash": record_hash(record).hex(),
        "record": record,
    }


def chain_vector() -> dict[str, Any]:
    """A Mineiro 2-seat table: its seed anchor, four chained hands and a ledger head."""
    config = MatchConfig(Variant.MINEIRO, 2, TeamMode.VOTE)
    table = sample_table(table_id="mesa-chain", config=config, hands=4, seed=2026, chain_length=8)
    last = table.records[-1]
    head = sign_statement(
        build_ledger_head(1_790_000_000, {table.table_id: (last["hand"], record_hash(last))}),
        sample_signing_key(),
    )
    return {
        "note": "Seed anchor (chain of 8 seeds from hand 1), hands 1-4 of one table, and a"
        " ledger head naming hand 4. Signed with the TEST key.",
        "test_key_seed": TEST_KEY_SEED.hex(),
        "public_key": last["public_key"],
        "record_hashes": [record_hash(record).hex() for record in table.records],
        "entries": [table.anchor_statement, *table.records, head],
    }


def _documents() -> Iterator[tuple[str, Any]]:
    yield (
        "canonical.json",
        {
            "version": SHUFFLE_VERSION,
            "about": "Canonical JSON (docs/FAIRNESS.md 6):"
            " `canonical` is the exact text of `value`.",
            "cases": canonical_cases(),
        },
    )
    yield (
        "decks.json",
        {
            "version": SHUFFLE_VERSION,
            "about": "Deck derivation (docs/FAIRNESS.md 5): inputs to expected deck, deal, vira and"
            " first dealer (`dealer` null: the drawn first dealer deals). Hex is lowercase.",
            "cases": deck_cases(),
        },
    )
    yield "hand.json", hand_vector()
    yield "chain.json", chain_vector()


def _render(document: Any) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, exit 1 on change")
    args = parser.parse_args(argv)
    changed = []
    for name, document in _documents():
        path = HERE / name
        text = _render(document)
        current = path.read_text("utf-8") if path.exists() else None
        if current != text:
            changed.append(name)
            if not args.check:
                path.write_text(text, "utf-8")
    if args.check and changed:
        print(f"vectors out of date: {', '.join(changed)}", file=sys.stderr)
        return 1
    print(f"{'checked' if args.check else 'wrote'} {HERE} ({len(changed)} changed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
