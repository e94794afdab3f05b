"""Helpers for the live-house tests: players with their own cookie jars, a protocol client that
plays with the bot policy over a real WebSocket, and the checks run over whole matches (no hidden
card ever sent, every record verifies). No tests here."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient
from yarl import URL

from server.bots import NothingToDo, choose_action
from server.clock import Clock
from server.live import HOUSE, LIVE_SETTINGS, House
from truco import (
    Card,
    MatchConfig,
    action_from_json,
    apply,
    hidden_cards_for,
    new_match,
    parse_card,
    start_hand,
)
from truco.fairness import deal_cards, derive_deck
from verifier.check import check_chain


def modest(view: dict[str, Any]) -> dict[str, Any]:
    """The view with no raise on offer (no step up the truco ladder, no falta envido).

    A side that plays with it keeps a Paulista or Mineiro hand to the other side's one truco at
    most, so a match's first hand never ends it: a raise to twelve does, in about 0.6% of the
    bot policy's matches, and a test that needs a second hand would then wait for it in vain."""
    legal = [a for a in view.get("legal") or [] if a["do"] not in ("raise", "falta_envido")]
    return {**view, "legal": legal}


# bots act at once and the rate limiter stays out of the way of clients playing flat out
FAST: dict[str, Any] = {"bot_think": 0.0, "rate_per_second": 10_000.0, "rate_burst": 10_000.0}


@dataclass
class Live:
    client: TestClient  # type: ignore[type-arg]
    app: web.Application

    @property
    def base(self) -> URL:
        return self.client.make_url("/")

    @property
    def house(self) -> House:
        return self.app[HOUSE]

    @property
    def key(self) -> str:
        return self.house.public_key.hex()


async def start_live(make_app: Callable[..., web.Application],
                     aiohttp_client: Callable[..., Awaitable[TestClient]],  # type: ignore[type-arg]
                     clock: Clock, **settings: Any) -> Live:
    """The real app on a test server, with live settings replaced before it starts."""
    app = make_app(clock=clock)
    app[LIVE_SETTINGS] = dataclasses.replace(app[LIVE_SETTINGS], **{**FAST, **settings})
    return Live(await aiohttp_client(app), app)


CARD = re.compile(r"^[4567QJKA23][CHSD]$")
PASSWORD = "correct horse 42"
RECV_TIMEOUT = 10.0


class Player:
    """One browser: its own cookie jar, CSRF token and name."""

    def __init__(self, base: URL, name: str) -> None:
        self.base = base
        self.name = name
        self.session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.csrf = ""

    async def signup(self) -> Player:
        async with self.session.get(self.base / "api/session") as resp:
            self.csrf = (await resp.json())["csrf"]
        async with self.session.post(self.base / "api/register",
                                     json={"name": self.name, "password": PASSWORD},
                                     headers={"X-CSRF-Token": self.csrf}) as resp:
            assert resp.status == 201, await resp.text()
            self.csrf = (await resp.json())["csrf"]  # a login changes the CSRF token
        return self

    async def login(self) -> Player:
        async with self.session.get(self.base / "api/session") as resp:
            self.csrf = (await resp.json())["csrf"]
        async with self.session.post(self.base / "api/login",
                                     json={"name": self.name, "password": PASSWORD},
                                     headers={"X-CSRF-Token": self.csrf}) as resp:
            assert resp.status == 200, await resp.text()
            self.csrf = (await resp.json())["csrf"]  # a login changes the CSRF token
        return self

    async def post(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        async with self.session.post(self.base.join(URL(path)), json=body or {},
                                     headers={"X-CSRF-Token": self.csrf}) as resp:
            answer = await resp.json()
            if isinstance(answer, dict) and isinstance(answer.get("csrf"), str):
                self.csrf = answer["csrf"]  # a login or logout changes the CSRF token
            return resp.status, answer

    async def get(self, path: str) -> tuple[int, Any]:
        async with self.session.get(self.base.join(URL(path))) as resp:
            return resp.status, await resp.json()

    async def ws(self, table_id: str, **kwargs: Any) -> aiohttp.ClientWebSocketResponse:
        ws: aiohttp.ClientWebSocketResponse = await self.session.ws_connect(
            self.base.join(URL(f"/ws/tables/{table_id}")), **kwargs)
        return ws

    async def close(self) -> None:
        await self.session.close()


async def players(base: URL, *names: str) -> list[Player]:
    return [await Player(base, name).signup() for name in names]


async def create_table(owner: Player, variant: str, seats: int, kind: str,
                       mode: str = "vote") -> dict[str, Any]:
    status, body = await owner.post("/api/tables", {"variant": variant, "seats": seats,
                                                    "mode": mode, "kind": kind})
    assert status == 201, body
    table: dict[str, Any] = body["table"]
    return table


def cards_in(obj: Any) -> set[Card]:
    """Every card notation anywhere in a message, except the list of manilhas (which names
    the ranks that are trumps this hand, not anybody's cards)."""
    found: set[Card] = set()
    if isinstance(obj, str):
        if CARD.match(obj):
            found.add(parse_card(obj))
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key != "manilhas":
                found |= cards_in(value)
    elif isinstance(obj, list):
        for value in obj:
            found |= cards_in(value)
    return found


@dataclass
class SeatClient:
    """A player's protocol client, driven by the bot policy (or scripted by a test)."""

    ws: aiohttp.ClientWebSocketResponse
    seat: int | None
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    last_seq: int = 0
    view: dict[str, Any] | None = None
    received: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    over: dict[str, Any] | None = None
    acted_at: int = -1
    send_entropy: bool = True
    autoplay: bool = True
    epoch: int | None = None
    next_id: int = 0
    # the table hand number of `view` (None before the first deal): sent with every action, so
    # a move chosen on a hand that has just ended is refused as stale instead of applied later
    view_hand: int | None = None
    # never raises (see `modest`): for a test that needs the match to go on past its first hand
    modest: bool = False

    unanswered: dict[Any, dict[str, Any]] = field(default_factory=dict)
    entropy_sent: dict[int, str] = field(default_factory=dict)

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("id") is not None:
            self.unanswered[message["id"]] = message
        await self.ws.send_str(json.dumps(message))

    async def hello(self) -> None:
        await self.send({"type": "hello", "last_seq": self.last_seq, "epoch": self.epoch})

    async def recv(self, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        try:
            msg = await self.ws.receive(timeout=timeout)
        except TimeoutError:
            print("TIMEOUT; last messages:", json.dumps(self.received[-4:])[:3000])
            raise
        if msg.type is not aiohttp.WSMsgType.TEXT:
            print("LAST", self.received[-5:])
            raise ConnectionError(f"socket ended: {msg.type} {msg.data!r} {msg.extra!r}")
        data: dict[str, Any] = json.loads(msg.data)
        self.track(data)
        return data

    def track(self, data: dict[str, Any]) -> None:
        self.received.append(data)
        kind = data["type"]
        if kind == "welcome":
            self.epoch = data["epoch"]
        if kind == "snapshot":
            self.last_seq = data["seq"]
            self.view = data["view"]
            info = data["hand"]
            # between hands the view shows the hand just finished, which offers no move
            self.view_hand = info["hand"] if info is not None else None
        elif "seq" in data and kind not in ("ack", "welcome"):
            assert data["seq"] == self.last_seq + 1, (data, self.last_seq)
            self.last_seq = data["seq"]
        if kind == "update":
            self.view = data["view"]
            self.view_hand = data["hand"]
        elif kind == "match_over":
            self.over = data
        elif kind == "error":
            self.errors.append(data)
        # a rate-limited message was not handled: it stays unanswered until sent again
        if kind in ("ack", "error") and data.get("id") is not None \
                and data.get("error") != "rate_limited":
            self.unanswered.pop(data["id"], None)

    async def until(self, kind: str, timeout: float = RECV_TIMEOUT,
                    react: bool = True) -> dict[str, Any]:
        """Read (and, unless told not to, play) until a message of that type arrives."""
        while True:
            data = await self.recv(timeout)
            if react:
                await self.react(data)
            if data["type"] == kind:
                return data

    async def react(self, data: dict[str, Any]) -> None:
        """What a well-behaved client does with a message: entropy, then its moves; after a
        `rate_limited` refusal it waits a little and sends again the message it names (all
        unanswered ones when it names none)."""
        if data["type"] == "error" and data["error"] == "rate_limited":
            await asyncio.sleep(0.1)
            refused = self.unanswered.get(data["id"]) if data["id"] is not None else None
            for message in [refused] if refused is not None else list(self.unanswered.values()):
                await self.send(message)
            return
        hand = data.get("hand") if data["type"] == "snapshot" else None
        due = (data["type"] == "commitment"
               or (isinstance(hand, dict) and hand["phase"] == "entropy"
                   and self.seat not in hand["entropy_from"]))
        if due and self.send_entropy and self.seat is not None:
            number = data["hand"] if data["type"] == "commitment" else hand["hand"]  # type: ignore[index]
            self.next_id += 1
            self.entropy_sent[number] = secrets.token_hex(32)
            await self.send({"type": "entropy", "id": f"e{self.next_id}", "hand": number,
                             "hex": self.entropy_sent[number]})
        if data["type"] in ("update", "snapshot") and self.autoplay and self.view \
                and self.view.get("legal") and self.acted_at != self.last_seq:
            self.acted_at = self.last_seq
            try:
                action = choose_action(modest(self.view) if self.modest else self.view,
                                       self.rng)
            except NothingToDo:
                return
            self.next_id += 1
            await self.send({"type": "action", "id": self.next_id, "hand": self.view_hand,
                             "last_seq": self.last_seq, "action": action})

    async def play(self, stop_after_seq: int | None = None) -> None:
        """Play with the policy until the match is over (or past a given event number)."""
        await self.react({"type": "update"})  # a move may be due on the view already held
        while self.over is None:
            data = await self.recv()
            await self.react(data)
            if stop_after_seq is not None and self.last_seq >= stop_after_seq:
                return


async def connect(player: Player, table_id: str, seat: int | None,
                  rng_seed: int = 7) -> SeatClient:
    client = SeatClient(await player.ws(table_id), seat, random.Random(rng_seed))
    await client.hello()
    return client


async def play_all(clients: list[SeatClient]) -> None:
    try:
        await asyncio.wait_for(asyncio.gather(*(c.play() for c in clients)), timeout=60)
    except TimeoutError:
        for c in clients:
            print("STUCK", c.seat, json.dumps(c.received[-3:])[:4000])
        raise


async def play_training_match(player: Player, variant: str = "mineiro") -> str:
    """A whole 1x1 training match played by `player` at seat 0 against a bot: its table's id."""
    table = await create_table(player, variant, 2, "training")
    seat = await connect(player, table["id"], 0)
    await player.post(f"/api/tables/{table['id']}/start")
    await play_all([seat])
    await seat.ws.close()
    return str(table["id"])


async def fetch_chain(player: Player, table_id: str) -> list[dict[str, Any]]:
    status, chain = await player.get(f"/tables/{table_id}/chain")
    assert status == 200, chain
    assert isinstance(chain, list)
    return chain


def verify_chain(chain: list[dict[str, Any]], public_key: str) -> None:
    report = check_chain(chain, pinned=[bytes.fromhex(public_key)])
    assert report.ok, report.failures


def hand_records(chain: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in chain if entry["kind"] == "hand"]


def check_no_hidden_cards(client: SeatClient, chain: list[dict[str, Any]]) -> int:
    """Replay every hand step by step; each `update` a seat received may show no card that
    `hidden_cards_for` hides from it at that point. Returns the number of updates checked."""
    records = {r["hand"]: r for r in hand_records(chain)}
    by_hand: dict[int, list[dict[str, Any]]] = {}
    for message in client.received:
        if message["type"] == "update":
            by_hand.setdefault(message["hand"], []).append(message)
        elif message["type"] not in ("snapshot", "welcome"):
            assert not cards_in(message), message
    checked = 0
    for number, updates in by_hand.items():
        record = records[number]
        config = MatchConfig(record["variant"], record["seats"], record["mode"])
        seed = bytes.fromhex(record["seed"])
        contributions = [None if c is None else bytes.fromhex(c) for c in record["contributions"]]
        dealer = record["dealer"]["seat"]
        deal = deal_cards(derive_deck(seed, record["table"], number, contributions),
                          config.variant, config.seats, dealer)
        state = new_match(config, first_dealer=dealer,
                          score=(record["score_before"][0], record["score_before"][1]))
        state, _ = start_hand(state, deal)
        states = [state]
        for action in record["actions"]:
            state, _ = apply(state, action_from_json(action))
            states.append(state)
        assert len(updates) <= len(states)
        for index, message in enumerate(updates):
            hidden = hidden_cards_for(states[index], client.seat)
            leaked = cards_in(message) & hidden
            assert not leaked, (number, index, leaked)
            checked += 1
    return checked
