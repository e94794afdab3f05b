"""What an independent audit of the fairness verifier found in the command line, fixed.

- An action is in exactly one form (FAIRNESS.md 7): a play by `card` (maybe covered) or by
  `position` alone, never both, a blind play never covered; anything else is unreadable input
  (exit 2), as the browser's `structure` check now says too (test_browser_fairness_audit.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from truco.records import SIGNATURE_FIELDS, RecordError, parse_record
from verifier.cli import main
from verifier.samples import sample_signing_key
from verifier.signing import sign_built_record
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
