"""The ranked service of the house: the queues, the pairing loop, the arenas, and the settlement
of finished ranked and arena matches (the rules they apply: docs/RANKED.md).

`setup(app)` registers the service; it starts and stops with the app (`cleanup_ctx`). Every
second of the injected clock (`CLOCK`, so tests run it in virtual time) it pairs the queues
(`matchmaking.Matchmaker`), seats the running arenas, closes the arenas whose time is up (their
standings and podium go to `arena_results`), and hands every table it formed to the live house
through the `TableLauncher` registered under `LAUNCHER`. Without a launcher the pairs are still
formed and kept waiting, each player told so: no table is pretended.

A ranked match is named `<table kind>:<table id>:<match number>` everywhere (chips, ratings,
abandonment records), so the settlement of a table's match can always find its stakes. When a
match ends the live house calls `RankedService.match_ended` (or, without the service's
bookkeeping, the module function `settle_match`): the stake payout or refund, the Glicko-2
update (ranked tables only) and, for an abandonment, the review record with its penalty; all in
one transaction and idempotent.

The queue tickets, the duo invitations and the running arenas are stored (`state`, migrations
024 and 036) before the request that changed them is answered, and `restore` rebuilds them at
start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

import asyncpg
from aiohttp import web

from server.app import CLOCK, LAST_ADDRESS, POOL
from server.clock import Clock, Timer
from server.db import Conn
from server.live.model import TableKind
from server.ranked import arena_results, ledger, ratings, review, state
from server.ranked.arena import Arena, ArenaError
from server.ranked.matchmaking import (
    Match,
    Matchmaker,
    MatchmakingError,
    QueueKey,
    Window,
)
from server.ranked.store import Db, StoreError, check_id, transaction
from truco.outcome import Termination
from truco.variants import Variant

log = logging.getLogger("barajamos.ranked")
# how often the house warns that every queued player comes from one address
ONE_ADDRESS_EVERY = 600.0

_TABLE_ID = re.compile(r"[0-9a-f]{16}")
# a duo invitation not answered within this time lapses
INVITATION_LIFETIME = 10 * 60.0
# an arena lasts at most a day; an operator's typo should not open a year-long event
MAX_ARENA = 24 * 3600.0
# how far ahead an arena may be scheduled: a day, as the operators' form offers (the API may not
# go further: a start years away is no arena anyone waits for, past year 9999 not even a date)
MAX_ARENA_LEAD = 24 * 3600.0


class RankedError(StoreError):
    """A refused ranked request. Codes: bad_queue, bad_partner, unknown_user, already_queued,
    in_arena, at_table, not_queued, paused, insufficient_chips, partner_paused,
    partner_insufficient_chips, bad_arena, unknown_arena, arena_closed, already_joined,
    not_joined, bad_result, unavailable (the database could not store the change)."""


class TableLauncher(Protocol):
    """What the live house implements to open a ranked or arena table for players it did not
    seat itself: create the table, seat `users_by_seat` (team `seat % 2`), start the match and
    return the table id (16 lowercase hex digits). `stake` is what each player staked (0 at
    arena tables); the service holds it in the ledger in `before_start(table_id)`, which the
    launcher awaits after seating and before the first deal, closing the table unplayed (and
    raising) if it fails."""

    async def launch(
        self, kind: TableKind, variant: Variant, seats: int, users_by_seat: Sequence[int],
        stake: int, *, before_start: Callable[[str], Awaitable[None]] | None = None,
    ) -> str: ...


LAUNCHER: web.AppKey[TableLauncher] = web.AppKey("ranked_launcher")


@dataclass(frozen=True, slots=True)
class RankedSettings:
    stake: int = 50  # chips each player puts in a ranked match; the winners share the pot
    tick: float = 1.0  # seconds between pairing rounds
    window: Window = field(default_factory=Window)


def match_ref(kind: TableKind, table_id: str, match_number: int) -> str:
    return f"{kind.value}:{table_id}:{match_number}"


def hand_ids(record: review.AbandonmentRecord) -> tuple[str, ...]:
    """The public hand ids (`/hands/<id>`) the evidence of a record names, in order."""
    parts = record.match_ref.split(":")
    if len(parts) != 3:
        return ()
    hands = sorted({e["hand"] for e in record.evidence
                    if isinstance(e.get("hand"), int) and not isinstance(e.get("hand"), bool)})
    return tuple(f"{parts[1]}-{h}" for h in hands)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# --- settlement --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settlement:
    match_ref: str
    chips: ledger.Posting | None  # the payout or the refund; None when no stake was held
    changes: tuple[ratings.Change, ...]  # empty for a cancelled or an arena match
    record: review.AbandonmentRecord | None  # the abandoner's record


def _check_result(
    kind: object, variant: object, seats: object, users_by_seat: Sequence[int],
    termination: object, winner_team: object, forfeit_seat: object, table_id: object,
    match_number: object,
) -> tuple[TableKind, Variant, int, tuple[int, ...], Termination]:
    if not isinstance(kind, TableKind) or not kind.competitive:
        raise RankedError("bad_result", "Only ranked and arena matches are settled.")
    if not isinstance(variant, Variant):
        raise RankedError("bad_result", f"Unknown variant {variant!r}.")
    if seats not in (2, 4) or isinstance(seats, bool) or not isinstance(seats, int):
        raise RankedError("bad_result", "A table has 2 or 4 seats.")
    if not isinstance(table_id, str) or not _TABLE_ID.fullmatch(table_id):
        raise RankedError("bad_result", "A table id is 16 lowercase hex digits.")
    check_id(match_number, "match number", RankedError)
    users = tuple(check_id(u, "user", RankedError) for u in users_by_seat)
    if len(users) != seats or len(set(users)) != seats:
        raise RankedError("bad_result", f"A {seats}-seat match has {seats} different players.")
    if not isinstance(termination, Termination):
        raise RankedError("bad_result", f"Unknown termination {termination!r}.")
    if termination is Termination.CANCELLED:
        if winner_team is not None or forfeit_seat is not None:
            raise RankedError("bad_result", "A cancelled match has no winner and no forfeit.")
    elif winner_team not in (0, 1) or isinstance(winner_team, bool):
        raise RankedError("bad_result", "The winner is team 0 or team 1.")
    if termination is Termination.ABANDONMENT:
        if (not isinstance(forfeit_seat, int) or isinstance(forfeit_seat, bool)
                or not 0 <= forfeit_seat < seats):
            raise RankedError("bad_result", "An abandonment names the seat that forfeited.")
        if forfeit_seat % 2 == winner_team:
            raise RankedError("bad_result", "The side that abandoned cannot win.")
    elif forfeit_seat is not None:
        raise RankedError("bad_result", "Only an abandonment has a forfeiting seat.")
    return kind, variant, seats, users, termination


async def _match_times(
    conn: Conn, table_id: str, match_number: int,
    started_at: datetime | None, ended_at: datetime | None,
) -> tuple[datetime, datetime]:
    """When the match started and ended: as given, else as the live house wrote them down."""
    if started_at is None or ended_at is None:
        row = await conn.fetchrow(
            "SELECT m.started_at, m.ended_at, now() AS now FROM (SELECT 1) AS one "
            "LEFT JOIN live_matches m ON m.table_id = $1 AND m.number = $2",
            table_id, match_number)
        assert row is not None
        if ended_at is None:
            ended_at = row["ended_at"] or row["now"]
        if started_at is None:
            started_at = row["started_at"] or ended_at
    for value in (started_at, ended_at):
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise RankedError("bad_result", "Match times are datetimes with their time zone.")
    assert started_at is not None and ended_at is not None
    if started_at > ended_at:
        raise RankedError("bad_result", "A match cannot end before it started.")
    return started_at, ended_at


class MatchEnd(TypedDict):
    """A finished ranked or arena match as the live house reports it: the keyword arguments of
    `settle_match` and `RankedService.match_ended`."""

    table_id: str
    match_number: int
    kind: TableKind
    variant: Variant
    seats: int
    users_by_seat: Sequence[int]
    termination: Termination
    winner_team: int | None
    forfeit_seat: int | None
    restart_overlap: bool
    evidence: Sequence[Mapping[str, Any]]
    started_at: NotRequired[datetime | None]
    ended_at: NotRequired[datetime | None]
    # an arena table whose result can no longer score (its arena's time was up, or the table
    # lost its arena): the service says so (`RankedService.match_ended`); True when not given
    arena_counts: NotRequired[bool]
    # a match cancelled because none of its players came: those players (an arena stops
    # pairing them, or their next table would wait and be cancelled again)
    no_show: NotRequired[Sequence[int]]


async def settle_match(pool: Db, **end: Unpack[MatchEnd]) -> Settlement:
    """Settle a finished ranked or arena match, once (a second call returns the same result).

    - `cancelled` (a server fault): every stake held goes back; nobody is rated.
    - `target` or `abandonment`: the pot goes to the winning team (seat order for odd chips);
      at ranked tables both teams are rated (Glicko-2, one period).
    - `abandonment`: the player at `forfeit_seat` gets an abandonment record (strikes, pause;
      exempt when `restart_overlap` or a recorded server fault touched the match, or at an arena
      table whose result no longer counts: `arena_counts` False, the arena's time was up, and
      walking away from a match that cannot count costs nobody anything: reason `arena_over`).
    The times default to the live house's `live_matches` row (else the database's now).
    """
    table_id, match_number = end["table_id"], end["match_number"]
    users_by_seat, winner_team = end["users_by_seat"], end["winner_team"]
    forfeit_seat, restart_overlap = end["forfeit_seat"], end["restart_overlap"]
    kind, variant, seats, users, termination = _check_result(
        end["kind"], end["variant"], end["seats"], users_by_seat, end["termination"],
        winner_team, forfeit_seat, table_id, match_number)
    ref = match_ref(kind, table_id, match_number)
    async with transaction(pool) as conn:
        started, ended = await _match_times(conn, table_id, match_number,
                                            end.get("started_at"), end.get("ended_at"))
        chips: ledger.Posting | None = None
        changes: tuple[ratings.Change, ...] = ()
        record: review.AbandonmentRecord | None = None
        try:
            if termination is Termination.CANCELLED:
                chips = await ledger.refund(conn, ref)
            else:
                winners = [u for seat, u in enumerate(users) if seat % 2 == winner_team]
                chips = await ledger.pay_winners(conn, ref, winners)
        except ledger.LedgerError as exc:
            if exc.code != "not_held":  # an unstaked match (arena) has nothing to move
                raise
        if termination is not Termination.CANCELLED and kind is TableKind.RANKED:
            assert winner_team is not None
            teams = (users[0::2], users[1::2])
            changes = await ratings.rate_match(conn, ref, variant, seats, teams, winner_team,
                                               ended)
        if termination is Termination.ABANDONMENT:
            assert forfeit_seat is not None
            record = await review.record_abandonment(
                conn, user_id=users[forfeit_seat], match_ref=ref, variant=variant, seats=seats,
                match_started_at=started, abandoned_at=ended, evidence=end["evidence"],
                source_ref=f"live:{table_id}:{match_number}:{forfeit_seat}",
                fault_overlap=restart_overlap, arena_over=not end.get("arena_counts", True))
    return Settlement(ref, chips, changes, record)


# --- the queues --------------------------------------------------------------------------------


class QueueState(StrEnum):
    IDLE = "idle"
    INVITING = "inviting"  # named a duo partner who has not queued with them yet
    QUEUED = "queued"
    PAIRED = "paired"  # a table is formed but the live house has not opened it yet
    SEATED = "seated"  # playing at a ranked table


@dataclass(frozen=True, slots=True)
class Invitation:
    inviter: int
    partner: int
    key: QueueKey
    at: float


class NewsKind(StrEnum):
    """What happened to a player's place in ranked play that they did not do themselves."""

    DECLINED = "declined"  # the player they invited declined the invitation
    EXPIRED = "expired"  # their invitation lapsed unanswered
    PARTNER_LEFT = "partner_left"  # their duo partner left the queue: the duo left with them
    TABLE_UNDONE = "table_undone"  # a player left the table formed for them: back in the queue
    AWAY = "away"  # their queue page was closed too long: out of the queue (their duo too)
    PARTNER_AWAY = "partner_away"  # their duo partner's page was closed too long
    BUSY = "busy"  # paired while playing at another table (or no longer eligible): out
    COULD_NOT_PLAY = "could_not_play"  # another player could not play the table formed: back
    PARTNER_COULD_NOT = "partner_could_not"  # their partner could not play it: the duo is out
    TAKEN = "taken"  # the player they invited queued without them (alone or with another)


@dataclass(frozen=True, slots=True)
class News:
    kind: NewsKind
    other: int  # who did it
    at: float


# how long a player's page keeps saying what happened to their place (or until they queue again)
NEWS_LIFETIME = 10 * 60.0
# a queued player whose queue page (or API client) has not asked for their status this long has
# gone (a closed tab stayed queued for ever, across restarts): their ticket leaves. Browsers slow
# the timers of a hidden tab to once a minute: well above that
QUEUE_PRESENCE = 3 * 60.0


@dataclass(frozen=True, slots=True)
class QueueStatus:
    state: QueueState
    key: QueueKey | None = None
    partner: int | None = None
    waited: float = 0.0
    window: float | None = None
    table_id: str | None = None
    seating: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "variant": None if self.key is None else self.key.variant.value,
            "seats": None if self.key is None else self.key.seats,
            "partner": self.partner, "waited_s": round(self.waited, 3),
            "window": self.window, "table": self.table_id, "seating": list(self.seating),
        }


@dataclass(frozen=True, slots=True)
class FormedTable:
    """A table the pairing formed and the live house still has to open."""

    kind: TableKind
    variant: Variant
    seating: tuple[int, ...]
    stake: int
    formed_at: float
    match: Match | None = None  # ranked: the tickets, to requeue them if a player leaves
    arena_id: str | None = None
    arena_table: int | None = None


@dataclass
class ArenaEvent:
    id: str
    variant: Variant
    arena: Arena
    # live table id -> the arena's table number
    tables: dict[str, int] = field(default_factory=dict)
    recorded: bool = False
    # what the database holds (migration 024): written again only when it differs
    saved: tuple[Arena, dict[str, int]] | None = None

    def table_of(self, user: int) -> str | None:
        """The live table `user` plays at in this arena now, if any."""
        numbers = {t.id for t in self.arena.tables if user in t.players}
        return next((live for live, number in self.tables.items() if number in numbers), None)


class RankedService:
    def __init__(self, pool: asyncpg.Pool, clock: Clock, launcher: TableLauncher | None,
                 settings: RankedSettings) -> None:
        self.pool = pool
        self.clock = clock
        self.launcher = launcher
        self.settings = settings
        self.matchmaker = Matchmaker(window=settings.window)
        self.invitations: dict[int, Invitation] = {}
        # what happened to a player's place that they did not do (memory only: a restart
        # forgets it; the place itself is stored)
        self.news: dict[int, News] = {}
        # the invitation each player declined last (inviter, when): their page confirms it
        # (memory only, as news)
        self.declined: dict[int, tuple[int, float]] = {}
        # when each player last asked for their queue status (`seen`); a start counts for all
        self.last_seen: dict[int, float] = {}
        # each player's latest address, as the house saw it (`server.app.LAST_ADDRESS`; none
        # for a player on the house's own machine): players from one address never meet at
        # one table, in a queue or an arena (one person's accounts would hand each other
        # chips, rating and arena points)
        self.addresses: Mapping[int, str] = {}
        self._said_one_address = -math.inf
        self._started_at = clock.now()
        self.formed: list[FormedTable] = []
        self.seated: dict[int, str] = {}  # user -> ranked table id
        self.seated_queues: dict[str, QueueKey] = {}  # ranked table id -> the queue it came from
        # arena table id -> whether its result counts, decided when its match ended (a retried
        # settlement finds the same answer; forgotten once settled)
        self._arena_verdicts: dict[str, bool] = {}
        self.arenas: dict[str, ArenaEvent] = {}
        self.arena_tables: dict[str, str] = {}  # live table id -> arena id
        self._saved_tickets: dict[int, state.TicketRow] = {}  # what migration 024 holds
        self._saved_invitations: dict[int, state.InvitationRow] = {}  # and migration 036
        self._lock = asyncio.Lock()
        self._timer: Timer | None = None
        self._timer_at = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    # ---- lifecycle

    def start(self) -> None:
        self._wake()

    async def restore(self) -> None:
        """After a restart: the players of ranked tables still in play are seated again (they
        cannot queue for a second table), the stakes of a table whose launch a crash cut off
        before the first deal go back, and a finished ranked match whose settlement a crash cut
        off is settled now (idempotent: a settled match is left as it is)."""
        rows = await self.pool.fetch(
            "SELECT s.user_id, t.id, t.variant, t.seats FROM live_tables t"
            " JOIN live_seats s ON s.table_id = t.id"
            " WHERE t.kind = $1 AND t.status = 'playing' AND s.user_id IS NOT NULL",
            TableKind.RANKED.value)
        async with self._lock:
            for row in rows:
                self.seated[row["user_id"]] = row["id"]
                self.seated_queues[row["id"]] = QueueKey(Variant(row["variant"]), row["seats"])
        for row in await self.pool.fetch(_UNPLAYED_HOLDS):
            # stakes held for a table whose launch a crash cut off before the first deal
            try:
                await ledger.refund(self.pool, row["match_ref"])
            except StoreError:
                log.exception("ranked_refund_unplayed_failed",
                              extra={"match": row["match_ref"]})
            else:
                log.info("ranked_refunded_unplayed", extra={"match": row["match_ref"]})
        for match in await self.pool.fetch(_UNSETTLED, TableKind.RANKED.value):
            await self._settle_interrupted(match)
        await self._restore_state()

    async def _restore_state(self) -> None:
        """The queues and arenas as acknowledged before the restart (migration 024): tickets
        keep their original join time (so their window and their turn), a ticket whose table
        had opened (its players are seated) is dropped, and an arena whose end passed while the
        server was down closes now and records its podium, once."""
        now = self.clock.now()
        async with self._lock:
            loaded = await state.load_tickets(self.pool)
            self._saved_tickets = {row[1][0]: row for row in loaded}
            self._saved_invitations = await state.load_invitations(self.pool)
            for inviter, (partner, key, at) in self._saved_invitations.items():
                # with their original time: one that lapsed while the server was down is
                # said to its inviter at the first round, as any lapse
                self.invitations[inviter] = Invitation(inviter, partner, key, at)
            for key, players, ratings_, joined in loaded:
                if any(p in self.seated or self.matchmaker.queued(p) is not None
                       for p in players):
                    continue
                self.matchmaker = self.matchmaker.enqueue(
                    key, list(zip(players, ratings_, strict=True)), joined)
            await self._persist_queue()  # forgets the dropped tickets
            for stored in await state.load_arenas(self.pool, self.clock.now()):
                event = ArenaEvent(stored.id, stored.variant, stored.arena, dict(stored.tables),
                                   saved=(stored.arena, dict(stored.tables)))
                self.arenas[event.id] = event
                for table_id in event.tables:
                    self.arena_tables[table_id] = event.id
                if now >= event.arena.ends_at:
                    await self._arena_round(event, now)
            log.info("ranked_state_restored", extra={
                "tickets": len(self.matchmaker.tickets), "arenas": len(self.arenas)})

    # ---- durable state (migration 024)

    async def _persist_queue(self) -> None:
        """Store the tickets as they are now: the queued ones and those of formed tables not
        opened yet (a restart sends them back to the queue); only when something changed."""
        tickets = [*self.matchmaker.tickets,
                   *(t for f in self.formed if f.match is not None for t in f.match.tickets)]
        rows = state.ticket_rows(tickets)
        invitations = {i.inviter: (i.partner, i.key, i.at) for i in self.invitations.values()}
        if rows != self._saved_tickets or invitations != self._saved_invitations:
            await state.sync_queue(self.pool, rows, self._saved_tickets, invitations,
                                   self._saved_invitations)
            self._saved_tickets, self._saved_invitations = rows, invitations

    async def _persist_arena(self, event: ArenaEvent) -> None:
        """Store a running arena when it changed (a recorded one is closed for good)."""
        if event.recorded:
            return
        current = (event.arena, dict(event.tables))
        if event.saved == current:
            return
        before = None if event.saved is None else event.saved[0]
        await state.save_arena(self.pool, event.id, event.variant, event.arena, event.tables,
                               self.clock.now(), before)
        event.saved = current

    async def _acknowledge(self, undo: Callable[[], None],
                           event: ArenaEvent | None = None) -> None:
        """Store a player's change before answering them; if the database refuses it, the
        change is undone in memory too and the player told: nothing changed."""
        try:
            if event is None:
                await self._persist_queue()
            else:
                await self._persist_arena(event)
        except (asyncpg.PostgresError, OSError) as exc:
            undo()
            log.exception("ranked_state_write_failed")
            raise RankedError("unavailable", "Ranked play cannot store that right now; "
                                             "try again in a moment.") from exc

    async def _settle_interrupted(self, match: asyncpg.Record) -> None:
        table_id, number = match["table_id"], match["number"]
        extra = {"table": table_id, "match": number}
        users = list(match["users"])  # as the match started (a row before 026: seated now)
        forfeit = match["forfeit_seat"]
        if forfeit is not None and forfeit < len(users):
            users[forfeit] = match["forfeit_user"]  # who resigned, as the record names them
        if None in users or len(users) != match["seats"]:
            # a match from before migration 026 whose seat was emptied since: paying or rating
            # a guess is worse than an operator's look
            log.error("ranked_unsettled_unknown_players", extra=extra)
            return
        try:
            await settle_match(
                self.pool, table_id=table_id, match_number=number, kind=TableKind.RANKED,
                variant=Variant(match["variant"]), seats=match["seats"], users_by_seat=users,
                termination=Termination(match["termination"]), winner_team=match["winner"],
                forfeit_seat=forfeit, restart_overlap=match["restart_overlap"],
                evidence=loaded_evidence(match["evidence"]) if forfeit is not None else ())
        except StoreError:
            log.exception("ranked_settle_interrupted_failed", extra=extra)
            return
        log.info("ranked_settled_after_restart", extra=extra)

    async def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def _next_round(self) -> float | None:
        """When the next round has something to do: within a tick while tickets wait, tables
        wait to open or an arena can seat players; else at the next arena start or end; None
        when the house is idle (no timer at all)."""
        now = self.clock.now()
        soon = now + self.settings.tick
        if self.matchmaker.tickets or (self.formed and self.launcher is not None):
            return soon
        # an invitation's lapse is said to its inviter
        times: list[float] = [i.at + INVITATION_LIFETIME + self.settings.tick
                              for i in self.invitations.values()]
        for event in self.arenas.values():
            arena = event.arena
            if event.recorded:
                continue
            if arena.closed:
                return soon  # its results are still to be recorded
            waiting = sum(1 for e in arena.entrants if e.active and not e.busy)
            if arena.running(now) and waiting >= arena.seats and self.launcher is not None:
                return soon
            if now < arena.starts_at:
                times.append(arena.starts_at)
            times.append(max(arena.ends_at, soon))
        return min(times) if times else None

    def _wake(self) -> None:
        """Something changed: make sure a round comes when it has work (a round in progress
        schedules the next one itself when it ends)."""
        if self._task is None or self._task.done():
            self._schedule()

    def _schedule(self) -> None:
        when = None if self._stopped else self._next_round()
        if self._timer is not None:
            if when is not None and self._timer_at <= when:
                return
            self._timer.cancel()
            self._timer = None
        if when is not None:
            self._timer_at = when
            self._timer = self.clock.call_at(when, self._on_tick)

    def _on_tick(self) -> None:
        self._timer = None
        if self._stopped:
            return
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        try:
            await self.run_round()
        except Exception:  # one bad round must not stop the pairing for good
            log.exception("ranked_round_failed")
        finally:
            self._schedule()

    # ---- players

    def _formed_for(self, user: int) -> FormedTable | None:
        return next((f for f in self.formed if user in f.seating), None)

    def status(self, user: int) -> QueueStatus:
        now = self.clock.now()
        ticket = self.matchmaker.queued(user)
        if ticket is not None:
            partner = next((p for p in ticket.players if p != user), None)
            return QueueStatus(QueueState.QUEUED, ticket.key, partner, now - ticket.joined_at,
                               self.matchmaker.window.width(now - ticket.joined_at))
        formed = self._formed_for(user)
        if formed is not None and formed.kind is TableKind.RANKED:
            return QueueStatus(QueueState.PAIRED, QueueKey(formed.variant, len(formed.seating)),
                               waited=now - formed.formed_at, seating=formed.seating)
        if user in self.seated:
            table_id = self.seated[user]
            return QueueStatus(QueueState.SEATED, self.seated_queues.get(table_id),
                               table_id=table_id)
        invitation = self.invitations.get(user)
        if invitation is not None and now - invitation.at <= INVITATION_LIFETIME:
            return QueueStatus(QueueState.INVITING, invitation.key, invitation.partner,
                               now - invitation.at)
        return QueueStatus(QueueState.IDLE)

    async def _rating(self, user: int, key: QueueKey) -> float:
        return (await ratings.rating_of(self.pool, user, key.variant, key.seats)).rating

    async def eligible(self, user: int, stake: int) -> None:
        """A player may enter: not paused for abandonments, and holding the stake."""
        now = _at(self.clock.now())
        paused = await review.pause_remaining(self.pool, user, now)
        if paused.total_seconds() > 0:
            minutes = max(1, round(paused.total_seconds() / 60))
            raise RankedError("paused", f"Paused from ranked play for {minutes} more minutes "
                                        "after repeated abandonments.")
        if stake and await ledger.balance(self.pool, user) < stake:
            raise RankedError("insufficient_chips", f"A ranked match takes {stake} chips.")

    async def _not_at_table(self, user: int) -> None:
        """Not while seated at another table whose match is in play: a ranked or arena table
        is formed at any moment, and a player with two clocks running abandons one of them.
        (Ranked and arena tables the service still follows are refused above, by their own
        codes; this also holds for one it no longer does: an arena table still in play after
        its arena closed.)"""
        table = await self.pool.fetchval(
            "SELECT t.id FROM live_seats s JOIN live_tables t ON t.id = s.table_id "
            "WHERE s.user_id = $1 AND t.status = 'playing' ORDER BY t.id LIMIT 1", user)
        if table is not None:
            raise RankedError("at_table", f"You are playing at table {table}: finish or leave "
                                          "that match before joining ranked play.")

    async def _at_tables(self, users: Sequence[int]) -> frozenset[int]:
        """Which of `users` sit at another table whose match is in play (`_not_at_table`): a
        player queued or in an arena may sit down at a private or training table since, or
        still play at the table of an arena that closed."""
        if not users:
            return frozenset()
        rows = await self.pool.fetch(
            "SELECT DISTINCT s.user_id FROM live_seats s JOIN live_tables t ON t.id = s.table_id "
            "WHERE s.user_id = ANY($1::bigint[]) AND t.status = 'playing'", list(users))
        return frozenset(row["user_id"] for row in rows)

    def arena_of(self, user: int, *, other_than: str | None = None) -> ArenaEvent | None:
        """The arena that still pairs this player, or that they sit at a table of (a player
        who left an arena plays out the table they sit at): one place in ranked play at a
        time."""
        return next((event for event in self.arenas.values() if event.id != other_than
                     and (entrant := event.arena.entrant(user)) is not None
                     and (entrant.busy or (entrant.active and not event.arena.closed))), None)

    def _in_arena(self, user: int, *, other_than: str | None = None) -> bool:
        return self.arena_of(user, other_than=other_than) is not None

    def _busy(self, user: int, *, allow_invitation: bool = False) -> str | None:
        state = self.status(user).state
        if state is QueueState.IDLE or (allow_invitation and state is QueueState.INVITING):
            return None
        return state.value

    async def join(self, user: int, key: QueueKey, partner: int | None = None) -> QueueStatus:
        """Queue a player; naming a partner (2v2) invites them, and the duo queues when the
        partner names this player back for the same queue."""
        async with self._lock:
            self._expire_invitations()
            undo = self._undo_queue()
            busy = self._busy(user)
            if busy is not None:
                raise RankedError("already_queued", f"You are already {busy} in ranked play.")
            if self._in_arena(user):
                # an arena pairs its entrants at any moment: one table at a time
                raise RankedError("in_arena", "Leave the arena before queueing for ranked play.")
            await self._not_at_table(user)
            if partner is not None and (key.seats != 4 or partner == user):
                raise RankedError("bad_partner", "A duo partner is another player, in 2v2.")
            await self.eligible(user, self.settings.stake)
            now = self.clock.now()
            if partner is None:
                rating = await self._rating(user, key)
                self._enqueue(key, [(user, rating)], now)
            else:
                # the partner must be eligible to accept: an invitation they could not accept
                # (paused, short of chips) is refused now, not left waiting 10 minutes
                await self._partner_eligible(partner)
                if self._in_arena(partner):
                    raise RankedError("partner_in_arena", "Your partner is in an arena.")
                invited = self.invitations.get(partner)
                if invited is not None and invited.partner == user and invited.key != key:
                    raise RankedError("crossed_invitation", "Your partner invited you to "
                                      "another queue: accept or decline that invitation.")
                if invited is None or invited.partner != user or invited.key != key:
                    self.invitations[user] = Invitation(user, partner, key, now)
                    await self._acknowledge(undo)
                    self.news.pop(user, None)  # a new start: what came before is old news
                    self._wake()  # rounds run while it waits: its lapse is said
                    return self.status(user)
                duo = [(partner, await self._rating(partner, key)),
                       (user, await self._rating(user, key))]
                del self.invitations[partner]
                self._enqueue(key, duo, now)
            await self._acknowledge(undo)
            self.news.pop(user, None)  # a new start: what came before is old news
            self.last_seen[user] = now
            log.info("ranked_queued", extra={"user": user, "variant": key.variant.value,
                                             "seats": key.seats, "partner": partner})
            self._wake()
            return self.status(user)

    async def _partner_eligible(self, partner: int) -> None:
        try:
            await self.eligible(partner, self.settings.stake)
        except RankedError as exc:
            # without the details (how long their pause runs, their chips): theirs, not yours
            said = {"paused": "Your partner is paused from ranked play.",
                    "insufficient_chips": "Your partner has fewer chips than the stake."}
            raise RankedError(f"partner_{exc.code}",
                              said.get(exc.code, "Your partner cannot play ranked now.")
                              ) from exc

    def _undo_queue(self) -> Callable[[], None]:
        """Puts the queues back as they are now."""
        matchmaker, formed, invitations = self.matchmaker, list(self.formed), dict(
            self.invitations)
        news = dict(self.news)

        def undo() -> None:
            self.matchmaker, self.formed, self.invitations = matchmaker, formed, invitations
            self.news = news
        return undo

    def _enqueue(self, key: QueueKey, players: list[tuple[int, float]], now: float) -> None:
        try:
            self.matchmaker = self.matchmaker.enqueue(key, players, now)
        except MatchmakingError as exc:
            raise RankedError(exc.code, str(exc)) from exc
        self._lapse_invitations_of({player for player, _ in players}, now)

    def _lapse_invitations_of(self, players: set[int], now: float) -> None:
        """`players` went elsewhere (a queue, an arena): the invitations still naming them
        lapse, and their inviters are told (one waited ten minutes for a partner who had queued
        with someone else)."""
        for inviter, invitation in list(self.invitations.items()):
            if invitation.partner in players:
                del self.invitations[inviter]
                self.news[inviter] = News(NewsKind.TAKEN, invitation.partner, now)

    async def leave(self, user: int) -> QueueStatus:
        """Leave the queue (a duo leaves together), drop an invitation, or give up a formed
        table that no live table holds yet (the others go back to the queue, keeping their
        waiting time)."""
        async with self._lock:
            undo = self._undo_queue()
            if self.invitations.pop(user, None) is not None:
                await self._acknowledge(undo)
                return self.status(user)
            now = self.clock.now()
            ticket = self.matchmaker.queued(user)
            if ticket is not None:
                self.matchmaker, _ = self.matchmaker.leave(user)
                await self._acknowledge(undo)
                # a duo leaves together: the partner is told why they are out
                for other in ticket.players:
                    if other != user:
                        self.news[other] = News(NewsKind.PARTNER_LEFT, user, now)
                return self.status(user)
            formed = self._formed_for(user)
            if formed is not None and formed.match is not None:
                self.formed.remove(formed)
                requeued: list[int] = []
                for ticket in formed.match.tickets:
                    if user not in ticket.players:
                        self.matchmaker = self.matchmaker.enqueue(
                            ticket.key, list(zip(ticket.players, ticket.ratings, strict=True)),
                            ticket.joined_at)
                        requeued += ticket.players
                await self._acknowledge(undo)
                for other in formed.seating:
                    if other != user:
                        self.news[other] = News(
                            NewsKind.TABLE_UNDONE if other in requeued
                            else NewsKind.PARTNER_LEFT, user, now)
                self._wake()
                return self.status(user)
            raise RankedError("not_queued", "You are not in a ranked queue.")

    async def decline(self, user: int, inviter: int) -> None:
        """Decline the duo invitation `inviter` sent this player: it is gone, and the inviter
        is told."""
        async with self._lock:
            self._expire_invitations()
            invitation = self.invitations.get(inviter)
            if invitation is None or invitation.partner != user:
                raise RankedError("no_invitation", "That player has not invited you.")
            undo = self._undo_queue()
            del self.invitations[inviter]
            await self._acknowledge(undo)
            self.news[inviter] = News(NewsKind.DECLINED, user, self.clock.now())
            self.declined[user] = (inviter, self.clock.now())
            log.info("ranked_invitation_declined", extra={"user": user, "inviter": inviter})

    def declined_lately(self, user: int, inviter: int) -> bool:
        """Whether the last invitation this player declined, within `NEWS_LIFETIME`, was
        `inviter`'s (what a page may confirm; an address alone claims nothing)."""
        last = self.declined.get(user)
        return (last is not None and last[0] == inviter
                and self.clock.now() - last[1] <= NEWS_LIFETIME)

    def seen(self, user: int) -> None:
        """The player asked for their queue status: their page is open (`QUEUE_PRESENCE`)."""
        self.last_seen[user] = self.clock.now()

    def _forget_old(self, now: float) -> None:
        """What no page needs any more: news past its lifetime, and when players not in the
        queue were last seen (both maps would otherwise hold every player who ever queued)."""
        for user, news in list(self.news.items()):
            if now - news.at > NEWS_LIFETIME:
                del self.news[user]
        for user, (_, at) in list(self.declined.items()):
            if now - at > NEWS_LIFETIME:
                del self.declined[user]
        queued = {p for t in self.matchmaker.tickets for p in t.players}
        for user, seen in list(self.last_seen.items()):
            if user not in queued and now - seen > QUEUE_PRESENCE:
                del self.last_seen[user]

    def _drop_gone(self, now: float) -> None:
        """Tickets with a player whose page has been closed for `QUEUE_PRESENCE` leave."""
        for ticket in list(self.matchmaker.tickets):
            gone = [p for p in ticket.players
                    if now - self.last_seen.get(p, self._started_at) > QUEUE_PRESENCE]
            if not gone:
                continue
            self.matchmaker, _ = self.matchmaker.leave(gone[0])
            for player in ticket.players:
                self.news[player] = News(NewsKind.AWAY, player, now) if player in gone \
                    else News(NewsKind.PARTNER_AWAY, gone[0], now)
            log.info("ranked_queue_gone", extra={"players": list(ticket.players),
                                                 "gone": gone})

    def news_for(self, user: int) -> News | None:
        """What happened to this player's place lately that they did not do (`News`)."""
        news = self.news.get(user)
        if news is not None and self.clock.now() - news.at > NEWS_LIFETIME:
            del self.news[user]
            return None
        return news

    def _expire_invitations(self) -> None:
        now = self.clock.now()
        for user, invitation in list(self.invitations.items()):
            if now - invitation.at > INVITATION_LIFETIME:
                del self.invitations[user]
                self.news[user] = News(NewsKind.EXPIRED, invitation.partner, now)

    def queue_sizes(self) -> dict[QueueKey, int]:
        sizes: dict[QueueKey, int] = {}
        for ticket in self.matchmaker.tickets:
            sizes[ticket.key] = sizes.get(ticket.key, 0) + len(ticket.players)
        return sizes

    # ---- the pairing round

    async def run_round(self) -> None:
        """One round: pair the queues, seat the arenas, close finished arenas, open tables."""
        async with self._lock:
            now = self.clock.now()
            self._expire_invitations()
            self._drop_gone(now)
            self._forget_old(now)
            self.matchmaker, matches = self.matchmaker.pair(now, self.addresses)
            for made in matches:
                self.formed.append(FormedTable(TableKind.RANKED, made.key.variant, made.seating,
                                               self.settings.stake, now, match=made))
                log.info("ranked_paired", extra={"variant": made.key.variant.value,
                                                 "seats": made.key.seats,
                                                 "seating": list(made.seating)})
            self._say_one_address(now)
            for event in self.arenas.values():
                await self._arena_round(event, now)
            await self._open_tables()
            # a failure here is logged by the tick; the next round writes what is still unsaved
            await self._persist_queue()
            for event in self.arenas.values():
                await self._persist_arena(event)

    def _say_one_address(self, now: float) -> None:
        """Every waiting player from one address, several tickets of them: nobody can be paired,
        and the likeliest cause is the house's (a reverse proxy not named in
        BARAJAMOS_TRUSTED_PROXIES puts everyone at its address). Logged as a warning, every 10
        minutes at most while it lasts."""
        players = [p for t in self.matchmaker.tickets for p in t.players]
        seen = {self.addresses.get(p) for p in players}
        if len(self.matchmaker.tickets) < 2 or len(seen) != 1 or None in seen:
            return
        if now - self._said_one_address < ONE_ADDRESS_EVERY:
            return
        self._said_one_address = now
        log.warning("ranked_one_address", extra={
            "players": len(players), "hint": "every queued player comes from one address and"
            " none can be paired: is the reverse proxy named in BARAJAMOS_TRUSTED_PROXIES?"})

    async def _open_tables(self) -> None:
        if self.launcher is None:
            return  # kept waiting, every player told so by their status
        for formed in list(self.formed):
            if formed.kind is TableKind.RANKED and not await self._still_eligible(formed):
                continue
            held: list[str] = []  # the table whose stakes `hold` tried to take

            async def hold(table_id: str, formed: FormedTable = formed,
                           held: list[str] = held) -> None:
                # noted before the hold: a connection that breaks after its commit raises
                # all the same, and those stakes must come back now, not at a restart
                held.append(table_id)
                await self._hold(formed, table_id)

            try:
                table_id = await self.launcher.launch(
                    formed.kind, formed.variant, len(formed.seating), formed.seating,
                    formed.stake, before_start=hold if formed.kind is TableKind.RANKED else None)
            except Exception:
                # the live house could not open it now, or a stake could not be held, or the
                # first deal could not be saved (the table closed unplayed): the stakes held
                # for it go back, and the next round tries again, eligibility checked again
                log.exception("ranked_launch_failed")
                for unplayed in held:
                    await self._refund_unplayed(formed, unplayed)
                continue
            self.formed.remove(formed)
            if formed.kind is TableKind.RANKED:
                for user in formed.seating:
                    self.seated[user] = table_id
                self.seated_queues[table_id] = QueueKey(formed.variant, len(formed.seating))
            else:
                assert formed.arena_id is not None and formed.arena_table is not None
                self.arenas[formed.arena_id].tables[table_id] = formed.arena_table
                self.arena_tables[table_id] = formed.arena_id

    async def _refund_unplayed(self, formed: FormedTable, table_id: str) -> None:
        try:
            await ledger.refund(self.pool, match_ref(formed.kind, table_id, 1))
        except ledger.LedgerError as exc:
            if exc.code != "not_held":  # refused before it took anything: nothing to give back
                log.exception("ranked_refund_failed", extra={"table": table_id})
        except Exception:  # the database is away: a restart refunds unplayed holds
            log.exception("ranked_refund_failed", extra={"table": table_id})

    async def _hold(self, formed: FormedTable, table_id: str) -> None:
        """The stakes, before the first deal: a ranked match is never played unstaked."""
        await ledger.hold_stakes(self.pool, match_ref(formed.kind, table_id, 1),
                                 formed.seating, formed.stake)

    async def _still_eligible(self, formed: FormedTable) -> bool:
        """A player may have become ineligible while the table waited (a pause from another
        record), or have sat down since they queued to play a match at another table (the lobby
        does not ask the ranked queue): their ticket leaves; the other tickets go back to the
        queue, keeping their waiting time."""
        assert formed.match is not None
        refused: set[int] = set(await self._at_tables(formed.seating))
        for user in formed.seating:
            try:
                await self.eligible(user, formed.stake)
            except RankedError:
                refused.add(user)
        if not refused:
            return True
        self.formed.remove(formed)
        now = self.clock.now()
        for ticket in formed.match.tickets:
            if not refused & set(ticket.players):
                self.matchmaker = self.matchmaker.enqueue(
                    ticket.key, list(zip(ticket.players, ticket.ratings, strict=True)),
                    ticket.joined_at)
                for player in ticket.players:
                    self.news[player] = News(NewsKind.COULD_NOT_PLAY, min(refused), now)
            else:
                for player in ticket.players:
                    self.news[player] = (News(NewsKind.BUSY, player, now) if player in refused
                                         else News(NewsKind.PARTNER_COULD_NOT, min(refused),
                                                   now))
        log.info("ranked_table_dropped", extra={"refused": sorted(refused)})
        return False

    # ---- the end of a match

    async def match_ended(self, **end: Unpack[MatchEnd]) -> Settlement:
        """`settle_match`, and the service's bookkeeping: the players are free to queue again,
        and an arena table's result scores in its arena. The bookkeeping is done even when the
        settlement fails (the house retries it, a restart makes it; it is idempotent): the
        match is over either way, and its players must not stay seated at it."""
        now = self.clock.now()
        if end["kind"] is TableKind.ARENA:
            async with self._lock:
                end["arena_counts"] = self._arena_counts(end["table_id"], now)
        try:
            settled = await settle_match(self.pool, **end)
        finally:
            await self._match_over(end, now)
        self._arena_verdicts.pop(end["table_id"], None)
        return settled

    def _arena_counts(self, table_id: str, now: float) -> bool:
        """Whether an arena table's result counts, as it ends: its arena still holds it and its
        time is not up (what `Arena.finish` scores). A table the arena's end let go, or whose
        link to its arena a crash lost, counts for nothing: neither points nor a strike. Asked
        again (a retried settlement), the first answer stands."""
        known = self._arena_verdicts.get(table_id)
        if known is None:
            arena_id = self.arena_tables.get(table_id)
            known = arena_id is not None and self.arenas[arena_id].arena.counts(now)
            self._arena_verdicts[table_id] = known
        return known

    async def _match_over(self, end: MatchEnd, now: float) -> None:
        table_id, users_by_seat = end["table_id"], end["users_by_seat"]
        forfeit_seat, termination = end["forfeit_seat"], end["termination"]
        async with self._lock:
            for user in users_by_seat:
                if self.seated.get(user) == table_id:
                    del self.seated[user]
            self.seated_queues.pop(table_id, None)
            arena_id = self.arena_tables.pop(table_id, None)
            if arena_id is not None:
                event = self.arenas[arena_id]
                number = event.tables.pop(table_id)
                abandoned = () if forfeit_seat is None else (users_by_seat[forfeit_seat],)
                winner = None if termination is Termination.CANCELLED else end["winner_team"]
                try:
                    # scored as of the match's end, as `_arena_counts` judged it
                    event.arena = event.arena.finish(number, winner, now, abandoned,
                                                     gone=tuple(end.get("no_show", ())))
                except ArenaError:
                    log.exception("arena_finish_failed", extra={"arena": arena_id})
                try:
                    await self._persist_arena(event)
                except (asyncpg.PostgresError, OSError):
                    # scored in memory; the next round writes it again
                    log.exception("arena_save_failed", extra={"arena": arena_id})
                self._wake()

    # ---- arenas

    async def create_arena(self, variant: Variant, seats: int, starts_at: float,
                           ends_at: float) -> ArenaEvent:
        if not isinstance(variant, Variant):
            raise RankedError("bad_arena", "Unknown variant.")
        if not 0 < ends_at - starts_at <= MAX_ARENA:
            raise RankedError("bad_arena", "An arena lasts more than 0 and at most 24 hours.")
        if ends_at <= self.clock.now():
            raise RankedError("bad_arena", "An arena must end in the future.")
        if starts_at > self.clock.now() + MAX_ARENA_LEAD:
            raise RankedError("bad_arena", "An arena starts within 24 hours.")
        try:
            arena = Arena(starts_at, ends_at, seats)
        except ArenaError as exc:
            raise RankedError("bad_arena", str(exc)) from exc
        async with self._lock:
            event = ArenaEvent(f"arena-{secrets.token_hex(6)}", variant, arena)
            await self._acknowledge(lambda: None, event)
            self.arenas[event.id] = event
            self._wake()
            log.info("arena_created", extra={"arena": event.id, "variant": variant.value,
                                             "seats": seats})
            return event

    def arena(self, arena_id: str) -> ArenaEvent:
        event = self.arenas.get(arena_id)
        if event is None:
            raise RankedError("unknown_arena", f"No arena {arena_id!r}.")
        return event

    async def join_arena(self, user: int, arena_id: str) -> ArenaEvent:
        async with self._lock:
            event = self.arena(arena_id)
            busy = self._busy(user)
            if busy is not None:
                raise RankedError("already_queued", f"You are {busy} in ranked play: leave the "
                                                    "ranked queue before joining an arena.")
            if self._in_arena(user, other_than=arena_id):
                raise RankedError("in_arena", "You are in another arena (or at one of its"
                                              " tables): leave it before joining this one.")
            await self._not_at_table(user)
            await self.eligible(user, 0)
            rating = (await ratings.rating_of(self.pool, user, event.variant,
                                              event.arena.seats)).rating
            before = event.arena
            try:
                event.arena = event.arena.join(user, rating, self.clock.now())
            except ArenaError as exc:
                raise RankedError(exc.code if exc.code != "not_open" else "arena_closed",
                                  str(exc)) from exc
            await self._acknowledge(partial(setattr, event, "arena", before), event)
            # they cannot accept a duo invitation from an arena: those naming them lapse
            self._lapse_invitations_of({user}, self.clock.now())
            self._wake()
            return event

    async def end_arena(self, arena_id: str, operator: int) -> ArenaEvent:
        """An operator ends an arena now (`Arena.end_now`): it closes at the next round, as at
        its planned end."""
        async with self._lock:
            event = self.arena(arena_id)
            before = event.arena
            try:
                event.arena = event.arena.end_now(self.clock.now())
            except ArenaError as exc:
                raise RankedError(exc.code, str(exc)) from exc
            await self._acknowledge(partial(setattr, event, "arena", before), event)
            self._wake()
            log.info("arena_ended_early", extra={"arena": arena_id, "operator": operator})
            return event

    async def leave_arena(self, user: int, arena_id: str) -> ArenaEvent:
        async with self._lock:
            event = self.arena(arena_id)
            before = event.arena
            try:
                event.arena = event.arena.leave(user)
            except ArenaError as exc:
                raise RankedError(exc.code, str(exc)) from exc
            await self._acknowledge(partial(setattr, event, "arena", before), event)
            return event

    async def _arena_round(self, event: ArenaEvent, now: float) -> None:
        arena = event.arena
        if not arena.closed and now >= arena.ends_at:
            # tables still playing do not count; their later results find no arena table
            for table_id in event.tables:
                self.arena_tables.pop(table_id, None)
            event.tables.clear()
            self.formed = [f for f in self.formed if f.arena_id != event.id]
            event.arena = arena.close(now)
        if event.arena.closed and not event.recorded:
            try:
                async with transaction(self.pool) as conn:
                    await arena_results.record_close(conn, event.id, event.variant,
                                                     event.arena, now)
                    await state.close_arena(conn, event.id)
                event.recorded = True
            except StoreError:
                log.exception("arena_record_failed", extra={"arena": event.id})
            return
        if self.launcher is None or not event.arena.running(now):
            return  # the entrants wait: nobody is seated at a table that cannot open
        # an entrant playing a match at another table waits for it to end: never two clocks
        waiting = [e.player for e in event.arena.entrants if e.active and not e.busy]
        event.arena, tables = event.arena.pair(now, away=await self._at_tables(waiting),
                                               addresses=self.addresses)
        for table in tables:
            self.formed.append(FormedTable(
                TableKind.ARENA, event.variant,
                tuple(p for pair in zip(*table.teams, strict=True) for p in pair), 0, now,
                arena_id=event.id, arena_table=table.id))


# finished ranked matches without their settlement: neither rated nor, when cancelled, refunded
# (a cancelled match that held no stakes has nothing to settle)
_UNSETTLED = """
SELECT m.table_id, m.number, m.termination, m.winner, t.variant, t.seats,
       -- the players recorded when the match started (migration 026); for an older row, the
       -- table's seats now (a seat emptied since is unknown: left for an operator)
       coalesce(m.players, array(SELECT s.user_id FROM live_seats s
                                 WHERE s.table_id = t.id ORDER BY s.seat)) AS users,
       a.seat AS forfeit_seat, a.user_id AS forfeit_user, a.evidence,
       -- a server run began while the match was on: it spanned a restart
       EXISTS (SELECT 1 FROM server_runs r
               WHERE r.started_at > m.started_at AND r.started_at <= m.ended_at)
         AS restart_overlap
FROM live_matches m
JOIN live_tables t ON t.id = m.table_id
LEFT JOIN abandonments a ON a.table_id = m.table_id AND a.match_number = m.number
                        AND a.consequence = 'forfeit'
WHERE t.kind = $1 AND m.termination IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ranked_rating_history h
                  WHERE h.reference = 'match:' || t.kind || ':' || m.table_id || ':' || m.number)
  AND NOT (m.termination = 'cancelled' AND (
        EXISTS (SELECT 1 FROM chip_entries e
                WHERE e.reference = 'settle:' || t.kind || ':' || m.table_id || ':' || m.number)
        OR NOT EXISTS (SELECT 1 FROM chip_entries e
                WHERE e.reference = 'hold:' || t.kind || ':' || m.table_id || ':' || m.number)))
ORDER BY m.ended_at
"""


# stakes held for a ranked match the live house never started, and not paid back yet
_UNPLAYED_HOLDS = """
SELECT e.match_ref FROM chip_entries e
WHERE e.reason = 'hold' AND e.match_ref LIKE 'ranked:%'
  AND NOT EXISTS (SELECT 1 FROM chip_entries s WHERE s.reference = 'settle:' || e.match_ref)
  AND NOT EXISTS (SELECT 1 FROM live_matches m
                  WHERE 'ranked:' || m.table_id || ':' || m.number = e.match_ref)
ORDER BY e.id
"""


def loaded_evidence(value: object) -> list[dict[str, Any]]:
    """An abandonment's evidence as stored (jsonb, as text or parsed): its items, each a dict."""
    loaded = json.loads(value) if isinstance(value, str) else value
    return [item for item in loaded if isinstance(item, dict)] if isinstance(loaded, list) else []


RANKED: web.AppKey[RankedService] = web.AppKey("ranked_service")
RANKED_SETTINGS: web.AppKey[RankedSettings] = web.AppKey("ranked_settings")


async def _service(app: web.Application) -> AsyncIterator[None]:
    service = RankedService(app[POOL], app[CLOCK], app.get(LAUNCHER), app[RANKED_SETTINGS])
    addresses: dict[int, str] = app[LAST_ADDRESS]
    service.addresses = addresses
    app[RANKED] = service
    await service.restore()
    service.start()
    try:
        yield
    finally:
        await service.stop()


def setup(app: web.Application, settings: RankedSettings | None = None) -> None:
    """Register the service; it starts after the database (cleanup_ctx order) and stops
    before it. Register a `LAUNCHER` before the app starts to let it open tables."""
    app[RANKED_SETTINGS] = settings if settings is not None else RankedSettings()
    app.cleanup_ctx.append(_service)


def queue_key(variant: object, seats: object, *, strings: bool = True) -> QueueKey:
    """A queue from a request's fields: form or query strings (`strings`), or a JSON body's
    typed values (`strings=False`: the seat count is a number, as the API documents it)."""
    if strings and seats in ("2", "4"):
        seats = int(seats)  # a form's string
    # an int, not a bool or a float (2.0 == 2) nor a string of other digits ("²")
    if (not isinstance(variant, str) or variant not in set(Variant)
            or type(seats) is not int or seats not in (2, 4)):
        raise RankedError("bad_queue", "Choose a variant (paulista, mineiro or argentino) and "
                                       "2 or 4 seats.")
    return QueueKey(Variant(variant), seats)
