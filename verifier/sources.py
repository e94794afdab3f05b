"""Reading what the user gives the verifier: a file, a directory or a URL, as strict JSON.

Everything that makes an input unreadable raises `InputError` (exit status 2 in the CLI): too
big, not UTF-8, not JSON, duplicate keys, floats or NaN, nesting too deep. URLs are fetched with
urllib only, http(s) only (redirects too), within a total deadline and the same size limits.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Final

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
    return source.startswith(("http://", "https://"))


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
    """Follows redirects to http and https only (urllib's own also follows ftp)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme.lower() not in ("http", "https"):
            fp.close()
            raise InputError(
                f"{req.full_url}: redirected to {newurl!r}: only http and https are fetched"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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
        raise InputError(f"{url}: HTTP {exc.code} {one_line(str(exc.reason))}") from None
    except Exception as exc:
        if deadline.expired:
            raise InputError(timed_out) from None
        if isinstance(exc, urllib.error.URLError):
            raise InputError(f"{url}: cannot fetch: {exc.reason}") from None
        if isinstance(exc, (ValueError, http.client.InvalidURL)):
            raise InputError(f"{url}: not a usable URL: {exc}") from None
        if isinstance(exc, http.client.HTTPException):
            what = type(exc).__name__
            raise InputError(f"{url}: not a valid HTTP answer ({what}: {exc})") from None
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
    # Split on "\n" only: str.splitlines() also splits on U+2028, U+2029, U+0085 and others,
    # which canonical JSON leaves raw inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
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
