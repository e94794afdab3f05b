"""The rules fixtures (tests/scenarios/*.json) and the `barajamos scenario` command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from server.scenario_cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.json"))


def test_the_fixtures_exist() -> None:
    assert FILES, f"no scenario files in {SCENARIOS}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fixture(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--check", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    names = [s["name"] for s in (data if isinstance(data, list) else [data])]
    assert [json.loads(line)["name"] for line in out.splitlines()] == names


def test_installed_command_checks_every_fixture() -> None:
    command = shutil.which("barajamos") or str(Path(sys.executable).parent / "barajamos")
    done = subprocess.run(
        [command, "scenario", "--check", *map(str, FILES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) >= len(FILES)


BASE: dict[str, Any] = {
    "name": "round 1 tie, round 2 decides",
    "variant": "paulista",
    "seats": 2,
    "score": [0, 0],
    "dealer": 1,
    "hands": [["3C", "4D", "5S"], ["3H", "6D", "7S"]],
    "vira": "7C",
    "actions": [
        {"seat": 0, "do": "play", "card": "3C"},
        {"seat": 1, "do": "play", "card": "3H"},
        {"seat": 1, "do": "play", "card": "6D"},
        {"seat": 0, "do": "play", "card": "5S"},
        {"seat": 1, "do": "play", "card": "6D"},
    ],
    "expect": {"score": [0, 1], "hand_over": True, "match_winner": None, "rejected": [2]},
}


def _write(tmp_path: Path, data: Any, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_one_line_per_scenario_in_file_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = {**BASE, "name": "second", "actions": [], "expect": None}
    del second["expect"]
    path = _write(tmp_path, [BASE, second])
    code, out, err = _run(["--check", str(path)], capsys)
    assert (code, err) == (0, "")
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [
        {
            "name": BASE["name"],
            "score": [0, 1],
            "hand_over": True,
            "match_winner": None,
            "rejected": [2],
        },
        {
            "name": "second",
            "score": [0, 0],
            "hand_over": False,
            "match_winner": None,
            "rejected": [],
        },
    ]


def test_check_reports_differences_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = {**BASE, "expect": {"score": [1, 0], "rejected": [2]}}
    path = _write(tmp_path, wrong)
    code, out, err = _run(["--check", str(path)], capsys)
    assert code == 1
    assert len(out.splitlines()) == 1
    assert "score: expected [1, 0], got [0, 1]" in err and str(path) in err
    assert _run([str(path)], capsys)[0] == 0  # without --check the expectation is not compared


def test_mao_de_ferro_plays_name_the_card_at_a_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ferro = {
        **BASE,
        "name": "ferro",
        "score": [11, 11],
        "hands": [["3C", "2C", "4D"], ["4H", "5H", "6H"]],
        "actions": [
            {"seat": 0, "do": "play", "card": "3C"},
            {"seat": 1, "do": "play", "card": "4H"},
            {"seat": 0, "do": "raise"},
            {"seat": 0, "do": "play", "card": "2C"},
            {"seat": 1, "do": "play", "card": "5H"},
        ],
        "expect": {"score": [12, 11], "hand_over": True, "match_winner": 0, "rejected": [2]},
    }
    code, _, err = _run(["--check", str(_write(tmp_path, ferro))], capsys)
    assert (code, err) == (0, "")


INVALID: list[tuple[str, Any, str]] = [
    ("unknown card", {**BASE, "hands": [["3C", "4D", "ZZ"], ["3H", "6D", "7S"]]}, "unknown card"),
    (
        "unknown card in an action",
        {**BASE, "actions": [{"seat": 0, "do": "play", "card": "8C"}]},
        "unknown card",
    ),
    ("unknown variant", {**BASE, "variant": "espanhol"}, "unknown variant"),
    ("unknown verb", {**BASE, "actions": [{"seat": 0, "do": "shout"}]}, "unknown verb"),
    ("duplicated card", {**BASE, "hands": [["3C", "4D", "5S"], ["3C", "6D", "7S"]]}, "twice"),
    ("vira in a hand", {**BASE, "vira": "3C"}, "vira"),
    ("short hand", {**BASE, "hands": [["3C", "4D"], ["3H", "6D", "7S"]]}, "3 cards"),
    ("missing hand", {**BASE, "hands": [["3C", "4D", "5S"]]}, "hands"),
    ("missing vira", {k: v for k, v in BASE.items() if k != "vira"}, "missing vira"),
    ("extra vira", {**BASE, "variant": "mineiro"}, "has no vira"),
    ("bad dealer", {**BASE, "dealer": 2}, "dealer"),
    ("bad score", {**BASE, "score": [12, 0]}, "score"),
    ("negative score", {**BASE, "score": [-1, 0]}, "score"),
    ("bad seats", {**BASE, "seats": 3}, "seats"),
    ("bad seat", {**BASE, "actions": [{"seat": 2, "do": "raise"}]}, "seat"),
    ("bad mode", {**BASE, "mode": "anarchy"}, "mode"),
    ("malformed JSON", '{"name": "x", ', "malformed JSON"),
    ("not a scenario", "[1, 2]", "scenario 0"),
    ("empty list", "[]", "no scenario"),
    ("a number too long to read", '{"name": "x", "seats": ' + "1" * 5000 + "}", "too many digits"),
    (
        "an unknown field with a line break",
        {**BASE, "actions": [{"seat": 0, "do": "raise", "a\nb": 1}]},
        "unknown action field",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_files_exit_2_with_one_line(
    case: str, data: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, data)
    code, out, err = _run([str(path)], capsys)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert str(path) in err and message in err
    assert "Traceback" not in err


def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    code, out, err = _run([str(missing)], capsys)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and str(missing) in err
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    code, out, err = _run([str(binary)], capsys)
    assert (code, out) == (2, "") and "cannot read" in err
    code, _, err = _run([str(tmp_path)], capsys)  # a directory
    assert code == 2 and len(err.splitlines()) == 1


def test_an_invalid_file_stops_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path, BASE, "good.json")
    bad = _write(tmp_path, {**BASE, "variant": "x"}, "bad.json")
    code, out, err = _run([str(good), str(bad)], capsys)
    assert (code, out) == (2, "")
    assert "bad.json" in err and "good.json" not in err


@pytest.mark.parametrize("argv", [[], ["--frobnicate", "x.json"]])
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == "" and "usage" in err


def test_expect_is_read_only_by_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # SCENARIOS.md: "`expect`: optional, used only by `--check`": a plain run took a typo (or a
    # newer version's key) in it for an invalid file
    for expect in ({"scroe": [0, 1]}, {"score": [2]}, "nothing", {"a\nb": 1}):
        path = _write(tmp_path, {**BASE, "expect": expect})
        code, out, err = _run([str(path)], capsys)
        assert (code, err) == (0, ""), expect
        assert json.loads(out)["score"] == [0, 1]
        code, out, err = _run(["--check", str(path)], capsys)  # a check needs a readable one
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "expect" in err, err


def test_each_result_is_one_ascii_line_whatever_its_name(tmp_path: Path) -> None:
    # a review: a name with a lone surrogate (legal JSON) crashed the command with a
    # traceback, so did "é" where the output's encoding is ASCII, and U+2028 split a line
    names = ["a\ud800b", "mão de ferro é", "one\u2028two\u0085three"]
    path = _write(tmp_path, [{**BASE, "name": name} for name in names])
    command = shutil.which("barajamos") or str(Path(sys.executable).parent / "barajamos")
    done = subprocess.run([command, "scenario", str(path)], capture_output=True, timeout=120,
                          check=False, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    lines = done.stdout.decode("ascii").splitlines()
    assert [json.loads(line)["name"] for line in lines] == names
