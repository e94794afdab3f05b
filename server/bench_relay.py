"""`barajamos bench relay`: the floor under `bench load`, measured on the same machine.

A table action in the live house is a message in, the engine, a durable write and one view out
to each seat. This benchmark keeps only the wire part, done the plain aiohttp way: a server
process (pinned to one core, uvloop, as `serve`) that takes an action message from a seat of a
four-seat "table", parses it, and sends each seat an update of the size of a real Paulista view
(built by the engine once, at start) and the actor an ack, each with `send_str`. No engine, no
database, no clocks. Light clients (pinned to the other core) send the next action as soon as
an update says it is their seat's turn, so each table has one action in flight, as `bench load
--full-speed` does.

What it prints, per table count: relayed actions per second, the server's CPU per action and
how busy its core was, and how busy the clients' core was (when it is the one that saturates,
the figure is a floor of the server's capacity, not its ceiling). Compare with `bench load`'s
CPU per action: the difference is what the house does besides relaying.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import random
import subprocess
import sys
import time
from dataclasses import dataclass

import aiohttp
import orjson
from aiohttp import web

from server import loops
from server.bench_engine import cpu_model, random_deal
from server.bench_load import (
    UsageError,
    UsageParser,
    cores,
    cpu_seconds,
    free_port,
    number_between,
    pin,
    table_counts,
)
from truco import MatchConfig, Phase, Variant, apply, legal_actions, new_match, pending, start_hand
from truco import views as engine_views

SEATS = 4
READY_TIMEOUT = 30.0


def sample_views(seed: int = 7) -> list[bytes]:
    """Each seat's view of a Paulista 2v2 hand in play (the body of a real update, its size)."""
    rng = random.Random(seed)
    config = MatchConfig(Variant.PAULISTA, SEATS)
    state = new_match(config, 0)
    state, _ = start_hand(state, random_deal(rng, config, state.next_dealer))
    for _ in range(3):  # a few moves in: cards on the table, pending decisions
        if state.phase is not Phase.IN_HAND:
            break
        seat = pending(state)[0].seat
        state, _ = apply(state, legal_actions(state, seat)[0])
    by_seat = engine_views(state, range(SEATS))
    return [orjson.dumps(by_seat[seat]) for seat in range(SEATS)]


# --- the relay server (a subprocess: `python -m server.bench_relay --serve PORT`) -----------------

def serve(port: int) -> None:
    """Relay actions between the seats of each table until killed."""
    bodies = [body.decode() for body in sample_views()]
    tables: dict[int, list[web.WebSocketResponse | None]] = {}
    seqs: dict[int, int] = {}
    relayed = 0

    async def socket(request: web.Request) -> web.StreamResponse:
        nonlocal relayed
        table, seat = int(request.query["table"]), int(request.query["seat"])
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        seats = tables.setdefault(table, [None] * SEATS)
        seats[seat] = ws
        async for msg in ws:
            if msg.type is not aiohttp.WSMsgType.TEXT:
                continue
            message = orjson.loads(msg.data)
            seq = seqs[table] = seqs.get(table, 0) + 1
            turn = (seat + 1) % SEATS
            for other, peer in enumerate(seats):
                if peer is not None and not peer.closed:
                    await peer.send_str(f'{{"turn":{turn},"type":"update","seq":{seq},'
                                        f'"view":{bodies[other]}}}')
            await ws.send_str(f'{{"type":"ack","id":{message["id"]},"seq":{seq}}}')
            relayed += 1
        seats[seat] = None
        return ws

    async def stats(_: web.Request) -> web.Response:
        return web.json_response({"relayed": relayed, "pid": os.getpid()})

    app = web.Application()
    app.router.add_get("/ws", socket)
    app.router.add_get("/stats", stats)
    loops.quiet_gc()
    web.run_app(app, host="127.0.0.1", port=port, print=None, handle_signals=True,
                loop=loops.new_event_loop())


# --- the clients (subprocesses: `python -m server.bench_relay --drive PORT FIRST COUNT`) --------

ACTION = '{{"type":"action","id":{},"action":{{"kind":"play","position":0}}}}'


async def drive(port: int, first: int, count: int) -> None:
    """Open every seat of tables first..first+count-1, then act whenever it is the seat's turn."""
    url = f"http://127.0.0.1:{port}/ws"
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        sockets = {
            (table, seat): await http.ws_connect(f"{url}?table={table}&seat={seat}",
                                                 compress=0, autoping=True)
            for table in range(first, first + count) for seat in range(SEATS)
        }
        print("connected", flush=True)

        async def seat_loop(seat: int, ws: aiohttp.ClientWebSocketResponse) -> None:
            sent = 0
            mine = str(seat)
            async for msg in ws:
                data = msg.data
                # '{"turn":N,...': the turn digit is the ninth character of an update
                if msg.type is aiohttp.WSMsgType.TEXT and data[8] == mine:
                    sent += 1
                    await ws.send_str(ACTION.format(sent))

        tasks = [asyncio.create_task(seat_loop(seat, ws)) for (_, seat), ws in sockets.items()]
        for table in range(first, first + count):  # seat 0 opens every table
            await sockets[(table, 0)].send_str(ACTION.format(0))
        await asyncio.gather(*tasks)


# --- the benchmark -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RelayResult:
    tables: int
    seconds: float
    relayed: int
    server_cpu: float
    clients_cpu: float

    @property
    def per_second(self) -> float:
        return self.relayed / self.seconds


async def _stats(http: aiohttp.ClientSession, port: int) -> dict[str, int]:
    async with http.get(f"http://127.0.0.1:{port}/stats") as resp:
        data: dict[str, int] = await resp.json()
        return data


def _spawn(args: list[str], core: int | None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "server.bench_relay", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if core is not None:
        pin(proc.pid, [core])
    return proc


async def measure(tables: int, seconds: float, warmup: float, clients: int,
                  server_core: int | None, client_core: int | None) -> RelayResult:
    port = free_port()
    server = _spawn(["--serve", str(port)], server_core)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        async with aiohttp.ClientSession() as http:
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    await _stats(http, port)
                    break
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the relay server did not start")
                await asyncio.sleep(0.1)
            share = -(-tables // clients)
            for first in range(0, tables, share):
                workers.append(_spawn(["--drive", str(port), str(first),
                                       str(min(share, tables - first))], client_core))
            for worker in workers:
                assert worker.stdout is not None
                line = await asyncio.to_thread(worker.stdout.readline)
                if line.strip() != b"connected":
                    raise RuntimeError("a client process could not connect its tables")
            await asyncio.sleep(warmup)
            before = await _stats(http, port)
            cpu0 = cpu_seconds(server.pid)
            ccpu0 = sum(cpu_seconds(w.pid) for w in workers)
            started = time.perf_counter()
            await asyncio.sleep(seconds)
            after = await _stats(http, port)
            elapsed = time.perf_counter() - started
            cpu1 = cpu_seconds(server.pid)
            ccpu1 = sum(cpu_seconds(w.pid) for w in workers)
    finally:
        for proc in (*workers, server):
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    return RelayResult(tables, elapsed, after["relayed"] - before["relayed"], cpu1 - cpu0,
                       ccpu1 - ccpu0)


def report(result: RelayResult) -> str:
    per_action = result.server_cpu / result.relayed * 1e6 if result.relayed else float("nan")
    server_busy = 100 * result.server_cpu / result.seconds
    clients_busy = 100 * result.clients_cpu / result.seconds
    return (f"{result.tables} tables: {result.per_second:,.0f} relayed actions/s; server "
            f"{per_action:.0f} us CPU per action, its core {server_busy:.0f}% busy; clients' "
            f"core {clients_busy:.0f}% busy")


def _parser() -> UsageParser:
    parser = UsageParser(
        prog="barajamos bench relay",
        description="The wire alone: actions relayed to four seats by a bare aiohttp server, "
        "to compare with bench load's CPU per action.")
    parser.add_argument("--tables", type=table_counts, default=(100, 400),
                        help="table counts to measure in turn (default 100,400)")
    parser.add_argument("--seconds", type=number_between(1, 3600), default=10.0,
                        help="measured window per table count (default 10)")
    parser.add_argument("--warmup", type=number_between(0, 600), default=2.0,
                        help="seconds of relaying before the window (default 2)")
    parser.add_argument("--clients", type=int, choices=range(1, 65), default=1,
                        metavar="1..64", help="client processes (default 1)")
    # the benchmark's own subprocesses
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--drive", nargs=3, type=int, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except UsageError as exc:
        print(f"barajamos bench relay: {exc} (see --help)", file=sys.stderr)
        return 2
    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.drive is not None:
        loops.quiet_gc()
        loops.run(drive(*args.drive))
        return 0
    available = cores()
    server_core, client_core = (available[0], available[1]) if len(available) > 1 else (None, None)
    print(f"machine: {cpu_model()}, {len(available)} cores, {platform.system()} "
          f"{platform.machine()}; python: {platform.python_implementation()} "
          f"{platform.python_version()}; aiohttp {aiohttp.__version__}")
    placement = (f"server pinned to core {server_core}, clients to core {client_core}"
                 if server_core is not None else "one core: server and clients share it")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {placement}; "
          f"{args.warmup:g} s warm-up, {args.seconds:g} s window per table count", flush=True)
    for count in args.tables:
        result = loops.run(measure(count, args.seconds, args.warmup, args.clients,
                                   server_core, client_core))
        print(report(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
