"""`GET /ws/tables/{id}`: one WebSocket per player (or spectator) and table (docs/PROTOCOL.md).

The handler only checks and parses; every change goes through the table's actor. Each
connection has a bounded send queue drained by its own task, so a slow client is disconnected
instead of ever holding up the table, a token bucket against floods, and a message size limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from server.app import METRICS, ApiError, current_user, origin_allowed
from server.live.model import LiveError, LiveSettings, TableKind, wire_json
from server.live.table import TableActor, ms

if TYPE_CHECKING:
    from server.live.house import House

log = logging.getLogger("barajamos.live.ws")

MAX_ID_CHARS = 64


class Connection:
    """One open socket: its user, a bounded outbox and a rate limiter."""

    def __init__(self, ws: web.WebSocketResponse, user_id: int, settings: LiveSettings) -> None:
        self.ws = ws
        self.user_id = user_id
        self.settings = settings
        self.greeted = False
        self.refused = 0
        # a plain deque and one waiter, not an asyncio.Queue (four deques and an Event): every
        # connected player holds one, and the table only ever appends without waiting
        self._outbox: deque[bytes] = deque()  # UTF-8 JSON texts, sent as text frames
        self._wakeup: asyncio.Future[None] | None = None
        self._tokens = settings.rate_burst
        self._refilled = time.monotonic()
        self._closing: asyncio.Task[bool] | None = None
        self._pump = asyncio.create_task(self._drain())

    def send(self, text: bytes) -> None:
        """Queue a message; a client that cannot keep up is disconnected, never waited for."""
        if self._closing is not None or self.ws.closed:
            return
        if len(self._outbox) >= self.settings.send_queue:
            log.info("slow client disconnected", extra={"user": self.user_id})
            self._closing = asyncio.create_task(
                self.ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"too slow"))
            return
        self._outbox.append(text)
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(wire_json(message))

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

    async def _drain(self) -> None:
        outbox = self._outbox
        loop = asyncio.get_running_loop()
        while True:
            while outbox:
                try:
                    await self.ws.send_frame(outbox.popleft(), WSMsgType.TEXT)
                except (ConnectionError, RuntimeError):
                    return
            self._wakeup = loop.create_future()
            await self._wakeup
            self._wakeup = None

    async def close(self) -> None:
        if not self._pump.done():
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self._closing is not None:
            await self._closing


def _message_id(value: object) -> str | int | None:
    if value is None or (isinstance(value, str) and len(value) <= MAX_ID_CHARS):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53:
        return value
    raise LiveError("bad_message", f"id must be a string of at most {MAX_ID_CHARS} characters"
                    " or an integer")


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
        if kind == "ping":
            conn.send_json({"type": "pong", "id": msg_id, "server_time_ms": ms(actor.now)})
        elif kind == "hello":
            last_seq = _nonneg_int(obj.get("last_seq", 0), "last_seq")
            epoch = obj.get("epoch")
            epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None
            await actor.call(lambda: actor.hello(conn, last_seq, epoch))
            conn.greeted = True
        elif kind not in ("action", "entropy", "signal"):
            raise LiveError("bad_message", f"unknown message type {kind!r}")
        elif not conn.greeted:
            raise LiveError("hello_first", "Send hello first.")
        elif kind == "action":
            raw_hand = obj.get("hand")
            hand = None if raw_hand is None else _nonneg_int(raw_hand, "hand")
            seq = await actor.call(lambda: actor.act(conn, obj.get("action"), arrival, hand))
            conn.send_json({"type": "ack", "id": msg_id, "seq": seq})
        elif kind == "entropy":
            seq = await actor.call(lambda: actor.entropy(conn, obj.get("hand"), obj.get("hex")))
            conn.send_json({"type": "ack", "id": msg_id, "seq": seq})
        else:
            await actor.call(lambda: actor.signal(conn, obj.get("code")))
            conn.send_json({"type": "ack", "id": msg_id, "seq": None})
    except LiveError as exc:
        conn.error(msg_id, exc.code, exc.message)


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
    invite = request.query.get("invite", "").strip().upper()
    if actor.kind is TableKind.PRIVATE and not seated and invite != actor.invite:
        raise ApiError(403, "private_table", "This private table is for its players.")
    settings = house.settings
    ws = web.WebSocketResponse(heartbeat=settings.heartbeat_seconds,
                               max_msg_size=settings.max_frame_bytes)
    await ws.prepare(request)
    metrics = request.app[METRICS]
    house.sockets.add(ws)
    metrics.connected_players.inc()
    conn = Connection(ws, user.id, settings)
    try:
        await actor.call(lambda: actor.open_connection(conn))
        async for msg in ws:
            if msg.type is WSMsgType.TEXT:
                if not conn.allow():
                    conn.refused += 1
                    if conn.refused > settings.flood_close_after:
                        await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"flooding")
                        break
                    conn.error(_refused_id(msg.data, settings), "rate_limited",
                               "Too many messages; slow down.")
                    continue
                conn.refused = 0  # only an unbroken flood gets a client closed
                await _handle(conn, actor, msg.data)
            elif msg.type is WSMsgType.BINARY:
                conn.error(None, "bad_message", "Send JSON text frames.")
    except LiveError:
        pass  # the table closed under us
    finally:
        house.sockets.discard(ws)
        metrics.connected_players.dec()
        await conn.close()
        with contextlib.suppress(LiveError):
            await actor.call(lambda: actor.close_connection(conn))
    return ws


async def _seated(actor: TableActor, user_id: int) -> bool:
    return actor.seat_of(user_id) is not None
