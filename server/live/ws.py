"""`GET /ws/tables/{id}`: one WebSocket per player (or spectator) and table (docs/PROTOCOL.md).

The handler only checks and parses; every change goes through the table's actor, which also
sends the command's ack. Each connection has a bounded send buffer (a slow client is
disconnected instead of ever holding up the table), a token bucket against floods, and a
message size limit.
"""

from __future__ import annotations

import asyncio
import logging
import math
import struct
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final, cast

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from server.app import METRICS, ApiError, current_user, origin_allowed, track_socket
from server.live.model import LiveError, LiveSettings, TableKind
from server.live.table import TableActor, ms

if TYPE_CHECKING:
    from server.live.house import House

log = logging.getLogger("barajamos.live.ws")

MAX_ID_CHARS = 64


class Connection:
    """One open socket: its user, its outgoing frames and a rate limiter.

    The table never waits for a socket: `send` frames the text and hands it to the socket's
    transport, which buffers what the peer has not read yet; a client with more than
    `send_buffer_bytes` unread is disconnected instead of ever holding up the table. The frames
    sent to one socket during one turn of the event loop (say an update and the ack that
    follows it) leave in one write, a system call instead of one per message (a close writes them
    at once, before its close frame: `flush`). Text frames are
    written here rather than through aiohttp's writer, whose every frame is a write of its own
    (and a task switch through a send queue): with compression off (`ws_response`), a text
    frame is a header and the UTF-8 bytes; aiohttp still writes the control frames (ping, pong,
    close) to the same transport, whole frames each, so the two never interleave inside a frame.
    """

    def __init__(self, ws: web.WebSocketResponse, transport: asyncio.BaseTransport,
                 user_id: int, settings: LiveSettings) -> None:
        self.ws = ws
        self.user_id = user_id
        self.settings = settings
        self.greeted = False
        self.refused = 0
        # a stream transport (uvloop's are not asyncio.WriteTransport subclasses, same methods)
        self._transport = cast(asyncio.WriteTransport, transport)
        self._frames: list[bytes] = []
        self._queued = 0
        self._flush: asyncio.Handle | None = None
        self._tokens = settings.rate_burst
        self._refilled = time.monotonic()
        self._closing: asyncio.Task[bool] | None = None
        self._loop = asyncio.get_running_loop()

    def send(self, text: bytes) -> None:
        """Queue a message (UTF-8 JSON) for this turn's write; never waits."""
        if self._closing is not None or self.ws.closed or self._transport.is_closing():
            return
        unread = self._transport.get_write_buffer_size() + self._queued
        if unread + len(text) > self.settings.send_buffer_bytes:
            log.info("slow client disconnected", extra={"user": self.user_id, "unread": unread})
            self._frames.clear()
            self._queued = 0
            self.close_soon(WSCloseCode.TRY_AGAIN_LATER, "too slow")
            return
        frame = text_frame(text)
        self._frames.append(frame)
        self._queued += len(frame)
        if self._flush is None:
            self._flush = self._loop.call_soon(self._write)

    def flush(self) -> None:
        """Write the frames queued this turn now rather than at its end. Before a close frame:
        a client reads nothing after one, so what was answered before the close (a flood's
        `rate_limited` errors, say) must leave first."""
        if self._flush is not None:
            self._flush.cancel()
        self._write()

    def _write(self) -> None:
        self._flush = None
        frames, self._frames = self._frames, []
        self._queued = 0
        if frames and self._closing is None and not self._transport.is_closing():
            self._transport.write(frames[0] if len(frames) == 1 else b"".join(frames))

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(orjson.dumps(message))  # not kept: `send` frames a copy of it

    def ack(self, msg_id: str | int | None, seq: int | None) -> None:
        self.send_json({"type": "ack", "id": msg_id, "seq": seq})

    def error(self, msg_id: object, code: str, message: str) -> None:
        self.send_json({"type": "error", "id": msg_id, "error": code, "message": message})

    def allow(self) -> bool:
        """Token bucket: `rate_per_second` sustained, bursts of `rate_burst`."""
        now = time.monotonic()
        self._tokens = min(self.settings.rate_burst,
                           self._tokens + (now - self._refilled) * self.settings.rate_per_second)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def close_soon(self, code: int, reason: str) -> None:
        """Close the socket (its handler then ends) without waiting for the handshake; what was
        queued for it before goes first."""
        if self._closing is None and not self.ws.closed:
            self.flush()
            self._closing = asyncio.create_task(self._close_within(code, reason))

    async def _close_within(self, code: int, reason: str) -> bool:
        """aiohttp's close waits for the socket to drain before its close frame, and then for
        the peer's: a peer that reads nothing (the one too slow to read its updates) would hold
        it, the handler and the seat for ever. After `close_grace_seconds` it is dropped."""
        try:
            async with asyncio.timeout(self.settings.close_grace_seconds):
                return await self.ws.close(code=code, message=reason.encode())
        except TimeoutError:
            log.info("socket dropped: its close was not read",
                     extra={"user": self.user_id, "code": code})
            self._transport.abort()
            return True

    async def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        self._frames.clear()
        if self._closing is not None:
            await self._closing


def text_frame(payload: bytes) -> bytes:
    """A final, unmasked, uncompressed WebSocket text frame (RFC 6455, 5.2): what a server sends."""
    size = len(payload)
    if size < 126:
        return _HEADER_7(0x81, size) + payload
    if size < 65536:
        return _HEADER_16(0x81, 126, size) + payload
    return _HEADER_64(0x81, 127, size) + payload


_HEADER_7 = struct.Struct("!BB").pack
_HEADER_16 = struct.Struct("!BBH").pack
_HEADER_64 = struct.Struct("!BBQ").pack


def _message_id(value: object) -> str | int | None:
    if value is None or (isinstance(value, str) and len(value) <= MAX_ID_CHARS):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53:
        return value
    raise LiveError("bad_message", f"id must be a string of at most {MAX_ID_CHARS} characters"
                    " or an integer")


# the fields of each client message (docs/PROTOCOL.md, Client messages): any other is refused,
# so that a misspelt one (`hnad`) is not taken as absent (a move's stale check skipped)
_FIELDS: Final = {
    "ping": frozenset({"type", "id"}),
    "hello": frozenset({"type", "id", "last_seq", "epoch"}),
    "action": frozenset({"type", "id", "hand", "last_seq", "action"}),
    "entropy": frozenset({"type", "id", "hand", "hex"}),
    "signal": frozenset({"type", "id", "code"}),
    "back": frozenset({"type", "id"}),
}


def forget_tracebacks(error: BaseException | None) -> None:
    """A socket whose peer went without a close frame keeps the error of its own close (a close
    frame written to the dead connection, raised while aiohttp handled the end of the stream)
    on itself (`ws.exception()`), and the tracebacks of that error and of the one it was raised
    in hold frames that hold the socket: a cycle per such socket, with its connection, which
    the house's collector keeps for long (`server.loops`; a soak: 30 of 72 sockets dropped so,
    7 frames each). Their tracebacks are let go once the socket is done with."""
    while error is not None:
        error.__traceback__ = None
        error = error.__context__


def _refused_id(data: str, settings: LiveSettings) -> str | int | None:
    """The id of a message refused before it is handled (the rate limit), when it has a valid
    one, so that the client knows which message to send again; None otherwise."""
    if len(data.encode("utf-8", "surrogatepass")) > settings.max_message_bytes:
        return None
    try:
        obj = orjson.loads(data)
        return _message_id(obj.get("id")) if isinstance(obj, dict) else None
    except (ValueError, LiveError):
        return None


def _nonneg_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LiveError("bad_message", f"{name} must be a non-negative integer")
    return value


async def _handle(conn: Connection, actor: TableActor, data: str) -> None:
    arrival = time.perf_counter()
    settings = conn.settings
    if len(data.encode("utf-8", "surrogatepass")) > settings.max_message_bytes:
        conn.error(None, "too_large", f"Messages are at most {settings.max_message_bytes} bytes.")
        return
    try:
        obj = orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError, also for nesting too deep or huge integers
        conn.error(None, "bad_json", "The message is not JSON.")
        return
    if not isinstance(obj, dict):
        conn.error(None, "bad_message", "A message is a JSON object with a type.")
        return
    msg_id: str | int | None = None
    try:
        msg_id = _message_id(obj.get("id"))
        kind = obj.get("type")
        fields = _FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None:
            raise LiveError("bad_message", f"unknown message type {kind!r}")
        if not fields.issuperset(obj):
            unknown = sorted(set(obj) - fields)
            raise LiveError("bad_message", f"unknown field {unknown[0]!r} in a {kind} message"
                            f" (its fields: {', '.join(sorted(fields))})")
        if kind == "ping":
            conn.send_json({"type": "pong", "id": msg_id, "server_time_ms": ms(actor.now)})
        elif kind == "hello":
            last_seq = _nonneg_int(obj.get("last_seq", 0), "last_seq")
            epoch = obj.get("epoch")
            epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None
            await actor.call(lambda: actor.hello(conn, last_seq, epoch))
            conn.greeted = True
        elif not conn.greeted:
            raise LiveError("hello_first", "Send hello first.")
        elif kind == "action":
            raw_hand, raw_seen = obj.get("hand"), obj.get("last_seq")
            hand = None if raw_hand is None else _nonneg_int(raw_hand, "hand")
            seen = None if raw_seen is None else _nonneg_int(raw_seen, "last_seq")
            await actor.call(lambda: _acked(
                conn, msg_id, actor.act(conn, obj.get("action"), arrival, hand, seen)))
        elif kind == "entropy":  # acknowledged by the table (with the others queued with it)
            await actor.contribute(conn, msg_id, obj.get("hand"), obj.get("hex"))
        elif kind == "back":
            await actor.call(lambda: _acked(conn, msg_id, actor.back(conn)))
        else:
            await actor.call(lambda: _acked(conn, msg_id, actor.signal(conn, obj.get("code"))))
    except LiveError as exc:
        conn.error(msg_id, exc.code, exc.message)


async def _acked(conn: Connection, msg_id: str | int | None,
                 command: Awaitable[int | None]) -> None:
    """Run a table command and acknowledge it from the table's own turn: the ack then leaves in
    the same write as the events the command sent this socket (an update, then its ack)."""
    conn.ack(msg_id, await command)


async def table_socket(request: web.Request) -> web.StreamResponse:
    from server.live import HOUSE

    house: House = request.app[HOUSE]
    user = current_user(request)
    if user is None:
        raise ApiError(401, "login_required", "Log in first.")
    if not origin_allowed(request):
        raise ApiError(403, "bad_origin", "Cross-site WebSocket refused.")
    try:
        actor = house.get(request.match_info["table_id"])
    except LiveError as exc:
        raise ApiError(exc.status, exc.code, exc.message) from None
    seated = await actor.call(lambda: _seated(actor, user.id))
    if actor.kind is TableKind.PRIVATE and not seated:
        invite = request.query.get("invite", "")
        try:
            opened = bool(invite) and house.invite_guesses.guess(
                user.id, invite, actor.invited, house.clock.now())
        except LiveError as exc:
            raise ApiError(exc.status, exc.code, exc.message, exc.headers) from None
        if not opened:
            raise ApiError(403, "private_table", "This private table is for its players.")
    settings = house.settings
    if house.user_sockets.get(user.id, 0) >= settings.max_sockets_per_user:
        raise ApiError(429, "too_many_sockets",
                       f"You already have {settings.max_sockets_per_user} table connections"
                       " open: close some tabs first.")
    # no permessage-deflate: messages are small, and `Connection` writes plain text frames
    ws = web.WebSocketResponse(heartbeat=settings.heartbeat_seconds,
                               max_msg_size=settings.max_frame_bytes, compress=False)
    plain = not ws.can_prepare(request).ok
    wait = house.connects.admit(user.id, actor.id, house.clock.now(), settings,
                                take=not plain)
    if wait > 0:
        raise ApiError(429, "too_many_connections",
                       f"Too many connections to this table in a short time: try again in"
                       f" {math.ceil(wait)} s.", headers={"Retry-After": str(math.ceil(wait))})
    if plain:
        # a plain GET: would the socket be let in? (a browser cannot read why a handshake was
        # refused, so the table page asks here after one)
        return web.json_response({"ok": True, "seated": seated})
    await ws.prepare(request)
    transport = request.transport
    if transport is None:  # the client went away while the handshake was answered
        return ws
    metrics = request.app[METRICS]
    conn = Connection(ws, transport, user.id, settings)
    house.sockets[ws] = conn
    house.user_sockets[user.id] = house.user_sockets.get(user.id, 0) + 1
    forget = track_socket(request, ws)
    metrics.connected_players.inc()
    try:
        await actor.call(lambda: actor.open_connection(conn))
        async for msg in ws:
            if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            # every data frame counts against the rate limit, whatever it holds
            if not conn.allow():
                conn.refused += 1
                if conn.refused > settings.flood_close_after:
                    # the answers so far go before the close frame; a flooder that reads
                    # nothing is dropped after the close's grace (`Connection.close_soon`)
                    conn.close_soon(WSCloseCode.POLICY_VIOLATION, "flooding")
                    break
                text = msg.data if msg.type is WSMsgType.TEXT else ""
                conn.error(_refused_id(text, settings), "rate_limited",
                           "Too many messages; slow down.")
                continue
            conn.refused = 0  # only an unbroken flood gets a client closed
            if msg.type is WSMsgType.TEXT:
                await _handle(conn, actor, msg.data)
            else:
                conn.error(None, "bad_message", "Send JSON text frames.")
    except LiveError:
        pass  # the table closed under us
    finally:
        # aiohttp (3.14) keeps the socket's heartbeat callback, a method of `ws`, on the
        # connection's protocol, which `ws` holds: a reference cycle per closed socket, which
        # the house's garbage collector would free only seldom (`server.loops.quiet_gc`). First
        # thing: the awaits below may be cancelled (aiohttp cancels the handler of a lost
        # connection).
        protocol = request.protocol
        if hasattr(protocol, "_data_received_cb"):
            protocol._data_received_cb = None
        forget_tracebacks(ws.exception())
        house.sockets.pop(ws, None)
        left = house.user_sockets.pop(user.id, 1) - 1
        if left > 0:
            house.user_sockets[user.id] = left
        forget()
        metrics.connected_players.dec()
        # queued, not awaited: aiohttp cancels the handler of a lost connection (an aborted
        # one among them, `Connection.close_soon`), and an await here would be cut short, the
        # seat left connected for good
        actor.post(lambda: actor.close_connection(conn))
        await conn.close()
    return ws


async def _seated(actor: TableActor, user_id: int) -> bool:
    return actor.seat_of(user_id) is not None
