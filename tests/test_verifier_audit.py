"""What an independent audit of the fairness verifier found in the command line, fixed.

- `hand` passed a record whose seed is not of its table's signed seed chain (a house that dealt
  again with a new seed after the entropy, and signed it) with no word: one record cannot place
  its seed (FAIRNESS.md 12), so `hand` now says so in a `seed-chain` warning with the `chain`
  command that checks it, and given a house URL (`/hands/{table}-{n}`) it fetches the table's
  chain (`/tables/{table}/chain`) and checks the seed against its signed anchor itself.
- `chain`: when the anchor of a record's seed chain is in the input but does not count (its
  signature, its signer), the record's `seed-chain` says so, not that it is missing.
- Usability: an odd number of hex digits is said so (not "must be hexadecimal"), a chain given to
  `hand` points to `chain`, and a redirect loop is one clean line. (`deck`, `--help` and the
  derivation vectors without PyNaCl: test_verifier_bundle.py.)
- An action is in exactly one form (FAIRNESS.md 7): a play by `card` (maybe covered) or by
  `position` alone, never both, a blind play never covered; anything else is unreadable input
  (exit 2), as the browser's `structure` check now says too (test_browser_fairness_audit.py).
"""

from __future__ import annotations

import copy
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.test_verifier_cli import serve_folder
from truco.records import SIGNATURE_FIELDS, RecordError, key_id_for, parse_record
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.cli import main
from verifier.samples import sample_signing_key, sample_table
from verifier.signing import sign_built_record, sign_statement, signing_key_from_seed
from verifier.vectors_run import load_vectors

VECTOR = load_vectors("hand.json")
KEY_HEX = VECTOR["public_key"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------ the one form of an action

# Each is the first action of the vector's hand record (4 seats), signed again by the test key:
# the record's only fault is the action's form. The browser refuses the same list.
BAD_ACTIONS: dict[str, Any] = {
    "an unknown verb": {"seat": 0, "do": "cheat"},
    "a play with no card": {"seat": 0, "do": "play"},
    "a raise carrying a card": {"seat": 0, "do": "raise", "card": "4C"},
    "a raise carrying covered": {"seat": 0, "do": "raise", "covered": True},
    "a raise carrying a position": {"seat": 0, "do": "raise", "position": 0},
    "covered false": {"seat": 0, "do": "play", "card": "4C", "covered": False},
    "covered as a number": {"seat": 0, "do": "play", "card": "4C", "covered": 1},
    "position null": {"seat": 0, "do": "play", "card": "4C", "position": None},
    "card null": {"seat": 0, "do": "play", "card": None, "position": 1},
    "position 3": {"seat": 0, "do": "play", "position": 3},
    "a position as text": {"seat": 0, "do": "play", "position": "1"},
    "a position as a boolean": {"seat": 0, "do": "play", "position": True},
    "an extra field": {"seat": 0, "do": "raise", "why": "because"},
    "a card in lower case": {"seat": 0, "do": "play", "card": "4c"},
    "a seat as text": {"seat": "0", "do": "raise"},
    "a seat as a boolean": {"seat": False, "do": "raise"},
    "a negative seat": {"seat": -1, "do": "raise"},
    "a seat past the seats": {"seat": 4, "do": "raise"},
    "no verb": {"seat": 0},
    "no seat": {"do": "raise"},
    "not an object": [0, "raise"],
    # FAIRNESS.md 7: one form per action; both read fine before and only failed `replay`
    "a blind play covered": {"seat": 0, "do": "play", "position": 1, "covered": True},
    "a play by card and position": {"seat": 0, "do": "play", "card": "4C", "position": 1},
}


def with_first_action(action: Any) -> dict[str, Any]:
    """The vector's record with `action` first, signed again (without validating it)."""
    unsigned = {k: v for k, v in VECTOR["record"].items() if k not in SIGNATURE_FIELDS}
    unsigned["actions"] = [action, *copy.deepcopy(unsigned["actions"])]
    return sign_built_record(unsigned, sample_signing_key())


@pytest.mark.parametrize("case", list(BAD_ACTIONS))
def test_an_action_out_of_its_one_form_is_unreadable(capsys, tmp_path: Path, case: str) -> None:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(with_first_action(BAD_ACTIONS[case])))
    status, out, err = run(capsys, "hand", str(path), "--key", KEY_HEX)
    assert status == 2 and out == "", out
    expected = f"barajamos-verify: {path}: not a valid hand record: $.actions[0]"
    assert one_error_line(err).startswith(expected)
    with pytest.raises(RecordError):
        parse_record(with_first_action(BAD_ACTIONS[case]))


def test_the_two_forms_of_a_play_each_read(capsys, tmp_path: Path) -> None:
    # a play by card, covered or not, and a blind play by position alone are well formed (they
    # fail `replay` here, where they are not legal, but the record reads)
    for action in (
        {"seat": 0, "do": "play", "card": "4C"},
        {"seat": 0, "do": "play", "card": "4C", "covered": True},
        {"seat": 0, "do": "play", "position": 2},
    ):
        path = tmp_path / "hand.json"
        path.write_text(json.dumps(with_first_action(action)))
        status, out, _ = run(capsys, "hand", str(path), "--key", KEY_HEX)
        assert status == 1 and "FAIL  replay" in out, (action, out)


# ------------------------------------------------------------------ 1. a record's seed chain

TABLE = "0123456789abcdef"
CONFIG = MatchConfig(Variant.PAULISTA, 2, TeamMode.VOTE)
SAMPLE = sample_table(table_id=TABLE, config=CONFIG, hands=4, seed=11)
RECORDS = SAMPLE.records
ANCHOR = SAMPLE.anchor_statement
# The house dealt hand 2 again after the entropy, from a seed of another chain, and signed it:
# SHA-256(seed) = commitment, deck, deal, replay, key and signature all hold
REDEALT = sample_table(table_id=TABLE, config=CONFIG, hands=2, seed=99).records[1]
OTHER = signing_key_from_seed(bytes(range(1, 33)))


def seed_chain_line(out: str) -> str:
    lines = [line for line in out.splitlines() if " seed-chain " in line]
    assert len(lines) == 1, out
    return lines[0]


def test_hand_says_a_lone_record_does_not_place_its_seed(capsys, tmp_path: Path) -> None:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(REDEALT))
    status, out, _ = run(capsys, "hand", str(path), "--key", KEY_HEX)
    assert status == 0, out
    assert seed_chain_line(out) == (
        "  WARN  seed-chain  not checked from one record: any seed matches its own commitment,"
        " so only the seed's place in the table's signed seed chain shows it was fixed before"
        " the players' entropy; check it with `barajamos-verify chain"
        f" HOUSE/tables/{TABLE}/chain --key {KEY_HEX}` (HOUSE is the address of the house that"
        " dealt the hand)"
    )
    assert out.strip().endswith(
        "no check failed; 1 warning(s): each warning above says what this input could not"
        " prove"
    )
    # a key file is named as given; no key, a blank for it
    key_file = tmp_path / "house key.txt"
    key_file.write_text(KEY_HEX + "\n")
    _, out, _ = run(capsys, "hand", str(path), "--key-file", str(key_file))
    assert f"--key-file '{key_file}'`" in seed_chain_line(out)
    _, out, _ = run(capsys, "hand", str(path))
    assert seed_chain_line(out).endswith(
        "--key HOUSE_KEY` (HOUSE is the address of the house that dealt the hand; HOUSE_KEY is"
        " the house's published key, from /api/key)"
    )
    status, out, _ = run(capsys, "--json", "hand", str(path), "--key", KEY_HEX)
    checks = json.loads(out)["entries"][0]["checks"]
    assert [c["check"] for c in checks][:4] == ["key", "signature", "commitment", "seed-chain"]
    assert checks[3]["status"] == "warn"


def serve_house(root: Path, hands: dict[int, dict[str, Any]], chain: list[Any] | None) -> None:
    (root / "hands").mkdir(exist_ok=True)
    for number, record in hands.items():
        (root / "hands" / f"{TABLE}-{number}").write_text(json.dumps(record))
    if chain is not None:
        (root / "tables" / TABLE).mkdir(parents=True, exist_ok=True)
        (root / "tables" / TABLE / "chain").write_text(json.dumps(chain))


def test_hand_of_a_house_url_checks_the_seed_against_the_tables_signed_anchor(
    capsys, tmp_path: Path
) -> None:
    serve_house(tmp_path, {2: REDEALT, 3: RECORDS[2]}, [ANCHOR, *RECORDS])
    with serve_folder(tmp_path) as url:
        # the re-dealt hand: its seed does not hash down to the anchor signed before hand 1
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-2", "--key", KEY_HEX)
        assert status == 1, out
        assert seed_chain_line(out) == (
            "  FAIL  seed-chain  the seed, hashed 2 times, does not give the anchor the house"
            f" signed before hand 1, in the table's chain at {url}/tables/{TABLE}/chain: it is"
            " not the seed fixed before the hand, and may have been chosen after the players'"
            " entropy"
        )
        for name in ("key", "signature", "commitment", "deck", "deal", "replay"):
            assert f"PASS  {name} " in out, out
        # the genuine hand 3: hashed 3 times, it is the anchor
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-3", "--key", KEY_HEX)
        assert status == 0 and "WARN" not in out, out
        assert seed_chain_line(out) == (
            "  PASS  seed-chain  the seed, hashed 3 times, gives the anchor the house signed"
            f" before hand 1, in the table's chain at {url}/tables/{TABLE}/chain: it was fixed"
            " before the players' entropy"
        )


def test_hand_of_a_house_url_without_the_anchor_warns_with_the_chain_command(
    capsys, tmp_path: Path
) -> None:
    chain_url = "{url}/tables/" + TABLE + "/chain"
    command = f"`barajamos-verify chain {chain_url} --key {KEY_HEX}`"
    # no chain served
    serve_house(tmp_path, {3: RECORDS[2]}, None)
    with serve_folder(tmp_path) as url:
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-3", "--key", KEY_HEX)
        assert status == 0, out
        assert seed_chain_line(out) == (
            f"  WARN  seed-chain  the table's chain at {chain_url.format(url=url)} could not be"
            " had (HTTP 404 File not found): the seed's place in the table's signed seed chain"
            f" is not checked; run {command.format(url=url)}"
        )
    # a chain without the anchor
    serve_house(tmp_path, {3: RECORDS[2]}, list(RECORDS))
    with serve_folder(tmp_path) as url:
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-3", "--key", KEY_HEX)
        assert status == 0, out
        assert seed_chain_line(out).endswith(
            "holds no signed anchor of the seed chain from hand 1: the seed's place in the"
            f" table's signed seed chain is not checked; run {command.format(url=url)}"
        )
    # an anchor a key the user did not pin signed proves nothing
    forged = sign_statement({k: v for k, v in ANCHOR.items() if k not in SIGNATURE_FIELDS}, OTHER)
    serve_house(tmp_path, {3: RECORDS[2]}, [forged, *RECORDS])
    with serve_folder(tmp_path) as url:
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-3", "--key", KEY_HEX)
        assert status == 1, out
        assert "FAIL  seed-chain" in out and "it does not count: signed by key" in out
    # a chain served for the table, with records that are not JSON of records
    (tmp_path / "tables" / TABLE / "chain").write_text("[1, 2]")
    with serve_folder(tmp_path) as url:
        status, out, _ = run(capsys, "hand", f"{url}/hands/{TABLE}-3", "--key", KEY_HEX)
        assert status == 0 and "WARN  seed-chain" in out and "could not be had" in out, out


# ------------------------------------------------------------ 5. an anchor that does not count


def test_a_chain_says_why_an_anchor_in_the_input_does_not_count(capsys, tmp_path: Path) -> None:
    broken = dict(ANCHOR, signature=("11" if ANCHOR["signature"][:2] == "00" else "00")
                  + ANCHOR["signature"][2:])  # fmt: skip
    foreign = sign_statement({k: v for k, v in ANCHOR.items() if k not in SIGNATURE_FIELDS}, OTHER)
    why = {
        "bad signature": (
            broken,
            "Ed25519 signature does not verify for key 5900f98851b94516: the signed content was"
            " altered or signed by another key",
        ),
        "untrusted signer": (
            foreign,
            f"signed by key {key_id_for(bytes(OTHER.verify_key))}, which is not the pinned key"
            " (5900f98851b94516) nor handed over from it",
        ),
    }
    path = tmp_path / "chain.json"
    for anchor, reason in why.values():
        path.write_text(json.dumps([anchor, *RECORDS]))
        status, out, _ = run(capsys, "--json", "chain", str(path), "--key", KEY_HEX)
        assert status == 1  # the anchor's own check fails
        entries = json.loads(out)["entries"]
        hand_1 = {c["check"]: c for c in entries[1]["checks"]}["seed-chain"]
        assert hand_1 == {
            "check": "seed-chain",
            "status": "warn",
            "reason": "a new seed chain starts at this hand; its anchor statement, in the input,"
            f" does not count ({reason}), so the commitment's publication time is not checked",
        }
        assert "not in the input" not in out
        # a later hand without the one before it: skipped, and why it was not hashed down
        path.write_text(json.dumps([anchor, *RECORDS[2:]]))
        _, out, _ = run(capsys, "--json", "chain", str(path), "--key", KEY_HEX)
        hand_3 = {c["check"]: c for c in json.loads(out)["entries"][1]["checks"]}["seed-chain"]
        assert hand_3["status"] == "skip"
        assert hand_3["reason"] == (
            "hand 2 is not in the input before this record: nothing to compare the commitment"
            f" with; the anchor statement of its seed chain, in the input, does not count"
            f" ({reason})"
        )
    # no anchor at all: said as before
    path.write_text(json.dumps(list(RECORDS)))
    _, out, _ = run(capsys, "chain", str(path), "--key", KEY_HEX)
    assert (
        "WARN  seed-chain  a new seed chain starts at this hand; its signed anchor statement is"
        " not in the input, so the commitment's publication time is not checked"
    ) in out


# ------------------------------------------------------------------ 8. small usability


def test_an_odd_number_of_hex_digits_is_said_so(capsys) -> None:
    deck = ["deck", "--seed", "00" * 32, "--table", "t", "--hand", "1", "--variant", "paulista",
            "--seats", "2"]  # fmt: skip
    status, _, err = run(capsys, *deck, "--contribution", "0=abc")
    assert status == 2
    assert one_error_line(err) == (
        "barajamos-verify: a contribution must be two hex digits per byte, got 3 digits ('abc'):"
        " a digit is missing or one too many"
    )
    status, _, err = run(capsys, *deck, "--contribution", "0=xyz")
    assert status == 2 and one_error_line(err).endswith("must be hexadecimal, got 'xyz'")
    status, _, err = run(capsys, "deck", *deck[1:2], "0" * 63, *deck[3:])
    assert status == 2 and "--seed must be two hex digits per byte, got 63 digits" in err
    status, _, err = run(capsys, "hand", "x.json", "--mine", "abcde")
    assert status == 2 and "--mine must be two hex digits per byte, got 5 digits" in err


def test_a_chain_given_to_hand_points_to_chain(capsys, tmp_path: Path) -> None:
    as_list = tmp_path / "chain.json"
    as_list.write_text(json.dumps([ANCHOR, *RECORDS]))
    status, _, err = run(capsys, "hand", str(as_list), "--key", KEY_HEX)
    assert status == 2
    assert one_error_line(err) == (
        f"barajamos-verify: {as_list}: expected a JSON object (one hand record), got a list:"
        " a table's chain is checked with `barajamos-verify chain`"
    )
    as_lines = tmp_path / "chain.jsonl"
    as_lines.write_text("\n".join(json.dumps(entry) for entry in [ANCHOR, *RECORDS]) + "\n")
    status, _, err = run(capsys, "hand", str(as_lines), "--key", KEY_HEX)
    assert status == 2
    assert one_error_line(err) == (
        f"barajamos-verify: {as_lines}: not valid JSON: Extra data at line 2 column 1 (one JSON"
        " object per line: a table's chain is checked with `barajamos-verify chain`)"
    )
    # both read as a chain
    for path in (as_list, as_lines):
        assert run(capsys, "chain", str(path), "--key", KEY_HEX)[0] == 0
    # a record with garbage after it is no chain: no hint
    garbage = tmp_path / "garbage.json"
    garbage.write_text(json.dumps(RECORDS[0], indent=1) + "\n}")
    status, _, err = run(capsys, "hand", str(garbage), "--key", KEY_HEX)
    assert status == 2 and "Extra data" in err and "barajamos-verify chain" not in err


class _Loop(http.server.BaseHTTPRequestHandler):
    """Redirects every request to itself."""

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_redirect_loop_is_one_clean_line(capsys) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Loop)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hands/{TABLE}-1"
        status, out, err = run(capsys, "hand", url, "--key", KEY_HEX)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert status == 2 and out == ""
    assert one_error_line(err) == (
        f"barajamos-verify: {url}: cannot fetch: redirected in a loop or more than 10 times (the"
        " last answer: HTTP 302 Found)"
    )
    assert "\\n" not in err
