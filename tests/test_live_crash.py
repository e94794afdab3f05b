"""A real server process killed with SIGKILL mid-match and started again on the same database:
every live table is rebuilt from what was written, the matches finish, and every hand record of
them passes the verifier (its command line, pinned to the house's published key)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import asyncpg
from yarl import URL

from tests.test_live_helpers import (
    Player,
    SeatClient,
    connect,
    create_table,
    fetch_chain,
    hand_records,
    play_all,
    players,
)
from verifier.cli import main as verify_main

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """`python -m server serve` in a subprocess, on a given database and data folder."""

    def __init__(self, database_url: str, data_dir: Path) -> None:
        self.database_url = database_url
        self.data_dir = data_dir
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> URL:
        return URL(f"http://127.0.0.1:{self.port}/")

    async def start(self) -> None:
        env = {**os.environ, "BARAJAMOS_DATA_DIR": str(self.data_dir),
               "BARAJAMOS_LOG_LEVEL": "WARNING"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", "--database-url", self.database_url,
             "--port", str(self.port)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with aiohttp.ClientSession() as session:
            for _ in range(300):
                if self.process.poll() is not None:
                    raise AssertionError(self.process.stderr.read().decode()  # type: ignore[union-attr]
                                         if self.process.stderr else "server exited")
                try:
                    async with session.get(self.base / "health") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError("the server did not come up")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        return self.process.returncode


async def _reconnect(player: Player, table_id: str, old: SeatClient) -> SeatClient:
    client = await connect(player, table_id, old.seat)
    client.received = old.received  # one history per player across the crash
    client.epoch = old.epoch
    # a match may have ended before the crash (an Argentino falta envido can end it in a few
    # hands): its players already saw `match_over`, the snapshot after the restart says finished
    client.over = old.over
    return client


# a move or two into the first hand: its deal is event 8 at a two-seat table
EARLY_SEQ = 10


async def test_sigkill_mid_match_then_restart(database_url: str, tmp_path: Path) -> None:
    server = Server(database_url, tmp_path / "data")
    await server.start()
    restarted: Server | None = None
    people: list[Player] = []
    try:
        people = await players(server.base, "ana", "bia")
        ana, bia = people
        tables = []
        for variant in ("paulista", "argentino"):
            table = await create_table(ana, variant, 2, "private")
            status, _ = await bia.post(f"/api/tables/{table['id']}/join",
                                       {"invite": table["invite"]})
            assert status == 200
            tables.append(table)
        clients: dict[str, list[SeatClient]] = {}
        for table in tables:
            clients[table["id"]] = [await connect(p, table["id"], i)
                                    for i, p in enumerate(people)]
            status, _ = await ana.post(f"/api/tables/{table['id']}/start")
            assert status == 200
        # play a few hands at the Argentino table and a few moves of the Paulista one, then
        # kill the server in the middle of play (one hand may win a whole match, so only the
        # first hand's early moves are sure to leave a match in play)
        stops = {tables[0]["id"]: EARLY_SEQ, tables[1]["id"]: 40}
        await asyncio.wait_for(asyncio.gather(*(
            c.play(stop_after_seq=stops[tid]) for tid, pair in clients.items() for c in pair)), 60)
        commitments = {tid: [m for m in pair[0].received if m["type"] == "commitment"][-1]
                       for tid, pair in clients.items()}
        for pair in clients.values():
            for c in pair:
                if c.view and c.view["legal"] and c.acted_at != c.last_seq:
                    await c.react({"type": "update"})  # in flight when the server dies
        # at least one match is still in play when the server dies
        assert any(c.over is None for pair in clients.values() for c in pair)
        server.kill()
        for pair in clients.values():
            for c in pair:
                await c.ws.close()

        restarted = Server(database_url, tmp_path / "data")
        await restarted.start()
        for person in people:
            person.base = restarted.base
        for tid, pair in clients.items():
            clients[tid] = [await _reconnect(p, tid, old) for p, old in zip(people, pair,
                                                                             strict=True)]
            for c, old in zip(clients[tid], pair, strict=True):
                before = old.epoch
                welcome = await c.recv()
                assert welcome["type"] == "welcome" and welcome["epoch"] != before
                snapshot = await c.recv()  # another server run: a snapshot, not a replay
                assert snapshot["type"] == "snapshot"
                await c.react(snapshot)
        await play_all([c for pair in clients.values() for c in pair])

        async with aiohttp.ClientSession() as public, public.get(
                restarted.base / "api/key") as resp:
            key = (await resp.json())["public_key"]
        for tid, pair in clients.items():
            assert all(c.over and c.over["termination"] == "target" for c in pair)
            chain = await fetch_chain(ana, tid)
            records = hand_records(chain)
            assert [r["hand"] for r in records] == list(range(1, len(records) + 1))
            assert records[-1]["match_winner"] in (0, 1)
            # the hand committed before the crash was dealt from that very commitment
            committed = commitments[tid]
            (same,) = [r for r in records if r["hand"] == committed["hand"]]
            assert same["commitment"] == committed["commitment"]
            path = tmp_path / f"{tid}.json"
            path.write_text(json.dumps(chain))
            assert verify_main(["chain", str(path), "--key", key]) == 0
        assert restarted.stop() == 0  # SIGTERM: sockets closed, writes flushed, clean stop
        restarted = None
        conn = await asyncpg.connect(database_url)
        try:
            runs = await conn.fetch("SELECT stopped_at, clean FROM server_runs ORDER BY id")
        finally:
            await conn.close()
        # the killed run never recorded a stop; the restarted one stopped cleanly
        assert [(r["stopped_at"] is not None, r["clean"]) for r in runs] == [
            (False, False), (True, True)]
    finally:
        for person in people:
            await person.close()
        server.stop()
        if restarted is not None:
            restarted.stop()


