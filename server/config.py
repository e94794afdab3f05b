"""Server configuration: environment variables, overridden by command-line flags.

Secrets that are not given are generated once from the OS CSPRNG and kept in the data folder
(`secrets.json`, mode 0600), so restarts keep the same signing key, cookie key and seed key.
See docs/OPERATIONS.md for every setting.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from server.db import embedded_folder_problem

SECRET_NAMES = ("cookie_key", "seed_key", "signing_key")


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names it."""


class PasswordCostLevel(StrEnum):
    """How hard new password hashes are (Argon2id limits, `server.accounts`)."""

    INTERACTIVE = "interactive"  # libsodium's interactive limits: for real accounts
    MINIMUM = "minimum"  # the lowest limits: only for benchmarks and load tests


@dataclass(frozen=True, slots=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = Path(".data")
    # None: start the embedded PostgreSQL in data_dir/pg
    database_url: str | None = None
    # 32-byte keys: cookie signing (HMAC), seed encryption at rest (AES-256-GCM), Ed25519 seed
    cookie_key: bytes = field(default=b"", repr=False)
    seed_key: bytes = field(default=b"", repr=False)
    signing_key: bytes = field(default=b"", repr=False)
    # Origins allowed to open WebSockets and post forms; empty: the server's own host only
    allowed_origins: tuple[str, ...] = ()
    # addresses (or CIDR ranges) of reverse proxies in front of the house: from one of them, the
    # client's address is read from X-Forwarded-For (`server.app.client_address`); from anyone
    # else it is ignored
    trusted_proxies: frozenset[IPAddress | IPNetwork] = frozenset()
    # addresses (or CIDR ranges) besides the machine's own (loopback) that may read /metrics: its
    # counters move with every table's moves, votes and signals (a poll next to a table would
    # tell hidden ones), so it is nobody else's (`server.app.metrics_allowed`)
    metrics_from: frozenset[IPAddress | IPNetwork] = frozenset()
    # who players ask about their data (an address, a page), said on /privacidade; empty: "the
    # house's operators"
    privacy_contact: str = ""
    # cookies marked Secure (set when served over HTTPS)
    secure_cookies: bool = False
    log_level: str = "INFO"
    password_cost: PasswordCostLevel = PasswordCostLevel.INTERACTIVE
    # accounts the site creates from one address within an hour (0: no limit)
    registrations_per_hour: int = 30
    # write batching (group commit) for table actions
    write_batch_max: int = 512
    # group commits in flight at once (each on a connection of its own)
    write_connections: int = 2
    # a commit still running after this many seconds has its connection cut (its batch is then
    # in doubt and its tables re-read what was written)
    write_timeout: float = 15.0
    # decision clocks in seconds (RULES.md, Clocks); tests shorten none of these: they use a
    # virtual clock instead
    clock_casual: float = 20.0
    clock_ranked: float = 10.0
    vote_clock: float = 10.0
    absent_delay: float = 2.0
    empty_seat_cancel: float = 60.0
    # an open or finished table nobody has had open (no socket) for this long closes, its seats
    # freed (0: never): a house that runs for weeks does not keep every table a player walked
    # away from in memory, in the lobby's lists and in the per-player table cap
    idle_table_close: float = 1800.0
    entropy_window: float = 3.0
    # a ranked or arena match's first deal waits this long at most for its players to open
    # the table (they come from the queue's page): then the clocks run as ever
    start_grace: float = 15.0

    @property
    def data_path(self) -> Path:
        return self.data_dir.resolve()


def key_from_hex(name: str, text: str) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError as exc:
        raise ConfigError(f"{name} must be 64 hex digits") from exc
    if len(value) != 32:
        raise ConfigError(f"{name} must be 64 hex digits (32 bytes), got {len(value)} bytes")
    return value


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def parse_addresses(name: str, text: str) -> frozenset[IPAddress | IPNetwork]:
    """Comma-separated IP addresses or CIDR ranges (`10.0.0.2, ::1, 172.16.0.0/12`: a container
    network's proxies change address); anything else names the setting. A range written with
    host bits (`172.17.0.1/16`) means its network."""
    addresses: set[IPAddress | IPNetwork] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            if "/" in part:
                addresses.add(ipaddress.ip_network(part, strict=False))
            else:
                addresses.add(ipaddress.ip_address(part))
        except ValueError:
            raise ConfigError(f"{name} must be comma-separated IP addresses or CIDR ranges"
                              f" (10.0.0.0/8), not {part!r}") from None
    return frozenset(addresses)


def parse_origins(name: str, text: str) -> tuple[str, ...]:
    """Comma-separated origins as a browser sends them: `scheme://host[:port]`, http or https,
    nothing after the host (no path, not even a trailing slash), no user name. Anything else
    could never equal a browser's Origin header, so it is refused rather than ignored."""
    origins: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        problem = _origin_problem(part)
        if problem:
            raise ConfigError(f"{name}: {part!r} is not an origin (scheme://host[:port], e.g."
                              f" https://play.example): {problem}")
        origins.append(part)
    return tuple(origins)


def _origin_problem(text: str) -> str | None:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return "its host or port is malformed"
    if parts.scheme not in ("http", "https") or "://" not in text:
        return "it must start with http:// or https://"
    if "@" in parts.netloc:
        return "an origin holds no user name or password"
    if not parts.hostname:
        return "it names no host"
    if parts.path or parts.query or parts.fragment or text.endswith(("?", "#")):
        return "an origin ends at the host or port: no path, no trailing slash"
    if port == 0:
        return "the port must be 1 to 65535"
    return None


def origin_key(text: str) -> tuple[str, str, int] | None:
    """An origin as (scheme, host, port), the default port filled in and the host lower-case,
    so `https://Play.example:443` and `https://play.example` compare equal; None when it is
    not an http(s) origin."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


# a port as asyncpg would read it (int()), in ASCII digits only
_PORT = re.compile(r"[0-9]{1,5}")
# how to write the characters that break a URL when a password (or user name) holds them
_ESCAPE = "percent-encode / # ? @ in a password as %2F %23 %3F %40"


def database_url_problem(url: str) -> str | None:
    """What makes `url` unusable as asyncpg's PostgreSQL URL, said without any part of it (a
    part could be the password: an unescaped `/` puts the password where the port goes); None
    when asyncpg can read it. The checks follow asyncpg's own parsing, which otherwise fails
    with a traceback quoting the text it could not read."""
    if not url:
        return "it is empty"
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgres"):
        return "it must start with postgresql:// (or postgres://)"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "its host part is malformed (a '[' or ']' out of place)"
    if "#" in url:
        return f"it holds a '#', which ends a URL ({_ESCAPE})"
    if parts.netloc.count("@") > 1 or "@" in parts.path:
        # asyncpg splits at the first '@', Python's URL tools at the last; an '@' after the
        # host's '/' means a '/' in the password
        return f"it holds an '@' that does not end the user name and password ({_ESCAPE})"
    hostspec = parts.netloc.rpartition("@")[2]
    if hostspec:
        for host in hostspec.split(","):
            problem = _host_problem(host, quoted=True)
            if problem:
                return problem
    try:
        query = (parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
                 if parts.query else [])
    except ValueError:
        return f"its query (after '?') is not name=value pairs joined by '&' ({_ESCAPE})"
    for key, value in query:
        if key == "port" and value and not all(_port_ok(port) for port in value.split(",")):
            return "the port in its query is not a number from 1 to 65535"
        if key == "host" and value:
            for host in value.split(","):
                problem = _host_problem(host, quoted=False)
                if problem:
                    return problem + " (in its query)"
        if key == "sslmode" and value not in _SSLMODES:
            # asyncpg reads it at the connection: the command said it "cannot reach" the house
            return f"its sslmode is not one of {', '.join(_SSLMODES)}"
    return None


_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def _port_ok(text: str) -> bool:
    return _PORT.fullmatch(text) is not None and 0 < int(text) < 65536


def _host_problem(host: str, *, quoted: bool) -> str | None:
    if not host:
        return "a host in its host list is empty"
    if host.startswith("/"):
        return None  # a Unix socket folder
    if host.startswith("["):
        match = re.fullmatch(r"\[([^\]]+)\](?::(.*))?", host)
        if match is None:
            return "an IPv6 host must be written [address] or [address]:port"
        port = match.group(2)
    else:
        _, colon, port = host.partition(":")
        if not colon:
            port = None
    if port:
        if quoted:
            port = unquote(port)
        if not _port_ok(port):
            return f"the port is not a number from 1 to 65535 ({_ESCAPE})"
    return None


def _open_to_others(path: Path) -> tuple[str, str]:
    """Who else may read `path` ("" when no one: its owner's only, or not POSIX), and its
    mode as `chmod` writes it."""
    if os.name != "posix":
        return "", ""
    mode = path.stat().st_mode
    who = " and ".join(name for name, bit in (("its group", stat.S_IRGRP),
                                              ("others", stat.S_IROTH)) if mode & bit)
    return who, f"{stat.S_IMODE(mode):04o}"


def load_secrets(data_dir: Path, given: Mapping[str, bytes]) -> dict[str, bytes]:
    """Return every secret: the given ones, else those kept in data_dir, else new ones (kept)."""
    path = data_dir / "secrets.json"
    kept: dict[str, str] = {}
    try:
        exists = path.exists()
    except OSError as exc:  # a folder this user may not read (3.11 raises on EACCES)
        raise ConfigError(f"cannot read the data folder {data_dir}: {exc.strerror or exc}"
                          ) from exc
    if exists:
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"{path} must hold a JSON object")
        kept = {str(k): str(v) for k, v in raw.items()}
        open_to, mode = _open_to_others(path)
        if open_to:
            # as ssh does with a private key: the house's keys readable by others are no
            # longer the house's alone (a restore's `cp` without -p, a umask of 022)
            raise ConfigError(f"{path} can be read by {open_to} (mode {mode}):"
                              f" its keys must be this user's only: chmod 600 {path}")
    result: dict[str, bytes] = {}
    changed = False
    for name in SECRET_NAMES:
        if given.get(name):
            result[name] = given[name]
        elif name in kept:
            result[name] = key_from_hex(f"{path}:{name}", kept[name])
        else:
            result[name] = secrets.token_bytes(32)
            kept[name] = result[name].hex()
            changed = True
    if changed:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(kept, fh, indent=2, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            raise ConfigError(f"cannot keep the secrets in {data_dir}: {exc}") from exc
    return result


def from_env(env: Mapping[str, str] | None = None, /, *, keep_secrets: bool = True,
             **overrides: object) -> Config:
    """Build a Config from BARAJAMOS_* / DATABASE_URL variables, then keyword overrides.

    `keep_secrets=False` (for `migrate` and `operator`, which sign and encrypt nothing): the
    secrets not given stay empty, and the data folder is neither read nor written for them."""
    env = os.environ if env is None else env
    # a variable set but empty (an unfilled template line) is a mistake, not "unset": an empty
    # DATABASE_URL would start a new embedded house, an empty host listen everywhere
    for name in ("DATABASE_URL", "BARAJAMOS_HOST", "BARAJAMOS_PORT", "BARAJAMOS_DATA_DIR",
                 "BARAJAMOS_SECURE_COOKIES"):
        if name in env and not env[name].strip():
            raise ConfigError(f"{name} is set but empty: give it a value, or unset it")
    values: dict[str, object] = {}
    if "BARAJAMOS_HOST" in env:
        values["host"] = env["BARAJAMOS_HOST"]
    if "BARAJAMOS_PORT" in env:
        try:
            values["port"] = int(env["BARAJAMOS_PORT"])
        except ValueError as exc:
            raise ConfigError("BARAJAMOS_PORT must be an integer") from exc
    for name, kind in (("write_batch_max", int), ("write_connections", int),
                       ("write_timeout", float)):
        var = f"BARAJAMOS_{name.upper()}"
        if var in env:
            try:
                number = kind(env[var])
            except ValueError:
                number = 0
            if not 0 < number < float("inf"):  # NaN fails this too
                raise ConfigError(f"{var} must be a positive number, not {env[var]!r}")
            values[name] = number
    if "BARAJAMOS_REGISTRATIONS_PER_HOUR" in env:
        text = env["BARAJAMOS_REGISTRATIONS_PER_HOUR"].strip()
        if not text.isascii() or not text.isdigit() or len(text) > 9:
            raise ConfigError("BARAJAMOS_REGISTRATIONS_PER_HOUR must be a whole number, 0 for"
                              f" no limit, not {text!r}")
        values["registrations_per_hour"] = int(text)
    if "BARAJAMOS_IDLE_TABLE_MINUTES" in env:
        text = env["BARAJAMOS_IDLE_TABLE_MINUTES"].strip()
        if not text.isascii() or not text.isdigit() or len(text) > 9:
            raise ConfigError("BARAJAMOS_IDLE_TABLE_MINUTES must be a whole number of minutes"
                              f" (at most 9 digits), 0 to keep idle tables open, not {text[:40]!r}")
        values["idle_table_close"] = 60.0 * int(text)
    if "BARAJAMOS_DATA_DIR" in env:
        values["data_dir"] = Path(env["BARAJAMOS_DATA_DIR"])
    if "DATABASE_URL" in env:
        values["database_url"] = env["DATABASE_URL"]
    if "BARAJAMOS_ALLOWED_ORIGINS" in env:
        values["allowed_origins"] = parse_origins("BARAJAMOS_ALLOWED_ORIGINS",
                                                  env["BARAJAMOS_ALLOWED_ORIGINS"])
    if "BARAJAMOS_TRUSTED_PROXIES" in env:
        values["trusted_proxies"] = parse_addresses("BARAJAMOS_TRUSTED_PROXIES",
                                                    env["BARAJAMOS_TRUSTED_PROXIES"])
    if "BARAJAMOS_PRIVACY_CONTACT" in env:
        values["privacy_contact"] = env["BARAJAMOS_PRIVACY_CONTACT"].strip()[:200]
    if "BARAJAMOS_METRICS_FROM" in env:
        values["metrics_from"] = parse_addresses("BARAJAMOS_METRICS_FROM",
                                                 env["BARAJAMOS_METRICS_FROM"])
    if "BARAJAMOS_SECURE_COOKIES" in env:
        flag = env["BARAJAMOS_SECURE_COOKIES"].strip().lower()
        if flag not in ("1", "true", "yes", "0", "false", "no"):
            # a security setting: a value not understood is refused, never taken for "off"
            raise ConfigError("BARAJAMOS_SECURE_COOKIES must be 1, true or yes (or 0, false,"
                              f" no), not {env['BARAJAMOS_SECURE_COOKIES'][:40]!r}")
        values["secure_cookies"] = flag in ("1", "true", "yes")
    if "BARAJAMOS_LOG_LEVEL" in env:
        values["log_level"] = env["BARAJAMOS_LOG_LEVEL"].upper()
        if values["log_level"] not in LOG_LEVELS:
            raise ConfigError(f"BARAJAMOS_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not"
                              f" {env['BARAJAMOS_LOG_LEVEL']!r}")
    if "BARAJAMOS_PASSWORD_COST" in env:
        try:
            values["password_cost"] = PasswordCostLevel(env["BARAJAMOS_PASSWORD_COST"])
        except ValueError:
            choices = ", ".join(level.value for level in PasswordCostLevel)
            raise ConfigError(f"BARAJAMOS_PASSWORD_COST must be one of {choices}, not "
                              f"{env['BARAJAMOS_PASSWORD_COST']!r}") from None
    given: dict[str, bytes] = {}
    for name in SECRET_NAMES:
        var = f"BARAJAMOS_{name.upper()}"
        if var in env:
            # an empty value is a mistake (a template's unfilled variable), never "not given":
            # that would sign or encrypt with a kept or a new key without a word
            if not env[var].strip():
                raise ConfigError(f"{var} is set but empty: give 64 hex digits, or unset it to"
                                  " keep a generated key in the data folder")
            given[name] = key_from_hex(var, env[var].strip())
    values.update({k: v for k, v in overrides.items() if v is not None})
    url = values.get("database_url")
    if isinstance(url, str):
        problem = database_url_problem(url)
        if problem:
            raise ConfigError(f"DATABASE_URL is not a valid PostgreSQL URL: {problem}")
    port = values.get("port", 8080)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(f"the port must be 1 to 65535, not {port}")
    for name in SECRET_NAMES:
        if isinstance(values.get(name), bytes):
            given[name] = values.pop(name)  # type: ignore[assignment]
    data_dir = values.get("data_dir", Path(".data"))
    assert isinstance(data_dir, Path)
    folder = data_dir.resolve()
    problem = None if "database_url" in values else embedded_folder_problem(folder)
    if problem is not None:  # said before anything is made in the folder
        raise ConfigError(f"{problem}: choose another --data-dir, or give DATABASE_URL")
    values.update(load_secrets(folder, given) if keep_secrets else given)
    return Config(**values)  # type: ignore[arg-type]
