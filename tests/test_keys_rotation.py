"""`barajamos keys rotate`: the old signing key hands over to a new one; the house publishes the
hand-over, and a chain that spans the rotation verifies for a player who pinned the old key."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestServer

from server.clock import VirtualClock
from server.keys import NewKeyPlace, rotate_signing_key
from server.keys import main as keys_main
from server.live.house import KeysChanged
from tests.conftest import AppFactory
from tests.test_live_helpers import (
    Live,
    fetch_chain,
    hand_records,
    play_training_match,
    players,
    start_live,
)
from truco.records import key_id_for
from verifier.check import CheckName, Status, TableChain, check_chain, check_hand
from verifier.signing import signing_key_from_seed, verify_signature

OLD_SEED = bytes(range(32))  # the `config` fixture's signing key
OLD_KEY = bytes(signing_key_from_seed(OLD_SEED).verify_key)
KEPT = {"cookie_key": "63" * 32, "seed_key": "73" * 32, "signing_key": OLD_SEED.hex()}


def keep_secrets(data: Path) -> Path:
    """The data folder of a house whose keys are kept there (as `serve` leaves them)."""
    data.mkdir(exist_ok=True)
    path = data / "secrets.json"
    path.write_text(json.dumps(KEPT))
    path.chmod(0o600)
    return path


async def rotate(*argv: str) -> int:
    # the command runs its own event loop: in a thread, while this one serves
    return await asyncio.to_thread(keys_main, ["rotate", *argv])


async def footer_key(live: Live) -> str:
    """The key id every page's footer names (what players compare with the published one)."""
    async with live.client.session.get(live.base) as resp:
        page = await resp.text()
    found = re.search(r'<code id="house-key-id">([0-9a-f]{16})</code>', page)
    assert found, page
    return found.group(1)


async def play_a_match(live: Live, name: str) -> str:
    (player,) = await players(live.base, name)
    try:
        return await play_training_match(player)
    finally:
        await player.close()


async def test_a_rotation_hands_the_chain_over_to_the_new_key(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secrets_path = keep_secrets(tmp_path / "house")
    before = await start_live(make_app, aiohttp_client, vclock)
    table_id = await play_a_match(before, "ana")
    assert await footer_key(before) == key_id_for(OLD_KEY)
    # while the house serves, no rotation: it would sign with the retired key meanwhile
    assert await rotate("--data-dir", str(secrets_path.parent),
                        "--database-url", database_url) == 1
    assert "another house is serving this database" in capsys.readouterr().err
    assert json.loads(secrets_path.read_text()) == KEPT
    await before.client.close()

    assert await rotate("--data-dir", str(secrets_path.parent),
                        "--database-url", database_url) == 0
    out = capsys.readouterr().out
    kept = json.loads(secrets_path.read_text())
    new_seed = bytes.fromhex(kept["signing_key"])
    new_key = bytes(signing_key_from_seed(new_seed).verify_key)
    assert {**kept, "signing_key": KEPT["signing_key"]} == KEPT  # the other keys stay
    assert new_key != OLD_KEY and new_seed.hex() not in out  # a key is never printed
    assert f"signing key rotated: {key_id_for(OLD_KEY)} -> {key_id_for(new_key)}" in out
    assert stat.S_IMODE(os.stat(secrets_path).st_mode) == 0o600
    assert not list(secrets_path.parent.glob("*.rotating"))

    # the old key no longer serves this database
    server = TestServer(make_app(clock=vclock))
    try:
        with pytest.raises(KeysChanged, match="another signing key"):
            await server.start_server()
    finally:
        await server.close()

    after = await start_live(lambda clock: make_app(clock=clock, signing_key=new_seed),
                             aiohttp_client, vclock)
    async with after.client.session.get(after.base / "api/key") as resp:
        published = await resp.json()
    assert published["public_key"] == new_key.hex()
    assert await footer_key(after) == key_id_for(new_key) == published["key_id"]
    (handover,) = published["handovers"]
    assert handover["kind"] == "key_handover" and handover["public_key"] == OLD_KEY.hex()
    assert handover["new_public_key"] == new_key.hex()
    assert verify_signature(handover, OLD_KEY)
    # the offline page says it in words, with the key to pin
    async with after.client.session.get(after.base / "verificador") as resp:
        page = await resp.text()
    assert f'<code id="house-public-key" class="hex">{new_key.hex()}</code>' in page
    assert (f"a chave <code>{key_id_for(OLD_KEY)}</code> passou a vez à chave\n"
            f"      <code>{key_id_for(new_key)}</code>") in page

    # the table played before: its records are the old key's, its chain carries the hand-over
    (bia,) = await players(after.base, "bia")
    try:
        chain = await fetch_chain(bia, table_id)
    finally:
        await bia.close()
    assert chain[0] == handover
    assert {r["public_key"] for r in hand_records(chain)} == {OLD_KEY.hex()}
    # a player who pinned the old key follows the hand-over
    assert check_chain(chain, pinned=[OLD_KEY]).ok
    other = await play_a_match(after, "caio")
    async with after.client.session.get(after.base / f"tables/{other}/chain") as resp:
        newer = await resp.json()
    assert {r["public_key"] for r in hand_records(newer)} == {new_key.hex()}
    assert newer[0] == handover
    report = check_chain(newer, pinned=[OLD_KEY])
    assert report.ok, report.failures
    # one hand of it, as `hand URL` checks it: the chain it fetches carries the hand-over, which
    # trusts the record's key for whoever pinned the old one (it failed `key`, "nor handed
    # over from it", having never looked); alone, it says where the hand-over is
    record = hand_records(newer)[0]
    url = f"http://house/tables/{other}/chain"
    alone = check_hand(record, pinned=[OLD_KEY]).entries[0].check(CheckName.KEY)
    assert alone.status is Status.FAIL
    assert alone.reason.endswith(
        f"which is not the pinned key ({key_id_for(OLD_KEY)}); after a key rotation, pin the"
        " house's keys before and after it (--key OLD --key NEW: its /api/key lists its"
        " hand-overs) or check the table's chain, which carries the hand-overs:"
        f" `barajamos-verify chain HOUSE/tables/{other}/chain --key HOUSE_KEY` (HOUSE is the"
        " address of the house that dealt the hand; HOUSE_KEY is the house's published key, from"
        " /api/key)"
    )
    fetched = check_hand(record, pinned=[OLD_KEY], chain=TableChain(url, newer))
    assert fetched.ok, fetched.entries
    assert fetched.entries[0].check(CheckName.KEY).reason == (
        f"signed by key {key_id_for(new_key)} (handed over from a pinned key)")
    assert fetched.entries[0].check(CheckName.SEED_CHAIN).status is Status.PASS
    # trust flows forward only: the new key pinned alone does not vouch for the old records
    older = check_hand(hand_records(chain)[0], pinned=[new_key],
                       chain=TableChain(url, chain)).entries[0].check(CheckName.KEY)
    assert older.status is Status.FAIL and older.reason.endswith(
        "nor handed over from it; what the house signed before a key rotation"
        " needs the older key pinned too (--key OLD --key NEW: the house's /api/key lists its"
        " hand-overs)")
    # pinned to nothing but a key the house never had: every record fails `key`; the
    # hand-over, from a key not trusted either, adds no trust and is skipped
    stranger = bytes(signing_key_from_seed(b"x" * 32).verify_key)
    keys = [(e.kind.value, c.status) for e in check_chain(newer, pinned=[stranger]).entries
            for c in e.checks if c.name is CheckName.KEY]
    assert ("key_handover", Status.SKIP) in keys
    assert all(status is Status.FAIL for kind, status in keys if kind != "key_handover")
    assert any(kind == "hand" for kind, _ in keys)


async def test_a_rotation_cut_short_is_finished_not_lost(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a review killed `keys rotate` after the database took the new key but before the key was
    # put in secrets.json: the next rotation deleted the only copy of it, and the house could
    # never start again. The leftover is now finished when the database expects its key
    secrets_path = keep_secrets(tmp_path / "house")
    served = await aiohttp_client(make_app(clock=vclock))
    await served.close()  # served once: the database knows its signing key
    new_seed = bytes(range(1, 33))
    leftover = secrets_path.with_suffix(".rotating")
    place = NewKeyPlace(leftover, json.dumps({**KEPT, "signing_key": new_seed.hex()}),
                        replace=secrets_path)
    admin = await asyncpg.connect(database_url)
    try:
        await rotate_signing_key(admin, OLD_SEED, place, new_seed, 1_800_000_000)
    finally:
        await admin.close()
    assert leftover.exists() and json.loads(secrets_path.read_text()) == KEPT  # cut short here
    common = ("--data-dir", str(secrets_path.parent), "--database-url", database_url)
    assert await rotate(*common) == 0
    assert "an earlier rotation was cut short" in capsys.readouterr().out
    assert json.loads(secrets_path.read_text())["signing_key"] == new_seed.hex()
    assert not leftover.exists()
    # a leftover whose key the database never took (cut short before its change) just goes
    leftover.write_text(json.dumps({**KEPT, "signing_key": "ab" * 32}))
    assert await rotate(*common) == 0
    assert "signing key rotated" in capsys.readouterr().out and not leftover.exists()


async def test_a_key_from_the_environment_goes_to_a_new_file(
        make_app: AppFactory, aiohttp_client: Callable[..., Any], vclock: VirtualClock,
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    served = await aiohttp_client(make_app(clock=vclock))
    await served.close()  # served once: the database knows its signing key
    monkeypatch.setenv("BARAJAMOS_SIGNING_KEY", OLD_SEED.hex())
    common = ("--data-dir", str(tmp_path / "none"), "--database-url", database_url)
    assert await rotate(*common) == 2
    assert "say where the new one goes with --new-key-file" in capsys.readouterr().err
    taken = tmp_path / "taken.key"
    taken.write_text("x")
    assert await rotate(*common, "--new-key-file", str(taken)) == 2
    assert "exists: name a new file" in capsys.readouterr().err

    new_file = tmp_path / "signing.key"
    assert await rotate(*common, "--new-key-file", str(new_file)) == 0
    out = capsys.readouterr().out
    assert f"the new key is in {new_file}: give it as BARAJAMOS_SIGNING_KEY" in out
    assert stat.S_IMODE(os.stat(new_file).st_mode) == 0o600
    new_seed = bytes.fromhex(new_file.read_text().strip())
    assert not (tmp_path / "none").exists()  # nothing kept in a data folder
    admin = await asyncpg.connect(database_url)
    try:
        assert await admin.fetchval("SELECT key_id FROM house_keys WHERE name = 'signing'") == \
            bytes(signing_key_from_seed(new_seed).verify_key).hex()
    finally:
        await admin.close()

    # the environment still gives the retired key: refused, and nothing changes
    again = tmp_path / "again.key"
    assert await rotate(*common, "--new-key-file", str(again)) == 1
    assert "served with another signing key than the one given" in capsys.readouterr().err
    assert not again.exists()
    admin = await asyncpg.connect(database_url)
    try:
        assert await admin.fetchval("SELECT count(*) FROM key_handovers") == 1
    finally:
        await admin.close()


async def test_no_signing_key_no_rotation(tmp_path: Path, database_url: str,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BARAJAMOS_SIGNING_KEY", raising=False)
    common = ("--data-dir", str(tmp_path), "--database-url", database_url)
    assert await rotate(*common) == 2
    assert "no signing key to rotate" in capsys.readouterr().err
    keep_secrets(tmp_path)
    assert await rotate(*common, "--new-key-file", str(tmp_path / "k")) == 2
    assert "the new one replaces it there (no --new-key-file)" in capsys.readouterr().err
    assert json.loads((tmp_path / "secrets.json").read_text()) == KEPT
