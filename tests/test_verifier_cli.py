"""`barajamos-verify` (verifier.cli): subcommands, reports, exit statuses, bad input, isolation."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from truco.fairness import derive_deck, draw_first_dealer
from truco.records import parse_record
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.cli import main
from verifier.samples import sample_table
from verifier.sources import CHAIN_LIMIT_BYTES, HAND_LIMIT_BYTES
from verifier.vectors_run import load_vectors

REPO = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def hand_file(tmp_path: Path) -> Path:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(load_vectors("hand.json")["record"]))
    return path


@pytest.fixture
def chain_file(tmp_path: Path) -> Path:
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(load_vectors("chain.json")["entries"]))
    return path


PUBLIC_KEY = load_vectors("hand.json")["public_key"]


def test_vectors_through_main(capsys):
    status, out, err = run(capsys, "vectors")
    assert status == 0, out
    assert "FAIL" not in out and err == ""
    assert out.strip().splitlines()[-1].endswith("vectors passed")
    status, out, _ = run(capsys, "--json", "vectors")
    report = json.loads(out)
    assert status == 0 and report["ok"] and len(report["vectors"]) >= 20
    assert json.loads(run(capsys, "vectors", "--json")[1]) == report  # either side of the verb


def test_vectors_as_a_subprocess_and_without_server_modules():
    # `python -m verifier vectors` works, and importing and running the verifier loads neither
    # the server nor its network/database stack.
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "vectors"], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr
    probe = (
        "import sys, verifier.cli\n"
        "status = verifier.cli.main(['vectors'])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('server', 'aiohttp', 'asyncpg'))\n"
        "assert status == 0, status\n"
        "assert not bad, bad\n"
        "print('isolated')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("isolated")


def test_hand_verifies_with_and_without_a_pinned_key(capsys, hand_file, tmp_path):
    status, out, _ = run(capsys, "hand", str(hand_file))
    assert status == 0
    assert "WARN  key" in out and "key not pinned" in out
    status, out, _ = run(capsys, "hand", str(hand_file), "--key", PUBLIC_KEY)
    # one record cannot place its seed in the table's seed chain: the one warning says so
    assert status == 0 and [line for line in out.splitlines() if "WARN" in line] == [
        line for line in out.splitlines() if line.startswith("  WARN  seed-chain ")
    ]
    assert "WARN  key" not in out
    for name in ("signature", "commitment", "deck", "dealer", "deal", "replay"):
        assert f"PASS  {name}" in out
    key_file = tmp_path / "house.key"
    key_file.write_text(PUBLIC_KEY + "\n# the house key\n")
    status, out, _ = run(capsys, "hand", str(hand_file), "--key-file", str(key_file))
    assert status == 0 and "(pinned)" in out


def test_hand_with_another_pinned_key_fails(capsys, hand_file):
    status, out, _ = run(capsys, "hand", str(hand_file), "--key", "11" * 32)
    assert status == 1
    assert "FAIL  key" in out and "not the pinned key" in out


def test_hand_json_report(capsys, hand_file):
    status, out, err = run(capsys, "--json", "hand", str(hand_file), "--key", PUBLIC_KEY)
    report = json.loads(out)
    assert status == 0 and err == ""
    assert report["ok"] is True
    checks = {c["check"]: c for c in report["entries"][0]["checks"]}
    assert checks["replay"]["status"] == "pass" and "action(s) legal" in checks["replay"]["reason"]


def test_mine_finds_my_contribution(capsys, hand_file):
    record = load_vectors("hand.json")["record"]
    mine = next(c for c in record["contributions"] if c is not None)
    status, out, _ = run(capsys, "hand", str(hand_file), "--mine", mine)
    assert status == 0 and "PASS  mine" in out
    status, out, _ = run(capsys, "hand", str(hand_file), "--mine", "abcdef")
    assert status == 1 and "FAIL  mine" in out and "sent nothing" in out
    status, out, _ = run(capsys, "hand", str(hand_file), "--mine-text", "not my phrase")
    assert status == 1 and "FAIL  mine" in out


def test_mine_text_matches_a_typed_phrase(capsys, tmp_path):
    config = MatchConfig(Variant.MINEIRO, 2, TeamMode.FIRST)
    for seed in range(200):
        record = sample_table(table_id="t", config=config, hands=1, seed=seed).records[0]
        phrases = [bytes.fromhex(c) for c in record["contributions"] if c and len(c) != 64]
        if phrases:
            break
    path = tmp_path / "phrase.json"
    path.write_text(json.dumps(record))
    status, out, _ = run(capsys, "hand", str(path), "--mine-text", phrases[0].decode())
    assert status == 0 and "PASS  mine" in out


def test_chain_verifies(capsys, chain_file):
    status, out, _ = run(capsys, "chain", str(chain_file), "--key", PUBLIC_KEY)
    assert status == 0, out
    assert out.count("PASS  link") == 4 and "PASS  seed-chain" in out and "PASS  ledger" in out


def test_chain_as_json_lines_and_as_a_directory(capsys, tmp_path):
    entries = load_vectors("chain.json")["entries"]
    lines = tmp_path / "chain.jsonl"
    lines.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    assert run(capsys, "chain", str(lines), "--key", PUBLIC_KEY)[0] == 0
    directory = tmp_path / "records"
    directory.mkdir()
    for index, entry in enumerate(reversed(entries)):  # file names in reverse hand order
        (directory / f"{index:03}.json").write_text(json.dumps(entry))
    status, out, _ = run(capsys, "chain", str(directory), "--key", PUBLIC_KEY)
    assert status == 0, out


def test_a_record_saved_indented_is_a_chain_of_one(capsys, tmp_path):
    record = load_vectors("hand.json")["record"]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(record, indent=2))
    status, out, err = run(capsys, "chain", str(path), "--key", PUBLIC_KEY)
    assert status == 0, (out, err)
    # two indented records are neither a list nor JSON lines: the message says what a chain is
    path.write_text(json.dumps(record, indent=2) + "\n" + json.dumps(record, indent=2))
    status, out, err = run(capsys, "chain", str(path), "--key", PUBLIC_KEY)
    assert status == 2 and out == ""
    assert "a chain file is a JSON list, or JSON lines: one record per line" in err


def test_deck_rebuilds_a_vector(capsys):
    case = next(c for c in load_vectors("decks.json")["cases"] if c["dealer"] is None)
    argv = ["--json", "deck", "--seed", case["seed"], "--table", case["table"], "--hand",
            str(case["hand"]), "--variant", case["variant"], "--seats",
            str(len(case["contributions"]))]  # fmt: skip
    for seat, contribution in enumerate(case["contributions"]):
        if contribution is not None:
            argv += ["--contribution", f"{seat}={contribution}"]
    status, out, _ = run(capsys, *argv)
    result = json.loads(out)
    assert status == 0
    for key in ("deck", "first_dealer", "dealer", "hands", "vira", "commitment", "rejections"):
        assert result[key] == case["expect"][key], key


def test_deck_human_output_and_phrase_contribution(capsys):
    seed = "ab" * 32
    status, out, _ = run(capsys, "deck", "--seed", seed, "--table", "t", "--hand", "1",
                         "--variant", "mineiro", "--seats", "2", "--contribution-text",
                         "1=olá", "--dealer", "0")  # fmt: skip
    deck = derive_deck(bytes.fromhex(seed), "t", 1, [None, "olá".encode()])
    assert status == 0
    assert " ".join(str(c) for c in deck) in out
    assert "vira        (none)" in out and "dealer      seat 0 (mano: seat 1)" in out
    first = draw_first_dealer(bytes.fromhex(seed), "t", [None, "olá".encode()], 2)
    assert f"first dealer (if this is a match's first hand): seat {first}" in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bogus"],
        ["hand"],
        [
            "deck",
            "--seed",
            "zz",
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
        ],
        [
            "deck",
            "--seed",
            "ab" * 31,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "0",
            "--variant",
            "paulista",
            "--seats",
            "2",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
            "--contribution",
            "2=00",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
            "--contribution",
            "0=00",
            "--contribution",
            "0=01",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
            "--contribution",
            "x",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "paulista",
            "--seats",
            "2",
            "--dealer",
            "5",
        ],
        [
            "deck",
            "--seed",
            "ab" * 32,
            "--table",
            "t",
            "--hand",
            "1",
            "--variant",
            "truco",
            "--seats",
            "2",
        ],
        # "²" is a digit to str.isdigit(), not to int()
        ["deck", "--seed", "ab" * 32, "--table", "t", "--hand", "1", "--variant", "paulista",
         "--seats", "2", "--contribution", "\u00b2=ab"],
        # more digits than int() reads (4300): a seat that does not exist, not an internal error
        ["deck", "--seed", "ab" * 32, "--table", "t", "--hand", "1", "--variant", "paulista",
         "--seats", "2", "--contribution", "9" * 5000 + "=ab"],
        # a command line that is not UTF-8 arrives with lone surrogates (surrogateescape)
        ["deck", "--seed", "ab" * 32, "--table", "t", "--hand", "1", "--variant", "paulista",
         "--seats", "2", "--contribution-text", "0=\udcff"],
        ["hand", "RECORD", "--mine-text", "\udcff"],
        ["hand", "/nonexistent/record.json"],
        ["hand", "RECORD", "--key", "xyz"],
        ["hand", "RECORD", "--key-file", "/nonexistent/key"],
        ["hand", "RECORD", "--mine", "nothex"],
        ["hand", "RECORD", "--mine", ""],
    ],
)
def test_bad_usage_exits_2_with_one_line(capsys, hand_file, argv):
    argv = [str(hand_file) if a == "RECORD" else a for a in argv]
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("barajamos-verify: ")
    assert "internal error" not in err and len(err) < 400


def test_results_that_cannot_be_written_are_one_line_exit_2(chain_file, tmp_path):
    # a review wrote the results to a full disk (/dev/full): a traceback and exit 1 ("a check
    # failed") though every check passed
    with open("/dev/full", "w") as full:
        child = subprocess.run([sys.executable, "-m", "verifier", "chain", str(chain_file)],
                               stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO,
                               timeout=60)
    assert child.returncode == 2 and "Traceback" not in child.stderr
    assert child.stderr.splitlines() == ["barajamos-verify: cannot write the results: No space"
                                         " left on device"]


def test_results_in_an_encoding_without_some_character_are_escaped(tmp_path):
    # a table id with "☕" written to a cp1252 file (Windows, output redirected): a traceback
    out = tmp_path / "out.txt"
    argv = ["deck", "--seed", "ab" * 32, "--table", "mesa \u2615", "--hand", "1", "--variant",
            "paulista", "--seats", "2"]
    with out.open("w") as handle:
        child = subprocess.run([sys.executable, "-m", "verifier", *argv], stdout=handle,
                               stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=60,
                               env=os.environ | {"PYTHONIOENCODING": "cp1252"})
    assert child.returncode == 0 and child.stderr == ""
    assert "mesa \\u2615" in out.read_text(encoding="cp1252")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_in_a_chain_directory_is_refused_not_read(capsys, tmp_path):
    # a review put a named pipe called z.json in a chain's directory: the verifier waited on it
    # for ever
    folder = tmp_path / "chain"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(load_vectors("chain.json")["entries"][0]))
    os.mkfifo(folder / "z.json")
    status, out, err = run(capsys, "chain", str(folder))
    assert status == 2 and out == ""
    assert err.strip() == f"barajamos-verify: {folder / 'z.json'}: not a regular file"


def test_help_exits_0(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "vectors" in out


BAD_INPUTS = {
    "truncated": lambda text: text[: len(text) // 2],
    "not JSON": lambda text: "this is not json",
    "empty": lambda text: "",
    "a list": lambda text: "[1, 2]",
    "not UTF-8": lambda text: None,
    "a float": lambda text: text.replace('"hand": 1,', '"hand": 1.5,'),
    "NaN": lambda text: text.replace('"hand": 1,', '"hand": NaN,'),
    "duplicate key": lambda text: text.replace('"hand": 1,', '"hand": 1, "hand": 1,'),
    "wrong type": lambda text: text.replace('"hand": 1,', '"hand": "1",'),
    "unknown version": lambda text: text.replace("barajamos-shuffle/v1", "barajamos-shuffle/v9"),
    "missing field": lambda text: text.replace('"hand": 1,', ""),
    "deep nesting": lambda text: "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
@pytest.mark.parametrize("command", ["hand", "chain"])
def test_unreadable_input_exits_2_with_one_clear_line(capsys, tmp_path, name, command):
    text = json.dumps(load_vectors("hand.json")["record"])
    assert '"hand": 1,' in text
    bad = BAD_INPUTS[name](text)
    path = tmp_path / "bad.json"
    if bad is None:
        path.write_bytes(b'{"kind": "\xff\xfe"}')
    else:
        path.write_text(bad)  # a chain file may be JSON lines: one bad record is the same
    status, out, err = run(capsys, command, str(path))
    assert status == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert str(path) in lines[0]


def test_unknown_version_names_the_version(capsys, tmp_path):
    record = load_vectors("hand.json")["record"]
    record["version"] = "barajamos-shuffle/v2"
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(record))
    status, _, err = run(capsys, "hand", str(path))
    assert status == 2 and "unknown version 'barajamos-shuffle/v2'" in err


def test_oversized_input_exits_2(capsys, tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (HAND_LIMIT_BYTES + 1))
    status, _, err = run(capsys, "hand", str(path))
    assert status == 2 and "larger than the 1 MiB limit" in err
    assert CHAIN_LIMIT_BYTES > HAND_LIMIT_BYTES


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "hand.json").write_text(json.dumps(load_vectors("hand.json")["record"]))
    (tmp_path / "chain.json").write_text(json.dumps(load_vectors("chain.json")["entries"]))
    (tmp_path / "big.json").write_bytes(b" " * (HAND_LIMIT_BYTES + 10))

    with serve_folder(tmp_path) as url:
        yield url


@contextlib.contextmanager
def serve_folder(root: Path) -> Iterator[str]:
    """A local HTTP server of the files under `root`, quiet, for as long as the block runs."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_urls_are_fetched_with_limits(capsys, http_root):
    assert run(capsys, "hand", f"{http_root}/hand.json", "--key", PUBLIC_KEY)[0] == 0
    assert run(capsys, "chain", f"{http_root}/chain.json", "--key", PUBLIC_KEY)[0] == 0
    status, _, err = run(capsys, "hand", f"{http_root}/missing.json")
    assert status == 2 and "HTTP 404" in err
    status, _, err = run(capsys, "hand", f"{http_root}/big.json")
    assert status == 2 and "limit" in err


def test_parsed_vector_record_is_a_real_hand():
    record = parse_record(load_vectors("hand.json")["record"])
    assert any(action.covered for action in record.actions)
    assert None in record.contributions


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=30,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=json_values, command=st.sampled_from(["hand", "chain"]))
def test_arbitrary_json_never_crashes_the_verifier(tmp_path, capsys, value, command):
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(value))
    status = main([command, str(path)])
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unexpected_error_is_one_line_exit_2(capsys, hand_file, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("verifier.cli.check_hand", broken)
    status, out, err = run(capsys, "hand", str(hand_file))
    assert status == 2 and out == ""
    assert err == "barajamos-verify: internal error: RuntimeError: boom\\nsecond line\n"


def test_hostile_text_is_printed_on_one_line_escaped(capsys, tmp_path):
    record = load_vectors("hand.json")["record"]
    record["a\nb\x1b[31m"] = 1
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(record))
    status, out, err = run(capsys, "hand", str(path))
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and "\x1b" not in err
    assert "a\\nb\\x1b[31m" in err


def test_json_lines_split_on_newlines_only(capsys, tmp_path):
    # U+2028, U+2029 and U+0085 are allowed in a table id and written raw by canonical JSON:
    # str.splitlines() cut such a record in two. Lines may end in \r\n.
    table_id = "mesa\u2028\u2029\x85fim"
    table = sample_table(
        table_id=table_id, config=MatchConfig(Variant.MINEIRO, 2, TeamMode.VOTE), hands=3, seed=5
    )
    path = tmp_path / "chain.jsonl"
    entries = [table.anchor_statement, *table.records]
    path.write_bytes(
        "".join(json.dumps(e, ensure_ascii=False) + "\r\n" for e in entries).encode()
    )
    assert "\u2028".encode() in path.read_bytes()
    status, out, err = run(capsys, "chain", str(path), "--key", PUBLIC_KEY)
    assert status == 0, (out, err)
    # the report names the table with its separators escaped: one line per line
    assert "table mesa\\u2028\\u2029\\x85fim hand 3: verified" in out
    assert "\u2028" not in out and "\x85" not in out


def test_a_closed_stdout_is_not_a_traceback(chain_file):
    # `barajamos-verify chain ... | head -1`: the reader leaves; the exit status stays.
    child = subprocess.Popen(
        [sys.executable, "-m", "verifier", "--json", "chain", str(chain_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child has written anything
    with child.stderr:
        err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0
    assert err == ""


# Answers no honest server gives, by path: each must end in one line and exit 2, quickly.
RAW_ANSWERS = {
    "/garbage": b"hello garbage\r\n\r\n",
    "/long-header": b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n{}",
    "/many-headers": b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * 200 + b"\r\n{}",
    "/chunk-cut": b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"a":1',
    "/short-body": b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"a":1}',
    "/to-ftp": b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:1/x.json\r\n"
    b"Content-Length: 0\r\n\r\n",
    "/to-file": b"HTTP/1.1 301 Moved\r\nLocation: file:///etc/passwd\r\n"
    b"Content-Length: 0\r\n\r\n",
    "/escape": b"HTTP/1.1 404 \x1b[31mRED\x1b[0m\r\nContent-Length: 0\r\n\r\n",
    # a server's long lines are quoted by their first characters only
    "/long-status": b"HTTP/1.1 " + b"9" * 60_000 + b" OK\r\n\r\n",
    "/long-protocol": b"HTTP/" + b"1" * 60_000 + b" 200 OK\r\n\r\n",
    "/to-long-ftp": b"HTTP/1.1 302 Found\r\nLocation: ftp://" + b"x" * 60_000 + b"\r\n"
    b"Content-Length: 0\r\n\r\n",
}


@pytest.fixture
def raw_server() -> Iterator[str]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            path = self.rfile.readline().split()[1].decode()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            try:
                if path.startswith("/trickle"):
                    # a byte every 0.3 s, well within the per-operation timeout, for 9 s in all
                    if path == "/trickle-body":
                        head, slow = b"HTTP/1.1 200 OK\r\n\r\n", b" " * 30
                    else:
                        head, slow = b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a" * 30
                    self.wfile.write(head)
                    for byte in slow:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.3)
                else:
                    self.wfile.write(RAW_ANSWERS[path])
            except OSError:
                pass  # the verifier hung up

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("path", list(RAW_ANSWERS))
def test_a_broken_http_answer_is_one_line_exit_2(capsys, raw_server, path):
    status, out, err = run(capsys, "hand", f"{raw_server}{path}")
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "\x1b" not in err
    assert err.startswith(f"barajamos-verify: {raw_server}{path}: ") and len(err) < 500
    expected = {"/to-ftp": "only http and https", "/to-long-ftp": "only http and https",
                "/to-file": "redirected to 'file:///etc/passwd': only http and https",
                "/escape": "HTTP 404 \\x1b[31mRED\\x1b[0m"}
    assert expected.get(path, "not a valid HTTP answer") in err


@pytest.mark.parametrize("path", ["/trickle-body", "/trickle-head"])
def test_a_trickling_server_meets_the_total_deadline(capsys, raw_server, monkeypatch, path):
    monkeypatch.setattr("verifier.sources.URL_TIMEOUT_SECONDS", 1.5)
    started = time.monotonic()
    status, _, err = run(capsys, "hand", f"{raw_server}{path}")
    # without the total deadline a trickling server holds the verifier for ever: a wide bound
    # tells that apart on however loaded a machine
    assert time.monotonic() - started < 20
    assert status == 2 and "no complete answer within 1.5 s" in err


@pytest.mark.parametrize("url", ["http://[::1", "http://a b/x", "http://a\nb/x"])
def test_a_malformed_url_is_one_line_exit_2(capsys, url):
    status, out, err = run(capsys, "hand", url)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and "not a usable URL" in err
