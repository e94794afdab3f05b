"""Reading what the user gives the verifier: a file, a directory or a URL, as strict JSON.

Everything that makes an input unreadable raises `InputError` (exit status 2 in the CLI): too
big, not UTF-8, a byte-order mark, not JSON, duplicate keys, floats or NaN, minus zero, a number
of thousands of digits, nesting too deep. URLs are fetched with urllib only, http(s) only
(redirects too), within a total deadline and the same size limits; any other scheme is refused.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Final

from truco.records import json_type

HAND_LIMIT_BYTES: Final = 1 << 20  # 1 MiB: a hand record is a few kB
CHAIN_LIMIT_BYTES: Final = 64 << 20  # 64 MiB: tens of thousands of hands
# The whole fetch of a URL (connection, redirects, headers and body) must end within this.
URL_TIMEOUT_SECONDS: Final = 15.0
MAX_DIRECTORY_FILES: Final = 100_000
_READ_CHUNK: Final = 64 * 1024


class InputError(ValueError):
    """The input cannot be read as what was asked for; the message is one line for stderr."""


def one_line(text: str) -> str:
    """`text` safe to print as one line: every character that is not printable (controls,
    line and paragraph separators, lone surrogates, format characters such as bidi overrides)
    is written as its Python escape, e.g. `\\n`, `\\x1b`, `\\u2028`."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


def _is_url(source: str) -> bool:
    return source[:8].lower().startswith(("http://", "https://"))


# `scheme://...`: a URL of a scheme the verifier does not fetch (ftp, file, data, ...)
_OTHER_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# `.../hands/{table}-{n}`: how the house serves one hand's record (n: no leading zero)
_HAND_NAME: Final = re.compile(r"(.+)-([1-9][0-9]{0,9})")


def _segments(source: str) -> list[str]:
    """The path segments of a URL (percent-decoded) or of a file name (`.json` dropped)."""
    if _is_url(source):
        path = urllib.parse.urlsplit(source).path
        return [urllib.parse.unquote(part, errors="strict") for part in path.split("/")]
    parts = list(Path(source).parts)
    if parts:
        parts[-1] = parts[-1].removesuffix(".json")
    return parts


def named_hand(source: str) -> tuple[str, int] | None:
    """The (table, hand) a source names as `.../hands/{table}-{n}`, the house's URL of a hand
    record (a file saved under that name too, `.json` or not); None for any other name."""
    try:
        parts = _segments(source)
    except (ValueError, UnicodeDecodeError):
        return None
    if len(parts) < 2 or parts[-2] != "hands":
        return None
    match = _HAND_NAME.fullmatch(parts[-1])
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def chain_url_of_hand(source: str) -> str | None:
    """The URL of a hand's table chain, for a source that is the house's URL of a hand record
    (`.../hands/{table}-{n}` gives `.../tables/{table}/chain`, same scheme, host and path prefix;
    the query and fragment dropped); None for a file or any other URL."""
    asked = named_hand(source) if _is_url(source) else None
    if asked is None:
        return None
    parts = urllib.parse.urlsplit(source)
    prefix = parts.path.rsplit("/", 2)[0]  # the path before `/hands/{table}-{n}`
    table = urllib.parse.quote(asked[0], safe="")
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, f"{prefix}/tables/{table}/chain", "", "")
    )


def named_table(source: str) -> str | None:
    """The table a source names as `.../tables/{table}/chain`, the house's URL of a table's
    chain; None for any other name."""
    try:
        parts = _segments(source)
    except (ValueError, UnicodeDecodeError):
        return None
    if len(parts) < 3 or parts[-3] != "tables" or parts[-1] != "chain" or not parts[-2]:
        return None
    return parts[-2]


def served_chain(source: str) -> bool:
    """Whether a source is a house's URL of a table's chain (`.../tables/{table}/chain`), which
    the house serves with its signed ledger head (FAIRNESS.md 8)."""
    return _is_url(source) and named_table(source) is not None


class _Deadline:
    """The total time of one fetch. The socket timeout only bounds each operation, so a server
    trickling a byte every few seconds would hold the fetch forever; when the time is up a timer
    shuts the fetch's sockets down, which ends any read blocked on them."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._done = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def operation_timeout(self) -> float:
        """The socket timeout of one operation: what is left, never more than the total."""
        return max(0.001, min(self.seconds, self.remaining()))

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def finish(self) -> None:
        with self._lock:
            self._done = True
            self._sockets.clear()
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # also for an SSLSocket: the raw socket


def _connection_classes(
    deadline: _Deadline,
) -> tuple[type[http.client.HTTPConnection], type[http.client.HTTPSConnection]]:
    class _HTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            self.timeout = deadline.operation_timeout()
            super().connect()
            deadline.watch(self.sock)

    class _HTTPS(http.client.HTTPSConnection):
        _context: ssl.SSLContext

        def connect(self) -> None:
            # http.client.HTTPSConnection.connect, with the TLS handshake under the deadline too
            self.timeout = deadline.operation_timeout()
            http.client.HTTPConnection.connect(self)
            deadline.watch(self.sock)
            host: str = getattr(self, "_tunnel_host", None) or self.host
            self.sock = self._context.wrap_socket(
                self.sock, server_hostname=host, do_handshake_on_connect=False
            )
            deadline.watch(self.sock)
            self.sock.do_handshake()

    return _HTTP, _HTTPS


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http and https only (urllib's own also follows ftp, and refuses
    file: in words of its own)."""

    def http_error_302(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any
    ) -> Any:
        location = headers.get("location") or headers.get("uri")
        if location is not None:
            target = urllib.parse.urljoin(req.full_url, location)
            if urllib.parse.urlsplit(target).scheme.lower() not in ("http", "https"):
                fp.close()
                raise InputError(f"{req.full_url}: redirected to {shorten(target)!r}: only http"
                                 " and https are fetched")
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    plain, secure = _connection_classes(deadline)

    class _HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(plain, req)

    class _HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(secure, req)

    # Only http(s): no ftp, file or data handlers (build_opener would add them).
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        _HTTPHandler(),
        _HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _RedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _fetch(url: str, limit: int) -> bytes:
    deadline = _Deadline(URL_TIMEOUT_SECONDS)
    timed_out = f"{url}: cannot fetch: no complete answer within {URL_TIMEOUT_SECONDS:g} s"
    try:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        with _opener(deadline).open(request, timeout=URL_TIMEOUT_SECONDS) as response:
            chunks: list[bytes] = []
            size = 0
            while size <= limit:
                if deadline.remaining() <= 0:
                    raise InputError(timed_out)
                chunk = response.read1(min(_READ_CHUNK, limit + 1 - size))
                if not chunk:
                    if response.length:  # read1 does not complain about a short body
                        raise http.client.IncompleteRead(b"".join(chunks), response.length)
                    break
                chunks.append(chunk)
                size += len(chunk)
            if deadline.expired:  # the timer cut the body short
                raise InputError(timed_out)
            data = b"".join(chunks)
    except InputError:
        raise
    except urllib.error.HTTPError as exc:
        reason = str(exc.reason)
        if 300 <= exc.code < 400 and "\n" in reason:
            # urllib's own words for a redirect loop (or too many redirects) are three lines:
            # one line here, with the last answer it got
            last = " ".join(reason.rsplit("\n", 1)[-1].split())
            raise InputError(
                f"{url}: cannot fetch: redirected in a loop or more than"
                f" {_RedirectHandler.max_redirections} times (the last answer: HTTP {exc.code}"
                f" {one_line(shorten(last, 80))})"
            ) from None
        reason = " ".join(reason.split())
        raise InputError(f"{url}: HTTP {exc.code} {one_line(shorten(reason, 80))}") from None
    except Exception as exc:
        if deadline.expired:
            raise InputError(timed_out) from None
        if isinstance(exc, urllib.error.URLError):
            raise InputError(f"{url}: cannot fetch: {exc.reason}") from None
        if isinstance(exc, (ValueError, http.client.InvalidURL)):
            raise InputError(f"{url}: not a usable URL: {exc}") from None
        if isinstance(exc, http.client.HTTPException):
            what = type(exc).__name__  # its text quotes the server's line: only its start
            raise InputError(f"{url}: not a valid HTTP answer ({what}: {shorten(str(exc))})"
                             ) from None
        if isinstance(exc, OSError):  # TimeoutError included
            raise InputError(f"{url}: cannot fetch: {exc}") from None
        raise
    finally:
        deadline.finish()
    if len(data) > limit:
        raise InputError(f"{url}: larger than the {_size(limit)} limit")
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def read_source(source: str, limit: int) -> bytes:
    """The bytes of a file or an http(s) URL, refusing anything over `limit` bytes."""
    if _is_url(source):
        return _fetch(source, limit)
    if _OTHER_URL.match(source) and not Path(source).exists():
        raise InputError(f"{source}: only http and https URLs are read (a file: give its path)")
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
            raise ValueError(f"duplicate key {shorten(repr(key), 40)}")
        result[key] = value
    return result


# how much of an over-long number or text a message quotes
_QUOTE_CHARS: Final = 24


def shorten(text: str, limit: int = _QUOTE_CHARS) -> str:
    """`text` cut to its first `limit` characters and "…" when it is longer."""
    return text if len(text) <= limit else text[:limit] + "…"


def _no_minus_zero(text: str) -> int:
    # Only used when the input holds "-0" somewhere (see parse_json): a Python-level hook on
    # every integer makes reading a chain about 1.6 times slower.
    if text == "-0":
        raise ValueError("-0 (minus zero) is not allowed: canonical JSON has no minus zero")
    return int(text)


def _no_float(text: str) -> Any:
    raise ValueError(
        f"number {shorten(text)} is not an integer (records hold integers only)"
    )


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


_BOM: Final = b"\xef\xbb\xbf"


def _no_bom(data: bytes, where: str) -> None:
    if data.startswith(_BOM):
        raise InputError(
            f"{where}: starts with a byte-order mark (BOM); save it as plain UTF-8 without one"
        )


def _decode(data: bytes, where: str) -> str:
    _no_bom(data, where)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _cut_off(text: str, pos: int, message: str) -> bool:
    """Whether a decoding error at `pos` is the input ending early rather than bad JSON."""
    rest = text[pos:].rstrip()
    if not rest or message.startswith("Unterminated string"):
        return True
    # the input ends inside a literal or a number: `tr`, `fals`, `nul`, `-`
    return message == "Expecting value" and any(
        word.startswith(rest) for word in ("true", "false", "null", "-")
    )


def parse_json(data: bytes, where: str) -> object:
    """Strict JSON: UTF-8 without a BOM, no duplicate keys, integers only (no minus zero), no
    NaN/Infinity. (An integer's range is the record's to check: parse_record names its path.)"""
    text = _decode(data, where)
    if not text.strip():
        raise InputError(f"{where}: empty input, expected JSON")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_float=_no_float,
            # FAIRNESS.md 6: no minus zero. int("-0") is 0, so it needs the hook; inputs
            # without "-0" anywhere (a fast substring search) go without it.
            parse_int=_no_minus_zero if "-0" in text else None,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as exc:
        problem = "truncated JSON" if _cut_off(text, exc.pos, exc.msg) else "not valid JSON"
        # Python's "Unterminated string starting at" already ends with "at"
        at = "" if exc.msg.endswith(" at") else " at"
        raise InputError(
            f"{where}: {problem}: {exc.msg}{at} line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        if str(exc).startswith("Exceeds the limit"):  # int()'s own limit on digits
            raise InputError(
                f"{where}: a number with more than {sys.get_int_max_str_digits()} digits"
                " (records hold integers of at most 16 digits, up to 2^53 - 1)"
            ) from None
        raise InputError(f"{where}: {exc}") from None


_CHAIN_HINT: Final = "a table's chain is checked with `barajamos-verify chain`"


def _json_lines(data: bytes) -> bool:
    """Whether `data` looks like JSON lines: its first line alone is a JSON object, and more
    lines follow."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    if len(lines) < 2:
        return False
    try:
        return isinstance(json.loads(lines[0]), dict)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
        return False


def load_object(source: str, limit: int = HAND_LIMIT_BYTES) -> dict[str, Any]:
    """One JSON object (a hand record, a statement) from a file or URL. A list, or JSON lines,
    is most likely a chain given to `hand`: the message says which command reads it."""
    data = read_source(source, limit)
    try:
        value = parse_json(data, source)
    except InputError as exc:
        if "Extra data" in str(exc) and _json_lines(data):
            raise InputError(f"{exc} (one JSON object per line: {_CHAIN_HINT})") from None
        raise
    if isinstance(value, list):
        raise InputError(
            f"{source}: expected a JSON object (one hand record), got a list: {_CHAIN_HINT}"
        )
    if not isinstance(value, dict):
        raise InputError(f"{source}: expected a JSON object, got {json_type(value)}")
    return value


def _entries(value: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a JSON list of records, got {json_type(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            what = json_type(item)
            raise InputError(f"{where} entry {index}: expected a JSON object, got {what}")
    return value


def parse_chain(data: bytes, where: str) -> list[dict[str, Any]]:
    """A chain file: a JSON list of records, or JSON lines (one record per line); one record
    saved alone over several lines (indented) is a chain of that record."""
    text = _decode(data, where)
    if text.lstrip().startswith("["):
        return _entries(parse_json(data, where), where)
    entries: list[dict[str, Any]] = []
    # Split on "\n" only: str.splitlines() also splits on U+2028, U+2029, U+0085 and others,
    # which canonical JSON leaves raw inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            line_where = f"{where} line {number}"
            try:
                value = parse_json(line.encode("utf-8"), line_where)
            except InputError as exc:
                if entries or "\n" not in text.strip():
                    raise
                # one record saved over several lines (indented): a chain of that record
                whole = _one_object(data, where)
                if whole is None:
                    raise InputError(f"{exc} (a chain file is a JSON list, or JSON lines: one"
                                     " record per line)") from None
                return [whole]
            if not isinstance(value, dict):
                raise InputError(f"{line_where}: expected a JSON object, got {json_type(value)}")
            entries.append(value)
    if not entries:
        raise InputError(f"{where}: empty input, expected records")
    return entries


def _one_object(data: bytes, where: str) -> dict[str, Any] | None:
    """`data` as one JSON object, or None when it is not one."""
    try:
        value = parse_json(data, where)
    except InputError:
        return None
    return value if isinstance(value, dict) else None


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
        if not file.is_file():
            # a pipe or a device would block the read, or never end: only regular files
            # (a symbolic link to one included) hold records
            raise InputError(f"{file}: not a regular file")
        data = read_source(str(file), HAND_LIMIT_BYTES)
        total += len(data)
        if total > limit:
            raise InputError(f"{path}: the files add up to more than the {_size(limit)} limit")
        value = parse_json(data, str(file))
        if not isinstance(value, dict):
            raise InputError(f"{file}: expected a JSON object, got {json_type(value)}")
        entries.append(value)
    return sorted(entries, key=_hand_order)


def _hand_order(entry: dict[str, Any]) -> tuple[int, int]:
    # Statements first (they are looked up, not walked), then hands by number.
    hand = entry.get("hand")
    if entry.get("kind") == "hand" and isinstance(hand, int) and not isinstance(hand, bool):
        return (1, hand)
    return (0, 0)
