"""`barajamos bots`: bot players that use nothing but the public protocol (docs/PROTOCOL.md).

Each bot is an account with its own cookie jar (`BotSession`): it registers (or logs in), creates
private tables or joins them with the invite code, opens one WebSocket per seat (`BotSeat`), says
`hello`, sends 32 fresh random bytes of entropy per hand and acts with the server's own policy,
`server.bots.choose_action`, after a chosen pace. A dropped socket is reopened with `hello` and
the last event number; a finished match is followed by a rematch or by leaving the table.

The load benchmark (`server.bench_load`) and the tests drive these same classes. A `TableRun`
gathers what one table's seats saw: when each event reached every seat, and every acknowledged
action, which is enough to measure action-to-broadcast latency and to audit that every `ack`ed
action is in the table's events and in the hand records (`audit_table`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import aiohttp
import orjson
from yarl import URL

from server.accounts import NAME_RE, check_password
from server.bots import NothingToDo, choose_action
from server.loops import quiet_gc, run
from truco import Action, ActionKind, Reason, Variant, action_from_json

Json = dict[str, Any]
EventKey = tuple[int | None, int]  # (server run epoch, table event number)

ENTROPY_BYTES = 32
# refusals that only mean the move raced a newer event (another seat moved first, the hand
# ended): the state had changed by the time the message arrived, nothing is wrong
RACE_CODES = frozenset({reason.value for reason in Reason}
                       | {"no_hand", "entropy_closed", "stale"})
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=60)
# stay under the server's message rate (20/s, bursts of 40) with a margin, so a bot at full
# speed is never refused; the server's `welcome.limits` replaces the rate once known
RATE_SHARE = 0.9
DEFAULT_RATE = 20.0
# reopening a dropped socket: doubling waits, and how many failures in a row end the seat
RECONNECT_FIRST = 0.2
RECONNECT_MAX = 5.0
RECONNECT_ATTEMPTS = 12
# how many events a table keeps timing data for (older ones can no longer be acknowledged)
TIMING_WINDOW = 1024


# a refusal that changed nothing, worth asking again a moment later (`BotSession.request`)
RETRIED: Final = frozenset({"unavailable", "database_unreachable"})
RETRY_WAITS: Final = (0.5, 1.0, 2.0, 4.0, 8.0)


class ProtocolError(Exception):
    """The server refused a request: its stable error code, message and HTTP status."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class Unreachable(ConnectionError):
    """The server does not answer (refused, reset, timed out, or not an HTTP server)."""


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    password: str


def bot_account(name_prefix: str, password_prefix: str, index: int) -> Account:
    """Account `index` of a bot fleet: the name counts, the password is derived from the prefix
    (a secret the operator chooses) and the name, so a later run can log the same bots in."""
    name = f"{name_prefix}{index:05d}"
    digest = hashlib.sha256(f"{password_prefix}\0{name}".encode()).hexdigest()[:20]
    return Account(name, f"{password_prefix}#{digest}")


def check_prefixes(name_prefix: str, password_prefix: str, count: int) -> None:
    """Refuse prefixes whose accounts the server would refuse (ValueError with the reason)."""
    longest = bot_account(name_prefix, password_prefix, max(0, count - 1))
    if not NAME_RE.fullmatch(longest.name):
        raise ValueError(f"name prefix {name_prefix!r} makes names like {longest.name!r}: "
                         "names are 3 to 24 letters, digits, '.', '_' or '-'")
    try:
        check_password(longest.password, longest.name)
    except ValueError as exc:
        raise ValueError(f"password prefix refused by the server's rules: {exc}") from None


def _unreachable(base: URL, exc: BaseException) -> Unreachable:
    return Unreachable(f"cannot reach {base}: {str(exc) or type(exc).__name__}")


# --- HTTP: one account's session ------------------------------------------------------------------

class BotSession:
    """One logged-in account: its own cookie jar and CSRF token, like one browser."""

    def __init__(self, base: URL, account: Account,
                 connector: aiohttp.BaseConnector | None = None) -> None:
        self.base = base
        self.account = account
        self.http = aiohttp.ClientSession(
            connector=connector, connector_owner=connector is None,
            # the house is often reached by IP address, where cookies need the unsafe jar
            cookie_jar=aiohttp.CookieJar(unsafe=True), timeout=HTTP_TIMEOUT)
        self.csrf = ""

    @property
    def name(self) -> str:
        return self.account.name

    async def request(self, method: str, path: str, body: Json | None = None) -> Any:
        """The JSON answer; ProtocolError for a refusal, Unreachable when nobody answers. A
        database blip (503 that changed nothing: `unavailable`, `database_unreachable`) is asked
        again after 0.5, 1, 2, 4 and 8 s: one such answer while a fleet sat down ended the whole
        fleet, and the matches of its tables already in play with it (a chaos drill)."""
        for wait in (*RETRY_WAITS, None):
            try:
                return await self._request(method, path, body)
            except ProtocolError as exc:
                if wait is None or exc.status != 503 or exc.code not in RETRIED:
                    raise
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _request(self, method: str, path: str, body: Json | None = None) -> Any:
        headers = {"X-CSRF-Token": self.csrf} if method != "GET" else {}
        try:
            async with self.http.request(method, self.base.join(URL(path)), headers=headers,
                                         json=body if method != "GET" else None) as resp:
                text = await resp.text()
                status = resp.status
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as exc:
            raise _unreachable(self.base, exc) from None
        try:
            data = json.loads(text) if text else None
        except ValueError:
            raise Unreachable(f"{self.base} is not a Barajamos server ({method} {path} answered"
                              f" {status} without JSON)") from None
        if status >= 400:
            error = data if isinstance(data, dict) else {}
            raise ProtocolError(str(error.get("error", f"http_{status}")),
                                str(error.get("message", text[:200])), status)
        return data

    async def login(self, *, existing: bool = False) -> None:
        """Register the account, or log it in when the name is taken (a later run).

        Registering first keeps failed logins (which the server rate-limits per address) out of
        a fresh fleet's start; `existing` skips straight to the login for accounts known to
        exist (the load benchmark creates them beforehand).
        """
        session = await self.request("GET", "/api/session")
        if not isinstance(session, dict) or not isinstance(session.get("csrf"), str):
            raise Unreachable(f"{self.base} is not a Barajamos server (no CSRF token)")
        self.csrf = session["csrf"]
        credentials = {"name": self.account.name, "password": self.account.password}
        answer: Json | None = None
        if not existing:
            try:
                answer = await self.request("POST", "/api/register", credentials)
            except ProtocolError as exc:
                if exc.code != "name_taken":
                    raise
        if answer is None:
            answer = await self.request("POST", "/api/login", credentials)
        self.csrf = str(answer.get("csrf", self.csrf))

    async def table_call(self, path: str, body: Json | None = None) -> Json:
        answer = await self.request("POST", path, body or {})
        table: Json = answer["table"]
        return table

    async def create_table(self, variant: str, seats: int, kind: str) -> Json:
        return await self.table_call("/api/tables",
                                     {"variant": variant, "seats": seats, "kind": kind})

    async def join(self, table_id: str, invite: str | None, seat: int) -> Json:
        return await self.table_call(f"/api/tables/{table_id}/join",
                                     {"invite": invite, "seat": seat})

    async def start(self, table_id: str) -> Json:
        return await self.table_call(f"/api/tables/{table_id}/start")

    async def rematch(self, table_id: str) -> Json:
        return await self.table_call(f"/api/tables/{table_id}/rematch")

    async def leave(self, table_id: str) -> Json:
        return await self.table_call(f"/api/tables/{table_id}/leave")

    async def chain(self, table_id: str) -> list[Json]:
        chain = await self.request("GET", f"/tables/{table_id}/chain")
        if not isinstance(chain, list):
            raise ProtocolError("bad_reply", "a table chain is a JSON list", 200)
        return chain

    async def websocket(self, table_id: str) -> aiohttp.ClientWebSocketResponse:
        try:
            return await self.http.ws_connect(self.base.join(URL(f"/ws/tables/{table_id}")),
                                              heartbeat=30.0, autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            raise ProtocolError("ws_refused", exc.message, exc.status) from None
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise _unreachable(self.base, exc) from None

    async def close(self) -> None:
        await self.http.close()


# --- what a run observed --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AckedAction:
    """An action the server acknowledged (written, then applied): where it must be found."""

    epoch: int | None
    seq: int
    hand: int
    action: Action


@dataclass
class RunStats:
    """Counters and samples of one process's bots; `merge` adds another process's."""

    recording: bool = True  # latency and lateness samples are kept only while recording
    actions: int = 0
    window_actions: int = 0  # acknowledged while recording
    entropy: int = 0
    sent_actions: int = 0
    matches: int = 0
    reconnects: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    raced: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # action sent -> event at every seat
    lateness: list[float] = field(default_factory=list)  # deadline -> automatic action seen
    lobby: list[float] = field(default_factory=list)  # a lobby page's refresh (`bench load`)
    audited: int = 0
    lost_events: int = 0
    lost_records: int = 0
    lost_durable: int = 0
    unverified: int = 0
    unacked: int = 0
    # actions chosen on one hand's view but applied to another hand: none, since every action
    # names its hand and the server refuses a move that crossed the hand's end (`stale`)
    stale_applied: int = 0
    # tables whose seating failed (the server did not answer in time, at overload): not played
    unseated: int = 0
    tables: list[str] = field(default_factory=list)  # the ids of the tables played

    @property
    def lost(self) -> int:
        return self.lost_events + self.lost_records + self.lost_durable

    def merge(self, other: RunStats) -> None:
        for name in ("actions", "window_actions", "entropy", "sent_actions", "matches",
                     "reconnects", "audited", "lost_events", "lost_records", "lost_durable",
                     "unverified", "unacked", "stale_applied", "unseated"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.update(other.errors)
        self.raced.update(other.raced)
        self.latencies.extend(other.latencies)
        self.lateness.extend(other.lateness)
        self.lobby.extend(other.lobby)
        self.tables.extend(other.tables)


class TableRun:
    """One table as its bot seats see it: shared by the seats this process plays."""

    def __init__(self, table_id: str, listeners: int, matches: int, stats: RunStats) -> None:
        self.table_id = table_id
        self.listeners = listeners  # seats played by this process (all seats but server bots)
        self.matches_wanted = matches
        self.stats = stats
        self.stopping = False  # no more actions nor rematches (the benchmark's end)
        self.finished_matches: set[int] = set()
        self.acked: list[AckedAction] = []
        self.seats: list[BotSeat] = []
        self.done = asyncio.Event()
        self._seats_done = 0
        # per event: how many seats received it and when the last one did
        self._arrivals: dict[EventKey, tuple[int, float]] = {}
        # acknowledged actions whose event has not reached every seat yet: when they were sent
        self._waiting: dict[EventKey, float] = {}

    @property
    def wants_more(self) -> bool:
        return not self.stopping and len(self.finished_matches) < self.matches_wanted

    def arrived(self, key: EventKey, now: float) -> None:
        count, _ = self._arrivals.get(key, (0, now))
        self._arrivals[key] = (count + 1, now)
        if count + 1 >= self.listeners:
            sent = self._waiting.pop(key, None)
            if sent is not None and self.stats.recording:
                self.stats.latencies.append(now - sent)
        while len(self._arrivals) > TIMING_WINDOW:
            del self._arrivals[next(iter(self._arrivals))]

    def acknowledged(self, acked: AckedAction, sent: float) -> None:
        self.acked.append(acked)
        self.stats.actions += 1
        if self.stats.recording:
            self.stats.window_actions += 1
        key = (acked.epoch, acked.seq)
        count, last = self._arrivals.get(key, (0, 0.0))
        if count >= self.listeners:
            if self.stats.recording:
                self.stats.latencies.append(last - sent)
        else:
            self._waiting[key] = sent
            while len(self._waiting) > TIMING_WINDOW:
                del self._waiting[next(iter(self._waiting))]

    def match_finished(self, number: int) -> None:
        if number not in self.finished_matches:
            self.finished_matches.add(number)
            self.stats.matches += 1

    def seat_done(self) -> None:
        self._seats_done += 1
        if self._seats_done >= self.listeners:
            self.done.set()


class _Throttle:
    """A token bucket under the server's message rate."""

    def __init__(self, rate: float) -> None:
        self.set_rate(rate)
        self._tokens = self._burst
        self._at = time.monotonic()

    def set_rate(self, rate: float) -> None:
        self._rate = max(1.0, rate * RATE_SHARE)
        self._burst = max(1.0, 2 * self._rate)

    async def take(self) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            await asyncio.sleep((1 - self._tokens) / self._rate)


# --- one seat over the WebSocket ------------------------------------------------------------------

class BotSeat:
    """One seat's WebSocket, played with `choose_action` (or, for a sleeper, never acted on, so
    the server's clock acts for it: the benchmark measures those automatic actions)."""

    def __init__(self, session: BotSession, run: TableRun, seat: int, *, pace: float,
                 rng: random.Random, sleeper: bool = False) -> None:
        self.session = session
        self.run = run
        self.seat = seat
        self.pace = pace
        self.rng = rng
        self.sleeper = sleeper
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.epoch: int | None = None
        self.last_seq = 0
        self.view: Json | None = None
        self.status = ""
        self.match_number = 0
        self.hand = 0
        self.view_hand: int | None = None  # the table hand number `view` belongs to
        self.finished = False
        self.seen: dict[EventKey, int] = {}  # update events received -> their hand
        self.snapshots: list[EventKey] = []  # where a snapshot replaced missed events
        self._acted_seq = -1
        # the table's latest event when the last `welcome` came: the events up to it are a
        # replay of history (their views' `legal` as they were then), so no move before it
        self._replay_to = 0
        self._entropy_sent: set[tuple[int | None, int]] = set()
        self._inflight: dict[int, tuple[str, float, int, Json]] = {}
        self._next_id = 0
        self._turn: asyncio.Task[None] | None = None
        self._ending: asyncio.Task[None] | None = None
        self._handled_match = 0  # the last match whose end this seat answered
        self._leaving = False
        self._throttle = _Throttle(DEFAULT_RATE)
        self._my_deadlines: dict[int, float] = {}  # a sleeper's pending deadlines (unix s)
        run.seats.append(self)

    # -- connection

    async def connect(self) -> None:
        """Open the socket and say hello (the first time: before the match starts)."""
        self.ws = await self.session.websocket(self.run.table_id)
        await self._send({"type": "hello", "last_seq": self.last_seq, "epoch": self.epoch})

    async def play(self) -> None:
        """Read and act until this seat is done; reopen the socket whenever it drops."""
        failures = 0
        try:
            while not self.finished:
                if self.ws is None or self.ws.closed:
                    try:
                        await self.connect()
                    except (Unreachable, ProtocolError) as exc:
                        failures += 1
                        if failures >= RECONNECT_ATTEMPTS or (
                                isinstance(exc, ProtocolError) and exc.status in (403, 404)):
                            self._error("unreachable" if isinstance(exc, Unreachable)
                                        else exc.code)
                            return
                        await asyncio.sleep(min(RECONNECT_MAX,
                                                RECONNECT_FIRST * 2 ** (failures - 1)))
                        continue
                try:
                    got = await self._read()
                except (aiohttp.ClientError, ConnectionError, RuntimeError):
                    got = False  # the socket broke while a reply was being sent
                    if self.ws is not None:
                        await self.ws.close()
                if got and not self.finished:
                    failures = 0
                if not self.finished:
                    self.run.stats.reconnects += 1
                    self._lose_inflight()
        finally:
            await self._stop_turn()
            self.run.seat_done()

    async def close(self) -> None:
        """Stop for good (the benchmark's end): no more actions, the socket closed."""
        self.finished = True
        await self._stop_turn()
        if self.ws is not None and not self.ws.closed:
            await self.ws.close()

    async def _read(self) -> bool:
        """Handle messages until the socket closes; True when at least one arrived."""
        assert self.ws is not None
        got = False
        async for msg in self.ws:
            if msg.type is not aiohttp.WSMsgType.TEXT:
                continue
            got = True
            try:
                data = orjson.loads(msg.data)
            except ValueError:
                self._error("bad_json_from_server")
                continue
            if isinstance(data, dict):
                await self._handle(data)
            if self.finished:
                break
        return got

    def _lose_inflight(self) -> None:
        # messages sent on a socket that dropped: their answers will never come
        self.run.stats.unacked += sum(1 for kind, *_ in self._inflight.values()
                                      if kind == "action")
        self._inflight.clear()
        self._acted_seq = -1

    async def _send(self, message: Json) -> None:
        if self.ws is None or self.ws.closed:
            raise ConnectionResetError("socket closed")
        await self._throttle.take()
        await self.ws.send_frame(orjson.dumps(message), aiohttp.WSMsgType.TEXT)

    def _error(self, code: str) -> None:
        self.run.stats.errors[code] += 1

    # -- messages

    async def _handle(self, data: Json) -> None:
        kind = data.get("type")
        if kind == "welcome":
            self.epoch = data.get("epoch")
            seq = data.get("seq")
            self._replay_to = seq if isinstance(seq, int) else 0
            limits = data.get("limits") or {}
            if isinstance(limits.get("rate_per_second"), int | float):
                self._throttle.set_rate(float(limits["rate_per_second"]))
            self._table(data.get("table"))
        elif kind == "snapshot":
            await self._snapshot(data)
        elif kind == "ack":
            self._ack(data)
        elif kind == "error":
            self._refused(data)
        elif isinstance(data.get("seq"), int):
            await self._event(data)
        self._consider()

    async def _snapshot(self, data: Json) -> None:
        self.epoch = data.get("epoch", self.epoch)
        self.last_seq = int(data["seq"])
        self.snapshots.append((self.epoch, self.last_seq))
        self._acted_seq = -1
        self.view = data.get("view")
        self.view_hand = None  # between hands the view shows a finished hand: no move in it
        self._deadlines(data.get("pending"))
        table = data.get("table")
        self._table(table)
        hand = data.get("hand")
        if isinstance(hand, dict):
            self.hand = self.view_hand = int(hand["hand"])
            if hand.get("phase") == "entropy" and self.seat not in (hand.get("entropy_from")
                                                                   or []):
                await self._entropy(self.hand)
        if self.status == "finished":
            self._match_over()
        elif self.status == "closed":
            self.finished = True

    async def _event(self, data: Json) -> None:
        seq = int(data["seq"])
        if seq <= self.last_seq:
            return  # already had it (a replay overlapping what arrived)
        if seq != self.last_seq + 1:
            # a gap breaks the numbering contract: resynchronise from where we are
            self._error("seq_gap")
            if self.ws is not None:
                await self.ws.close()
            return
        self.last_seq = seq
        kind = data.get("type")
        if kind == "update":
            now = time.perf_counter()
            key = (self.epoch, seq)
            self.seen[key] = int(data["hand"])
            self.run.arrived(key, now)
            self.hand = self.view_hand = int(data["hand"])
            self.view = data.get("view")
            self._deadlines(data.get("pending"))
        elif kind == "commitment":
            self.hand = int(data["hand"])
            await self._entropy(self.hand)
        elif kind == "table":
            self._table(data.get("table"))
        elif kind == "match_over":
            self.view = None
            self._match_over()

    def _table(self, table: object) -> None:
        if isinstance(table, dict):
            self.status = str(table.get("status", self.status))
            self.match_number = int(table.get("match", self.match_number))

    def _deadlines(self, pending: object) -> None:
        """A sleeper times the server's automatic actions: a deadline of its own that is gone
        from the next update was acted on by the server's clock (the sleeper never acts)."""
        if not self.sleeper:
            return
        now = time.time()
        current = {
            int(p["deadline_ms"]): p["deadline_ms"] / 1000.0
            for p in (pending if isinstance(pending, list) else [])
            if isinstance(p, dict) and p.get("seat") == self.seat
        }
        for token, deadline in self._my_deadlines.items():
            if token not in current and now >= deadline and self.run.stats.recording:
                self.run.stats.lateness.append(now - deadline)
        self._my_deadlines = current

    async def _entropy(self, hand: int) -> None:
        if (self.epoch, hand) in self._entropy_sent:
            return
        self._entropy_sent.add((self.epoch, hand))
        msg_id = self._new_id()
        self._inflight[msg_id] = ("entropy", time.perf_counter(), hand, {})
        # the seat's contribution to the deck: fresh OS randomness (docs/FAIRNESS.md 4)
        await self._send({"type": "entropy", "id": msg_id, "hand": hand,
                          "hex": os.urandom(ENTROPY_BYTES).hex()})

    def _ack(self, data: Json) -> None:
        msg_id = data.get("id")
        sent = self._inflight.pop(msg_id, None) if isinstance(msg_id, int) else None
        if sent is None:
            return
        kind, at, hand, action = sent
        if kind == "entropy":
            self.run.stats.entropy += 1
            return
        parsed = action_from_json({**action, "seat": self.seat})
        seq = int(data["seq"])
        # the update an action produced precedes its ack on this socket: it names the hand the
        # server applied the action to
        applied = self.seen.get((self.epoch, seq), hand)
        if applied != hand:
            self.run.stats.stale_applied += 1
        self.run.acknowledged(AckedAction(self.epoch, seq, applied, parsed), at)

    def _refused(self, data: Json) -> None:
        code = str(data.get("error"))
        # a move still in flight when this seat left its table is a spectator's move by then
        if code in RACE_CODES or (self._leaving and code == "not_seated"):
            self.run.stats.raced[code] += 1
        else:
            self._error(code)
        msg_id = data.get("id")
        if isinstance(msg_id, int):
            self._inflight.pop(msg_id, None)
        # a refused action changes nothing: the next update (or the server's clock) moves on

    def _moving(self) -> bool:
        """A move of this seat is unanswered: the next is chosen once it is (acked or refused),
        on a view that shows it, as the browser does. (Chosen on an event that came before the
        move's own update, a second move was a second decision on the same one: a vote changed
        by accident, or, since moves name their `last_seq`, refused as stale: 8% of a full-speed
        benchmark's moves.)"""
        return any(kind == "action" for kind, *_ in self._inflight.values())

    def _may_move(self, view: Json) -> bool:
        """`view` offers a move this seat has not made yet: caught up, its last move answered."""
        return (bool(view.get("legal")) and self._acted_seq != self.last_seq
                and self.last_seq >= self._replay_to and not self._moving())

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- acting

    def _consider(self) -> None:
        """Schedule a move when the view offers one; the move reads the newest view."""
        if self.sleeper or self.finished or self.run.stopping or self.view is None:
            return
        if not self._may_move(self.view):
            return
        if self._turn is None or self._turn.done():
            self._turn = asyncio.create_task(self._act_after(self.pace))

    async def _act_after(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        view, view_hand = self.view, self.view_hand
        if (view is None or view_hand is None or not self._may_move(view)
                or self.finished or self.run.stopping):
            return
        try:
            action = choose_action(view, self.rng)
        except NothingToDo:
            return  # the partner moves first; the next update says what is left to do
        self._acted_seq = self.last_seq
        msg_id = self._new_id()
        self._inflight[msg_id] = ("action", time.perf_counter(), view_hand, action)
        self.run.stats.sent_actions += 1
        try:
            await self._send({"type": "action", "id": msg_id, "hand": view_hand,
                              "last_seq": self._acted_seq, "action": action})
        except (ConnectionError, RuntimeError):
            self._inflight.pop(msg_id, None)
            self.run.stats.sent_actions -= 1

    async def _stop_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is not None and not turn.done():
            turn.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await turn

    # -- the end of a match

    def _match_over(self) -> None:
        if self._handled_match == self.match_number:
            return
        self._handled_match = self.match_number
        self.run.match_finished(self.match_number)
        self._ending = asyncio.create_task(self._after_match())

    async def _after_match(self) -> None:
        table_id = self.run.table_id
        try:
            if self.run.wants_more:
                await self.session.rematch(table_id)
                return
            self._leaving = True
            await self.session.leave(table_id)
        except ProtocolError as exc:
            # not_finished: the rematch already started (the snapshot was older than that)
            if exc.code != "not_finished":
                self._error(exc.code)
                self.finished = True
        except Unreachable:
            self._error("unreachable")
            # the socket drops too; the snapshot after reconnecting asks again
            self._handled_match = 0
            return
        else:
            self.finished = True
        if self.finished and self.ws is not None and not self.ws.closed:
            await self.ws.close()


# --- auditing acknowledged actions ----------------------------------------------------------------

def _missing_in_order(wanted: Sequence[Action], found: Iterable[Action]) -> int:
    """How many of `wanted` (in order) are missing from `found`."""
    it = iter(found)
    matched = 0
    for action in wanted:
        for candidate in it:
            if candidate == action:
                matched += 1
                break
        else:
            break
    return len(wanted) - matched


def audit_table(run: TableRun, records: dict[int, list[Json]],
                durable: dict[int, list[Json]] | None = None) -> None:
    """Count acknowledged actions missing from the events or from the written rows.

    `records`: hand number -> its record's actions (finished hands: the record, written in the
    same commit that drops the hand's action rows, is what keeps them); `durable`: hand number
    -> the actions written so far for hands still in play (the benchmark reads them from the
    database). An ack from another server run (epoch) is checked only against the rows, not
    against that run's events.
    """
    stats = run.stats
    by_seat: dict[int, BotSeat] = {seat.seat: seat for seat in run.seats}
    wanted: dict[tuple[int, int], list[Action]] = {}
    for acked in run.acked:
        stats.audited += 1
        seat = by_seat.get(acked.action.seat)
        if seat is not None and (acked.epoch, acked.seq) not in seat.seen and not any(
                epoch == acked.epoch and seq >= acked.seq for epoch, seq in seat.snapshots):
            stats.lost_events += 1
        wanted.setdefault((acked.hand, acked.action.seat), []).append(acked.action)
    for (hand, seat_index), actions in wanted.items():
        def of_seat(items: list[Json], seat_index: int = seat_index) -> list[Action]:
            parsed = (action_from_json(item) for item in items)
            return [a for a in parsed if a.seat == seat_index and a.kind is not ActionKind.TIMEOUT]

        if hand in records:
            stats.lost_records += _missing_in_order(actions, of_seat(records[hand]))
        elif durable is None:
            stats.unverified += len(actions)  # the hand is still in play: no record yet
        else:
            # a covered card is written by its position while its hand is in play (its face is
            # its owner's: server.live.table.action_at_rest): compared without card or position
            stats.lost_durable += _missing_in_order(
                [_unfaced(a) for a in actions],
                [_unfaced(a) for a in of_seat(durable.get(hand, []))])


def _unfaced(action: Action) -> Action:
    if action.kind is ActionKind.PLAY and action.covered:
        return Action(action.seat, ActionKind.PLAY, covered=True)
    return action


def chain_actions(chain: list[Json]) -> dict[int, list[Json]]:
    return {int(entry["hand"]): list(entry["actions"]) for entry in chain
            if entry.get("kind") == "hand"}


# --- setting tables up ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TablePlan:
    variant: str
    seats: int
    kind: str  # private | training
    pace: float
    matches: int


async def seat_table(plan: TablePlan, sessions: Sequence[BotSession], stats: RunStats,
                     rng: random.Random, sleepers: Sequence[int] = ()) -> TableRun:
    """Create a table with the first session, join the others with the invite code, connect
    every seat (hello before the start, so nobody misses the first commitment) and start."""
    owner = sessions[0]
    table = await owner.create_table(plan.variant, plan.seats, plan.kind)
    table_id = str(table["id"])
    for index, session in enumerate(sessions[1:], start=1):
        await session.join(table_id, table.get("invite"), index)
    run = TableRun(table_id, len(sessions), plan.matches, stats)
    for index, session in enumerate(sessions):
        seat = BotSeat(session, run, index, pace=plan.pace,
                       rng=random.Random(rng.getrandbits(64)), sleeper=index in sleepers)
        await seat.connect()
    return run


def humans_per_table(plan: TablePlan) -> int:
    """Bot clients a table needs: every seat at a private table, the owner at a training one
    (the server's own bots fill the rest at start)."""
    return plan.seats if plan.kind == "private" else 1


# --- the command line -----------------------------------------------------------------------------

class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0 and 3600")
    return value


def _url(text: str) -> URL:
    try:
        url = URL(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a URL: {text!r}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return url.with_path("/").with_query(None).with_fragment(None)


def _parser() -> _Parser:
    parser = _Parser(prog="barajamos bots",
                     description="Run bot players against a Barajamos server over its public "
                     "protocol; prints matches finished, actions and errors.")
    parser.add_argument("--url", type=_url, required=True, help="the server, e.g. "
                        "http://127.0.0.1:8080")
    parser.add_argument("--tables", type=_positive_int, default=1, help="tables (default 1)")
    parser.add_argument("--variant", choices=[v.value for v in Variant], required=True)
    parser.add_argument("--seats", type=int, choices=[2, 4], required=True)
    parser.add_argument("--pace", type=_seconds, default=1.0,
                        help="seconds a bot waits before each action (default 1)")
    parser.add_argument("--matches", type=_positive_int, default=1,
                        help="matches per table; rematch in between, then leave (default 1)")
    parser.add_argument("--kind", choices=["private", "training"], default="private",
                        help="private: bots in every seat; training: one bot per table, the "
                        "server's bots in the other seats (default private)")
    parser.add_argument("--name-prefix", default="bot",
                        help="account names are PREFIX00000, PREFIX00001, ... (default bot)")
    parser.add_argument("--password-prefix", default="barajamos-bots",
                        help="the accounts' passwords derive from it: choose your own secret "
                        "on a shared server (default barajamos-bots)")
    return parser


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank q-th percentile (None without values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def describe_latency(values: Sequence[float]) -> str:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    if p50 is None or p99 is None:
        return "no samples"
    return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms ({len(values)} actions)"


def describe_errors(errors: Counter[str]) -> str:
    return ", ".join(f"{code} {n}" for code, n in errors.most_common()) or "none"


async def run_fleet(base: URL, plan: TablePlan, tables: int, name_prefix: str,
                    password_prefix: str, *, setup_concurrency: int = 16,
                    tune_gc: bool = True) -> RunStats:
    """Log the bots in, seat and start `tables` tables, play them to the end, audit them.

    `tune_gc`: once seated, hand this process's garbage collection to `quiet_gc` (tests, whose
    process is pytest's, leave it as it is)."""
    stats = RunStats()
    per_table = humans_per_table(plan)
    connector = aiohttp.TCPConnector(limit=0)
    sessions = [BotSession(base, bot_account(name_prefix, password_prefix, i), connector)
                for i in range(tables * per_table)]
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    gate = asyncio.Semaphore(setup_concurrency)
    runs: list[TableRun] = []
    tasks: list[asyncio.Task[None]] = []

    async def one(index: int) -> None:
        mine = sessions[index * per_table:(index + 1) * per_table]
        async with gate:
            for session in mine:
                await session.login()
            run = await seat_table(plan, mine, stats, rng)
            runs.append(run)
            stats.tables.append(run.table_id)
            tasks.extend(asyncio.create_task(seat.play()) for seat in run.seats)
            await mine[0].start(run.table_id)

    try:
        await asyncio.gather(*(one(i) for i in range(tables)))
        if tune_gc:
            quiet_gc()  # the tables are seated: what is loaded stays
        await asyncio.gather(*tasks)
        for run in runs:
            audit_table(run, chain_actions(await run.seats[0].session.chain(run.table_id)))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(seat.close() for run in runs for seat in run.seats))
        for session in sessions:
            await session.close()
        await connector.close()
    return stats


def describe_tables(url: str, tables: list[str], most: int = 20) -> str:
    """The tables played, so that their chains can be checked (`barajamos-verify chain`)."""
    if not tables:
        return "tables: none"
    shown = " ".join(tables[:most])
    more = f" and {len(tables) - most} more" if len(tables) > most else ""
    return (f"tables: {shown}{more} (each one's hands: barajamos-verify chain"
            f" {url.rstrip('/')}/tables/ID/chain --key KEY, KEY the public_key of"
            f" {url.rstrip('/')}/api/key)")


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        plan = TablePlan(args.variant, args.seats, args.kind, args.pace, args.matches)
        check_prefixes(args.name_prefix, args.password_prefix,
                       args.tables * humans_per_table(plan))
    except (_UsageError, ValueError) as exc:
        print(f"barajamos bots: {exc} (see --help)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        stats = run(run_fleet(args.url, plan, args.tables, args.name_prefix,
                                      args.password_prefix))
    except Unreachable as exc:
        print(f"barajamos bots: {exc}", file=sys.stderr)
        return 2
    except ProtocolError as exc:
        hint = ""
        if exc.code == "too_many_accounts":
            # the fleet makes one account per seat the first time (later runs log them in)
            hint = ("; a fleet this large needs the house started with"
                    " BARAJAMOS_REGISTRATIONS_PER_HOUR=0 (docs/OPERATIONS.md)")
        print(f"barajamos bots: the server refused: {exc.code} ({exc.message}){hint}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("barajamos bots: interrupted", file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - started
    wanted = args.tables * args.matches
    print(f"bots: {args.tables} {args.variant} tables, {args.seats} seats, {args.kind}, "
          f"pace {args.pace:g} s, {elapsed:.1f} s")
    print(f"matches finished: {stats.matches} of {wanted}")
    print(f"actions: {stats.actions} acknowledged ({stats.sent_actions} sent), "
          f"entropy: {stats.entropy}")
    print(f"errors: {describe_errors(stats.errors)}; reconnects: {stats.reconnects}")
    print(f"refused as out of date (raced another seat): {describe_errors(stats.raced)}; "
          f"applied to the next hand: {stats.stale_applied}")
    print(f"latency action -> every seat: {describe_latency(stats.latencies)}")
    print(f"lost actions: {stats.lost} of {stats.audited} acknowledged "
          f"(missing from events {stats.lost_events}, from hand records {stats.lost_records})")
    print(describe_tables(str(args.url), stats.tables))
    return 0 if stats.matches >= wanted and stats.lost == 0 else 1
