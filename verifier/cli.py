"""`barajamos-verify`: a thin command line over `verifier.check` (docs/FAIRNESS.md 9).

Exit status: 0 everything verified, 1 a check failed, 2 bad usage, unreadable input or an
unexpected error (one line on stderr, control characters escaped, never a traceback). Results go
to stdout, as text or, with --json, as one JSON object; a reader that leaves early (`| head`) ends
the output quietly.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import string
import sys
from pathlib import Path
from typing import Any, NoReturn

from truco.fairness import SHUFFLE_VERSION, Contribution
from truco.records import RecordError
from truco.variants import Variant
from verifier.check import (
    Report,
    Status,
    TableChain,
    chain_hint,
    check_chain,
    check_hand,
    parse_hand,
    rebuild_deal,
)
from verifier.pubkeys import PublicKeyError, load_public_key, parse_public_key
from verifier.sources import (
    CHAIN_LIMIT_BYTES,
    HAND_LIMIT_BYTES,
    InputError,
    chain_url_of_hand,
    load_chain,
    load_object,
    named_hand,
    named_table,
    one_line,
    served_chain,
    shorten,
)
from verifier.vectors_run import run_vectors

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
NACL_MISSING = (
    "PyNaCl is not installed (it checks the hand records' Ed25519 signatures): run"
    " `python3 -m pip install pynacl`, then this again"
)


def ed25519_available() -> bool:
    """Whether PyNaCl can be imported: `hand`, `chain` and the signed vectors need it; `deck`,
    `--help` and the derivation vectors do not."""
    try:
        importlib.import_module("nacl.signing")
    except ImportError:
        return False
    return True


class UsageError(ValueError):
    """Bad arguments: exit 2 with the message."""


class _Parser(argparse.ArgumentParser):
    # argparse prints usage and exits on its own; raise instead so main() owns the exit status.
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _hex_arg(text: str, what: str, size: int | None = None) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError:
        digits = "".join(text.split())
        if digits and all(c in string.hexdigits for c in digits) and len(digits) % 2:
            # hexadecimal, but an odd number of digits: half a byte is missing
            raise UsageError(
                f"{what} must be two hex digits per byte, got {len(digits)} digits"
                f" ({shorten(text)!r}): a digit is missing or one too many"
            ) from None
        raise UsageError(f"{what} must be hexadecimal, got {shorten(text)!r}") from None
    if size is not None and len(value) != size:
        raise UsageError(f"{what} must be {size} bytes ({2 * size} hex digits), got {len(value)}")
    return value


def _utf8(text: str, what: str) -> bytes:
    # A command line that is not valid UTF-8 reaches Python with lone surrogates in it.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 text") from None


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="barajamos-verify",
        description=f"Verify Barajamos deals and hand records ({SHUFFLE_VERSION}).",
        epilog="Exit status: 0 all verified, 1 a check failed, 2 bad usage or unreadable input."
        " The scheme: docs/FAIRNESS.md.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    # --json is also accepted after the subcommand; SUPPRESS keeps the top level's value otherwise
    json_flag = _Parser(add_help=False)
    json_flag.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable report"
    )

    deck = commands.add_parser(
        "deck", help="rebuild a deck, deal, vira and first dealer", parents=[json_flag]
    )
    deck.add_argument("--seed", required=True, help="the revealed seed, 64 hex digits")
    deck.add_argument("--table", required=True,
                      help="the table id (one that begins with - is written --table=ID)")
    deck.add_argument("--hand", required=True, type=int, help="the table hand number (1-based)")
    deck.add_argument("--variant", required=True, choices=[v.value for v in Variant])
    deck.add_argument("--seats", required=True, type=int, choices=[2, 4])
    deck.add_argument("--dealer", type=int, help="the dealer (default: the first-dealer draw)")
    deck.add_argument(
        "--contribution",
        action="append",
        default=[],
        metavar="SEAT=HEX",
        help="a seat's contribution in hex (repeat per seat; a seat not given is absent)",
    )
    deck.add_argument(
        "--contribution-text",
        action="append",
        default=[],
        metavar="SEAT=TEXT",
        help="a seat's contribution as the phrase typed (UTF-8)",
    )

    for name, help_text, source_help in (
        ("hand", "verify one signed hand record", "a hand record file or URL"),
        ("chain", "verify a table's chain of records", "a chain file (JSON list or lines), a"
         " directory of records, or a URL"),
    ):  # fmt: skip
        source = "FILE|URL" if name == "hand" else "FILE|DIR|URL"
        # argparse's own usage line shows `[--key HEX | --key-file FILE]`, as if one --key
        # were all: say that --key repeats
        indent = " " * len(f"usage: barajamos-verify {name} ")
        mine_usage = f" [--mine HEX | --mine-text TEXT]\n{indent}" if name == "hand" else " "
        usage = (
            f"%(prog)s [-h] [--json]{mine_usage}[--key HEX [--key HEX ...] | --key-file FILE]"
            f" {source}"
        )
        sub = commands.add_parser(name, help=help_text, parents=[json_flag], usage=usage)
        sub.add_argument("source", metavar=source, help=source_help)
        if name == "hand":
            mine = sub.add_mutually_exclusive_group()
            mine.add_argument("--mine", metavar="HEX", help="the contribution you sent, in hex")
            mine.add_argument("--mine-text", metavar="TEXT", help="the phrase you typed")
        key = sub.add_mutually_exclusive_group()
        key.add_argument(
            "--key",
            metavar="HEX",
            action="append",
            help="pin the house's public key (64 hex); repeat it to pin several keys",
        )
        key.add_argument(
            "--key-file",
            metavar="FILE",
            help="pin the public key on this file's first line (instead of --key)",
        )

    commands.add_parser("vectors", help="run the shipped known-answer vectors", parents=[json_flag])
    return parser


def _phrase(text: str) -> bytes:
    return _utf8(text, "--contribution-text")


def _contributions(args: argparse.Namespace) -> list[Contribution]:
    contributions: list[Contribution] = [None] * args.seats
    for option, values, encode in (
        ("--contribution", args.contribution, lambda text: _hex_arg(text, "a contribution")),
        ("--contribution-text", args.contribution_text, _phrase),
    ):
        for item in values:
            seat_text, separator, value = item.partition("=")
            # ASCII digits only: str.isdigit() also accepts "²" and other digits int() refuses
            if not separator or not (seat_text.isascii() and seat_text.isdigit()):
                raise UsageError(f"{option} takes SEAT=VALUE, got {item!r}")
            # a seat number longer than any table (int() refuses over 4300 digits anyway)
            if len(seat_text) > 3 or int(seat_text) >= args.seats:
                raise UsageError(f"{option}: seat {shorten(seat_text)} does not exist at"
                                 f" {args.seats} seats")
            seat = int(seat_text)
            if contributions[seat] is not None:
                raise UsageError(f"{option}: seat {seat} given twice")
            contributions[seat] = encode(value)
    return contributions


def _run_deck(args: argparse.Namespace) -> tuple[int, dict[str, Any], list[str]]:
    seed = _hex_arg(args.seed, "--seed", 32)
    contributions = _contributions(args)
    variant = Variant(args.variant)
    try:
        rebuilt = rebuild_deal(seed, args.table, args.hand, variant, contributions, args.dealer)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    dealer = rebuilt["dealer"]
    result: dict[str, Any] = {
        "version": SHUFFLE_VERSION,
        "table": args.table,
        "hand": args.hand,
        "variant": variant.value,
        "contributions": [None if c is None else c.hex() for c in contributions],
        "mano": (dealer + 1) % args.seats,
        **rebuilt,
    }
    lines = [
        f"{SHUFFLE_VERSION}: table {args.table!r}, hand {args.hand}, {variant.value},"
        f" {args.seats} seats",
        f"commitment  {result['commitment']}",
        "contributions "
        + ", ".join(
            f"seat {seat}: {'absent' if c is None else c.hex()}"
            for seat, c in enumerate(contributions)
        ),
        "deck        " + " ".join(result["deck"]),
        f"first dealer (if this is a match's first hand): seat {result['first_dealer']}",
        f"dealer      seat {dealer} (mano: seat {result['mano']})",
        *(f"seat {seat}      " + " ".join(hand) for seat, hand in enumerate(result["hands"])),
        f"vira        {result['vira'] or '(none)'}",
        f"stream      {result['bytes_read']} bytes read, {len(result['rejections'])} rejected"
        + "".join(
            f"; byte {r['offset']} = {r['byte']} >= {r['bound']} (draw in [0, {r['modulus'] - 1}])"
            for r in result["rejections"]
        ),
    ]
    return EXIT_OK, result, lines


def _pinned_keys(args: argparse.Namespace) -> list[bytes]:
    try:
        if args.key_file is not None:
            return [load_public_key(Path(args.key_file))]
        return [parse_public_key(text) for text in args.key or ()]
    except PublicKeyError as exc:
        raise UsageError(str(exc)) from None


def _key_options(args: argparse.Namespace, pinned: list[bytes]) -> str | None:
    """The pinning options as given, for a command to suggest (None: nothing pinned)."""
    if args.key_file is not None:
        return f"--key-file {shlex.quote(args.key_file)}"
    return " ".join(f"--key {key.hex()}" for key in pinned) or None


def _mine(args: argparse.Namespace) -> bytes | None:
    if args.mine is not None:
        value = _hex_arg(args.mine, "--mine")
        if not value:
            raise UsageError("--mine is empty")
        return value
    text: str | None = args.mine_text
    if text is not None:
        if not text:
            raise UsageError("--mine-text is empty")
        return _utf8(text, "--mine-text")
    return None


_MARK = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.WARN: "WARN", Status.SKIP: "skip"}


def _report_lines(report: Report) -> list[str]:
    lines: list[str] = []
    for entry in report.entries:
        lines.append(f"{entry.label}: {'verified' if entry.ok else 'FAILED'}")
        for check in entry.checks:
            lines.append(f"  {_MARK[check.status]}  {check.name.value:<11} {check.reason}")
    failures = report.failures
    warnings = sum(c.status is Status.WARN for e in report.entries for c in e.checks)
    if failures:
        verdict = f"{len(failures)} check(s) failed"
        if warnings:
            verdict += f" ({warnings} warning(s))"
    elif warnings:  # a warning is a check that did not pass: not "all checks passed"
        verdict = (
            f"no check failed; {warnings} warning(s): each warning above says what this input could"
            " not prove"
        )
    else:
        verdict = "all checks passed"
    lines.append(verdict)
    return lines


def _run_verify(args: argparse.Namespace) -> tuple[int, dict[str, Any], list[str]]:
    if not ed25519_available():
        raise UsageError(NACL_MISSING)
    pinned = _pinned_keys(args)
    if args.command == "hand":
        mine = _mine(args)
        obj = load_object(args.source, HAND_LIMIT_BYTES)
        table = parse_hand(obj, args.source).table  # unreadable input stops here, unfetched
        # A house's URL of a hand names its table's chain: its signed seed anchors place the
        # record's seed (FAIRNESS.md 12: one record alone cannot). Any other source: a warning
        # with the command that checks it.
        chain_url = chain_url_of_hand(args.source)
        chain = None
        if chain_url is not None:
            try:
                chain = TableChain(chain_url, load_chain(chain_url, CHAIN_LIMIT_BYTES))
            except InputError as exc:
                chain = TableChain(chain_url, None, str(exc))
        report = check_hand(
            obj,
            pinned=pinned,
            mine=mine,
            where=args.source,
            asked=named_hand(args.source),
            chain=chain,
            chain_command=chain_hint(table, chain_url, _key_options(args, pinned)),
        )
    else:
        entries = load_chain(args.source, CHAIN_LIMIT_BYTES)
        report = check_chain(
            entries,
            pinned=pinned,
            where=args.source,
            asked=named_table(args.source),
            served=served_chain(args.source),
        )
    status = EXIT_OK if report.ok else EXIT_FAILED
    return status, report.to_json(), _report_lines(report)


def _run_vectors(args: argparse.Namespace) -> tuple[int, dict[str, Any], list[str]]:
    results = run_vectors(signatures=ed25519_available())
    ran = [r for r in results if r.ran]
    ok = all(result.ok for result in ran)
    lines = [
        f"{('PASS' if r.ok else 'FAIL') if r.ran else 'skip'}  {r.name}: {r.detail}"
        for r in results
    ]
    skipped = len(results) - len(ran)
    if skipped:
        lines.append(
            f"{sum(r.ok for r in ran)}/{len(ran)} vectors run passed; {skipped} file(s) of signed"
            " vectors not run"
        )
    else:
        lines.append(f"{sum(r.ok for r in ran)}/{len(results)} vectors passed")
    payload = {"ok": ok and not skipped, "vectors": [r.to_json() for r in results]}
    if not ok:
        return EXIT_FAILED, payload, lines
    if skipped:
        # what could run passed; the rest needs PyNaCl: said on stderr, and not a success
        _error(NACL_MISSING)
        return EXIT_USAGE, payload, lines
    return EXIT_OK, payload, lines


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        runner = {"deck": _run_deck, "hand": _run_verify, "chain": _run_verify}.get(
            args.command, _run_vectors
        )
        status, payload, lines = runner(args)
    except (UsageError, InputError, RecordError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except Exception as exc:  # a bug or an input nobody foresaw: still one line, no traceback
        _error(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_USAGE
    if args.json:
        text = json.dumps(payload, indent=2, sort_keys=True)  # ASCII: escapes everything else
    else:
        text = "\n".join(one_line(line) for line in lines)
    try:
        try:
            print(text)
        except UnicodeEncodeError:
            # an output encoding without some character of the input (a table id with "☕"
            # written to a cp1252 file): escaped, the rest as it is
            encoding = sys.stdout.encoding or "ascii"
            print(text.encode(encoding, "backslashreplace").decode(encoding))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`... | head -1`): say nothing more, and keep the exit status.
        _drop_stdout()
    except OSError as exc:
        # the results could not be written (a full disk): whatever they said, nobody read them
        _drop_stdout()
        _error(f"cannot write the results: {exc.strerror or exc}")
        return EXIT_USAGE
    return status


def _drop_stdout() -> None:
    # Python flushes stdout again at exit, so point it at devnull first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _error(message: str) -> None:
    # Messages quote hostile input (keys, reason phrases, argv): one line, controls escaped.
    print(f"barajamos-verify: {one_line(message)}", file=sys.stderr)
