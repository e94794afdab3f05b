"""Accounts: register, log in, log out, sessions, CSRF and the login rate limiter.

- Passwords are hashed with Argon2id (PyNaCl's libsodium `pwhash.argon2id`), off the event loop.
- A session is a random token in an HttpOnly, SameSite=Lax cookie (Secure over HTTPS); the
  database keeps only its SHA-256, so a leaked table hands out no live session.
- CSRF: every state-changing request carries a token (form field `csrf` or header
  `X-CSRF-Token`) equal to HMAC(cookie_key, the browser's CSRF cookie and, when it sends a
  session cookie, that session token's hash). A page on another site can neither read the
  cookies nor compute the token. The Origin header, when sent, must be ours. Binding the token to
  the session matters because a site on a sibling domain can set (toss) our CSRF cookie to a
  value whose token it fetched itself: without the session in the HMAC, that pair would pass as
  the victim's. Every login and logout sets a new CSRF cookie (`server.app.rotate_csrf`), so a
  cookie planted before the login is worth nothing after it.
- Login attempts are recorded; too many failures within `RATE_WINDOW` answer 429 with
  Retry-After, before the password is even checked: for one name from one address (5), for one
  name from anywhere (50: guessing spread over addresses), or from one address (30: one address
  trying many names). A stranger's wrong passwords from elsewhere lock the owner of a name out
  only at the second limit, which takes ten addresses to reach. An attempt is
  counted (as a failure until its password proves right) atomically with that check, so
  concurrent attempts cannot all slip under the limit.
- Those limits alone let anyone lock a chosen player out (fifty wrong guesses from ten
  addresses every 15 minutes, the right password refused too). So a browser a player has logged
  in from keeps a device cookie (OWASP's "device cookies", a year): the user id and a nonce,
  HMAC-signed together with a digest of the password hash they logged in with, so a password
  change revokes every such cookie. A login or password check for that player from it is held
  to its own limit (5 failures) and to the name's across all its devices (50), not to the
  name's, address's or pair's for strangers, which strangers can reach.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

import asyncpg
import nacl.exceptions
import nacl.pwhash
from aiohttp import web

from server.db import Conn

SESSION_COOKIE = "barajamos_session"
CSRF_COOKIE = "barajamos_csrf"
DEVICE_COOKIE = "barajamos_device"
DEVICE_LIFETIME = timedelta(days=365)
# Behind HTTPS (`Config.secure_cookies`) both cookies are named with the __Host- prefix: a
# browser then keeps such a cookie only if this very host set it, over HTTPS, for the whole site
# (Secure, Path=/, no Domain), so neither a sibling subdomain nor a plain-HTTP answer forged on
# the way can plant or overwrite a session or CSRF cookie (RFC 6265bis, 4.1.3.2)
HOST_PREFIX = "__Host-"
SESSION_LIFETIME = timedelta(days=30)
RATE_WINDOW = timedelta(minutes=15)
MAX_FAILURES_PER_PAIR = 5
MAX_FAILURES_PER_NAME = 50
MAX_FAILURES_PER_REMOTE = 30
MAX_FAILURES_PER_DEVICE = 5
# use with fullmatch: `$` would also match before a trailing newline ("ana\n")
NAME_RE = re.compile(r"[A-Za-z0-9_.-]{3,24}")
MIN_PASSWORD = 8
MAX_PASSWORD = 256
COMMON_PASSWORDS = frozenset({
    "password", "password1", "12345678", "123456789", "1234567890", "qwertyuiop", "qwerty123",
    "iloveyou", "11111111", "00000000", "abc12345", "senha123", "truco123", "trucotruco",
    "admin123", "letmein1", "welcome1", "password123", "qwertyui", "asdfghjk", "zxcvbnm1",
    "abcdefgh", "87654321",
})


class Role(StrEnum):
    PLAYER = "player"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class Device:
    """A device cookie as a browser sent it (`device_of`): trusted only for the player it names
    while their password is the one it was signed with (`trusted_for`)."""

    user_id: int
    nonce: str
    mac: str
    key: bytes = field(repr=False, compare=False)

    def trusted_for(self, user_id: int, password_hash: str) -> bool:
        return self.user_id == user_id and hmac.compare_digest(
            self.mac, _device_mac(self.key, user_id, self.nonce, password_hash))


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    role: Role

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR


class AccountError(ValueError):
    """A refused account request; `code` is stable, `message` is for people; `retry_after`:
    the seconds after which a refused attempt (429) may succeed (its `Retry-After`);
    `problems`: a refused registration's every problem (`registration_problems`), this one
    first."""

    def __init__(self, code: str, message: str, status: int = 400,
                 retry_after: int | None = None,
                 problems: Sequence[AccountError] = (), scope: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.problems = tuple(problems)
        # what a limit counted (`rate_limited`): "address", every name tried from the caller's
        # address (a lan house's players share one); "name" otherwise
        self.scope = scope

    def headers(self) -> dict[str, str] | None:
        return None if self.retry_after is None else {"Retry-After": str(self.retry_after)}


@dataclass(frozen=True, slots=True)
class PasswordCost:
    opslimit: int
    memlimit: int


# libsodium's interactive limits in production; tests and load benchmarks that create thousands
# of accounts use the minimum (still Argon2id, same code path)
INTERACTIVE = PasswordCost(nacl.pwhash.argon2id.OPSLIMIT_INTERACTIVE,
                           nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE)
MINIMUM = PasswordCost(nacl.pwhash.argon2id.OPSLIMIT_MIN, nacl.pwhash.argon2id.MEMLIMIT_MIN)


# the name an erased account takes, with its id (`erase`): no sign-up may take one
ERASED_PREFIX = "apagado-"


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise AccountError(
            "bad_name", "Name must be 3 to 24 letters, digits, '.', '_' or '-'."
        )
    if name.lower().startswith(ERASED_PREFIX):
        raise AccountError("reserved_name", f"Names starting with {ERASED_PREFIX!r} are the"
                           " house's own (erased accounts).")
    return name


def check_password(password: object, name: str | None) -> str:
    """`password` when it is strong enough for `name`'s account (None: a name not known yet,
    as on a sign-up whose name is refused; the password is then not checked against it)."""
    if not isinstance(password, str):
        raise AccountError("weak_password", "Password is required.")
    if len(password) < MIN_PASSWORD:
        raise AccountError("weak_password", f"Password needs at least {MIN_PASSWORD} characters.")
    if len(password) > MAX_PASSWORD:
        raise AccountError("weak_password", f"Password takes at most {MAX_PASSWORD} characters.")
    lowered = password.lower()
    if (
        lowered in COMMON_PASSWORDS
        or len(set(password)) < 4
        or (name is not None and name.lower() in lowered)
    ):
        raise AccountError(
            "weak_password",
            "Password is too easy to guess: avoid common passwords, repeated characters "
            "and your own name.",
        )
    return password


async def hash_password(password: str, cost: PasswordCost) -> str:
    def work() -> bytes:
        return nacl.pwhash.argon2id.str(
            password.encode(), opslimit=cost.opslimit, memlimit=cost.memlimit
        )

    return (await asyncio.get_running_loop().run_in_executor(None, work)).decode()


# the stand-in hash an unknown name's password is checked against, one per cost (`dummy_hash`)
_DUMMY_HASHES: dict[PasswordCost, str] = {}


async def dummy_hash(cost: PasswordCost) -> str:
    """A hash of a random password at `cost`, made once: a login with an unknown name verifies
    against it, so that it takes as long as a wrong password for a name that exists (the time
    would say which names do). The server makes it at start (`server.app.create_app`)."""
    digest = _DUMMY_HASHES.get(cost)
    if digest is None:
        digest = _DUMMY_HASHES.setdefault(cost, await hash_password(secrets.token_urlsafe(24),
                                                                    cost))
    return digest


async def verify_password(password_hash: str, password: str) -> bool:
    def work() -> bool:
        try:
            return bool(nacl.pwhash.verify(password_hash.encode(), password.encode()))
        except nacl.exceptions.InvalidkeyError:
            return False

    return await asyncio.get_running_loop().run_in_executor(None, work)


def token_hash(token: str) -> bytes:
    """How a session token is kept (SHA-256): a leaked table hands out no live session."""
    return hashlib.sha256(token.encode()).digest()


def _name_taken(name: str) -> AccountError:
    return AccountError("name_taken", f"The name {name!r} is taken.", 409)


async def registration_problems(pool: asyncpg.Pool, name: object,
                                password: object) -> list[AccountError]:
    """Everything wrong with a sign-up's name and password, all at once, so that a player fixes
    every field in one go: `bad_name`, `weak_password` (checked against the name when that is a
    good one), `name_taken` (a cheap look-up, before any hash is paid for). Empty: go on."""
    problems = []
    good_name: str | None = None
    try:
        good_name = check_name(name)
    except AccountError as exc:
        problems.append(exc)
    try:
        check_password(password, good_name)
    except AccountError as exc:
        problems.append(exc)
    if good_name is not None and await pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM users WHERE lower(name) = lower($1))", good_name):
        problems.append(_name_taken(good_name))
    return problems


async def register(
    pool: asyncpg.Pool, name: object, password: object, cost: PasswordCost,
    role: Role = Role.PLAYER, *, remote: str | None = None, per_hour: int = 0,
) -> User:
    """A new account. Through the site (`remote` given, `per_hour` > 0) at most `per_hour` are
    attempted from one address within an hour: each costs an Argon2id hash, and one address
    should not fill the house with accounts (429 `too_many_accounts`, before the hash). A
    refusal of the name or password (`registration_problems`: the first, carrying them all) is
    not an attempt: it costs no hash."""
    problems = await registration_problems(pool, name, password)
    if problems:
        first = problems[0]
        raise AccountError(first.code, first.message, first.status, problems=problems)
    name = check_name(name)
    password = check_password(password, name)
    if remote is not None and per_hour > 0:
        await _count_registration(pool, remote, per_hour)
    digest = await hash_password(password, cost)
    try:
        row = await pool.fetchrow(
            "INSERT INTO users (name, password_hash, role) VALUES ($1, $2, $3) "
            "RETURNING id, name, role",
            name, digest, role.value,
        )
    except asyncpg.UniqueViolationError as exc:
        # taken since the look-up above (two sign-ups for one name at once)
        raise _name_taken(name) from exc
    assert row is not None
    return User(row["id"], row["name"], Role(row["role"]))


# advisory lock classes (two-int keys): one name's, one address's login attempts, one
# address's registrations; distinct classes keep one kind of key from colliding with another
_LOCK_LOGIN_NAME = 0x4C4E  # "LN"
_LOCK_LOGIN_REMOTE = 0x4C52  # "LR"
_LOCK_REGISTER_REMOTE = 0x5252  # "RR"
REGISTRATION_WINDOW = timedelta(hours=1)


async def _count_registration(pool: asyncpg.Pool, remote: str, per_hour: int) -> None:
    """Record a registration attempt from `remote`, or refuse it when `per_hour` were made
    from there within the last hour (counted under the address's lock, as logins are)."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                           _LOCK_REGISTER_REMOTE, remote)
        made = await conn.fetchval(
            "SELECT count(*) FROM registration_attempts"
            " WHERE remote = $1 AND at > now() - $2::interval", remote, REGISTRATION_WINDOW)
        if made >= per_hour:
            raise AccountError("too_many_accounts",
                               "Too many sign-ups from this address; try again in an hour.", 429,
                               retry_after=int(REGISTRATION_WINDOW.total_seconds()))
        await conn.execute("INSERT INTO registration_attempts (remote) VALUES ($1)", remote)


# how long the rows the limits count are kept: a day of login attempts (the limits look 15 min
# back: a day leaves them to read after an incident), two of sign-ups (they look an hour back)
ATTEMPTS_KEPT = timedelta(days=1)
REGISTRATIONS_KEPT = timedelta(days=2)


async def prune(pool: asyncpg.Pool) -> dict[str, int]:
    """Delete what no limit and no session needs any more: old login and sign-up attempts and
    expired sessions (none of them was ever deleted: every login left a row for good). Returns
    how many rows of each went."""
    gone: dict[str, int] = {}
    for table, sql, arg in (
            ("login_attempts", "DELETE FROM login_attempts WHERE at < now() - $1::interval",
             ATTEMPTS_KEPT),
            ("registration_attempts",
             "DELETE FROM registration_attempts WHERE at < now() - $1::interval",
             REGISTRATIONS_KEPT),
            ("sessions", "DELETE FROM sessions WHERE expires_at < now() - $1::interval",
             timedelta(0))):
        status = await pool.execute(sql, arg)
        gone[table] = int(status.split()[-1])
    return gone


async def authenticate(pool: asyncpg.Pool, name: object, password: object, remote: str,
                       cost: PasswordCost, device: Device | None = None) -> User:
    """The user `name` when `password` is theirs, under the login limits. `cost` is the house's
    password cost: an unknown name is checked against a stand-in hash of that cost
    (`dummy_hash`), so it takes the time a wrong password of a real name takes."""
    user, _ = await _authenticate(pool, name, password, remote, cost, device)
    return user


async def _authenticate(pool: asyncpg.Pool, name: object, password: object, remote: str,
                        cost: PasswordCost, device: Device | None) -> tuple[User, str]:
    """`authenticate`, and the password hash `password` was verified against."""
    if not isinstance(name, str) or not isinstance(password, str) or not name or not password:
        raise AccountError("bad_credentials", "Name and password are required.", 401)
    # a name no account can have (its form, or a 60 KB one) is an unknown name; its attempts
    # are counted together, under "" (a name that long did not fit the attempts' index: a 500)
    name_lower = name.lower() if NAME_RE.fullmatch(name) else ""
    # Count the recent failures and record this attempt in one transaction, under the name's
    # and the address's locks (always taken in that order), and record it as failed BEFORE the
    # password check: concurrent attempts then each see the others, so a burst of wrong
    # passwords gets at most the limit checked, the rest 429. A success is marked afterwards.
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                           _LOCK_LOGIN_NAME, name_lower)
        await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                           _LOCK_LOGIN_REMOTE, remote)
        # a browser this name's owner logged in from: held to its own limit only
        trusted = None
        if device is not None and name_lower:
            owner = await conn.fetchrow(
                "SELECT id, password_hash FROM users WHERE lower(name) = $1", name_lower)
            if owner is not None and device.trusted_for(owner["id"], owner["password_hash"]):
                trusted = device.nonce
        failures = await conn.fetchrow(
            """SELECT
                 count(*) FILTER (WHERE name_lower = $1 AND remote = $2) AS by_pair,
                 count(*) FILTER (WHERE name_lower = $1) AS by_name,
                 count(*) FILTER (WHERE remote = $2) AS by_remote,
                 count(*) FILTER (WHERE device = $4) AS by_device,
                 count(*) FILTER (WHERE name_lower = $1 AND device IS NOT NULL) AS by_devices
               FROM login_attempts
               WHERE NOT succeeded AND at > now() - $3::interval
                 AND (name_lower = $1 OR remote = $2)""",
            name_lower, remote, RATE_WINDOW, trusted,
        )
        assert failures is not None
        if trusted is not None:
            # its own limit, and the name's over all its owner's devices: more cookies (one
            # per login) are not more guesses
            limited = (failures["by_device"] >= MAX_FAILURES_PER_DEVICE
                       or failures["by_devices"] >= MAX_FAILURES_PER_NAME)
        else:
            limited = (failures["by_pair"] >= MAX_FAILURES_PER_PAIR
                       or failures["by_name"] >= MAX_FAILURES_PER_NAME
                       or failures["by_remote"] >= MAX_FAILURES_PER_REMOTE)
        if limited:
            # the address's limit alone: everyone behind it (a lan house, a university's NAT)
            # is refused for the others' mistakes, and should hear that it is not their own
            by_address = trusted is None and failures["by_pair"] < MAX_FAILURES_PER_PAIR \
                and failures["by_name"] < MAX_FAILURES_PER_NAME
            minutes = int(RATE_WINDOW.total_seconds() // 60)
            raise AccountError(
                "rate_limited",
                f"Too many failed logins from this network address in the last {minutes}"
                " minutes (everyone who shares it counts); try again within"
                f" {minutes} minutes, or from a browser you logged in from before."
                if by_address else
                f"Too many failed logins on this name; try again within {minutes} minutes.",
                429,
                retry_after=int(RATE_WINDOW.total_seconds()),
                scope="address" if by_address else "name",
            )
        attempt = await conn.fetchval(
            "INSERT INTO login_attempts (name_lower, remote, succeeded, device)"
            " VALUES ($1, $2, false, $3) RETURNING id",
            name_lower, remote, trusted,
        )
    row = None if not name_lower else await pool.fetchrow(
        "SELECT id, name, role, password_hash FROM users WHERE lower(name) = $1", name_lower
    )
    if row is None:
        # the same Argon2id work as for a name that exists, whose answer does not matter
        await verify_password(await dummy_hash(cost), password)
        raise AccountError("bad_credentials", "Wrong name or password.", 401)
    if not await verify_password(row["password_hash"], password):
        raise AccountError("bad_credentials", "Wrong name or password.", 401)
    await pool.execute("UPDATE login_attempts SET succeeded = true WHERE id = $1", attempt)
    return User(row["id"], row["name"], Role(row["role"])), row["password_hash"]


async def change_password(
    pool: asyncpg.Pool, user: User, current: object, new: object, cost: PasswordCost,
    remote: str, session_token: str, device: Device | None = None,
) -> list[bytes]:
    """Replace `user`'s password once `current` proves it is theirs, and end every other
    session of theirs (a device someone else may hold); the session `session_token` stays.
    Returns the hashes of the sessions ended (`token_hash`).

    The current password is checked as a login is, under the same limits (a stolen session
    cannot be used to guess it): a wrong one is 403 `wrong_password`, too many 429
    `rate_limited`. Nothing changes on any refusal."""
    # the hash `current` was verified against: replaced only if it is still the one (two
    # changes at once, each checked against the old password, both answered 200, one was lost)
    checked = await check_current_password(pool, user, current, remote, cost, device)
    password = check_new_password(new, current, user.name)
    digest = await hash_password(password, cost)
    async with pool.acquire() as conn, conn.transaction():
        replaced = await conn.fetchval(
            "UPDATE users SET password_hash = $2 WHERE id = $1 AND password_hash = $3"
            " RETURNING id", user.id, digest, checked)
        if replaced is None:
            raise AccountError("wrong_password", "Your password was changed meanwhile: that is"
                               " no longer your current password.", 403)
        rows = await conn.fetch(
            "DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2 RETURNING token_hash",
            user.id, token_hash(session_token))
    return [bytes(row["token_hash"]) for row in rows]


async def check_current_password(pool: asyncpg.Pool, user: User, current: object, remote: str,
                                 cost: PasswordCost, device: Device | None = None) -> str:
    """Refuse, unless `current` is `user`'s password: checked as a login is, under the same
    limits (a stolen session cannot be used to guess it): 403 `wrong_password`, 429
    `rate_limited`. Returns the hash it was verified against."""
    if not isinstance(current, str) or not current:
        raise AccountError("wrong_password", "Give your current password.", 403)
    try:
        _, checked = await _authenticate(pool, user.name, current, remote, cost, device)
        return checked
    except AccountError as exc:
        if exc.code != "bad_credentials":
            raise
        raise AccountError("wrong_password", "That is not your current password.",
                           403) from None


def check_new_password(new: object, current: object, name: str) -> str:
    """`new` when it may replace `current` (`check_password`; 400 `same_password` when it is
    the one given as the current password)."""
    password = check_password(new, name)
    if password == current:
        raise AccountError("same_password", "The new password is the one you have now.")
    return password


# the browsers and systems a session's label may name (ua-parser's family names; a few said
# as people know them): ua-parser copies many families from the header itself, so anything
# else would let whoever logged in choose the words the owner reads ("Firefox no Windows,
# aberta hoje (esta, neste navegador)", a review), or HTML
KNOWN_BROWSERS: Final = {name: name for name in (
    "Chrome", "Chrome Mobile", "Chrome Mobile iOS", "Chrome Mobile WebView", "Chromium",
    "HeadlessChrome", "Firefox", "Firefox Mobile", "Firefox iOS", "Safari", "Mobile Safari",
    "Edge", "Edge Mobile", "Opera", "Opera Mobile", "Opera Mini", "Samsung Internet",
    "Yandex Browser", "UC Browser", "Vivaldi", "Brave", "DuckDuckGo Mobile", "MiuiBrowser",
    "Silk", "Facebook", "Instagram")} | {"Mobile Safari UI/WKWebView": "Safari (app)"}
KNOWN_SYSTEMS: Final = {name: name for name in (
    "Windows", "iOS", "iPadOS", "Android", "Linux", "Ubuntu", "Fedora", "Debian", "Chrome OS",
    "FreeBSD", "HarmonyOS")} | {"Mac OS X": "macOS"}


def agent_label(user_agent: str | None) -> str | None:
    """A browser's User-Agent as a person reads it, in pt-BR ("Firefox no Windows", "Chrome
    Mobile no Android"), by ua-parser's published rules, naming only `KNOWN_BROWSERS` and
    `KNOWN_SYSTEMS`; None when it names neither. Slow on a first call (the rules are compiled)
    and a few milliseconds after: call it off the loop."""
    if not user_agent:
        return None
    from ua_parser import parse

    found = parse(user_agent[:512])
    browser = None if found.user_agent is None else KNOWN_BROWSERS.get(found.user_agent.family)
    system = None if found.os is None else KNOWN_SYSTEMS.get(found.os.family)
    label = f"{browser} no {system}" if browser and system else browser or system
    return None if label is None else label[:80]


async def open_session(pool: asyncpg.Pool, user: User, user_agent: str | None = None) -> str:
    """A new session of `user`; `user_agent`: the header it was opened with, kept only as its
    `agent_label` (worked out off the event loop)."""
    agent = await asyncio.to_thread(agent_label, user_agent) if user_agent else None
    token = secrets.token_urlsafe(32)
    await pool.execute(
        "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at, agent) "
        "VALUES ($1, $2, $3, now() + $4::interval, $5)",
        token_hash(token), user.id, secrets.token_urlsafe(16), SESSION_LIFETIME, agent,
    )
    return token


@dataclass(frozen=True, slots=True)
class OpenSession:
    """A session of an account, as its owner sees it on the account page."""

    created_at: datetime
    expires_at: datetime
    agent: str | None  # `agent_label` of its login
    this_one: bool  # the session asking


async def open_sessions(pool: asyncpg.Pool, user_id: int, token: str) -> list[OpenSession]:
    """`user_id`'s sessions not expired, oldest first; `token`'s marked `this_one`."""
    mine = token_hash(token)
    return [OpenSession(row["created_at"], row["expires_at"], row["agent"],
                        bytes(row["token_hash"]) == mine)
            for row in await pool.fetch(
                "SELECT token_hash, created_at, expires_at, agent FROM sessions"
                " WHERE user_id = $1 AND expires_at > now() ORDER BY created_at", user_id)]


async def end_other_sessions(pool: asyncpg.Pool, user_id: int, token: str) -> list[bytes]:
    """End every session of `user_id` but `token`'s; the hashes of those ended."""
    rows = await pool.fetch(
        "DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2 RETURNING token_hash",
        user_id, token_hash(token))
    return [bytes(row["token_hash"]) for row in rows]


async def close_session(pool: asyncpg.Pool, token: str) -> None:
    await pool.execute("DELETE FROM sessions WHERE token_hash = $1", token_hash(token))


async def user_for_token(pool: asyncpg.Pool, token: str) -> User | None:
    row = await pool.fetchrow(
        "SELECT u.id, u.name, u.role FROM sessions s JOIN users u ON u.id = s.user_id "
        "WHERE s.token_hash = $1 AND s.expires_at > now()",
        token_hash(token),
    )
    return None if row is None else User(row["id"], row["name"], Role(row["role"]))


async def set_role(pool: asyncpg.Pool, name: str, role: Role) -> bool:
    """Give the account named `name` `role`. An account made an operator loses its unused
    password links (an operator made them for a player's account: server/password_links.py)."""
    async with pool.acquire() as conn, conn.transaction():
        user_id = await conn.fetchval(
            "UPDATE users SET role = $2 WHERE lower(name) = lower($1) RETURNING id",
            name, role.value)
        if user_id is not None and role is Role.OPERATOR:
            await _replace_links(conn, user_id)
    return user_id is not None


def csrf_token_for(cookie_key: bytes, csrf_cookie: str, session_token: str | None) -> str:
    """The CSRF token for a browser's CSRF cookie and its session cookie (None or "": none, as
    on the log-in and sign-up forms). With a session, the HMAC also covers the session token's
    hash: a token fetched for a cookie value of someone's choosing, outside the victim's session,
    is refused once that cookie is planted in the victim's browser. (The session's part is
    fixed-length and each kind has its own prefix: no two inputs run together.)"""
    message = b"csrf:" + csrf_cookie.encode()
    if session_token:
        message = b"csrf+session:" + token_hash(session_token) + csrf_cookie.encode()
    return hmac.new(cookie_key, message, hashlib.sha256).hexdigest()


def csrf_ok(cookie_key: bytes, csrf_cookie: str | None, session_token: str | None,
            token: Any) -> bool:
    # compare_digest takes only ASCII strings (TypeError otherwise): a non-ASCII token is
    # simply a wrong one
    if not csrf_cookie or not isinstance(token, str) or not token.isascii():
        return False
    return hmac.compare_digest(csrf_token_for(cookie_key, csrf_cookie, session_token), token)


def new_csrf_cookie() -> str:
    return secrets.token_urlsafe(24)


def _device_mac(cookie_key: bytes, user_id: int, nonce: str, password_hash: str) -> str:
    # the password hash's digest: a new password revokes every device cookie of the old one
    message = (b"device:%d:" % user_id + nonce.encode() + b":"
               + hashlib.sha256(password_hash.encode()).digest())
    return hmac.new(cookie_key, message, hashlib.sha256).hexdigest()[:32]


_DEVICE_COOKIE = re.compile(r"([0-9]{1,18})\.([A-Za-z0-9_-]{1,32})\.([0-9a-f]{32})")


def new_device_cookie(cookie_key: bytes, user_id: int, password_hash: str) -> str:
    """A device cookie's value for a browser `user_id` just logged in from, with the password
    of `password_hash` (`Device`)."""
    nonce = secrets.token_urlsafe(12)
    return f"{user_id}.{nonce}.{_device_mac(cookie_key, user_id, nonce, password_hash)}"


def device_of(cookie_key: bytes, value: str | None) -> Device | None:
    """The device cookie `value` as sent, to check with the key it was signed with (None: not
    one of this house's form, ignored)."""
    found = _DEVICE_COOKIE.fullmatch(value or "")
    if found is None:
        return None
    return Device(int(found.group(1)), found.group(2), found.group(3), cookie_key)


def cookie_name(name: str, *, secure: bool) -> str:
    """The name a cookie goes by: `name`, or behind HTTPS `__Host-name` (`HOST_PREFIX`)."""
    return HOST_PREFIX + name if secure else name


def set_cookie(response: web.StreamResponse, name: str, value: str, *, secure: bool,
               max_age: int | None = None) -> None:
    response.set_cookie(
        cookie_name(name, secure=secure), value, httponly=True, samesite="Lax", secure=secure,
        path="/", max_age=max_age,
    )


def del_cookie(response: web.StreamResponse, name: str, *, secure: bool) -> None:
    """Expire a cookie `set_cookie` set (a browser ignores a __Host- cookie, its expiry too,
    without the Secure attribute)."""
    response.del_cookie(cookie_name(name, secure=secure), path="/", secure=secure,
                        httponly=True, samesite="Lax")


async def erase(pool: asyncpg.Pool, name: object, cost: PasswordCost) -> tuple[str, int]:
    """`erase_account` by name (the command line); the new name and how many sessions ended."""
    erased, ended = await erase_account(pool, name, cost)
    return erased, len(ended)


async def erase_account(pool: asyncpg.Pool, name: object,
                        cost: PasswordCost) -> tuple[str, list[bytes]]:
    """Anonymize the account named `name` (a player's right to be forgotten, LGPD art. 18): its
    name becomes `apagado-<id>` (its old name free for anyone), its password one nobody knows,
    every session and unused password link of it ends, and the login attempts on its old name
    go. What was played stays, under the new
    name (matches, chips, ratings, abandonment records: the house's and other players' history;
    the signed hand records never named anyone). Returns the new name and the hashes of the
    sessions ended (`token_hash`: their sockets close as at a logout, `server.app`).

    Refused, changing nothing: 404 `no_such_account`; 409 `account_busy` while the account
    holds a seat at a table not closed (or owns one), a ranked ticket or invitation, or a place
    in an arena not closed (its name is in the running house's memory there: leave first)."""
    if not isinstance(name, str) or not name.strip():
        raise AccountError("no_such_account", "Give the account's name.", 404)
    digest = await hash_password(secrets.token_urlsafe(32), cost)
    async with pool.acquire() as conn, conn.transaction():
        user = await conn.fetchrow(
            "SELECT id, name FROM users WHERE lower(name) = lower($1) FOR UPDATE", name.strip())
        if user is None:
            raise AccountError("no_such_account", f"No account is named {name.strip()!r}.", 404)
        busy = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM live_seats s JOIN live_tables t ON t.id = s.table_id"
            "   WHERE s.user_id = $1 AND t.status <> 'closed')"
            " OR EXISTS (SELECT 1 FROM live_tables WHERE owner_id = $1 AND status <> 'closed')"
            " OR EXISTS (SELECT 1 FROM ranked_queue_tickets WHERE $1 IN (user_id, partner_id))"
            " OR EXISTS (SELECT 1 FROM ranked_invitations WHERE $1 IN (inviter_id, partner_id))"
            " OR EXISTS (SELECT 1 FROM ranked_arena_entries e JOIN ranked_arenas a"
            "   ON a.id = e.arena_id WHERE e.user_id = $1 AND e.active AND a.status = 'open')",
            user["id"])
        if busy:
            raise AccountError("account_busy", f"{user['name']} holds a seat at a table (or owns"
                               " one not closed), a ranked ticket or invitation, or an arena"
                               " place: leave it first (or wait for the table to close).", 409)
        erased = f"{ERASED_PREFIX}{user['id']}"
        await conn.execute("UPDATE users SET name = $2, password_hash = $3, role = 'player'"
                           " WHERE id = $1", user["id"], erased, digest)
        ended = await conn.fetch("DELETE FROM sessions WHERE user_id = $1 RETURNING token_hash",
                                 user["id"])
        # the login attempts on the old name (its owner's addresses): kept by name for the
        # login limits, they would have gone to whoever takes the name next (its data download
        # lists the day's logins on its name)
        await conn.execute("DELETE FROM login_attempts WHERE name_lower = lower($1)",
                           user["name"])
        await _replace_links(conn, user["id"])
    return erased, [bytes(row["token_hash"]) for row in ended]


async def _replace_links(conn: Conn, user_id: int) -> None:
    """The account's unused password links (server/password_links.py) are worth nothing now."""
    await conn.execute("UPDATE password_links SET replaced_at = now() WHERE user_id = $1"
                       " AND used_at IS NULL AND replaced_at IS NULL", user_id)
