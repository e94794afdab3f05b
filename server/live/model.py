"""The live house's vocabulary: table kinds and statuses, settings, and the error every refusal
raises (rendered as `{"error": code, "message": ...}` over HTTP and the WebSocket alike)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

import orjson

from server.config import Config


class TableKind(StrEnum):
    PRIVATE = "private"  # joined with the invite code
    TRAINING = "training"  # bots fill the free seats
    RANKED = "ranked"  # created by the matchmaker
    ARENA = "arena"  # created by the matchmaker

    @property
    def competitive(self) -> bool:
        """Ranked and arena: the short clock, the stricter abandonment limit, no cancel."""
        return self in (TableKind.RANKED, TableKind.ARENA)


class TableStatus(StrEnum):
    OPEN = "open"  # seating
    PLAYING = "playing"  # a match in play
    FINISHED = "finished"  # match over: rematch or leave
    CLOSED = "closed"  # everybody left, or the match was cancelled


class HandPhase(StrEnum):
    ENTROPY = "entropy"  # committed, collecting the players' contributions
    PLAYING = "playing"  # dealt


class SeatEventKind(StrEnum):
    """Evidence kept per seat for abandonment reviews (stable codes, persisted)."""

    DEADLINE = "deadline"
    AUTOMATIC = "automatic"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    ACTED = "acted"  # the player acted again: the absence (and the streak) ended
    BACK = "back"  # the player said they are back: the absence ended (the streak did not)


class AbandonTrigger(StrEnum):
    AUTOMATIC_ACTIONS = "automatic_actions"
    LEFT = "left"


class AbandonConsequence(StrEnum):
    FORFEIT = "forfeit"
    NONE_RESTART = "none_restart"  # a server restart overlapped the streak: no penalty


class LiveError(Exception):
    """A refused request or message: `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str, status: int = 400,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.headers = headers


@dataclass(frozen=True, slots=True)
class LiveSettings:
    """Protocol limits and bot pacing; tests replace them through the app key before startup."""

    max_message_bytes: int = 4096
    max_frame_bytes: int = 64 * 1024
    rate_per_second: float = 20.0
    rate_burst: float = 40.0
    # a client still flooding after this many refused messages is disconnected
    flood_close_after: int = 100
    # bounds the events a reconnecting client may be sent again instead of a snapshot: half this
    # many are kept per table
    send_queue: int = 256
    # a client with this much sent to it and not yet read is too slow: it is disconnected
    send_buffer_bytes: int = 512 * 1024
    # a socket the house closes (too slow, flooding, shutting down) has this long to let its
    # close frame out and answer it; one that reads nothing is then dropped (its transport
    # aborted), so its seat is free and the handler ends
    close_grace_seconds: float = 5.0
    heartbeat_seconds: float = 20.0
    # events a table keeps for reconnects (at most half `send_queue`): about three hands of a
    # four-seat table. Each costs some 420 bytes; 128 of them were a quarter of the memory a
    # connected player costs the server. A longer gap gets a snapshot instead, as complete.
    history: int = 64
    # a bot's think time on the injected clock; 0: it acts as soon as it may
    bot_think: float = 0.8
    # hands per seed chain before a new one is anchored
    chain_length: int = 1024
    list_limit: int = 200
    # tables not yet started that one player may sit at when creating another: one player
    # cannot fill the lobby's list (it shows `list_limit` open tables) with tables of their own
    max_open_tables: int = 5
    # matches in play that one player may sit at when creating another table: nobody plays
    # more at once, and every table started costs the house memory and rows (a script started
    # 2,158 training tables from one account in 14 s)
    max_playing_tables: int = 8
    # table sockets one user may hold open at once (every tab of a table page holds one): one
    # account cannot multiply the per-connection rate limit, or the memory a socket costs
    max_sockets_per_user: int = 32
    # sockets one user may open to one table: `connect_burst` at once, then one more every
    # `connect_interval` seconds (injected clock). A seat's connections and losses are table
    # events and abandonment evidence: opening and closing a socket in a loop flooded both (600
    # events in a second). A page's reconnects (backing off to 5 s) stay well inside
    connect_burst: int = 20
    connect_interval: float = 5.0


def decision_seconds(config: Config, kind: TableKind) -> float:
    return config.clock_ranked if kind.competitive else config.clock_casual


def abandon_limit(kind: TableKind) -> int:
    """Consecutive automatic actions that make an abandonment (RULES.md, Clocks)."""
    return 6 if kind.competitive else 10


def wire_json(message: object) -> bytes:
    """A message as compact UTF-8 JSON (orjson), at its exact size.

    orjson's result keeps the whole buffer it grew while writing (several kilobytes for a
    message of one), and these texts are kept in histories and send queues: the copy returns
    that memory at once.
    """
    return bytes(memoryview(orjson.dumps(message)))


@contextlib.contextmanager
def counted(counter: dict[int, int], user_ids: Iterable[int]) -> Iterator[None]:
    """Each of `user_ids` counted once more in `counter` (requests of one kind in flight, per
    user: tables being created, matches being started) while the block runs."""
    users = list(user_ids)
    for user_id in users:
        counter[user_id] = counter.get(user_id, 0) + 1
    try:
        yield
    finally:
        for user_id in users:
            left = counter.pop(user_id) - 1
            if left:
                counter[user_id] = left
