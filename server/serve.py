"""`barajamos serve` and `barajamos migrate`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from aiohttp import web

from server.config import Config, ConfigError, PasswordCostLevel, from_env
from server.logs import setup_logging
from server.loops import Collector, new_event_loop, quiet_gc
from server.metrics import Metrics

if TYPE_CHECKING:
    import asyncpg

    from server.accounts import PasswordCost

log = logging.getLogger("barajamos")
T = TypeVar("T")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="data folder (default .data or "
                        "BARAJAMOS_DATA_DIR): embedded PostgreSQL, kept secrets")
    parser.add_argument("--database-url", help="PostgreSQL URL (default DATABASE_URL; "
                        "without one the embedded PostgreSQL is started)")


def _config(args: argparse.Namespace, *, keep_secrets: bool = True, **extra: object) -> Config:
    return from_env(data_dir=args.data_dir, database_url=args.database_url,
                    keep_secrets=keep_secrets, **extra)


def _existing_house(prog: str, args: argparse.Namespace) -> Config | int:
    """The settings of a command that works on an existing house (`migrate`, `operator`): it
    needs no secrets (and keeps none in the data folder), and without a database URL the data
    folder must already hold the house's embedded PostgreSQL; else the exit status (2), said in
    one line."""
    from server.db import house_missing

    try:
        config = _config(args, keep_secrets=False)
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if config.database_url is None:
        missing = house_missing(config.data_path)
        if missing:
            print(f"{prog}: {missing}", file=sys.stderr)
            return 2
    return config


async def _quiet_gc(app: web.Application) -> AsyncIterator[None]:
    from server.app import METRICS

    time_pauses(quiet_gc(), app[METRICS])  # once the house has started
    yield


def time_pauses(collector: Collector, metrics: Metrics) -> None:
    """Each of the collector's collections goes into `barajamos_gc_seconds`, by kind."""
    young, whole = metrics.gc_seconds.labels("young"), metrics.gc_seconds.labels("whole")
    collector.listeners.append(
        lambda seconds, _unreachable, _blocks, is_whole: (whole if is_whole else young)
        .observe(seconds))


def build_app(config: Config) -> web.Application:
    """The app as `serve` runs it, hashing new passwords at the configured cost."""
    from server.app import create_app

    return create_app(config, password_cost=password_cost(config))


def password_cost(config: Config) -> PasswordCost:
    """The Argon2id cost of the configured level (BARAJAMOS_PASSWORD_COST)."""
    from server.accounts import INTERACTIVE, MINIMUM

    return {PasswordCostLevel.INTERACTIVE: INTERACTIVE,
            PasswordCostLevel.MINIMUM: MINIMUM}[config.password_cost]


def insecure_cookies(host: str, secure_cookies: bool) -> bool:
    """Cookies without the Secure flag where others than this machine can reach the house (a
    loopback address is only this machine's)."""
    if secure_cookies or host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: served to whoever resolves it
        return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="barajamos serve", description="Start the house.")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 8080)")
    _common(parser)
    args = parser.parse_args(argv)
    try:
        config = _config(args, host=args.host, port=args.port)
    except ConfigError as exc:
        print(f"barajamos serve: {exc}", file=sys.stderr)
        return 2
    # the port first: a taken one is said before the database starts or a table is touched
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    try:
        listening = socket.create_server((config.host, config.port), family=family)
    except OSError as exc:
        print(f"barajamos serve: cannot listen on {config.host}:{config.port}:"
              f" {exc.strerror or exc}", file=sys.stderr)
        return 1
    setup_logging(config.log_level)
    app = build_app(config)  # after logging: the app logs while it starts
    app.cleanup_ctx.append(_quiet_gc)  # last: once the house has started
    log.info("starting", extra={"host": config.host, "port": config.port,
                                "password_cost": config.password_cost.value,
                                "database": "url" if config.database_url else "embedded",
                                "data_dir": str(config.data_path),
                                # what a reverse proxy's setup turns on (docs/OPERATIONS.md)
                                "allowed_origins": list(config.allowed_origins),
                                "trusted_proxies": sorted(map(str, config.trusted_proxies)),
                                "secure_cookies": config.secure_cookies})
    # for the person who started it (stdout: the log on stderr stays one JSON event a line),
    # once the house serves: after the database, its migrations and the tables' recovery (the
    # startup signal's handlers added now run after every context of the app), so that a
    # script waiting for this line never goes on against a house that is about to fail
    shown = f"[{config.host}]" if ":" in config.host else config.host  # an IPv6 address

    async def announce(_: web.Application) -> None:
        print(f"Barajamos is serving on http://{shown}:{config.port}/", flush=True)

    app.on_startup.append(announce)
    if insecure_cookies(config.host, config.secure_cookies):
        log.warning("cookies without the Secure flag on a public address",
                    extra={"host": config.host, "fix": "serve behind HTTPS and set"
                           " BARAJAMOS_SECURE_COOKIES=1"})
    # run_app handles SIGINT/SIGTERM: on_shutdown closes sockets with GOING_AWAY, then cleanup
    # persists what it must and stops the embedded PostgreSQL
    try:
        web.run_app(app, sock=listening, print=None, shutdown_timeout=10.0, access_log=None,
                    loop=new_event_loop())
    except startup_errors() as exc:  # the port taken, the database unreachable or busy...
        log.error("serve failed", extra={"error": f"{type(exc).__name__}: {exc}"})
        print(f"barajamos serve: {exc}", file=sys.stderr)
        return 1
    finally:
        listening.close()  # run_app leaves it open when the house fails to start
    return 0


def startup_errors() -> tuple[type[BaseException], ...]:
    """What stops the house from starting (or running) for a reason an operator can fix: one
    line, not a traceback."""
    import subprocess

    import asyncpg

    from server.db import DatabaseUnreachable, MigrationError
    from server.live.house import HouseBusy

    # SubprocessError: the embedded PostgreSQL's tools failing, or not done in time
    return (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, MigrationError,
            subprocess.SubprocessError, HouseBusy, DatabaseUnreachable)


def migrate_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="barajamos migrate",
                                     description="Apply pending SQL migrations and exit.")
    _common(parser)
    args = parser.parse_args(argv)
    config = _existing_house("barajamos migrate", args)
    if isinstance(config, int):
        return config
    setup_logging(config.log_level)
    return asyncio.run(_migrate(config))


@contextlib.contextmanager
def house_database(config: Config) -> Iterator[str]:
    """The database of an existing house, for a command that works on it (`migrate`,
    `operator`, `keys rotate`): its URL, or its embedded PostgreSQL, started for the command and
    stopped after it."""
    from server.db import EmbeddedPostgres

    if config.database_url is not None:
        yield config.database_url
        return
    # SIGTERM as SIGINT: the command stops, and the PostgreSQL it started with it
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        embedded = EmbeddedPostgres(config.data_path / "pg")
        dsn = embedded.start()
        try:
            yield dsn
        finally:
            embedded.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _migrate(config: Config) -> int:
    from server.db import connect, migrate

    try:
        with house_database(config) as dsn:
            conn = await connect(dsn)
            try:
                applied = await migrate(conn)
            finally:
                await conn.close()
    except startup_errors() as exc:
        print(f"barajamos migrate: {exc}", file=sys.stderr)
        return 1
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    return 0


def operator_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="barajamos operator",
        description="Give an account the operator role (or take it back with --revoke).")
    parser.add_argument("name", help="the account's name")
    parser.add_argument("--revoke", action="store_true", help="make it a player again")
    _common(parser)
    args = parser.parse_args(argv)
    config = _existing_house("barajamos operator", args)
    if isinstance(config, int):
        return config
    setup_logging(config.log_level)
    return asyncio.run(_set_operator(config, args.name, not args.revoke))


def password_link_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="barajamos password-link",
        description="Make a one-time link to choose a new password for an account (a player's"
                    " or an operator's), good for 24 hours; it replaces the account's unused"
                    " links. Hand it only to the account's owner (docs/OPERATIONS.md).")
    parser.add_argument("name", help="the account's name")
    parser.add_argument("--url", help="the house's public address the link starts with"
                        " (default: the first of BARAJAMOS_ALLOWED_ORIGINS, else"
                        " http://HOST:PORT of the settings)")
    _common(parser)
    args = parser.parse_args(argv)
    config = _existing_house("barajamos password-link", args)
    if isinstance(config, int):
        return config
    base = args.url or (config.allowed_origins[0] if config.allowed_origins
                        else f"http://{config.host}:{config.port}")
    setup_logging(config.log_level)
    return asyncio.run(_password_link(config, args.name, base.rstrip("/")))


async def _on_house(config: Config, work: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
    """`work` done on the database of an existing house (`house_database`), migrated first."""
    from server.db import create_pool, migrate

    with house_database(config) as dsn:
        pool = await create_pool(dsn, min_size=1, max_size=1)
        try:
            async with pool.acquire() as conn:
                await migrate(conn)
            return await work(pool)
        finally:
            await pool.close()


async def _on_account(prog: str, config: Config,
                      work: Callable[[asyncpg.Pool], Awaitable[T]]) -> T | None:
    """`work` on the house's database (`_on_house`); an account's refusal, or a database out of
    reach, said in one line (None then)."""
    from server.accounts import AccountError

    try:
        return await _on_house(config, work)
    except AccountError as exc:
        print(f"{prog}: {exc.message}", file=sys.stderr)
    except startup_errors() as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
    return None


async def _password_link(config: Config, name: str, base: str) -> int:
    from server.password_links import PATH, make

    made = await _on_account("barajamos password-link", config,
                             lambda pool: make(pool, name, None))
    if made is None:
        return 1
    token, link = made
    log.info("password link made", extra={"user": link.user_name, "made_by": "command line",
                                          "link": link.id})
    expires = link.expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{link.user_name}: {base}{PATH}{token}")
    print(f"good once, until {expires}; hand it only to {link.user_name}", file=sys.stderr)
    return 0


def erase_account_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="barajamos erase-account",
        description="Anonymize an account at its owner's request: its name becomes"
                    " apagado-<id>, its password one nobody knows, its sessions end; what was"
                    " played stays under the new name (docs/OPERATIONS.md).")
    parser.add_argument("name", help="the account's name")
    _common(parser)
    args = parser.parse_args(argv)
    config = _existing_house("barajamos erase-account", args)
    if isinstance(config, int):
        return config
    setup_logging(config.log_level)
    return asyncio.run(_erase_account(config, args.name))


async def _erase_account(config: Config, name: str) -> int:
    from server.accounts import erase

    cost = password_cost(config)
    done = await _on_account("barajamos erase-account", config,
                             lambda pool: erase(pool, name, cost))
    if done is None:
        return 1
    erased, ended = done
    log.info("account erased", extra={"user": erased, "ended_sessions": ended})
    print(f"{name}: erased, now {erased}; {ended} session(s) ended")
    return 0


async def _set_operator(config: Config, name: str, operator: bool) -> int:
    from server.accounts import Role, set_role

    try:
        changed = await _on_house(config, lambda pool: set_role(
            pool, name, Role.OPERATOR if operator else Role.PLAYER))
    except startup_errors() as exc:
        print(f"barajamos operator: {exc}", file=sys.stderr)
        return 1
    if not changed:
        print(f"barajamos operator: no account named {name!r}", file=sys.stderr)
        return 1
    print(f"{name}: {'operator' if operator else 'player'}")
    return 0
