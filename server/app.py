"""The aiohttp application factory: resources, middlewares, and the account routes.

One factory builds the whole house; tests drive this same factory through `aiohttp_client`.
Resources live in `app.cleanup_ctx` (the database: the given URL, or the embedded PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlsplit

import asyncpg
from aiohttp import WSCloseCode, hdrs, web
from aiohttp.helpers import parse_mimetype
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_urldispatcher import MatchInfoError

from server import accounts
from server.accounts import AccountError, PasswordCost, User
from server.clock import Clock, SystemClock
from server.config import Config, IPAddress, IPNetwork, origin_key
from server.db import DATABASE_UNREACHABLE, EmbeddedPostgres, create_pool, migrate
from server.metrics import Metrics

log = logging.getLogger("barajamos.http")

CONFIG = web.AppKey("config", Config)
POOL = web.AppKey("pool", asyncpg.Pool)
METRICS = web.AppKey("metrics", Metrics)
CLOCK = web.AppKey("clock", Clock)
PASSWORD_COST = web.AppKey("password_cost", PasswordCost)
# what the database was at start: "url" (DATABASE_URL) or "embedded"
DATABASE_MODE = web.AppKey("database_mode", str)
# the database's address (given, or the embedded server's), for connections outside the pool
DSN = web.AppKey("dsn", str)
STARTED_AT = web.AppKey("started_at", float)
# the sockets each session opened (by session cookie): a logout closes them with it
# paths that hold a secret after their prefix (a password link's token, good for a day): a log
# line names the prefix and a placeholder instead (a log is read by more people than players)
SECRET_PREFIXES: Final = ("/account/reset/",)
# each signed-in player's latest address (`client_group`), kept from their every request (the
# pages poll): ranked and arena pairing never seat players from one address at one table
# (server/ranked/service.py). Not kept for this machine's own (loopback): a trial house, or
# the tests, whose players all come from it. Memory only: after a restart it fills again with
# the players' next requests (their pages ask every few seconds)
LAST_ADDRESS = web.AppKey("last_address", dict[int, str])
# when each of those was last seen (the clock's seconds): forgotten after an hour without a
# request (`forget_addresses`, in the hourly pruning) and at a logout
LAST_ADDRESS_AT = web.AppKey("last_address_at", dict[int, float])
ADDRESS_KEPT = 3600.0


def forget_addresses(app: web.Application, now: float) -> int:
    """Forget the addresses of players not seen for `ADDRESS_KEPT` seconds; how many went."""
    seen = app[LAST_ADDRESS_AT]
    gone = [user for user, at in seen.items() if now - at > ADDRESS_KEPT]
    for user in gone:
        forget_address(app, user)
    return len(gone)
SESSION_SOCKETS = web.AppKey("session_sockets", dict[str, set[web.WebSocketResponse]])
HEALTH_TIMEOUT = 2.0  # seconds `/health` waits for the database before answering 503
# a probe running this long is on a connection that will never answer: it is cut
HEALTH_STUCK = 30.0


class _HealthProbe:
    """`/health`'s `SELECT 1`, on a connection of its own it can cut (`cut`): a query sent on
    a connection whose server went silent (a frozen host, a half-open socket after a failover)
    waits for good, since asyncpg sets no keepalive; cancelling it waits with it."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.started = time.monotonic()
        self._conn: Any = None
        self.task: asyncio.Future[object] = asyncio.ensure_future(self._run(pool))
        # its failure is read by `health` or, once nobody waits for it, dropped without a warning
        self.task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _run(self, pool: asyncpg.Pool) -> object:
        async with pool.acquire() as conn:
            self._conn = conn
            return await conn.fetchval("SELECT 1")

    def cut(self) -> None:
        """End the probe now: its connection is closed without a word to the server."""
        if self._conn is not None and not self.task.done():
            self._conn.terminate()


# the probe of `/health` (at most one runs at a time)
_HEALTH_PROBE = web.AppKey("health_probe", list[_HealthProbe])

_USER = web.RequestKey("user", User)
_CSRF_COOKIE = web.RequestKey("csrf_cookie", str)
# the session cookie the CSRF token is bound to ("" without one): the request's, or the new one
# after a login (`rotate_csrf`)
_CSRF_SESSION = web.RequestKey("csrf_session", str)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_BODY = 64 * 1024
# a whole number written in ASCII digits, short enough for a PostgreSQL bigint: str.isdigit()
# also takes "²" (which int() refuses) and int() refuses more than 4300 digits
_ASCII_UINT = re.compile(r"[0-9]{1,18}")
# PostgreSQL text cannot hold U+0000 (asyncpg: CharacterNotInRepertoireError), and no UTF-8 can
# hold a lone UTF-16 surrogate (JSON's "\ud800" parses to one; encoding it fails): either,
# anywhere in a request's text, is refused at the door, before any view or query sees it
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
BAD_CHARACTERS = "bad_characters"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    body = {"error": code, "message": message, **extra}
    return web.json_response(body, status=status)


class ApiError(web.HTTPException):
    """Raised by views; rendered as {"error": code, "message": ..., **extra} with its status."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None):
        self.status_code = status
        self.error_code = code
        self.message = message
        super().__init__(
            text=json.dumps({"error": code, "message": message, **(extra or {})}),
            content_type="application/json",
            headers=headers,
        )


def ascii_uint(text: object) -> int | None:
    """`text` as a non-negative integer when it is 1 to 18 ASCII digits, else None."""
    if isinstance(text, str) and _ASCII_UINT.fullmatch(text):
        return int(text)
    return None


def current_user(request: web.Request) -> User | None:
    return request.get(_USER)


def request_cookie(request: web.Request, name: str) -> str | None:
    """The value of our cookie `name` (`accounts.SESSION_COOKIE`, `accounts.CSRF_COOKIE`) under
    the name this house gives it (`accounts.cookie_name`): behind HTTPS only the __Host- one.
    Ours are ASCII; any other value (aiohttp decodes a header's stray bytes to lone surrogates,
    which cannot be hashed) is no cookie of ours: ignored, so a fresh one replaces it."""
    value = request.cookies.get(
        accounts.cookie_name(name, secure=request.app[CONFIG].secure_cookies))
    return value if value is not None and value.isascii() else None


def request_device(request: web.Request) -> accounts.Device | None:
    """The device this browser's device cookie names, when this house signed it."""
    return accounts.device_of(request.app[CONFIG].cookie_key,
                              request_cookie(request, accounts.DEVICE_COOKIE))


async def keep_device(request: web.Request, response: web.StreamResponse, user: User) -> None:
    """After a login or sign-up: this browser is one `user` logged in from (a device cookie,
    new unless it already names them with their password now), so strangers' wrong guesses
    never lock them out here."""
    password_hash = await request.app[POOL].fetchval(
        "SELECT password_hash FROM users WHERE id = $1", user.id)
    if not isinstance(password_hash, str):
        return  # the account went meanwhile
    device = request_device(request)
    if device is not None and device.trusted_for(user.id, password_hash):
        return
    config = request.app[CONFIG]
    accounts.set_cookie(response, accounts.DEVICE_COOKIE,
                        accounts.new_device_cookie(config.cookie_key, user.id, password_hash),
                        secure=config.secure_cookies,
                        max_age=int(accounts.DEVICE_LIFETIME.total_seconds()))


def track_socket(request: web.Request, ws: web.WebSocketResponse) -> Callable[[], None]:
    """Keep `ws` with the session that opened it until the returned function forgets it: a
    logout ends the session's sockets too (`end_session`)."""
    token = request_cookie(request, accounts.SESSION_COOKIE) or ""
    sockets = request.app[SESSION_SOCKETS]
    sockets.setdefault(token, set()).add(ws)

    def forget() -> None:
        mine = sockets.get(token)
        if mine is not None:
            mine.discard(ws)
            if not mine:
                del sockets[token]

    return forget


def forget_address(app: web.Application, user_id: int) -> None:
    """The user's last address is not kept for ranked pairing any more (signed out, erased)."""
    app[LAST_ADDRESS].pop(user_id, None)
    app[LAST_ADDRESS_AT].pop(user_id, None)


async def end_session(request: web.Request) -> None:
    """Log out: the session goes, and the sockets it opened are closed (a table open in another
    tab stops speaking for the user at once; its reconnect is refused and says why)."""
    token = request_cookie(request, accounts.SESSION_COOKIE)
    if not token:
        return
    await accounts.close_session(request.app[POOL], token)
    user = current_user(request)
    if user is not None:  # signed out: its address is not kept for pairing any more
        forget_address(request.app, user.id)
    for ws in list(request.app[SESSION_SOCKETS].pop(token, ())):
        await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"signed out")


async def change_password(request: web.Request, current: object, new: object) -> int:
    """The signed-in user's new password (`accounts.change_password`): every other session of
    theirs ends, and the sockets those sessions opened close as at a logout; this session and
    its sockets go on. Returns how many other sessions ended."""
    user = require_user(request)
    token = request_cookie(request, accounts.SESSION_COOKIE) or ""
    ended = set(await accounts.change_password(
        request.app[POOL], user, current, new, request.app[PASSWORD_COST],
        client_group(request), token, request_device(request)))
    await close_sessions_sockets(request.app, ended, keep=token)
    log.info("password changed", extra={"user": user.name, "ended_sessions": len(ended)})
    return len(ended)


async def end_other_sessions(request: web.Request) -> int:
    """End every other session of the signed-in user (a browser left signed in elsewhere),
    their sockets closed as at a logout; this session goes on. Returns how many ended."""
    user = require_user(request)
    token = request_cookie(request, accounts.SESSION_COOKIE) or ""
    ended = set(await accounts.end_other_sessions(request.app[POOL], user.id, token))
    await close_sessions_sockets(request.app, ended, keep=token)
    log.info("other sessions ended", extra={"user": user.name, "ended_sessions": len(ended)})
    return len(ended)


async def erase_own_account(request: web.Request, password: object) -> str:
    """The signed-in player erases their own account (`accounts.erase_account`), once their
    password proves it is them (checked as a login is, under its limits): every session of it
    ends, this one too, their sockets closed as at a logout, and its address is forgotten.
    Returns the account's new name. AccountError on a refusal (nothing changed)."""
    user = require_user(request)
    await accounts.check_current_password(request.app[POOL], user, password,
                                          client_group(request), request.app[PASSWORD_COST],
                                          request_device(request))
    erased, ended = await accounts.erase_account(request.app[POOL], user.name,
                                                 request.app[PASSWORD_COST])
    await close_sessions_sockets(request.app, set(ended))
    forget_address(request.app, user.id)
    log.info("account erased", extra={"user": erased, "by": "its owner",
                                      "ended_sessions": len(ended)})
    return erased


async def close_sessions_sockets(app: web.Application, ended: Collection[bytes],
                                 keep: str | None = None) -> None:
    """Close, as at a logout, the sockets opened by the sessions whose `token_hash` is in
    `ended` (sessions just deleted), but those of the session `keep`."""
    sessions = app[SESSION_SOCKETS]
    for other in [t for t in sessions if t != keep and accounts.token_hash(t) in ended]:
        for ws in list(sessions.pop(other, ())):
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"signed out")


def sign_out_request(request: web.Request) -> None:
    """This request's session was ended while it was answered (a password set by a link): the
    page is rendered signed out, with a CSRF token of no session (the caller deletes the
    session cookie on its response)."""
    request.pop(_USER, None)
    rotate_csrf(request, session=None)


def require_user(request: web.Request) -> User:
    user = current_user(request)
    if user is None:
        raise ApiError(401, "login_required", "Log in first.")
    return user


def require_operator(request: web.Request) -> User:
    user = require_user(request)
    if not user.is_operator:
        raise ApiError(403, "forbidden", "Operators only.")
    return user


def csrf_token(request: web.Request) -> str:
    """The CSRF token of this request's CSRF cookie and session cookie (`accounts.csrf_token_for`):
    a signed-in page's token is good only with that session."""
    return accounts.csrf_token_for(request.app[CONFIG].cookie_key, request[_CSRF_COOKIE],
                                   request[_CSRF_SESSION])


def rotate_csrf(request: web.Request, *, session: str | None) -> str:
    """A new CSRF cookie at every login and logout (the session middleware sets it on the
    response), bound to `session`, the session token the response sets (None at a logout);
    returns its token, which `csrf_token` gives from now on in this request. A CSRF cookie
    someone planted before the login (a site on a sibling domain can set one) is then worth
    nothing, and the token of the page before it no longer works."""
    request[_CSRF_COOKIE] = accounts.new_csrf_cookie()
    request[_CSRF_SESSION] = session or ""
    return csrf_token(request)


def time_filter(value: object, what: str, *, end: bool = False) -> datetime | None:
    """A filter bound: an ISO date in any form (a whole day: the end bound is the next midnight)
    or time (without a zone: UTC). Anything else, or a moment outside what PostgreSQL and Python
    both hold once in UTC (`0001-01-01T00:00+14:00`), is a 400 `bad_filter`; `9999-12-31` as an
    end takes in that whole day (up to `datetime.max`)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ApiError(400, "bad_filter", f"{what} must be an ISO 8601 date or time.")
    try:
        try:
            # any date form Python reads (2026-12-06, 20261206, 2026-W49-7): a whole day
            day = date.fromisoformat(value)
        except ValueError:
            day = None
        if day is not None:
            if end and day == date.max:
                # the whole last day: its next midnight (year 10000) is past what Python holds
                return datetime.max.replace(tzinfo=UTC)
            return datetime.combine(day + timedelta(days=1 if end else 0), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ApiError(400, "bad_filter",
                       f"{what} must be an ISO 8601 date or time from year 1 to 9999.") from None


def client_address(request: web.Request) -> str:
    """The client's address: the connection's peer, or, when that peer is one of the configured
    reverse proxies (`BARAJAMOS_TRUSTED_PROXIES`: addresses or CIDR ranges), the last address in
    X-Forwarded-For that is not one of them (the proxies append: entries further left are the
    client's own say, which anyone can forge). A header from anyone else is ignored."""
    peer = request.remote or "unknown"
    trusted = request.app[CONFIG].trusted_proxies
    if not trusted or not _is_one_of(peer, trusted):
        return peer
    hops = [h.strip() for header in request.headers.getall("X-Forwarded-For", ())
            for h in header.split(",")]
    for hop in reversed(hops):
        if not _is_one_of(hop, trusted):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # not an address: the proxies' chain is broken, keep the proxy's
    return peer


def address_group(address: str) -> str:
    """What the house's limits count an address under: an IPv4 address itself (one seen on a
    dual-stack socket, `::ffff:192.0.2.7`, as its IPv4 address), an IPv6 address its /64
    (`2001:db8:1:2::/64`): one subscriber or host is given a whole /64 and may send from any of
    its addresses, so counting them one by one would let it step past every limit. Anything
    else (a Unix socket's peer) as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_group(request: web.Request) -> str:
    """The client's address as the login, registration and password limits count it
    (`address_group` of `client_address`)."""
    return address_group(client_address(request))


def _is_one_of(address: str, trusted: frozenset[IPAddress | IPNetwork]) -> bool:
    """Is `address` one of the trusted addresses, or in one of the trusted ranges? (An IPv4
    peer seen on a dual-stack socket, `::ffff:10.0.0.2`, counts as its IPv4 address.)"""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        candidates: tuple[IPAddress, ...] = (ip, ip.ipv4_mapped)
    else:
        candidates = (ip,)
    for entry in trusted:
        for candidate in candidates:
            if isinstance(entry, ipaddress.IPv4Network | ipaddress.IPv6Network):
                if candidate.version == entry.version and candidate in entry:
                    return True
            elif candidate == entry:
                return True
    return False


def origin_allowed(request: web.Request) -> bool:
    """True when the Origin header is absent or names this server (the Host it was sent to) or a
    configured origin (`BARAJAMOS_ALLOWED_ORIGINS`: behind a reverse proxy that does not pass
    the browser's Host on, the house's public origin). Origins compare as scheme, host and port
    (the host's case and a default port aside)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    key = origin_key(origin)
    if key is None:
        return False  # "null" (a sandboxed frame, a file), or not an http(s) origin
    allowed = request.app[CONFIG].allowed_origins
    if any(origin_key(entry) == key for entry in allowed):
        return True
    parts = urlsplit(origin)
    return parts.netloc.lower() == request.host.lower()


def bad_text(text: str) -> bool:
    """True when the text holds a NUL or a lone surrogate, which no text here may hold."""
    return _BAD_TEXT.search(text) is not None


def _has_bad_text(value: object) -> bool:
    """True when a string anywhere in `value` (a parsed JSON value: keys too) is `bad_text`."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if bad_text(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _refuse_bad_text(where: str) -> ApiError:
    return ApiError(400, BAD_CHARACTERS,
                    f"The {where} holds a NUL character (U+0000) or a lone surrogate"
                    " (U+D800-U+DFFF), which no text here may hold.")


async def read_body(request: web.Request,
                    fields: Collection[str] | None = None) -> dict[str, Any]:
    """The request's fields from a JSON object or a form; a clear 400 on anything else (a NUL
    character or a lone surrogate in any text of it too: 400 `bad_characters`, nothing done).
    `fields`: the fields a JSON body may hold; any other is a 400 `unknown_field` (a misspelt
    optional field would otherwise pass for an absent one). A form's other fields (its CSRF
    token, its buttons) are not checked: our own pages build the forms."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "too_large", f"Request body over {MAX_BODY} bytes.")
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except (ValueError, LookupError, RecursionError) as exc:
            # LookupError: an unknown charset; RecursionError: nesting too deep for json
            raise ApiError(400, "bad_json", "Request body is not valid JSON.") from exc
        if not isinstance(body, dict):
            raise ApiError(400, "bad_json", "Request body must be a JSON object.")
        if _has_bad_text(body):
            raise _refuse_bad_text("request body")
        if fields is not None and not set(body) <= set(fields):
            unknown = sorted(set(body) - set(fields))[0]
            unknown = unknown if len(unknown) <= 40 else unknown[:40] + "…"
            raise ApiError(400, "unknown_field", f"Unknown field {unknown!r} (this request's"
                           f" fields: {', '.join(sorted(fields))}).")
        return body
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await read_form(request)
        return {k: v for k, v in form.items() if isinstance(v, str)}
    if not request.can_read_body:
        return {}
    raise ApiError(415, "unsupported_media_type", "Send JSON or a form.")


# what aiohttp's form parsing raises for a body it cannot read: ValueError (a broken multipart
# body: no boundary, no parts, bytes that are not the charset's, bad base64), LookupError (an
# unknown charset), HttpProcessingError (a part's malformed or too many header lines),
# RuntimeError (a part's unknown Content-Transfer-Encoding)
MALFORMED_FORM: Final = (ValueError, LookupError, HttpProcessingError, RuntimeError)


async def read_form(request: web.Request) -> Mapping[str, object]:
    """The parsed form (`request.post()`); a malformed body or charset is a 400 `bad_form`,
    a NUL character or a lone surrogate in a field's name or text a 400 `bad_characters`."""
    try:
        form = await request.post()
    except MALFORMED_FORM as exc:
        raise ApiError(400, "bad_form", "Request body is not a valid form.") from exc
    if any(bad_text(key) or (isinstance(value, str) and bad_text(value))
           for key, value in form.items()):
        raise _refuse_bad_text("form")
    return form


def _error_page(request: web.Request, status: int, title: str,
                message: str) -> web.Response | None:
    """The HTML error page, when the session middleware got far enough to render one."""
    if _CSRF_COOKIE not in request:
        return None
    from server.pages import render

    return render(request, "error.html", status=status, title=title, message=message)


def _wants_page(request: web.Request) -> bool:
    return (not request.path.startswith("/api/")
            and "text/html" in request.headers.get("Accept", ""))


async def _baseline_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every answer (JSON, errors, redirects, static files; pages add their CSP): no type
    sniffing, no address of the house's sent to another site, no software versions."""
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    # aiohttp's default names its and Python's exact versions to anyone who asks
    response.headers["Server"] = "Barajamos"


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except AccountError as exc:
        # a refused registration lists every problem, the first of which is `error`
        extra = {"problems": [{"error": p.code, "message": p.message} for p in exc.problems]}
        raise ApiError(exc.status, exc.code, exc.message, exc.headers(),
                       extra if exc.problems else None) from exc
    except ApiError as exc:
        if exc.error_code == "bad_form" and _is_browser_form(request):
            page = _error_page(request, 400, "Formulário inválido",
                               "O formulário chegou incompleto ou mal formado. "
                               "Recarregue a página e tente de novo.")
            if page is not None:
                return page
        if exc.error_code == BAD_CHARACTERS and (_is_browser_form(request)
                                                 or _wants_page(request)):
            page = _error_page(request, 400, "Caractere inválido",
                               "O texto enviado tem um caractere que não é aceito (um nulo, "
                               "U+0000, ou um substituto UTF-16 isolado). Apague-o e tente de "
                               "novo; nada foi alterado.")
            if page is not None:
                return page
        raise
    except DATABASE_UNREACHABLE as exc:
        # the database did not answer (or the connection broke) outside a table's actor, whose
        # writes say so themselves: a 503 to try again, not a bug's 500
        log.warning("database unavailable", extra={"method": request.method,
                                                   "path": logged_path(request),
                                                   "error": repr(exc)})
        if request.writer.output_size > 0:
            raise
        if _wants_page(request):
            page = _error_page(request, 503, "Serviço indisponível",
                               "O banco de dados não respondeu. Tente de novo em instantes.")
            if page is not None:
                return page
        return json_error(503, "unavailable", "The database did not answer; try again in a"
                          " moment.")
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status_code < 400:
            raise
        # the router's own 404s and 405s are kept by its match info, a local of a frame their
        # traceback holds: without the traceback, no reference cycle (`_answer`)
        exc.__traceback__ = None
        if exc.status_code == 413:
            # a body without Content-Length (chunked) over MAX_BODY, refused by aiohttp as read
            raise ApiError(413, "too_large", f"Request body over {MAX_BODY} bytes.") from exc
        raise ApiError(exc.status_code, exc.reason.lower().replace(" ", "_"), exc.reason) from exc
    except Exception:
        # a backstop, not a way to answer bad input (every refusal is a 4xx raised above): log
        # it, and answer in the API's shape (or a page) rather than aiohttp's plain-text 500
        log.exception("unhandled error", extra={"method": request.method,
                                                "path": logged_path(request)})
        if request.writer.output_size > 0:
            raise  # a response (or a WebSocket) is already under way: nothing more to send
        if _wants_page(request):
            try:
                page = _error_page(request, 500, "Erro no servidor",
                                   "Algo deu errado do nosso lado. Tente de novo em instantes.")
            except Exception:
                log.exception("the error page failed too")
                page = None
            if page is not None:
                return page
        return json_error(500, "internal_error", "Internal server error; it has been logged.")


def _is_browser_form(request: web.Request) -> bool:
    return request.content_type in (
        "application/x-www-form-urlencoded", "multipart/form-data"
    ) and "text/html" in request.headers.get("Accept", "")


# probes' and scrapers' paths: no page, no form, so no CSRF cookie handed out to them
_NO_COOKIE_PATHS: Final = frozenset({"/health", "/metrics"})


@web.middleware
async def session_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    config = request.app[CONFIG]
    csrf_cookie = request_cookie(request, accounts.CSRF_COOKIE)
    fresh_csrf = not csrf_cookie
    if not csrf_cookie:
        csrf_cookie = accounts.new_csrf_cookie()
    request[_CSRF_COOKIE] = csrf_cookie
    token = request_cookie(request, accounts.SESSION_COOKIE)
    # the token is bound to the session cookie sent, valid or not: the page and the POST that
    # follows it send the same one (a session that ended in between is then a 401, not a 403)
    request[_CSRF_SESSION] = token or ""
    if token:
        user = await accounts.user_for_token(request.app[POOL], token)
        if user is not None:
            request[_USER] = user
            client = client_address(request)
            if not is_loopback(client):
                request.app[LAST_ADDRESS][user.id] = address_group(client)
                request.app[LAST_ADDRESS_AT][user.id] = request.app[CLOCK].now()
    if request.method not in _SAFE_METHODS:
        if not origin_allowed(request):
            raise ApiError(403, "bad_origin", "Cross-site request refused.")
        supplied = request.headers.get("X-CSRF-Token")
        if supplied is None and request.content_type in (
            "application/x-www-form-urlencoded", "multipart/form-data"
        ):
            supplied = str((await read_form(request)).get("csrf", ""))
        if fresh_csrf or not accounts.csrf_ok(config.cookie_key, csrf_cookie, token, supplied):
            if _is_browser_form(request):
                # a person submitted a page's form (an old tab, cleared cookies): a page, not JSON
                from server.pages import render

                page = render(
                    request, "error.html", status=403, title="Formulário expirado",
                    message="Este formulário expirou ou não veio desta página. "
                    "Recarregue a página e tente de novo.",
                )
                if fresh_csrf:
                    accounts.set_cookie(page, accounts.CSRF_COOKIE, csrf_cookie,
                                        secure=config.secure_cookies)
                return page
            raise ApiError(403, "csrf_failed", "Missing or wrong CSRF token; reload the page.")
    response = await handler(request)
    if (fresh_csrf or request[_CSRF_COOKIE] != csrf_cookie) and not response.prepared \
            and request.path not in _NO_COOKIE_PATHS:
        # a new visitor's first cookie, or a new one after a login or logout (`rotate_csrf`)
        accounts.set_cookie(response, accounts.CSRF_COOKIE, request[_CSRF_COOKIE],
                            secure=config.secure_cookies)
    return response


@web.middleware
async def text_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A NUL character (or a lone surrogate) in the path or the query string is refused (400
    `bad_characters`) before any view runs: the views pass those texts to PostgreSQL, which cannot
    hold one. (Bodies are checked where they are read: `read_body`, `read_form`.)"""
    if bad_text(request.path) or any(bad_text(key) or bad_text(value)
                                     for key, value in request.query.items()):
        raise _refuse_bad_text("address")
    return await handler(request)


def _answer(exc: web.HTTPException) -> web.Response:
    """A refusal (or a redirect) raised by a view, as the response it stands for, returned
    rather than raised on: aiohttp keeps a raised one in a local variable of the frame that its
    traceback holds, a reference cycle per refusal (with the connection's objects) that only the
    garbage collector would free, and the house runs it seldom (`server.loops.quiet_gc`)."""
    response = web.Response(status=exc.status, reason=exc.reason, body=exc.body,
                            headers=exc.headers)
    for name, morsel in exc.cookies.items():
        response.cookies[name] = morsel
    return response


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    status = 500
    started = time.perf_counter()
    _media_type(request)
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status_code
        if request.writer.output_size > 0:
            raise  # an answer is already under way: aiohttp deals with it
        return _answer(exc)
    finally:
        match_info = request.match_info
        route = match_info.route.name or "unmatched"
        request.app[METRICS].http_requests.labels(route, str(status)).inc()
        if isinstance(match_info, MatchInfoError):
            _let_go(match_info)
        if request.path not in ("/metrics", "/health"):
            log.info("request", extra={"method": request.method, "path": logged_path(request),
                                       "status": status,
                                       "ms": round((time.perf_counter() - started) * 1000, 2)})


def logged_path(request: web.Request) -> str:
    """The request's path as a log line says it: a path that may hold a secret (a password
    link's, whether or not it matched its route: "/account/reset/TOKEN/" is a 404 with the
    token in it) by its prefix and a placeholder ("/account/reset/{token}")."""
    for prefix in SECRET_PREFIXES:
        if request.path.startswith(prefix):
            return prefix + "{token}"
    return request.path


def _media_type(request: web.Request) -> None:
    """Parse the request's Content-Type for aiohttp, before anything asks it.

    aiohttp parses it with the standard library's `email` package, whose header registry makes
    two new classes for every header it parses: reference cycles, about ten objects and a few
    kilobytes, that reference counting never frees. aiohttp caches the last 56 values, so a
    browser's few never miss; but anyone can send new ones by the thousand (or a multipart
    body, whose boundary is new each time), and the house's collector would keep them until
    its next whole collection (`server.loops.Collector`). aiohttp's own MIME parser
    (`parse_mimetype`, which its multipart reader uses too) makes no class; what it finds is
    stored where aiohttp keeps its parse for the request (aiohttp 3.14's `HeadersMixin`), so
    `content_type`, `charset`, `json()` and `post()` read it from there. A value with no type
    or subtype reads as `application/octet-stream`, as aiohttp's own parse has it."""
    raw = request.headers.get(hdrs.CONTENT_TYPE)
    if raw is None or not hasattr(request, "_stored_content_type"):
        return  # no header: aiohttp parses nothing either
    mime = parse_mimetype(raw)
    if mime.type and mime.subtype:
        kind = f"{mime.type}/{mime.subtype}" + (f"+{mime.suffix}" if mime.suffix else "")
    else:
        kind = "application/octet-stream"
    request._content_type = kind
    request._content_dict = {key: value for key, value in mime.parameters.items()}
    request._stored_content_type = raw


def _let_go(match_info: MatchInfoError) -> None:
    """aiohttp's route for a path or method it has no route for (the 404 or 405 of its router)
    keeps its own handler, a bound method of itself, and the refusal it raised keeps the frame
    that raised it, which holds the route: two reference cycles per such request, a dozen
    objects that reference counting would never free, and which the house's collector, once
    they are frozen, would keep until its next whole collection (`server.loops.Collector`).
    Anyone can send such requests by the thousand: they are let go here, once answered."""
    match_info.http_exception.__traceback__ = None
    route = match_info.route
    if hasattr(route, "_handler"):  # aiohttp 3.14's AbstractRoute
        route._handler = None  # type: ignore[assignment]


# --- routes -----------------------------------------------------------------------------------

# why moves cannot be saved now (the live house registers it): /health says so too
WRITES_CHECK: Final[web.AppKey[Callable[[], str | None]]] = web.AppKey("writes_check")


async def health(request: web.Request) -> web.Response:
    """200 once the database answers `SELECT 1`, 503 when it fails or has not answered within
    `HEALTH_TIMEOUT`. The probe is not cancelled at the timeout: a database gone silent (a
    frozen host, a lost network) keeps a cancelled query's connection from being handed back,
    and the answer waited with it, for good. It runs on instead, one at a time: the next checks
    wait on it (so silent outages do not pile probes up on the pool) until it ends."""
    holder = request.app[_HEALTH_PROBE]
    if holder and not holder[0].task.done() and (
            time.monotonic() - holder[0].started > HEALTH_STUCK):
        holder[0].cut()  # a connection that will never answer: the next check starts afresh
        return json_error(503, "database_unreachable", "The database does not answer.")
    if not holder or holder[0].task.done():
        holder[:] = [_HealthProbe(request.app[POOL])]
    probe = holder[0].task
    await asyncio.wait((probe,), timeout=HEALTH_TIMEOUT)
    if not probe.done() or probe.cancelled() or probe.exception() is not None:
        return json_error(503, "database_unreachable", "The database does not answer.")
    # the database answers a read, yet moves may not be saved (a table locked, a commit cut in
    # doubt and not yet written again): a review held a lock for 30 s while /health said ok
    check = request.app.get(WRITES_CHECK)
    problem = check() if check is not None else None
    if problem is not None:
        return json_error(503, "writes_failing", problem)
    return web.json_response({"status": "ok", "database": request.app[DATABASE_MODE]})


async def metrics(request: web.Request) -> web.Response:
    if not metrics_allowed(request):
        return json_error(403, "metrics_forbidden", "The metrics are served only to this"
                          " machine and to BARAJAMOS_METRICS_FROM.")
    return web.Response(body=request.app[METRICS].render(),
                        content_type="text/plain", charset="utf-8")


# headers a proxy adds: a request that carries one came through a proxy, whose client it names
_FORWARDING_HEADERS: Final = ("X-Forwarded-For", "Forwarded", "X-Real-IP")


def metrics_allowed(request: web.Request) -> bool:
    """Whether the client may read /metrics: this machine (loopback) or one of
    `BARAJAMOS_METRICS_FROM`. Its counters move with each table's moves (by verb: a team's
    hidden votes), its signals and its writes, so anyone polling it next to a table in play
    would learn what the table keeps from them. Through a trusted proxy the client is the one
    the proxy names (`client_address`); a request that came through a proxy the house was not
    told of (it carries a forwarding header) is refused, whatever its peer: a proxy on this
    machine would make every visitor look local."""
    config = request.app[CONFIG]
    peer = request.remote or ""
    if not (config.trusted_proxies and _is_one_of(peer, config.trusted_proxies)) and any(
            name in request.headers for name in _FORWARDING_HEADERS):
        return False
    client = client_address(request)
    return is_loopback(client) or _is_one_of(client, config.metrics_from)


def is_loopback(address: str) -> bool:
    """Whether `address` is this machine's own (127.0.0.0/8, ::1; an IPv4 one on a dual-stack
    socket too)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _user_json(user: User | None) -> dict[str, Any] | None:
    return None if user is None else {"id": user.id, "name": user.name, "role": user.role.value}


async def session_info(request: web.Request) -> web.Response:
    return web.json_response({"user": _user_json(current_user(request)),
                              "csrf": csrf_token(request)})


async def _start_session(request: web.Request, user: User, status: int = 200) -> web.Response:
    token = await accounts.open_session(request.app[POOL], user,
                                        request.headers.get("User-Agent"))
    # the answer carries the new CSRF token: the one before the login no longer works
    response = web.json_response({"user": _user_json(user),
                                  "csrf": rotate_csrf(request, session=token)}, status=status)
    accounts.set_cookie(response, accounts.SESSION_COOKIE, token,
                        secure=request.app[CONFIG].secure_cookies,
                        max_age=int(accounts.SESSION_LIFETIME.total_seconds()))
    await keep_device(request, response, user)
    return response


async def register(request: web.Request) -> web.Response:
    body = await read_body(request, ("name", "password"))
    user = await accounts.register(request.app[POOL], body.get("name"), body.get("password"),
                                   request.app[PASSWORD_COST], remote=client_group(request),
                                   per_hour=request.app[CONFIG].registrations_per_hour)
    log.info("registered", extra={"user": user.name})
    return await _start_session(request, user, status=201)


async def login(request: web.Request) -> web.Response:
    body = await read_body(request, ("name", "password"))
    user = await accounts.authenticate(request.app[POOL], body.get("name"), body.get("password"),
                                       client_group(request), request.app[PASSWORD_COST],
                                       request_device(request))
    return await _start_session(request, user)


async def password(request: web.Request) -> web.Response:
    body = await read_body(request, ("current", "new"))
    ended = await change_password(request, body.get("current"), body.get("new"))
    response = web.json_response({"ended_sessions": ended})
    # the new password revoked every device cookie: this browser gets one for it
    await keep_device(request, response, require_user(request))
    return response


async def logout(request: web.Request) -> web.Response:
    await end_session(request)
    response = web.json_response({"user": None, "csrf": rotate_csrf(request, session=None)})
    accounts.del_cookie(response, accounts.SESSION_COOKIE,
                        secure=request.app[CONFIG].secure_cookies)
    return response


# --- factory ----------------------------------------------------------------------------------

async def _database(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    embedded: EmbeddedPostgres | None = None
    dsn = config.database_url
    if dsn is None:
        embedded = EmbeddedPostgres(config.data_path / "pg")
        dsn = await asyncio.get_running_loop().run_in_executor(None, embedded.start)
        app[DATABASE_MODE] = "embedded"
    else:
        app[DATABASE_MODE] = "url"
    pool: asyncpg.Pool | None = None
    watch: EmbeddedWatch | None = None
    try:  # a start that fails (a refused migration, the database away) still closes both
        pool = await create_pool(dsn)
        async with pool.acquire() as conn:
            await migrate(conn)
        app[POOL] = pool
        app[DSN] = dsn
        if embedded is not None:
            watch = EmbeddedWatch(embedded)
        yield
    finally:
        if watch is not None:
            await watch.close()
        for probe in app.get(_HEALTH_PROBE, ()):
            probe.cut()  # a probe stuck on a silent server would hold the pool's close
        if pool is not None:
            try:  # a hung database would hold a graceful close for as long as it hangs
                await asyncio.wait_for(pool.close(), POOL_CLOSE_WAIT)
            except TimeoutError:
                log.error("database pool not closed in time: its connections are cut",
                          extra={"seconds": POOL_CLOSE_WAIT})
                pool.terminate()
        if embedded is not None:
            embedded.stop()


POOL_CLOSE_WAIT = 10.0  # seconds a stop waits for the pool's connections to close gracefully
EMBEDDED_WATCH_EVERY = 2.0  # seconds between two looks at the embedded PostgreSQL
EMBEDDED_START_WAIT = 30.0  # seconds a stop waits for a start of it under way


class EmbeddedWatch:
    """The house's own PostgreSQL, looked at every `EMBEDDED_WATCH_EVERY` seconds: killed under
    it (by hand, by the out-of-memory killer), it is started again in its folder, and the house
    rides it out as any database restart (moves refused as `unavailable` meanwhile, nothing
    acknowledged lost). Before, the house answered 503 until someone restarted it."""

    def __init__(self, embedded: EmbeddedPostgres) -> None:
        self.embedded = embedded
        self._starting: asyncio.Future[str] | None = None
        self._task = asyncio.create_task(self._run(), name="barajamos-embedded-watch")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(EMBEDDED_WATCH_EVERY)
            if self.embedded.running():
                continue
            log.error("embedded PostgreSQL stopped: starting it again",
                      extra={"pgdata": str(self.embedded.pgdata)})
            self._starting = loop.run_in_executor(None, self.embedded.start_again)
            try:
                await asyncio.shield(self._starting)
            except Exception as exc:  # tried again at the next look
                log.error("embedded PostgreSQL not started again",
                          extra={"error": f"{type(exc).__name__}: {exc}"})
            else:
                log.warning("embedded PostgreSQL started again")
            finally:
                if self._starting.done():  # (cancelled while starting: `close` waits for it)
                    self._starting = None

    async def close(self) -> None:
        """Stop watching; a start under way is let finish (the server is stopped after)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        if self._starting is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._starting), EMBEDDED_START_WAIT)
            except TimeoutError:
                log.warning("embedded PostgreSQL still starting at the stop: not waited for")
            except Exception:  # its failure was logged by the watch, or does not matter now
                pass


PRUNE_EVERY = 3600.0  # seconds between two prunings of the accounts' old rows


async def prune_once(app: web.Application) -> dict[str, int]:
    """One pruning: old login and sign-up attempts and expired sessions, the rows of recorded
    hands an older house kept (`prune_recorded_rows`), the seat events of matches that ended a
    month ago (`prune_seat_events`), and the addresses' limits with nothing left to count
    (`forget_addresses`). How many of each went."""
    from server.live.recovery import (  # (server.live builds on this module)
        prune_recorded_rows,
        prune_seat_events,
    )

    gone = await accounts.prune(app[POOL])
    gone |= await prune_recorded_rows(app[POOL])
    gone["seat_events"] = await prune_seat_events(app[POOL])
    gone["addresses"] = forget_addresses(app, app[CLOCK].now())
    return gone


async def _pruning(app: web.Application) -> AsyncIterator[None]:
    """`prune_once` once an hour (from a minute after the start), in the background; a failure
    is logged and tried again later."""

    async def run() -> None:
        await asyncio.sleep(60.0)
        while True:
            try:
                gone = await prune_once(app)
                if any(gone.values()):
                    log.info("pruned", extra=gone)
            except (asyncpg.PostgresError, *DATABASE_UNREACHABLE) as exc:
                log.warning("pruning failed", extra={"error": repr(exc)})
            await asyncio.sleep(PRUNE_EVERY)

    task = asyncio.create_task(run(), name="barajamos-prune")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _dummy_hash(app: web.Application) -> None:
    """Make the stand-in hash of unknown names' logins now, not at the first such login (which
    would take the time of a hash on top: that first one would still stand out)."""
    await accounts.dummy_hash(app[PASSWORD_COST])


def create_app(
    config: Config,
    *,
    clock: Clock | None = None,
    password_cost: PasswordCost = accounts.INTERACTIVE,
) -> web.Application:
    app = web.Application(
        # the text check runs inside the session middleware so its refusal can be a page
        middlewares=[metrics_middleware, errors_middleware, session_middleware,
                     text_middleware],
        client_max_size=MAX_BODY,
    )
    app[CONFIG] = config
    app[METRICS] = Metrics()
    app[CLOCK] = clock if clock is not None else SystemClock()
    app[PASSWORD_COST] = password_cost
    app[STARTED_AT] = time.time()
    app[SESSION_SOCKETS] = {}
    app[LAST_ADDRESS] = {}
    app[LAST_ADDRESS_AT] = {}
    app[_HEALTH_PROBE] = []
    app.cleanup_ctx.append(_database)
    app.cleanup_ctx.append(_pruning)
    app.on_startup.append(_dummy_hash)
    app.on_response_prepare.append(_baseline_headers)
    app.router.add_get("/health", health, name="health")
    app.router.add_get("/metrics", metrics, name="metrics")
    app.router.add_get("/api/session", session_info, name="session")
    app.router.add_post("/api/register", register, name="register")
    app.router.add_post("/api/login", login, name="login")
    app.router.add_post("/api/logout", logout, name="logout")
    app.router.add_post("/api/me/password", password, name="password")
    # the live house (lobby, tables, WebSocket protocol, hand records) plugs in here
    from server.live import setup as setup_live

    setup_live(app)
    # the browser pages (jinja2 templates, static JS/CSS)
    from server.pages import setup as setup_pages

    setup_pages(app)
    # a forgotten password: the one-time links and the operators' accounts page
    from server.password_pages import setup as setup_password_pages

    setup_password_pages(app)
    # ranked queues, standings, arena and the operators' abandonment review
    from server.ranked.http import setup as setup_ranked

    setup_ranked(app)
    return app
