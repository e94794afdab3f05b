"""`barajamos keys rotate`: retire the house's signing key for a new one, knowingly.

The old key signs a `key_handover` statement naming the new one (docs/FAIRNESS.md, section 8).
The house publishes every hand-over at `/api/key` and in every table's chain, so that a player
who pinned the old key follows to the new one (the verifier does, and so do the browser's
checks), and the records signed before the rotation stay checkable with the keys that signed
them. Run with the house stopped: the command takes the serving lock, so it cannot race a
house that signs with the old key.

Where the new key goes: into the data folder's `secrets.json` (where the old one was kept), or,
when the signing key comes from `BARAJAMOS_SIGNING_KEY`, into the file `--new-key-file` names
(created, mode 0600), for the operator to put in the environment: the command never prints a
key. The database records the new key at the same moment, so a house started with the old key
afterwards refuses to serve (docs/OPERATIONS.md, Keys) instead of signing with a retired key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from server.config import Config, ConfigError, key_from_hex
from server.logs import setup_logging
from truco.records import build_key_handover, key_id_for
from verifier.signing import sign_statement, signing_key_from_seed

SIGNING_VARIABLE = "BARAJAMOS_SIGNING_KEY"


@dataclass(frozen=True, slots=True)
class Rotated:
    old_key_id: str
    new_key_id: str
    handover: dict[str, Any]


class NewKeyPlace:
    """Where the new key is kept: written aside first, put in place once the database took it,
    taken back if it did not (so that a failed rotation leaves the house as it was)."""

    def __init__(self, path: Path, text: str, *, replace: Path | None) -> None:
        self.path = path  # the file written now
        self.replace = replace  # the file it becomes once the database took the new key
        self.text = text

    def write(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.text)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)

    def commit(self) -> None:
        if self.replace is not None:
            os.replace(self.path, self.replace)


async def rotate_signing_key(conn: asyncpg.Connection, old_seed: bytes,
                             place: NewKeyPlace | None, new_seed: bytes, at: int) -> Rotated:
    """Hand the signing key over from `old_seed` to `new_seed` in the database (`conn` holds
    the serving lock): refused when the database was served with another key than the old one.
    `place` keeps the new key; it is written before the database changes and discarded if the
    change fails."""
    from server.live.house import KeysChanged

    old = signing_key_from_seed(old_seed)
    old_public = bytes(old.verify_key)
    new_public = bytes(signing_key_from_seed(new_seed).verify_key)
    handover = sign_statement(build_key_handover(at, new_public), old)
    if place is not None:
        place.write()
    try:
        async with conn.transaction():
            kept = await conn.fetchval(
                "SELECT key_id FROM house_keys WHERE name = 'signing' FOR UPDATE")
            if kept is not None and kept != old_public.hex():
                raise KeysChanged(
                    "this database was served with another signing key than the one given: a"
                    " hand-over must be signed by the key the players pinned (docs/OPERATIONS.md,"
                    " Keys)")
            await conn.execute(
                "INSERT INTO key_handovers (old_key, new_key, statement) VALUES ($1, $2, $3)",
                old_public.hex(), new_public.hex(), json.dumps(handover))
            await conn.execute(
                "INSERT INTO house_keys (name, key_id) VALUES ('signing', $1)"
                " ON CONFLICT (name) DO UPDATE SET key_id = EXCLUDED.key_id,"
                " recorded_at = now()", new_public.hex())
    except BaseException:
        if place is not None:
            place.discard()
        raise
    return Rotated(key_id_for(old_public), key_id_for(new_public), handover)


def _old_key(env: Mapping[str, str], data: Path) -> tuple[bytes, dict[str, str] | None]:
    """The signing key in use, and the kept secrets it was read from (None: the environment)."""
    if env.get(SIGNING_VARIABLE, "").strip():
        return key_from_hex(SIGNING_VARIABLE, env[SIGNING_VARIABLE].strip()), None
    path = data / "secrets.json"
    try:
        kept = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no signing key to rotate: {path} does not exist and"
                          f" {SIGNING_VARIABLE} is not set") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(kept, dict) or "signing_key" not in kept:
        raise ConfigError(f"no signing key to rotate in {path}")
    kept = {str(k): str(v) for k, v in kept.items()}
    return key_from_hex(f"{path}:signing_key", kept["signing_key"]), kept


def main(argv: list[str]) -> int:
    from server.serve import _common, _existing_house

    parser = argparse.ArgumentParser(
        prog="barajamos keys",
        description="Rotate the house's signing key (run it with the house stopped).")
    commands = parser.add_subparsers(dest="command", required=True)
    rotate = commands.add_parser(
        "rotate", help="make a new signing key; the old one signs the hand-over to it",
        description="Make a new signing key, signed over to by the old one; the house"
                    " publishes the hand-over. The new key replaces the old one in the data"
                    f" folder's secrets.json, or, with {SIGNING_VARIABLE} set, goes to"
                    " --new-key-file for you to put in the environment.")
    rotate.add_argument("--new-key-file", type=Path,
                        help=f"where the new key goes when {SIGNING_VARIABLE} gives the old one"
                             " (a new file, mode 0600; 64 hex digits)")
    _common(rotate)
    args = parser.parse_args(argv)
    prog = "barajamos keys rotate"
    config = _existing_house(prog, args)
    if isinstance(config, int):
        return config
    try:
        old_seed, kept = _old_key(os.environ, config.data_path)
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    new_seed = secrets.token_bytes(32)
    if kept is None:
        if args.new_key_file is None:
            print(f"{prog}: {SIGNING_VARIABLE} gives the signing key: say where the new one"
                  " goes with --new-key-file FILE", file=sys.stderr)
            return 2
        if args.new_key_file.exists():
            print(f"{prog}: {args.new_key_file} exists: name a new file", file=sys.stderr)
            return 2
        place = NewKeyPlace(args.new_key_file, new_seed.hex() + "\n", replace=None)
    else:
        if args.new_key_file is not None:
            print(f"{prog}: the signing key is kept in {config.data_path / 'secrets.json'}:"
                  " the new one replaces it there (no --new-key-file)", file=sys.stderr)
            return 2
        secrets_path = config.data_path / "secrets.json"
        tmp = secrets_path.with_suffix(".rotating")
        # a rotation cut short leaves its new key here: `_rotate` finishes it when the database
        # took that key, and only else throws it away
        place = NewKeyPlace(tmp, json.dumps({**kept, "signing_key": new_seed.hex()},
                                            indent=2, sort_keys=True), replace=secrets_path)
    setup_logging(config.log_level)
    return asyncio.run(_rotate(prog, config, old_seed, place, new_seed))


async def _finished_earlier(conn: asyncpg.Connection, place: NewKeyPlace) -> bool:
    """A rotation cut short left its new key aside (`place.path`): when the database already
    expects that key, put it in place (True); else it never reached the database, and goes."""
    assert place.replace is not None
    try:
        text = place.path.read_text()
    except FileNotFoundError:
        return False
    try:
        seed = bytes.fromhex(json.loads(text)["signing_key"])
        public = bytes(signing_key_from_seed(seed).verify_key).hex()
    except (ValueError, KeyError, TypeError):
        public = None
    kept = await conn.fetchval("SELECT key_id FROM house_keys WHERE name = 'signing'")
    if public is not None and kept == public:
        os.replace(place.path, place.replace)
        return True
    place.path.unlink()  # written before a database change that never happened
    return False


async def _rotate(prog: str, config: Config, old_seed: bytes, place: NewKeyPlace,
                  new_seed: bytes) -> int:
    from server.db import migrate
    from server.live.house import serve_alone
    from server.serve import house_database, startup_errors

    try:
        with house_database(config) as dsn:
            # no house may sign meanwhile; a house just stopped frees the lock once its
            # database backend has noticed the closed connection: a few tries, 0.2 s apart (one
            # try refused a rotation run right after the stop, in a loaded test run)
            conn = await serve_alone(dsn, tries=10)
            try:
                await migrate(conn)
                if place.replace is not None and await _finished_earlier(conn, place):
                    print(f"an earlier rotation was cut short after the database took its new"
                          f" key: that key is now in {place.replace}; the house can start")
                    return 0
                rotated = await rotate_signing_key(conn, old_seed, place, new_seed,
                                                   int(time.time()))
                # in place at once, while the database is still up: a command stopped (or
                # killed) between the two must not leave the database expecting a key that
                # only a temporary file holds
                try:
                    place.commit()
                except OSError as exc:
                    print(f"{prog}: the database now expects the new key, but it could not be"
                          f" put in {place.replace}: {exc}; it is in {place.path}: move it"
                          " there before starting the house", file=sys.stderr)
                    return 1
            finally:
                await conn.close()
    except startup_errors() as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print(f"signing key rotated: {rotated.old_key_id} -> {rotated.new_key_id}")
    if place.replace is None:
        print(f"the new key is in {place.path}: give it as {SIGNING_VARIABLE} when the house"
              " starts again (it refuses the old one)")
    print("the hand-over is published at /api/key and in every table's chain; publish the new"
          " key id where you published the old one")
    return 0
