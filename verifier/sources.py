"""Reading what the user gives the verifier: a file, a directory or a URL, as strict JSON.

Everything that makes an input unreadable raises `InputError` (exit status 2 in the CLI): too
big, not UTF-8, not JSON, duplicate keys, floats or NaN, nesting too deep. URLs are fetched with
urllib only, http(s) only, with a timeout and the same size limits.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Final

HAND_LIMIT_BYTES: Final = 1 << 20  # 1 MiB: a hand record is a few kB
CHAIN_LIMIT_BYTES: Final = 64 << 20  # 64 MiB: tens of thousands of hands
URL_TIMEOUT_SECONDS: Final = 15.0
MAX_DIRECTORY_FILES: Final = 100_000


class InputError(ValueError):
    """The input cannot be read as what was asked for; the message is one line for stderr."""


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _fetch(url: str, limit: int) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=URL_TIMEOUT_SECONDS) as response:
            data: bytes = response.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise InputError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise InputError(f"{url}: cannot fetch: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise InputError(f"{url}: cannot fetch: {exc}") from None
    except ValueError as exc:
        raise InputError(f"{url}: not a usable URL: {exc}") from None
    if len(data) > limit:
        raise InputError(f"{url}: larger than the {_size(limit)} limit")
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def read_source(source: str, limit: int) -> bytes:
    """The bytes of a file or an http(s) URL, refusing anything over `limit` bytes."""
    if _is_url(source):
        return _fetch(source, limit)
    path = Path(source)
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{source}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{source}: larger than the {_size(limit)} limit")
    return data


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_float(text: str) -> Any:
    raise ValueError(f"number {text} is not an integer (records hold integers only)")


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def parse_json(data: bytes, where: str) -> object:
    """Strict JSON: UTF-8, no duplicate keys, integers only, no NaN/Infinity."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"{where}: empty input, expected JSON")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_float=_no_float,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        problem = "truncated JSON" if at_end else "not valid JSON"
        raise InputError(
            f"{where}: {problem}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def load_object(source: str, limit: int = HAND_LIMIT_BYTES) -> dict[str, Any]:
    """One JSON object (a hand record, a statement) from a file or URL."""
    value = parse_json(read_source(source, limit), source)
    if not isinstance(value, dict):
        raise InputError(f"{source}: expected a JSON object, got a {type(value).__name__}")
    return value


def _entries(value: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a JSON list of records")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(f"{where}: entry {index} is not a JSON object")
    return value


def parse_chain(data: bytes, where: str) -> list[dict[str, Any]]:
    """A chain file: a JSON list of records, or JSON lines (one record per line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    if text.lstrip().startswith("["):
        return _entries(parse_json(data, where), where)
    entries: list[object] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            entries.append(parse_json(line.encode("utf-8"), f"{where} line {number}"))
    if not entries:
        raise InputError(f"{where}: empty input, expected records")
    return _entries(entries, where)


def load_chain(source: str, limit: int = CHAIN_LIMIT_BYTES) -> list[dict[str, Any]]:
    """Records (and statements) from a chain file, a URL, or a directory of `*.json` files.

    A directory's files are read as one record or statement each; the order of hand records is
    their hand number (file names carry no order), so a directory cannot show a reordering, only
    a gap.
    """
    path = Path(source)
    if not _is_url(source) and path.is_dir():
        return _load_directory(path, limit)
    return parse_chain(read_source(source, limit), source)


def _load_directory(path: Path, limit: int) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.json"))
    if not files:
        raise InputError(f"{path}: no *.json files in the directory")
    if len(files) > MAX_DIRECTORY_FILES:
        raise InputError(f"{path}: more than {MAX_DIRECTORY_FILES} files")
    total = 0
    entries: list[dict[str, Any]] = []
    for file in files:
        data = read_source(str(file), HAND_LIMIT_BYTES)
        total += len(data)
        if total > limit:
            raise InputError(f"{path}: the files add up to more than the {_size(limit)} limit")
        value = parse_json(data, str(file))
        if not isinstance(value, dict):
            raise InputError(f"{file}: expected a JSON object")
        entries.append(value)
    return sorted(entries, key=_hand_order)


def _hand_order(entry: dict[str, Any]) -> tuple[int, int]:
    # Statements first (they are looked up, not walked), then hands by number.
    hand = entry.get("hand")
    if entry.get("kind") == "hand" and isinstance(hand, int) and not isinstance(hand, bool):
        return (1, hand)
    return (0, 0)
