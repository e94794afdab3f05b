"""The bot client (`server.botclient`, `barajamos bots`) against a real server on a TCP port:
whole matches for every variant and seat count through the public protocol only, a rematch, a
dropped socket resumed with `hello last_seq`, the audit of acknowledged actions, and the CLI's
bad usage and unreachable-server paths."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from server import botclient
from server.app import POOL
from server.botclient import (
    AckedAction,
    BotSeat,
    BotSession,
    ProtocolError,
    RunStats,
    TablePlan,
    TableRun,
    audit_table,
    bot_account,
    chain_actions,
    main,
    run_fleet,
    seat_table,
)
from server.live import HOUSE, LIVE_SETTINGS
from tests.conftest import AppFactory
from truco import Action, ActionKind, parse_card
from verifier.check import check_chain

ServerFactory = Callable[..., Awaitable[TestServer]]
# server bots act at once (on the injected clock, which never moves here: no deadline fires)
FAST = {"bot_think": 0.0}


async def _house(make_app: AppFactory, aiohttp_server: ServerFactory) -> TestServer:
    from server.clock import VirtualClock

    app = make_app(clock=VirtualClock())
    app[LIVE_SETTINGS] = dataclasses.replace(app[LIVE_SETTINGS], **FAST)
    return await aiohttp_server(app)


def _verify(server: TestServer, chain: list[dict[str, Any]]) -> None:
    key = server.app[HOUSE].public_key  # type: ignore[index]
    report = check_chain(chain, pinned=[key])
    assert report.ok, report.failures


@pytest.mark.parametrize("variant", ["paulista", "mineiro", "argentino"])
@pytest.mark.parametrize("seats", [2, 4])
async def test_bots_play_a_whole_private_match(make_app: AppFactory,
                                               aiohttp_server: ServerFactory, variant: str,
                                               seats: int) -> None:
    server = await _house(make_app, aiohttp_server)
    base = server.make_url("/")
    plan = TablePlan(variant, seats, "private", pace=0.0, matches=1)
    stats = await asyncio.wait_for(
        run_fleet(base, plan, 1, f"b{variant[:3]}{seats}", "test-fleet", tune_gc=False),
        timeout=60)
    assert stats.matches == 1
    assert not stats.errors, stats.errors
    assert stats.actions > 0 and stats.audited == stats.actions
    assert stats.lost == 0 and stats.unverified == 0
    assert len(stats.latencies) == stats.actions
    # the records the audit read are the signed public ones, and they verify
    owner = BotSession(base, bot_account(f"b{variant[:3]}{seats}", "test-fleet", 0))
    try:
        await owner.login()
        assert (await owner.request("GET", "/api/tables?mine=1"))["tables"] == []  # all left
        (table_id,) = await _table_ids(server)
        chain = await owner.chain(table_id)
        _verify(server, chain)
    finally:
        await owner.close()
    # every seat's fresh entropy went into every hand (each bot is a seated human)
    hands = [entry for entry in chain if entry["kind"] == "hand"]
    assert stats.entropy == seats * len(hands)
    assert all(None not in hand["contributions"] for hand in hands)
    assert len({c for hand in hands for c in hand["contributions"]}) == seats * len(hands)


async def _table_ids(server: TestServer) -> list[str]:
    pool = server.app[POOL]  # type: ignore[index]
    return [row["id"] for row in await pool.fetch("SELECT id FROM live_tables")]


async def test_training_table_rematch_then_leave(make_app: AppFactory,
                                                 aiohttp_server: ServerFactory) -> None:
    server = await _house(make_app, aiohttp_server)
    base = server.make_url("/")
    # two seats: the server's bot is the opponent (no team votes to wait on)
    plan = TablePlan("mineiro", 2, "training", pace=0.0, matches=2)
    stats = await asyncio.wait_for(
        run_fleet(base, plan, 1, "trainer", "test-fleet", tune_gc=False), timeout=60)
    assert stats.matches == 2  # the rematch was played too
    assert not stats.errors and stats.lost == 0 and stats.audited == stats.actions > 0


async def test_a_dropped_socket_resumes_from_its_last_event(make_app: AppFactory,
                                                            aiohttp_server: ServerFactory) -> None:
    server = await _house(make_app, aiohttp_server)
    base = server.make_url("/")
    plan = TablePlan("paulista", 2, "private", pace=0.0, matches=1)
    sessions = [BotSession(base, bot_account("drop", "test-fleet", i)) for i in range(2)]
    stats = RunStats()
    tasks: list[asyncio.Task[None]] = []
    try:
        for session in sessions:
            await session.login()
        run = await seat_table(plan, sessions, stats, random.Random(5))
        tasks = [asyncio.create_task(seat.play()) for seat in run.seats]
        await sessions[0].start(run.table_id)
        # dropped early in hand 1, which the match outlives whatever is raised (a hand played
        # to twelve, which ends it, takes nine moves at least); looked at after every move
        while stats.actions < 2:
            await asyncio.sleep(0)
        dropped = run.seats[1]
        assert dropped.ws is not None
        seq_before = dropped.last_seq
        await dropped.ws.close()  # as a network drop would: the seat reconnects by itself
        await asyncio.wait_for(run.done.wait(), timeout=60)
        assert stats.reconnects >= 1
        assert dropped.last_seq > seq_before
        # the server still held the missed events: they were replayed, no second snapshot
        # (the one snapshot answered the first hello, before the match started)
        assert len(dropped.snapshots) == 1 and dropped.snapshots[0][1] < seq_before
        assert "seq_gap" not in stats.errors and not stats.errors
        assert stats.matches == 1
        audit_table(run, chain_actions(await sessions[0].chain(run.table_id)))
        assert stats.lost == 0 and stats.audited == stats.actions
        _verify(server, await sessions[0].chain(run.table_id))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for session in sessions:
            await session.close()


async def test_a_reconnected_bot_acts_only_once_caught_up(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # after a `welcome`, the replayed updates carry their views as they were then, `legal`
    # included: a bot acting on one could make a move chosen on an old view (at pace 0 its
    # move ran between two replayed messages)
    run = TableRun("00000000000000aa", 1, 1, RunStats())
    seat = BotSeat(None, run, 0, pace=0.0, rng=random.Random(1))  # type: ignore[arg-type]
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    monkeypatch.setattr(seat, "_send", send)
    monkeypatch.setattr("server.botclient.choose_action",
                        lambda view, rng: view["legal"][0])
    seat.epoch, seat.last_seq = 3, 5

    def update(seq: int, card: str) -> dict[str, Any]:
        return {"type": "update", "seq": seq, "hand": 2, "pending": [],
                "view": {"legal": [{"seat": 0, "do": "play", "card": card}]}}

    await seat._handle({"type": "welcome", "epoch": 3, "seq": 8, "table": {}})
    for seq, card in ((6, "4C"), (7, "5C")):
        await seat._handle(update(seq, card))
        for _ in range(5):
            await asyncio.sleep(0)
        assert sent == [], seq
    await seat._handle(update(8, "6C"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert [m["action"]["card"] for m in sent] == ["6C"]  # the newest view's move, once


def test_audit_counts_what_the_records_lack() -> None:
    stats = RunStats()
    run = TableRun("0123456789abcdef", listeners=1, matches=1, stats=stats)
    seven = Action(0, ActionKind.PLAY, parse_card("7H"))
    raise_ = Action(0, ActionKind.RAISE)
    for seq, action in ((3, seven), (4, raise_)):
        run.acknowledged(AckedAction(1, seq, 1, action), sent=0.0)
    # no seat of this run saw the events; the record holds the card but not the raise
    audit_table(run, {1: [{"seat": 0, "do": "play", "card": "7H"},
                          {"seat": 1, "do": "timeout"}]},
                durable={1: [{"seat": 0, "do": "play", "card": "7H"}, {"seat": 0, "do": "raise"}]})
    assert stats.audited == 2
    assert stats.lost_records == 1
    assert stats.lost_durable == 0
    # events are checked per seat the run plays; this run plays none
    assert stats.lost_events == 0


def test_audit_finds_a_covered_card_written_by_its_position() -> None:
    # while its hand is in play the row names a covered card's position, not its face
    stats = RunStats()
    run = TableRun("0123456789abcdef", listeners=1, matches=1, stats=stats)
    covered = Action(1, ActionKind.PLAY, parse_card("4C"), covered=True)
    run.acknowledged(AckedAction(1, 5, 2, covered), sent=0.0)
    audit_table(run, {}, durable={2: [{"seat": 1, "do": "play", "covered": True,
                                       "position": 2}]})
    assert stats.lost_durable == 0
    audit_table(run, {}, durable={2: [{"seat": 1, "do": "play", "card": "4C"}]})
    assert stats.lost_durable == 1  # face up is another move


# --- the command line ---------------------------------------------------------------------------

def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("argv", [
    [],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista"],
    ["--url", "ftp://example.org", "--variant", "paulista", "--seats", "2"],
    ["--url", "http://127.0.0.1:9", "--variant", "truco", "--seats", "2"],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista", "--seats", "3"],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista", "--seats", "2", "--tables", "0"],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista", "--seats", "2", "--pace", "-1"],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista", "--seats", "2",
     "--name-prefix", "no spaces"],
    ["--url", "http://127.0.0.1:9", "--variant", "paulista", "--seats", "2",
     "--password-prefix", "x" * 300],
])
def test_cli_bad_usage_is_one_line_and_exit_2(argv: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert _one_line(err).startswith("barajamos bots: ")


def test_cli_unreachable_server_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["--url", f"http://127.0.0.1:{port}", "--variant", "mineiro",
                 "--seats", "2"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("barajamos bots: cannot reach")


async def test_cli_on_a_server_that_is_not_barajamos(aiohttp_server: ServerFactory,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    other = await aiohttp_server(app)
    code = await asyncio.to_thread(main, ["--url", str(other.make_url("/")), "--variant",
                                          "mineiro", "--seats", "2"])
    assert code == 2
    assert "is not a Barajamos server" in _one_line(capsys.readouterr().err)


async def test_cli_plays_and_prints_a_summary(make_app: AppFactory,
                                              aiohttp_server: ServerFactory,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    server = await _house(make_app, aiohttp_server)
    url = str(server.make_url("/"))
    argv = ["--url", url, "--tables", "1", "--variant", "mineiro", "--seats", "2",
            "--pace", "0", "--name-prefix", "cli", "--password-prefix", "test-fleet"]
    # the CLI runs its own event loop: in a thread, while this loop serves
    assert await asyncio.to_thread(main, argv) == 0
    out = capsys.readouterr().out
    assert "matches finished: 1 of 1" in out
    assert "errors: none" in out
    assert "lost actions: 0 of " in out
    (tables,) = [line for line in out.splitlines() if line.startswith("tables: ")]
    table_id = tables.split()[1]
    assert (f"/tables/ID/chain --key KEY, KEY the public_key of {url.rstrip('/')}/api/key"
            in tables)
    async with (aiohttp.ClientSession() as http,
                http.get(f"{url.rstrip('/')}/tables/{table_id}/chain") as resp):
        assert resp.status == 200 and len(await resp.json()) > 1
    # a second run logs the same bots in again (their names are taken)
    assert await asyncio.to_thread(main, argv) == 0
    assert "matches finished: 1 of 1" in capsys.readouterr().out


async def test_cli_says_how_to_let_a_large_fleet_register(
        make_app: AppFactory, aiohttp_server: ServerFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    from server.clock import VirtualClock

    app = make_app(clock=VirtualClock(), registrations_per_hour=1)
    server = await aiohttp_server(app)
    argv = ["--url", str(server.make_url("/")), "--tables", "1", "--variant", "paulista",
            "--seats", "4", "--kind", "private", "--pace", "0", "--name-prefix", "big",
            "--password-prefix", "test-fleet"]
    assert await asyncio.to_thread(main, argv) == 1
    err = _one_line(capsys.readouterr().err)
    assert "too_many_accounts" in err and "BARAJAMOS_REGISTRATIONS_PER_HOUR=0" in err


def test_account_names_and_passwords_are_stable() -> None:
    first = bot_account("bot", "secret-prefix", 7)
    assert first == bot_account("bot", "secret-prefix", 7)
    assert first.name == "bot00007"
    assert first.password != bot_account("bot", "other-prefix", 7).password


async def test_a_database_blip_is_asked_again_not_the_end_of_the_fleet(
        aiohttp_server: ServerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """One 503 `unavailable` while a fleet sat down ended the whole fleet (a chaos drill). A
    refusal that changed nothing is asked again, a moment later; any other refusal is not."""
    monkeypatch.setattr(botclient, "RETRY_WAITS", (0.01, 0.02, 0.04))
    answers = {"blip": [503, 503, 200], "never": [503] * 9, "other": [503, 200]}
    asked: dict[str, int] = {}

    async def reply(request: web.Request) -> web.Response:
        which = request.match_info["which"]
        asked[which] = asked.get(which, 0) + 1
        status = answers[which][asked[which] - 1]
        code = "shutting_down" if which == "other" else "unavailable"
        if status == 503:
            return web.json_response({"error": code, "message": "x"}, status=503)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/api/{which}", reply)
    server = await aiohttp_server(app)
    session = BotSession(server.make_url("/"), bot_account("blip", "test-fleet", 0))
    try:
        assert await session.request("GET", "/api/blip") == {"ok": True}
        assert asked["blip"] == 3
        with pytest.raises(ProtocolError) as refused:
            await session.request("GET", "/api/never")
        assert (refused.value.code, asked["never"]) == ("unavailable", 4)  # 1 + 3 waits
        with pytest.raises(ProtocolError):  # (not a refusal that surely changed nothing)
            await session.request("GET", "/api/other")
        assert asked["other"] == 1
    finally:
        await session.http.close()
