"""One live table, owned by one actor: an asyncio task draining a queue of commands.

Everything that changes a table (lobby requests, WebSocket messages, clock deadlines, bot moves)
is a command run by the actor in arrival order, so the engine state is never touched by two
things at once. Each accepted action is written (group commit) before the state moves on and
before anything is acknowledged or broadcast; the rows are enough to rebuild the table after a
crash (`server.live.recovery`).

A hand: draw the seed from the table's hash chain and publish its commitment; collect the
players' entropy until every seated human sent it or the entropy window ends; derive the deck,
deal (the first hand of a match also draws the dealer), play with a clock on every pending
decision; then write the signed, chained hand record that reveals the seed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import orjson
from aiohttp import WSCloseCode

from server.bots import NothingToDo, choose_action
from server.clock import Timer
from server.live.model import (
    AbandonConsequence,
    AbandonTrigger,
    HandPhase,
    LiveError,
    SeatEventKind,
    TableKind,
    TableStatus,
    abandon_limit,
    counted,
    decision_seconds,
    wire_json,
)
from server.live.seeds import SealedKind, seal
from server.live.writer import (
    WRITE_ERRORS,
    WRITE_FAILURES,
    PartlySaved,
    WriteRefused,
    error_text,
)
from truco import (
    Action,
    ActionKind,
    Deal,
    Event,
    IllegalAction,
    MatchConfig,
    MatchState,
    Pending,
    PendingKind,
    Signal,
    TeamMode,
    Termination,
    Variant,
    VoteCast,
    action_from_json,
    action_to_json,
    apply,
    events_json,
    forfeit,
    new_match,
    parse_signal,
    pending,
    signals_for,
    start_hand,
    view,
    views,
)
from truco.fairness import (
    MAX_CONTRIBUTION_BYTES,
    commitment,
    deal_cards,
    derive_deck,
    draw_first_dealer,
    seed_chain,
)
from truco.records import (
    GENESIS_HASH,
    MAX_ACTIONS,
    DealerChoice,
    RecordEnd,
    build_record,
    build_seed_anchor,
    record_hash,
)
from verifier.signing import sign_built_record, sign_statement

if TYPE_CHECKING:
    from server.live.house import House
    from server.live.ws import Connection

log = logging.getLogger("barajamos.live.table")

T = TypeVar("T")
Audience = int | None  # a seat, or None: spectators
Command = Callable[[], Awaitable[Any]]
_HEX = re.compile(r"(?:[0-9a-f]{2})+")
# actions kept for the clock at the end of a hand: enough automatic actions to finish any hand
# (every card of 4 seats, plus declines)
CLOCK_RESERVE = 24
# a table a failed write left standing goes on after these seconds, doubling (`_retry_later`)
RETRY_FIRST = 1.0
# seconds added to an entropy window opened as a table resumes after a restart: the browser's
# reconnects back off to 5 s (table.js RECONNECT_MAX_MS)
RESTART_ENTROPY_GRACE = 6.0
RETRY_MAX = 30.0


def action_at_rest(state: MatchState, action: Action) -> dict[str, Any]:
    """An action as `live_actions` keeps it while its hand is in play. A covered card's face is
    known to its owner only (RULES.md), and the deal is sealed with the seed (`seeds`): the row
    names its position in the owner's hand, so that a leaked database or backup does not tell it.
    `recovery` turns it back into the card from the unsealed deal; the hand's record, once the
    hand is over, names the card (docs/RULE_DECISIONS.md, 16)."""
    out = action_to_json(action)
    if action.covered and action.card is not None:
        assert state.hand is not None
        del out["card"]
        out["position"] = state.hand.hands[action.seat].index(action.card)
    return out


def at_rest_action(state: MatchState, obj: object) -> Action:
    """`action_at_rest` read back against the dealt hand `state` it was applied to."""
    action = action_from_json(obj)
    if action.covered and action.card is None and action.position is not None:
        assert state.hand is not None
        card = state.hand.hands[action.seat][action.position]
        action = Action(action.seat, action.kind, card=card, covered=True)
    return action


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def ms(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass(frozen=True)
class Seat:
    """Who holds a seat; replaced, never changed in place (`TableActor.seats`)."""

    user_id: int | None = None
    name: str | None = None
    bot: bool = False
    rematch: bool = False

    @property
    def free(self) -> bool:
        return self.user_id is None and not self.bot

    @property
    def human(self) -> bool:
        return self.user_id is not None


# a chain keeps every CHAIN_MARK-th seed: any other is at most CHAIN_MARK - 1 hashes away
CHAIN_MARK = 32


class Chain:
    """The current seed chain: seed i is chain index i (0 the anchor), s_(i-1) = SHA-256(s_i).

    The hand `start + i - 1` uses seed i and publishes seed i - 1 as its commitment. A whole
    chain (1,025 seeds, about 75 KB) per table was most of a player's share of the server's
    memory, and a table needs one seed per hand: only every CHAIN_MARK-th seed and the tip are
    kept, the rest rebuilt on demand with the chain's own hash.
    """

    __slots__ = ("_marks", "anchor", "length", "start")

    def __init__(self, start: int, seeds: Sequence[bytes], anchor: dict[str, Any]) -> None:
        self.start = start
        self.anchor = anchor
        self.length = len(seeds) - 1  # the tip's index
        self._marks: dict[int, bytes] = {
            i: seeds[i] for i in (*range(0, len(seeds), CHAIN_MARK), self.length)
        }

    def seed(self, index: int) -> bytes:
        if not 0 <= index <= self.length:
            raise IndexError(f"chain index {index} is outside 0..{self.length}")
        mark = min(-(-index // CHAIN_MARK) * CHAIN_MARK, self.length)
        seed = self._marks[mark]
        for _ in range(mark - index):
            seed = commitment(seed)  # the previous link of the chain
        return seed

    @property
    def seeds(self) -> tuple[bytes, ...]:
        """The whole chain, rebuilt (for checks; the table itself reads single seeds)."""
        return seed_chain(self._marks[self.length], self.length)

    def covers(self, hand: int) -> bool:
        return 1 <= hand - self.start + 1 <= self.length

    def seed_for(self, hand: int) -> bytes:
        return self.seed(hand - self.start + 1)

    def commitment_for(self, hand: int) -> bytes:
        return self.seed(hand - self.start)


@dataclass
class HandRun:
    number: int
    match_number: int
    chain_start: int
    seed: bytes
    commitment: bytes
    score_before: tuple[int, int]
    anchor: dict[str, Any] | None  # the signed statement when this hand starts a chain
    phase: HandPhase = HandPhase.ENTROPY
    contributions: dict[int, bytes] = field(default_factory=dict)
    entropy_deadline: float | None = None
    dealer: int | None = None
    dealer_by: DealerChoice | None = None
    actions: list[Action] = field(default_factory=list)


@dataclass
class Deadline:
    token: int
    seat: int
    kind: PendingKind
    team_vote: bool
    at: float
    timer: Timer
    # every seat this clock runs for: `seat` alone, or both partners of a team vote (each may
    # still change their vote, and each must be told the clock is theirs)
    seats: tuple[int, ...] = ()


@dataclass
class Streak:
    """Consecutive automatic actions of one player, and when the streak began."""

    count: int = 0
    started_at: float | None = None


DeadlineKey = tuple[str, int]  # ("play" | "answer", seat) or ("vote", team)


@dataclass(frozen=True, slots=True)
class DealtHand:
    """A dealt hand as the history replays it: the match before the deal, the deal, and the
    hand's actions (the HandRun's own list, which grows as the hand is played)."""

    before: MatchState
    deal: Deal
    actions: list[Action]


@dataclass(frozen=True, slots=True)
class Logged:
    """A numbered table event as kept for reconnects: once for every audience.

    Most events read the same for everybody: `text` is the whole message. An `update` differs
    per audience only by its view, so `text` is the message up to `"view":` and `dealt` /
    `applied` name the state to rebuild views from (the hand after `applied` of its actions):
    a rare catch-up replays a few actions instead of every event keeping five views.
    """

    seq: int
    text: bytes
    dealt: DealtHand | None = None
    applied: int = 0
    # an update with a vote in it: the voter's team and its own head (`text` is everyone else's)
    team: tuple[int, bytes] | None = None


class _Replay:
    """Views of kept updates for one catch-up, in order: each hand's actions are applied once."""

    def __init__(self) -> None:
        self._dealt: DealtHand | None = None
        self._applied = 0
        self._state: MatchState | None = None

    def message(self, entry: Logged, audience: Audience) -> bytes:
        dealt = entry.dealt
        if dealt is None:
            return entry.text
        if self._state is None or self._dealt is not dealt or self._applied > entry.applied:
            # the same computation as TableActor.start_dealt, then the same engine moves
            self._state, _ = start_hand(dealt.before, dealt.deal)
            self._dealt, self._applied = dealt, 0
        for action in dealt.actions[self._applied:entry.applied]:
            self._state, _ = apply(self._state, action)
        self._applied = entry.applied
        return _closed(_head(entry.text, entry.team, audience), view(self._state, audience))


def _head(public: bytes, team: tuple[int, bytes] | None, audience: Audience) -> bytes:
    """An update's head for `audience`: its team's own when the update holds that team's vote."""
    if team is not None and audience is not None and audience % 2 == team[0]:
        return team[1]
    return public


def _closed(head: bytes, one_view: dict[str, Any]) -> bytes:
    """An update's shared head closed with one audience's view (a new, exact-size text)."""
    return head + orjson.dumps(one_view) + b"}"


@dataclass(frozen=True, slots=True)
class MatchResult:
    """A finished ranked or arena match, as the ranked service settles it (stakes, ratings)."""

    table_id: str
    match_number: int
    kind: TableKind
    variant: Variant
    seats: int
    users_by_seat: tuple[int, ...]
    termination: Termination
    winner_team: int | None
    forfeit_seat: int | None
    evidence: tuple[dict[str, Any], ...]
    # the players of a match cancelled because none of them came (`_players_waited`)
    no_show: tuple[int, ...] = ()


# what a table is, as written: all that `server.live.recovery` rebuilds, and a reload replaces
_WRITTEN = ("status", "seats", "match_number", "score", "next_dealer", "state", "hand",
            "last_hand", "match_first_hand", "prev_hash", "chain", "streaks", "_dealt",
            "_last_events", "played_by", "forfeit_seat", "forfeit_trigger", "_signals_hand",
            "_signals")


@dataclass(slots=True)
class _Contribution:
    """An `entropy` message waiting for the actor; `done` ends its socket handler's wait."""

    conn: Connection
    msg_id: str | int | None
    number: object
    hex_text: object
    done: asyncio.Future[None]


Item = TypeVar("Item")


# the kinds' codes, read once: iterating an Enum class (and `.value`) costs at every step
_PENDING_KINDS = tuple(kind.value for kind in PendingKind)


class _Mailbox(Generic[Item]):
    """The actor's queue: put without waiting, get in order, and a look at the next item (so
    that contributions queued one after another are taken together)."""

    def __init__(self) -> None:
        self._items: deque[Item] = deque()
        self._waiter: asyncio.Future[None] | None = None
        # the actor's loop, kept: asking asyncio for the running loop is a getpid() system call
        # each time (its fork check), and every command waits on a future or two
        self._loop: asyncio.AbstractEventLoop | None = None

    def future(self) -> asyncio.Future[Any]:
        """A new future on the actor's loop."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop.create_future()

    def put(self, item: Item) -> None:
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def get(self) -> Item:
        while not self._items:
            self._waiter = self.future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def next_is(self, kind: type) -> bool:
        return bool(self._items) and isinstance(self._items[0], kind)

    def get_nowait(self) -> Item:
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


class TableActor:
    def __init__(
        self,
        house: House,
        table_id: str,
        config: MatchConfig,
        kind: TableKind,
        invite: str | None,
        owner: str | None,
        status: TableStatus,
    ) -> None:
        self.house = house
        self.id = table_id
        self.config = config
        self.kind = kind
        self.invite = invite
        self.owner = owner
        self.status = status
        self._seats: tuple[Seat, ...] = tuple(Seat() for _ in range(config.seats))
        self._seat_of: dict[int, int] = {}  # user id -> their seat (`seat_of`, every update)
        self.served = 0  # when the house came to serve it (`House.serve`)
        self.match_number = 0
        self.score: tuple[int, int] = (0, 0)
        self.next_dealer: int | None = None  # None: the next deal draws the dealer
        self.state: MatchState | None = None
        self.hand: HandRun | None = None
        self.last_hand = 0
        # the table hand number of the current match's first hand (TableJson: a rematch's
        # hands are numbered on from the table's, the page counts them from its match's)
        self.match_first_hand = 1
        self.prev_hash = GENESIS_HASH
        self.chain: Chain | None = None
        self.seq = 0
        # a catch-up is never longer than half the send queue (`hello`), so events older than
        # that are never replayed: keeping more would only hold memory
        self.history: deque[Logged] = deque(
            maxlen=min(house.settings.history, house.settings.send_queue // 2)
        )
        self.connections: set[Connection] = set()  # open sockets
        self.subscribers: set[Connection] = set()  # open sockets that said hello
        self.deadlines: dict[DeadlineKey, Deadline] = {}
        self.absent: set[int] = set()
        self.streaks: dict[int, Streak] = {}
        # who played each seat in the current (or last) match, by name (None: a bot, or no
        # match yet): a result still names a player who left the table since
        self.played_by: list[str | None] = [None] * config.seats
        # the seat whose abandonment ended the current (or last) match, if one did: the end of
        # a 2v2 match names the partner who left, also after a reload
        self.forfeit_seat: int | None = None
        # how that seat abandoned (`AbandonTrigger`: automatic actions, or leaving)
        self.forfeit_trigger: str | None = None
        # when a socket of this table last opened or closed, or a player last sat, moved, asked
        # for a rematch or left: an open or finished table unwatched for long closes
        # (`close_idle`)
        self.last_seen = house.clock.now()
        self.empty_timers: dict[int, Timer] = {}
        # human seats a restart found with no socket and that have not come back since: the
        # server took their connection (a pending vote of theirs is not declined for it)
        self.returning: set[int] = set()
        # absent seats whose player came back to an empty seat: their next decision gets the
        # full clock, once (`open_connection`), not the 2 s of absence
        self.back_in_seat: set[int] = set()
        # absent seats given that full clock since their last action (their own or the clock's):
        # one per absence, however often the connection comes and goes (a player reconnecting
        # every 19 s held a table for ever: a review)
        self.granted_back: set[int] = set()
        # each seat's last action (its own or the clock's): the number of the event that told
        # it; a move chosen on an earlier event is stale (`act`)
        self.acted_seq: dict[int, int] = {}
        self.entropy_timer: Timer | None = None
        # a ranked or arena match's first deal waits for its players to open the table
        # (`_wait_for_players`), up to `Config.start_grace`
        self.start_timer: Timer | None = None
        self.bot_timers: dict[DeadlineKey, _BotTimer | _Done] = {}
        # made when a bot first plays here: a Mersenne Twister's state is 2.5 KB, some 600 bytes
        # per player at a table of four people, who never need it
        self._bot_rng: random.Random | None = None
        self._empty_tokens: dict[int, int] = {}
        self._start_deadline = 0.0
        # the seat whose abandonment is ending the match, with its evidence (for settlement)
        self._forfeit: tuple[int, str, list[dict[str, Any]]] | None = None
        # added once to the next entropy window (`resume`)
        self._entropy_grace = 0.0
        # the match ending now is cancelled because none of its players came
        self._no_show = False
        self._last_events: tuple[Event, ...] = ()
        # the partner signals of the hand in play, by the seat they are for, each with whether
        # a socket of that seat's player took it: a partner away gets them on coming back
        self._signals_hand: int | None = None
        self._signals: dict[int, list[_Signal]] = {}
        # when each empty human seat's match is cancelled if nobody comes back (`_watch_empty`)
        self.empty_deadlines: dict[int, float] = {}
        self._dealt: DealtHand | None = None  # the hand in play (or last played), for replays
        self._tokens = 0
        self._entropy_token = 0  # the entropy window open now (`_open_entropy`)
        self._commits = 0  # writes saved so far (`_write`)
        # set by a command that changes its memory before writing: if the write then fails,
        # the table re-reads what was written (`_run`)
        self._ahead = False
        # a table a failed write left with no clock tries again (`_stalled`), ever later
        self._retry_timer: Timer | None = None
        self._retry_delay = RETRY_FIRST
        self._queue: _Mailbox[tuple[Command, asyncio.Future[Any] | None] | _Contribution | None]
        self._queue = _Mailbox()
        self._working = False  # a command is running (`idle`)
        self._task: asyncio.Task[None] | None = None

    # ----------------------------------------------------------------------------- the actor

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"table-{self.id}")

    async def stop(self) -> None:
        self._cancel_timers()
        for timer in self.empty_timers.values():
            timer.cancel()
        self.empty_timers.clear()
        self.empty_deadlines.clear()
        task, self._task = self._task, None
        if task is not None:
            self._queue.put(None)
            await task

    async def call(self, command: Callable[[], Awaitable[T]]) -> T:
        """Run `command` on the actor and return its result (or raise its error)."""
        if self._task is None:
            raise LiveError("table_closed", "This table is not running.", 409)
        future: asyncio.Future[T] = self._queue.future()
        self._queue.put((command, future))
        try:
            return await future
        finally:
            # a refusal's traceback holds this frame, and this frame the future that holds the
            # refusal: a reference cycle per refused command, left for the garbage collector,
            # which the house runs seldom (`server.loops.quiet_gc`)
            del future

    @property
    def idle(self) -> bool:
        """Nothing running and nothing queued (tests in virtual time wait for it), or asked from
        the actor's own command (which the asker cannot wait for)."""
        return (not self._working and not self._queue) or asyncio.current_task() is self._task

    def post(self, command: Command) -> None:
        """Queue `command` without waiting (timers, bots)."""
        if self._task is not None:
            self._queue.put((command, None))

    async def contribute(self, conn: Connection, msg_id: str | int | None, number: object,
                         hex_text: object) -> None:
        """An `entropy` message: return once it is acknowledged (or raise its refusal)."""
        if self._task is None:
            raise LiveError("table_closed", "This table is not running.", 409)
        done: asyncio.Future[None] = self._queue.future()
        self._queue.put(_Contribution(conn, msg_id, number, hex_text, done))
        try:
            await done
        finally:
            del done  # no cycle through a refusal's traceback (`call`)

    async def _run(self) -> None:
        while (item := await self._queue.get()) is not None:
            if isinstance(item, _Contribution):
                batch = [item]
                while self._queue.next_is(_Contribution):
                    batch.append(cast(_Contribution, self._queue.get_nowait()))
                command: Command = functools.partial(self._contribute, batch)
                futures = [c.done for c in batch]
            else:
                command, future = item
                futures = [] if future is None else [future]
            commits, self._ahead = self._commits, False
            self._working = True
            try:
                result = await command()
            except Exception as exc:
                if isinstance(exc, WriteRefused) and self._commits != commits:
                    exc = PartlySaved()  # "nothing changed" would not be true
                if not futures:
                    if isinstance(exc, LiveError):
                        log.warning("table command refused",
                                    extra={"table": self.id, "error": exc.code})
                    else:
                        log.exception("table command failed", extra={"table": self.id})
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, WRITE_FAILURES) and (
                        self._ahead or not isinstance(exc, WriteRefused)):
                    # what this actor holds may no longer be what was written (the write was in
                    # doubt, or the command had saved part of its change, or had changed its
                    # memory ahead of the write that failed): the caller has heard so; re-read
                    # what was written before any other command runs
                    try:
                        await self._reload()
                    except Exception:
                        log.exception("table reload failed", extra={"table": self.id})
                if self._stalled():
                    self._retry_later()
            else:
                for future in futures:
                    if not future.done():
                        future.set_result(result)
            finally:
                self._working = False
        # stopped: whatever is still queued will not run; its callers get a clear refusal
        while self._queue:
            rest = self._queue.get_nowait()
            waiter = (None if rest is None else rest.done if isinstance(rest, _Contribution)
                      else rest[1])
            if waiter is not None and not waiter.done():
                waiter.set_exception(LiveError("table_closed", "This table is closed.", 409))

    async def _write(self, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
        """Every write of the table's commands goes through here: `_run` then knows whether a
        command that failed had saved part of its change."""
        await self.house.writer.write(statements)
        self._commits += 1

    def _token(self) -> int:
        self._tokens += 1
        return self._tokens

    # ----------------------------------------------------------------------------- helpers

    @property
    def now(self) -> float:
        return self.house.clock.now()

    @property
    def seats(self) -> tuple[Seat, ...]:
        return self._seats

    @seats.setter
    def seats(self, seats: Iterable[Seat]) -> None:
        """Seat the table anew: the only way its seats change, so the house's index of who sits
        where (`House.tables_of`) follows every change."""
        before, self._seats = self._seats, tuple(seats)
        self._seat_of = {}
        for index, seat in enumerate(self._seats):
            if seat.user_id is not None:
                self._seat_of.setdefault(seat.user_id, index)
        self.house.reseated(self, before)

    def put_seat(self, index: int, holder: Seat) -> None:
        self.seats = (*self._seats[:index], holder, *self._seats[index + 1:])

    def seat_of(self, user_id: int) -> int | None:
        return self._seat_of.get(user_id)

    def connected(self, seat: int) -> bool:
        holder = self.seats[seat].user_id
        return holder is not None and any(c.user_id == holder for c in self.connections)

    def _human_seats(self) -> list[int]:
        return [i for i, seat in enumerate(self.seats) if seat.human]

    def table_json(self, user_id: int | None) -> dict[str, Any]:
        you = None if user_id is None else self.seat_of(user_id)
        return {
            "id": self.id,
            "variant": self.config.variant.value,
            "seats": self.config.seats,
            "mode": self.config.mode.value,
            "kind": self.kind.value,
            "status": self.status.value,
            "owner": self.owner,
            "players": [
                {"seat": i, "name": s.name, "bot": s.bot,
                 "connected": s.bot or self.connected(i), "played_by": self.played_by[i],
                 "cancel_at_ms": (ms(self.empty_deadlines[i]) if i in self.empty_deadlines
                                  else None)}
                for i, s in enumerate(self.seats)
            ],
            "score": list(self.score if self.state is None else self.state.score),
            "match": self.match_number,
            "hand": self.last_hand if self.hand is None else self.hand.number,
            "match_first_hand": self.match_first_hand,
            "you": you,
            "rematch": [i for i, s in enumerate(self.seats) if s.rematch],
            "invite": self.invite if you is not None else None,
            "abandon_limit": abandon_limit(self.kind),
            "forfeit_seat": self.forfeit_seat,
            "forfeit_trigger": self.forfeit_trigger,
            # a ranked or arena match waiting for its players: its first deal comes by then
            "first_deal_by_ms": None if self.start_timer is None else ms(self._start_deadline),
        }

    def _log(self, event: str, **fields: Any) -> None:
        log.info(event, extra={"table": self.id, "variant": self.config.variant.value,
                               "kind": self.kind.value, **fields})

    # ----------------------------------------------------------------------------- events

    def _emit(self, message: dict[str, Any]) -> int:
        """Number a table event every audience sees alike, keep it for reconnects and send it.

        Serialised once: every connection gets the same string.
        """
        self.seq += 1
        text = wire_json({**message, "seq": self.seq})
        self.history.append(Logged(self.seq, text))
        for conn in list(self.subscribers):
            conn.send(text)
        return self.seq

    def _audience(self, conn: Connection) -> Audience:
        return self._seat_of.get(conn.user_id)

    def _emit_table(self) -> int:
        # `you` and `invite` differ per user, not per audience: the event carries neither
        return self._emit({"type": "table", "table": self.table_json(None)})

    def _deadlines_json(self) -> list[dict[str, Any]]:
        return [
            {"seat": d.seat, "seats": list(d.seats or (d.seat,)), "kind": d.kind.value,
             "team_vote": d.team_vote, "deadline_ms": ms(d.at)}
            for d in sorted(self.deadlines.values(), key=lambda d: (d.at, d.seat))
        ]

    def _emit_update(self, events: tuple[Event, ...]) -> int:
        """Number an engine step; only audiences with a subscriber get a view built, once each.

        The shared part is serialised once with `"view"` last, cut just before its value, and
        each audience's view is appended to it; the history keeps only that shared part.
        """
        state, hand, dealt = self.state, self.hand, self._dealt
        assert state is not None and hand is not None and dealt is not None
        self.seq += 1
        pending, absent = self._deadlines_json(), sorted(self.absent)

        def head_for(viewer: int | None) -> bytes:
            return orjson.dumps(
                {"type": "update", "seq": self.seq, "hand": hand.number,
                 "events": events_json(events, viewer), "pending": pending,
                 "absent": absent, "view": None},
            )[:-len(b"null}")]

        head = head_for(None)
        # a vote's verb is for the voter's team alone (`truco.views._sees_vote`): that team's
        # seats get a head of their own
        voter = next((e.seat for e in events if isinstance(e, VoteCast)), None)
        team = None if voter is None else (voter % 2, head_for(voter))
        self.history.append(Logged(self.seq, head, dealt, len(hand.actions), team))
        if not self.subscribers:
            return self.seq
        audiences = {conn: self._audience(conn) for conn in self.subscribers}
        texts = {audience: _closed(_head(head, team, audience), one)
                 for audience, one in views(state, audiences.values()).items()}
        for conn, audience in audiences.items():
            conn.send(texts[audience])
        return self.seq

    def hand_info(self) -> dict[str, Any] | None:
        hand = self.hand
        if hand is None:
            return None
        return {
            "hand": hand.number,
            "phase": hand.phase.value,
            "commitment": hand.commitment.hex(),
            "chain_start": hand.chain_start,
            # a client that opens the table after the `commitment` event can still check a new
            # seed chain's signed anchor before it sends its entropy
            "anchor": hand.anchor,
            "entropy_deadline_ms": None if hand.entropy_deadline is None
            else ms(hand.entropy_deadline),
            "entropy_from": sorted(hand.contributions),
        }

    def snapshot(self, conn: Connection) -> dict[str, Any]:
        audience = self._audience(conn)
        return {
            "type": "snapshot",
            "seq": self.seq,
            "epoch": self.house.epoch,
            "server_time_ms": ms(self.now),
            "table": self.table_json(conn.user_id),
            "hand": self.hand_info(),
            "view": None if self.state is None else view(self.state, audience),
            "pending": self._deadlines_json(),
            "absent": sorted(self.absent),
            "automatic": [self.automatic_streak(seat) for seat in range(self.config.seats)],
            "partner_signals": self._hand_signals(audience, take=True),
        }

    def automatic_streak(self, seat: int) -> int:
        """The seat's automatic actions in a row so far (`abandon_limit` of them forfeit)."""
        streak = self.streaks.get(seat)
        return 0 if streak is None else streak.count

    # ----------------------------------------------------------------------------- sockets

    async def open_connection(self, conn: Connection) -> None:
        self.last_seen = self.now
        seat = self._audience(conn)
        was_connected = seat is not None and self.connected(seat)
        self.connections.add(conn)
        if seat is None or was_connected:
            return
        timer = self.empty_timers.pop(seat, None)
        self.empty_deadlines.pop(seat, None)
        if timer is not None:
            timer.cancel()
        self.returning.discard(seat)
        await self._connection_event(seat, SeatEventKind.CONNECTED)
        self._emit_table()
        if seat in self.absent and self.status is TableStatus.PLAYING:
            self._clock_for_the_returned(seat)
        if self.start_timer is not None and self._everyone_here():
            self.post(lambda: self._players_waited(None))

    def _clock_for_the_returned(self, seat: int) -> None:
        """An absent player back in an empty seat: their page has only just come back, and a
        2 s clock would act for them (and, at the limit, forfeit the match) before they saw
        their cards. Their next decision, the one pending now if there is one, gets the full
        clock, once; they stay absent until they act (RULES.md), as a restart's returning
        players do (docs/RULE_DECISIONS.md 22, 23). Once until the seat's next action: coming
        back again before it gives nothing more."""
        if seat in self.granted_back:
            return
        self.granted_back.add(seat)
        self.back_in_seat.add(seat)
        state = self.state
        if state is None or state.hand_over or state.outcome is not None:
            return
        running = [key for key, d in self.deadlines.items()
                   if d.seat == seat and not d.team_vote]
        if not running:
            return
        for key in running:
            self.deadlines.pop(key).timer.cancel()
        self._reschedule()
        self._log("clocks restarted", reason="returned", seat=seat)
        self._emit({"type": "clocks", "reason": "returned", "seat": seat,
                    "pending": self._deadlines_json()})

    async def close_connection(self, conn: Connection) -> None:
        self.last_seen = self.now
        self.connections.discard(conn)
        self.subscribers.discard(conn)
        seat = self._audience(conn)
        if seat is None or self.connected(seat):
            return
        self.back_in_seat.discard(seat)
        # the house closing every socket as it stops is the server's doing, not the player's
        await self._connection_event(
            seat, SeatEventKind.DISCONNECTED,
            {"cause": "server_shutdown"} if self.house.shutting_down else None)
        self._watch_empty(seat)
        if self.house.shutting_down:
            # the server is stopping: it took the connection, the player did not lose it; a
            # pending vote is theirs to cast after the restart (`returning`)
            return
        if self.deadlines and self.state is not None and not self.state.hand_over:
            self._reschedule()  # a vote pending for this seat now counts as decline
        if self.status is not TableStatus.CLOSED:
            self._emit_table()

    async def hello(self, conn: Connection, last_seq: int, epoch: int | None) -> None:
        conn.send_json({
            "type": "welcome",
            "table": self.table_json(conn.user_id),
            "seat": self._audience(conn),
            "seq": self.seq,
            "epoch": self.house.epoch,
            "server_time_ms": ms(self.now),
            "signals": [{"code": s.code, "label": s.label}
                        for s in signals_for(self.config.variant)],
            "limits": {"max_message_bytes": self.house.settings.max_message_bytes,
                       "rate_per_second": self.house.settings.rate_per_second},
        })
        oldest = self.history[0].seq if self.history else self.seq + 1
        replayable = (
            epoch == self.house.epoch
            and 0 < last_seq <= self.seq
            and last_seq + 1 >= oldest
            # a long replay would overflow the client's send queue: a snapshot is smaller
            and self.seq - last_seq <= self.house.settings.send_queue // 2
        )
        if replayable:
            audience = self._audience(conn)
            replay = _Replay()
            for entry in self.history:
                if entry.seq > last_seq:
                    conn.send(replay.message(entry, audience))
            for kept in self._hand_signals(audience, take=True, undelivered=True):
                conn.send_json(kept)
        else:
            conn.send_json(self.snapshot(conn))
        self.subscribers.add(conn)

    async def _seat_event(self, seat: int, kind: SeatEventKind, detail: dict[str, Any],
                          when: float | None = None) -> None:
        """Keep clock and connection evidence of a human seat while a match is on."""
        if self.status is not TableStatus.PLAYING or not self.seats[seat].human:
            return
        await self._write([(
            "INSERT INTO seat_events (table_id, match_number, seat, kind, at, detail)"
            " VALUES ($1, $2, $3, $4, $5, $6::jsonb)",
            (self.id, self.match_number, seat, kind.value,
             at(self.now if when is None else when), json.dumps(detail)),
        )])

    async def _connection_event(self, seat: int, kind: SeatEventKind,
                                detail: dict[str, Any] | None = None) -> None:
        """A socket came or went: evidence kept when the database takes it, but a socket is
        never refused, nor an empty seat left unwatched, for want of it."""
        try:
            await self._seat_event(seat, kind, detail or {})
        except LiveError as exc:
            log.warning("connection event not saved",
                        extra={"table": self.id, "seat": seat, "kind": kind.value,
                               "error": exc.code})

    def _watch_empty(self, seat: int, seconds: float | None = None) -> None:
        """A private or training match is cancelled when a human seat stays empty too long
        (`seconds`: the rest of that time, when not all of it)."""
        if (self.status is not TableStatus.PLAYING or self.kind.competitive
                or not self.seats[seat].human or seat in self.empty_timers):
            return
        token = self._token()
        deadline = self.now + (self.house.config.empty_seat_cancel if seconds is None
                               else seconds)
        self.empty_timers[seat] = self.house.clock.call_at(
            deadline, lambda: self.post(lambda: self._on_empty(seat, token)))
        self.empty_deadlines[seat] = deadline
        self._empty_tokens[seat] = token

    async def _on_empty(self, seat: int, token: int) -> None:
        if (self._empty_tokens.get(seat) != token or seat not in self.empty_timers
                or self.house.shutting_down):
            return
        del self.empty_timers[seat]
        self.empty_deadlines.pop(seat, None)
        try:
            await self._catch_up()
            if self.status is not TableStatus.PLAYING or self.connected(seat):
                return
            self._log("seat_empty_cancel", seat=seat)
            await self._end_match_early(0, Termination.CANCELLED)
        except BaseException:
            # not written (the database refused it, or it is in doubt and the table re-reads
            # it): the seat is still empty, so it stays watched, and spared the limit of
            # automatic actions (`_act_on_deadline`), and the cancel is tried again shortly
            if not self.connected(seat):
                self._watch_empty(seat, RETRY_FIRST)
            raise

    # ----------------------------------------------------------------------------- lobby

    def _require_seated(self, user_id: int) -> int:
        seat = self.seat_of(user_id)
        if seat is None:
            raise LiveError("not_seated", "You are not seated at this table.", 403)
        return seat

    def _check_open(self) -> None:
        if self.status is TableStatus.CLOSED:
            raise LiveError("table_closed", "This table is closed.", 409)
        if self.status is not TableStatus.OPEN:
            raise LiveError("not_open", "The table is not seating now.", 409)

    def _seat_index(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < self.config.seats:
            raise LiveError("bad_seat", f"seat must be an integer 0..{self.config.seats - 1}")
        return value

    def _seat_statement(self, seat: int, holder: Seat | None = None) -> tuple[str, tuple[Any, ...]]:
        """The row of `seat` as it is, or as it will be with `holder` (written first)."""
        holder = self.seats[seat] if holder is None else holder
        return (
            "UPDATE live_seats SET user_id = $3, bot = $4, rematch = $5"
            " WHERE table_id = $1 AND seat = $2",
            (self.id, seat, holder.user_id, holder.bot, holder.rematch),
        )

    def invited(self, invite: object) -> bool:
        """Whether `invite` is this private table's code (in constant time, any case)."""
        return isinstance(invite, str) and self.invite is not None and secrets.compare_digest(
            invite.strip().upper().encode(), self.invite.encode())

    async def join(self, user_id: int, name: str, invite: object, seat: object) -> None:
        if self.seat_of(user_id) is not None:
            raise LiveError("already_seated", "You already sit at this table.", 409)
        self._check_open()
        if self.kind is TableKind.PRIVATE and not self.invited(invite):
            raise LiveError("wrong_invite", "That invite code is not this table's.", 403)
        if seat is None:
            free = [i for i, s in enumerate(self.seats) if s.free]
            if not free:
                raise LiveError("table_full", "Every seat is taken.", 409)
            index = free[0]
        else:
            index = self._seat_index(seat)
            if not self.seats[index].free:
                raise LiveError("seat_taken", f"Seat {index} is taken.", 409)
        holder = Seat(user_id=user_id, name=name)
        await self._write([self._seat_statement(index, holder)])
        self.put_seat(index, holder)
        self.last_seen = self.now
        self._log("joined", seat=index, user=name)
        self._emit_table()

    async def move(self, user_id: int, seat: object) -> None:
        current = self._require_seated(user_id)
        self._check_open()
        index = self._seat_index(seat)
        if index == current:
            return
        if not self.seats[index].free:
            raise LiveError("seat_taken", f"Seat {index} is taken.", 409)
        await self._write([self._seat_statement(current, Seat()),
                                       self._seat_statement(index, self.seats[current])])
        self.seats = [self.seats[current] if i == index else Seat() if i == current else s
                      for i, s in enumerate(self.seats)]
        self.last_seen = self.now
        self._emit_table()

    async def start_match(self, user_id: int) -> None:
        self._require_seated(user_id)
        self._check_open()
        if self.kind is not TableKind.TRAINING and any(seat.free for seat in self.seats):
            raise LiveError("not_full", "The table starts when every seat is taken.", 409)
        # training: bots take the free seats
        await self._new_match([Seat(name="bot", bot=True) if s.free else s for s in self.seats])

    async def _new_match(self, seats: list[Seat]) -> None:
        """Seat `seats` (nobody asking for a rematch any more) and deal the first hand."""
        seats = [Seat(s.user_id, s.name, s.bot, rematch=False) for s in seats]
        players = [s.user_id for s in seats if s.user_id is not None]
        if not self.kind.competitive:  # the matchmaker seats ranked and arena players
            self._check_playing(players)
        with counted(self.house.starting, players):  # while this start waits for its write
            number = await self._write_match_start(seats)
        # from here on counted by its status, set before anything waits (a start counted both
        # ways while it dealt refused the player's other tables one match early)
        await self._start_match_written(seats, number)

    def _check_playing(self, players: Sequence[int]) -> None:
        """One account plays at most `max_playing_tables` matches at once: a start (or the
        rematch that completes) puts every player of the table in one more, so each is checked,
        not the asker alone (OPERATIONS.md, Limits)."""
        limit = self.house.settings.max_playing_tables
        for user_id in players:
            playing = self.house.playing_count(user_id)
            if playing >= limit:
                seat = self.seat_of(user_id)
                name = self.seats[seat].name if seat is not None else None
                raise LiveError("too_many_matches",
                                f"{name or 'A player'} already plays at {playing} tables: the"
                                " match starts once they finish or leave one of them.", 409)

    async def _write_match_start(self, seats: list[Seat]) -> int:
        """Write the next match's start; its number."""
        number = self.match_number + 1
        await self._write([
            *(self._seat_statement(i, holder) for i, holder in enumerate(seats)),
            ("UPDATE live_tables SET status = $2, closed_at = NULL WHERE id = $1",
             (self.id, TableStatus.PLAYING.value)),
            # who plays it, seat by seat (None: a bot): a settlement after a restart needs them
            # even when a seat was emptied since (migration 026)
            ("INSERT INTO live_matches (table_id, number, started_at, players)"
             " VALUES ($1, $2, $3, $4)",
             (self.id, number, at(self.now), [s.user_id for s in seats])),
        ])
        return number

    async def _start_match_written(self, seats: list[Seat], number: int) -> None:
        self.seats = seats
        self.played_by = [s.name if s.human else None for s in seats]
        self.forfeit_seat = None
        self.forfeit_trigger = None
        self.match_number = number
        self.match_first_hand = self.last_hand + 1
        self.status = TableStatus.PLAYING
        self.score = (0, 0)
        self.next_dealer = None
        self.state = None
        self.absent.clear()
        self.back_in_seat.clear()
        self.granted_back.clear()
        self.streaks.clear()
        self.house.metrics.live_tables.inc()
        self._log("match_started", match=self.match_number)
        self._emit_table()
        for seat in self._human_seats():
            # the evidence starts with who is at the table when the match begins
            if self.connected(seat):
                await self._seat_event(seat, SeatEventKind.CONNECTED, {"at_start": True})
            else:
                self._watch_empty(seat)
        if self.empty_deadlines:
            self._emit_table()  # when the seats nobody has open cancel the match
        if self.kind.competitive and not self._everyone_here():
            self._wait_for_players()
        else:
            await self._begin_hand()

    def _everyone_here(self) -> bool:
        return all(self.connected(seat) for seat in self._human_seats())

    def _wait_for_players(self) -> None:
        """A ranked or arena match is seated by the matchmaker while its players wait on the
        queue's page: its first deal, and with it the first 10 s clock, waits until every
        player has the table open, or `start_grace` at most (then the clocks run for whoever
        is missing, as ever)."""
        self._start_deadline = self.now + self.house.config.start_grace
        timer = self.start_timer = self.house.clock.call_at(
            self._start_deadline, lambda: self.post(lambda: self._players_waited(timer)))
        self._emit_table()
        self._log("waiting_for_players", grace=self.house.config.start_grace)

    async def _players_waited(self, timer: Timer | None) -> None:
        """Every player came (`timer` None), or this wait's grace ran out: deal the first hand."""
        if self.start_timer is None or (timer is not None and timer is not self.start_timer):
            return
        if timer is not None and self.house.shutting_down:
            return  # the grace's end: see `_on_deadline`
        if timer is None and not self._everyone_here():
            return
        self.start_timer.cancel()
        self.start_timer = None
        if self.status is TableStatus.PLAYING and self.hand is None:
            await self._begin_hand()
            if timer is not None and not any(self.connected(seat)
                                             for seat in self._human_seats()):
                # nobody came: the clocks would run for everyone, and whichever seat reached
                # its limit first would lose to players who never came either (rated, and
                # their stakes moved, for nothing). The match is cancelled, its stakes returned
                self._log("nobody_came_cancel")
                self._no_show = True
                await self._end_match_early(0, Termination.CANCELLED)

    async def rematch(self, user_id: int) -> None:
        seat = self._require_seated(user_id)
        if self.kind.competitive:
            # a ranked or arena match is paired and staked by the ranked service, one match per
            # table: a rematch here would be unstaked and unpaired, so the players queue again
            raise LiveError("rematch_not_allowed", "Ranked and arena tables play one match: "
                            "queue again for the next one.", 409)
        if self.status is not TableStatus.FINISHED:
            raise LiveError("not_finished", "A rematch follows a finished match.", 409)
        asking = Seat(self.seats[seat].user_id, self.seats[seat].name, rematch=True)
        seats = [asking if i == seat else s for i, s in enumerate(self.seats)]
        if all(s.rematch or s.bot for s in seats):
            await self._new_match(seats)
        else:
            await self._write([self._seat_statement(seat, asking)])
            self.seats = seats
            self.last_seen = self.now
            self._emit_table()

    async def leave(self, user_id: int, resign: bool = True) -> None:
        """Free the seat; leaving a match in play is resigning it. `resign=False` (a page's
        "leave" after a match, or before one): refused instead while a match is in play, which
        a rematch or a start may have begun since the page asked (409 `match_in_play`)."""
        seat = self._require_seated(user_id)
        await self._catch_up()
        if self.status is TableStatus.PLAYING and not resign:
            raise LiveError("match_in_play", "A match is in play at this table now (started"
                            " since you asked): leaving it is resigning it; send"
                            " {\"resign\": true} for that.", 409)
        if self.status is TableStatus.PLAYING:
            # leaving a match in play is resigning it
            await self._abandon(seat, AbandonTrigger.LEFT, restart_overlap=False)
        seats = [Seat() if i == seat else s for i, s in enumerate(self.seats)]
        status = self.status
        if not any(s.human for s in seats):
            status = TableStatus.CLOSED
        elif status is TableStatus.FINISHED and not self.kind.competitive:
            # a ranked or arena table plays one match, seated by the matchmaker: it never
            # reopens; it stays finished (its result) for whoever is still there
            status = TableStatus.OPEN
        if status in (TableStatus.OPEN, TableStatus.CLOSED):
            # back to seating: the bots leave and nobody is waiting for a rematch any more
            seats = [Seat() if s.bot else Seat(s.user_id, s.name) for s in seats]
        closed = at(self.now) if status is TableStatus.CLOSED else None
        await self._write([
            *(self._seat_statement(i, holder) for i, holder in enumerate(seats)),
            ("UPDATE live_tables SET status = $2, closed_at = $3 WHERE id = $1",
             (self.id, status.value, closed)),
        ])
        self.seats, self.status = seats, status
        self.last_seen = self.now
        self._log("left", seat=seat)
        self._emit_table()
        if self.status is TableStatus.CLOSED:
            self.house.forget(self)

    def idle_for(self, now: float) -> float:
        """Seconds this table has stood open or finished with no socket on it (0 while a match
        is in play, whose clocks end it anyway, or while anyone has it open)."""
        if self.connections or self.status not in (TableStatus.OPEN, TableStatus.FINISHED):
            return 0.0
        return max(0.0, now - self.last_seen)

    async def close_idle(self) -> None:
        """Close a table nobody has had open for `Config.idle_table_close`: its seats are freed
        and it leaves the house's memory and the lobby. What was played stays in the database
        (records, results); a ranked or arena match was settled as it finished."""
        limit = self.house.config.idle_table_close
        idle = self.idle_for(self.now)
        if limit <= 0 or idle < limit:
            return  # someone came back since the house's sweep saw it idle
        seats = [Seat() for _ in self.seats]
        await self._write([
            *(self._seat_statement(i, holder) for i, holder in enumerate(seats)),
            ("UPDATE live_tables SET status = $2, closed_at = $3 WHERE id = $1",
             (self.id, TableStatus.CLOSED.value, at(self.now))),
        ])
        was = self.status
        self.seats, self.status = seats, TableStatus.CLOSED
        self.house.metrics.idle_tables_closed.inc()
        self._log("idle_closed", was=was.value, idle_seconds=round(idle))
        self._emit_table()
        self.house.forget(self)

    # ----------------------------------------------------------------------------- hands

    async def _begin_hand(self) -> None:
        """Commit to the next hand's seed and open the entropy window."""
        number = self.last_hand + 1
        settings = self.house.settings
        statements: list[tuple[str, tuple[Any, ...]]] = []
        anchor: dict[str, Any] | None = None
        chain = self.chain
        if chain is None or not chain.covers(number):
            tip = secrets.token_bytes(32)
            seeds = seed_chain(tip, settings.chain_length)
            anchor = sign_statement(
                build_seed_anchor(self.id, number, settings.chain_length, seeds[0]),
                self.house.signing_key,
            )
            chain = Chain(number, seeds, anchor)
            statements.append((
                "INSERT INTO seed_chains (table_id, chain_start, length, tip_sealed, anchor)"
                " VALUES ($1, $2, $3, $4, $5::jsonb)",
                (self.id, number, settings.chain_length,
                 seal(self.house.config.seed_key, SealedKind.TIP, self.id, number, tip),
                 json.dumps(anchor)),
            ))
        seed = chain.seed_for(number)
        hand = HandRun(
            number=number,
            match_number=self.match_number,
            chain_start=chain.start,
            seed=seed,
            commitment=commitment(seed),  # chain.commitment_for(number), one hash, not a walk
            score_before=self.score,
            anchor=anchor,
        )
        statements.append((
            "INSERT INTO live_hands (table_id, hand, match_number, chain_start, commitment,"
            " seed_sealed, score_before) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            (self.id, number, self.match_number, chain.start, hand.commitment,
             seal(self.house.config.seed_key, SealedKind.SEED, self.id, number, seed),
             list(self.score)),
        ))
        await self._write(statements)
        self.chain, self.hand = chain, hand
        self._open_entropy()

    def _open_entropy(self) -> None:
        """Publish the commitment and wait for entropy (also after a restart: a full window,
        and the time a page takes to find the house back, `RESTART_ENTROPY_GRACE`)."""
        hand = self.hand
        assert hand is not None
        grace, self._entropy_grace = self._entropy_grace, 0.0
        hand.entropy_deadline = self.now + self.house.config.entropy_window + grace
        number, token = hand.number, self._token()
        self._entropy_token = token
        self.entropy_timer = self.house.clock.call_at(
            hand.entropy_deadline,
            lambda: self.post(lambda: self._on_entropy_deadline(number, token)),
        )
        payload = {
            "type": "commitment",
            "hand": number,
            "commitment": hand.commitment.hex(),
            "chain_start": hand.chain_start,
            "anchor": hand.anchor,
            "entropy_deadline_ms": ms(hand.entropy_deadline),
        }
        self._emit(payload)
        self._log("hand_committed", hand=number)
        if not self._human_seats():
            self.post(lambda: self._on_entropy_deadline(number, token))

    async def _on_entropy_deadline(self, number: int, token: int) -> None:
        """Deal with the entropy received so far. `token` names the window: one that a reload
        replaced (its command already queued) deals nothing. The window is over: a deal the
        database does not take leaves the table with no clock (`_stalled`), so it goes on later
        from what was written (`_retry_later`), in a new window."""
        hand = self.hand
        if (hand is None or hand.number != number or hand.phase is not HandPhase.ENTROPY
                or token != self._entropy_token or self.house.shutting_down):
            return  # stopping: see `_on_deadline` (after the restart the window opens again)
        if self.entropy_timer is not None:
            self.entropy_timer.cancel()  # it fired, or the table has no human to wait for
            self.entropy_timer = None
        dealer, dealer_by, dealt = self._deal_of(hand, hand.contributions)
        await self._write([dealt])
        self._dealt_now(hand, dealer, dealer_by)

    def _check_entropy(self, item: _Contribution, taken: Mapping[int, bytes]) -> tuple[int, bytes]:
        """The seat and bytes of a contribution, or its refusal; `taken`: the seats that sent
        theirs already (written, or accepted earlier in the same batch)."""
        seat = self._audience(item.conn)
        if seat is None:
            raise LiveError("not_seated", "Spectators send no entropy.", 403)
        hand, number, hex_text = self.hand, item.number, item.hex_text
        # an integer, exactly (3.0 is not hand 3: every other number of the protocol is an int)
        if (hand is None or hand.phase is not HandPhase.ENTROPY or type(number) is not int
                or number != hand.number):
            raise LiveError("entropy_closed", "Not collecting entropy for that hand now.")
        if seat in taken:
            raise LiveError("entropy_duplicate", "You already sent entropy for this hand.")
        if (not isinstance(hex_text, str) or len(hex_text) > 2 * MAX_CONTRIBUTION_BYTES
                or not _HEX.fullmatch(hex_text)):
            raise LiveError("bad_entropy", "Entropy is 1..256 bytes as lowercase hex.")
        return seat, bytes.fromhex(hex_text)

    async def _contribute(self, batch: list[_Contribution]) -> None:
        """Entropy messages queued together, taken together. Each is checked on its own (a
        refused one gets its error and changes nothing); the accepted ones are written at once,
        with the deal when they complete the hand's entropy. Then, in this one turn, their
        receipts, the deal and their acks: one socket write per seat for all of it, where a
        contribution at a time took a commit and a write per seat each."""
        hand = self.hand
        sent = dict(hand.contributions) if hand is not None else {}
        accepted: list[tuple[_Contribution, int]] = []
        for item in batch:
            try:
                seat, data = self._check_entropy(item, sent)
            except LiveError as exc:
                item.done.set_exception(exc)
                continue
            sent[seat] = data
            accepted.append((item, seat))
        if not accepted:
            return
        assert hand is not None
        statements = [(
            "INSERT INTO live_contributions (table_id, hand, seat, data) VALUES ($1, $2, $3, $4)",
            (self.id, hand.number, seat, sent[seat]),
        ) for _, seat in accepted]
        complete = all(s in sent for s in self._human_seats())
        if complete:
            dealer, dealer_by, dealt = self._deal_of(hand, sent)
            statements.append(dealt)
        await self._write(statements)
        seqs = []
        for _, seat in accepted:
            hand.contributions[seat] = sent[seat]
            # a small public event: who sent entropy (the bytes are revealed only in the record)
            seqs.append(self._emit({"type": "entropy", "hand": hand.number, "seat": seat}))
        if complete:
            self._dealt_now(hand, dealer, dealer_by)
        for (item, _), seq in zip(accepted, seqs, strict=True):
            item.conn.ack(item.msg_id, seq)
            item.done.set_result(None)

    def _contributions(self, sent: Mapping[int, bytes]) -> tuple[bytes | None, ...]:
        # a seat that sent nothing is absent (None): the server never fills one in
        return tuple(sent.get(s) for s in range(self.config.seats))

    def _deal_of(self, hand: HandRun, sent: Mapping[int, bytes],
                 ) -> tuple[int, DealerChoice, tuple[str, tuple[Any, ...]]]:
        """Who deals the hand with the entropy `sent`, and the row that says it is dealt."""
        if self.next_dealer is None:
            dealer = draw_first_dealer(hand.seed, self.id, self._contributions(sent),
                                       self.config.seats)
            dealer_by = DealerChoice.DRAW
        else:
            dealer, dealer_by = self.next_dealer, DealerChoice.ROTATION
        return dealer, dealer_by, ("UPDATE live_hands SET dealt = true, dealer = $3,"
                                   " dealer_by = $4 WHERE table_id = $1 AND hand = $2",
                                   (self.id, hand.number, dealer, dealer_by.value))

    def _dealt_now(self, hand: HandRun, dealer: int, dealer_by: DealerChoice, *,
                   announce: bool = True) -> None:
        """The deal is written: play it (and, unless the match is ending, show it)."""
        if self.entropy_timer is not None:
            self.entropy_timer.cancel()
            self.entropy_timer = None
        self.start_dealt(hand, dealer, dealer_by)
        if announce:
            self._reschedule()
            assert self.state is not None
            self._emit_update(self._last_events)
            self._log("hand_dealt", hand=hand.number, dealer=dealer)

    def start_dealt(self, hand: HandRun, dealer: int, dealer_by: DealerChoice) -> None:
        """Derive the deck and deal: the same computation as the verifier's."""
        deck = derive_deck(hand.seed, self.id, hand.number,
                           self._contributions(hand.contributions))
        deal = deal_cards(deck, self.config.variant, self.config.seats, dealer)
        before = new_match(self.config, first_dealer=dealer, score=hand.score_before)
        self.state, self._last_events = start_hand(before, deal)
        self._dealt = DealtHand(before, deal, hand.actions)
        hand.phase, hand.dealer, hand.dealer_by = HandPhase.PLAYING, dealer, dealer_by

    async def resume(self) -> None:
        """After a restart: go on where the table stood, every clock in full."""
        self.house.metrics.live_tables.inc()
        # nobody is connected yet: the players' pages come back as they retry (backing off to
        # 5 s), after the 3 s of an entropy window opened now would have run out
        self._entropy_grace = RESTART_ENTROPY_GRACE
        for seat in self._human_seats():
            if not self.connected(seat):
                self._watch_empty(seat)
                # the restart took their connection, they did not lose it: their pending
                # votes get their clocks in full, not a decline (`_declines_for`)
                self.returning.add(seat)
        try:
            await self._take_up()
        finally:
            self._entropy_grace = 0.0  # for a window opened now only

    async def _reload(self) -> None:
        """After a write in doubt: take up what was written, exactly as a restart would
        (`server.live.recovery`), send every subscriber a snapshot of it, and go on from there
        with every clock in full. While the database cannot be read, commands wait."""
        from server.live.recovery import UNRESTORABLE, reread, written_result

        self._cancel_timers()
        delay = 0.25
        while True:
            try:
                # bounded as a write is: a database that hangs (stopped, not gone) is retried
                # and said in the log, where the table waited on it in silence
                written = await asyncio.wait_for(reread(self.house, self.id),
                                                 self.house.config.write_timeout)
                break
            except UNRESTORABLE as exc:
                # what was written does not rebuild: as after a restart, the table is not
                # served any more (its sockets close) and stays as written for an operator
                log.error("table not reloaded", extra={"table": self.id, "error": str(exc)})
                self.house.metrics.tables_unavailable.labels("not_reloaded").inc()
                if self.status is TableStatus.PLAYING:
                    self.house.metrics.live_tables.dec()
                self.house.forget(self)
                for conn in list(self.connections):
                    conn.close_soon(WSCloseCode.INTERNAL_ERROR, "table unavailable")
                return
            except (*WRITE_ERRORS, TimeoutError) as exc:
                if self._task is None:
                    return  # stopping: the next start rebuilds the table anyway
                log.warning("table reload waits for the database",
                            extra={"table": self.id, "error": error_text(exc)})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        was_playing = self.status is TableStatus.PLAYING
        for name in _WRITTEN:
            setattr(self, name, getattr(written, name))
        self._forfeit = None
        self.absent.clear()  # as after a restart: absence is not written, every clock in full
        self.back_in_seat.clear()
        self.granted_back.clear()
        self.seq += 1  # events before this point are not replayed: a catch-up gets a snapshot
        self.history.clear()
        self.house.metrics.table_reloads.inc()
        self._log("table_reloaded", status=self.status.value)
        hand, state = self.hand, self.state
        if (self.status is TableStatus.PLAYING and hand is not None
                and hand.phase is HandPhase.PLAYING and state is not None
                and not state.hand_over and state.outcome is None):
            self._reschedule()  # the clocks, in full, in the snapshot (`_go_on` keeps them)
        for conn in list(self.subscribers):
            conn.send_json(self.snapshot(conn))
        if self.status is TableStatus.PLAYING:
            if not was_playing:
                self.house.metrics.live_tables.inc()
            await self._take_up()
        elif was_playing:
            self.house.metrics.live_tables.dec()
            if self.kind.competitive:
                # the write in doubt ended the match, and stood: settled as `_finish_hand`
                # would have (else its stakes stayed held and its players could not queue
                # again until a restart); settling is idempotent
                try:
                    result = await written_result(self.house, self)
                except (*WRITE_ERRORS, TimeoutError) as exc:  # the restart settles it then
                    log.error("match end not settled", extra={"table": self.id,
                                                              "error": str(exc)})
                else:
                    if result is not None:
                        await self.house.settle(result)
        if self.status is TableStatus.CLOSED:
            self.house.forget(self)  # as a restart would not serve it

    def _stalled(self) -> bool:
        """Playing, yet no clock will move the table on: the write that would have set the next
        one failed (a hand's record, the next hand's commitment). Between commands, a table in
        play always has a deadline, a bot's turn or an entropy window running otherwise."""
        return (self.status is TableStatus.PLAYING and self._task is not None
                and not self.deadlines and not self.bot_timers and self.entropy_timer is None
                and self.start_timer is None)

    def _retry_later(self) -> None:
        """Go on from what was written a little later, and again, ever later (up to RETRY_MAX),
        until the database takes the write: a table must not stand still for good."""
        if self._retry_timer is not None:
            return
        delay, self._retry_delay = self._retry_delay, min(self._retry_delay * 2, RETRY_MAX)
        log.warning("table stalled: going on later", extra={"table": self.id, "in_s": delay})
        self.house.metrics.table_stalls.inc()

        def fire() -> None:
            self._retry_timer = None
            self.post(self._unstall)

        self._retry_timer = self.house.clock.call_at(self.now + delay, fire)

    async def _unstall(self) -> None:
        """What a stalled table does once it tries again: re-read what was written (a failed
        write may have left memory ahead of it) and go on from there."""
        if self._stalled():
            await self._reload()
        if not self._stalled():
            self._retry_delay = RETRY_FIRST

    async def _catch_up(self) -> None:
        """Before a command ends the match early (a resignation, the empty-seat cancel): a table
        a failed write left standing goes on first. A hand the rules finished is recorded as
        completed, never as abandoned or cancelled (FAIRNESS.md 7), and a match is ended in a
        hand of its own (the next one, begun now) when none was in play. If that write fails
        too, the command is refused and nothing changed."""
        if self.start_timer is not None:  # the match ends before its players all came
            self.start_timer.cancel()
            self.start_timer = None
        if self._stalled():
            await self._go_on()

    async def _take_up(self) -> None:
        """Go on from what was written (a restart's or a reload's), every clock in full."""
        if (self.hand is None and self.kind.competitive and self.last_hand == 0
                and not self._everyone_here()):
            # a ranked or arena match still waiting for its players (its first deal): it
            # waits again, in full (dealt at once, the clocks ran for seats nobody had open
            # yet, and nobody coming no longer cancelled it; a start whose write was in doubt
            # dealt so before any player had been shown the table)
            self._wait_for_players()
        else:
            await self._go_on()

    async def _go_on(self) -> None:
        """Start the clock of what the table stands at."""
        if self.hand is None:
            await self._begin_hand()
        elif self.hand.phase is HandPhase.ENTROPY:
            self._open_entropy()
        elif self.state is not None and (self.state.hand_over or self.state.outcome is not None):
            # the crash came after the hand's last action was written but before its record
            # was: record it now (the seed is revealed as if nothing had happened), then go on
            await self._finish_hand(RecordEnd.COMPLETED, None)
        else:
            self._reschedule()
        self._log("table_resumed", hand=self.hand.number if self.hand else None)

    # ----------------------------------------------------------------------------- actions

    async def act(self, conn: Connection, raw: object, arrival: float,
                  hand_number: int | None = None, last_seq: int | None = None) -> int:
        """A player's move. `hand_number`, when the client names it, is the table hand whose view
        the move was chosen on: a move that crossed the end of that hand is refused as stale
        instead of landing in the next hand, where it may happen to be legal too. `last_seq`,
        when the client names it, is the last event it had when the move was chosen: a move
        chosen before the seat's last action (its own, or the clock's for it) was meant for a
        decision already taken, and is refused as stale instead of landing on the next one (a
        card sent into a stalled link, the clock playing another meanwhile, the first card
        played in the next round when the link came back)."""
        try:
            action = self._move(conn, raw, hand_number, last_seq)
        except LiveError as exc:  # the engine's refusals are counted in `_apply`
            self.house.metrics.refused_actions.labels(exc.code).inc()
            raise
        return await self._apply(action, automatic=False, arrival=arrival, clears_absence=True)

    def _move(self, conn: Connection, raw: object, hand_number: int | None,
              last_seq: int | None = None) -> Action:
        """The move `raw` of `conn`'s seat, when it may be applied now (else LiveError)."""
        seat = self._audience(conn)
        if seat is None:
            raise LiveError("not_seated", "Spectators cannot act.", 403)
        if not isinstance(raw, dict):
            raise LiveError("bad_action", "action must be a JSON object (scenario format)")
        obj = dict(raw)
        if "seat" not in obj:
            obj["seat"] = seat
        try:
            action = action_from_json(obj)
        except ValueError as exc:
            raise LiveError("bad_action", str(exc)) from None
        if action.seat != seat:
            raise LiveError("wrong_seat", f"You sit at seat {seat}.", 403)
        if action.kind is ActionKind.TIMEOUT:
            raise LiveError("bad_action", "timeout is the server's clock, not a move")
        if hand_number is not None and (self.hand is None or self.hand.number != hand_number
                                        or self.hand.phase is not HandPhase.PLAYING):
            now = ("no hand is in play" if self.hand is None
                   else f"hand {self.hand.number} is not dealt yet"
                   if self.hand.phase is not HandPhase.PLAYING
                   else f"hand {self.hand.number} is in play")
            raise LiveError("stale", f"That move was for hand {hand_number}; {now} now.", 409)
        if last_seq is not None and last_seq > self.seq:
            raise LiveError("stale", f"That move was chosen on event {last_seq}; this table has"
                            f" sent {self.seq} (another server run): choose again.", 409)
        if last_seq is not None and last_seq < self.acted_seq.get(seat, 0):
            raise LiveError("stale", f"That move was chosen on event {last_seq}, before your"
                            f" seat's last action (event {self.acted_seq[seat]}, yours or the"
                            " clock's): choose again.", 409)
        if self.hand is None or self.hand.phase is not HandPhase.PLAYING or self.state is None:
            raise LiveError("no_hand", "No hand is being played now.", 409)
        if len(self.hand.actions) >= MAX_ACTIONS - CLOCK_RESERVE:
            # a record holds at most MAX_ACTIONS: endless vote changes must not make the hand
            # unrecordable; the clocks (automatic actions) finish it within the reserve
            raise LiveError("action_limit", "This hand has had too many actions; the clock"
                            " decides the rest.", 409)
        return action

    async def _apply(
        self,
        action: Action,
        *,
        automatic: bool,
        arrival: float,
        extra: list[tuple[str, tuple[Any, ...]]] | None = None,
        clears_absence: bool = False,
    ) -> int:
        """Apply through the engine, write, then (only then) move on and broadcast."""
        assert self.state is not None and self.hand is not None
        metrics = self.house.metrics
        try:
            new_state, events = apply(self.state, action)
        except IllegalAction as exc:
            metrics.refused_actions.labels(exc.reason.value).inc()
            raise LiveError(exc.reason.value, exc.message) from None
        hand = self.hand
        statements = [(
            "INSERT INTO live_actions (table_id, hand, idx, action, automatic, at)"
            " VALUES ($1, $2, $3, $4::jsonb, $5, $6)",
            (self.id, hand.number, len(hand.actions),
             orjson.dumps(action_at_rest(self.state, action)).decode(), automatic, at(self.now)),
        ), *(extra or [])]
        seat = action.seat
        streak = self.streaks.get(seat)
        # acting clears the seat's absence and its streak of automatic actions: said to all
        # when either was set (after `back` the seat is no longer absent, its streak stands)
        clears = clears_absence and (seat in self.absent or bool(streak and streak.count))
        if clears:
            statements.append((
                "INSERT INTO seat_events (table_id, match_number, seat, kind, at, detail)"
                " VALUES ($1, $2, $3, $4, $5, '{}'::jsonb)",
                (self.id, self.match_number, seat, SeatEventKind.ACTED.value, at(self.now)),
            ))
        await self._write(statements)
        self.state = new_state
        hand.actions.append(action)
        metrics.count_action(self.config.variant.value, action.kind.value)
        if clears_absence:
            self.absent.discard(seat)
            self.back_in_seat.discard(seat)
            self.granted_back.discard(seat)
            self.streaks.pop(seat, None)
        if new_state.hand_over or new_state.outcome is not None:
            self._cancel_timers()
            seq = self.acted_seq[seat] = self._emit_update(events)
            metrics.action_latency.observe(time.perf_counter() - arrival)
            await self._finish_hand(RecordEnd.COMPLETED, None)
        else:
            self._reschedule(acted=seat)
            seq = self.acted_seq[seat] = self._emit_update(events)
            metrics.action_latency.observe(time.perf_counter() - arrival)
        if clears:
            self._emit({"type": "absent", "seat": seat, "absent": False, "automatic": 0})
        return seq

    # ----------------------------------------------------------------------------- clocks

    def _cancel_timers(self) -> None:
        self._cancel_decision_timers()
        if self.entropy_timer is not None:
            self.entropy_timer.cancel()
            self.entropy_timer = None
        if self.start_timer is not None:
            self.start_timer.cancel()
            self.start_timer = None

    def _cancel_decision_timers(self) -> None:
        """Every pending decision's clock, and every bot's think, stopped."""
        for deadline in self.deadlines.values():
            deadline.timer.cancel()
        self.deadlines.clear()
        for timer in self.bot_timers.values():
            timer.cancel()
        self.bot_timers.clear()

    def _reschedule(self, acted: int | None = None) -> None:
        """A deadline for every pending decision: kept while it stays pending, new otherwise.

        `acted` is the seat that just acted: whatever it must decide now is a new decision (it
        may lead the next round, or answer again), with a fresh clock. A bot partner of that
        seat that has already looked (voted, or found nothing to do on the old votes) decides
        again after its think time: its partner's vote just changed, and it would otherwise
        never look again. A bot partner still thinking goes on thinking: it reads the votes as
        they are when its think ends (restarting it at each vote let a partner who keeps
        changing their vote hold the bot's vote off until the team's clock declined).
        """
        assert self.state is not None
        config = self.house.config
        if acted is not None:
            partner = (acted + 2) % self.config.seats
            for kind in _PENDING_KINDS:
                stale = self.deadlines.pop((kind, acted), None)
                if stale is not None:
                    stale.timer.cancel()
                for seat in {acted, partner}:
                    bot_timer = self.bot_timers.get((kind, seat))
                    if bot_timer is None or (seat != acted and not bot_timer.fired):
                        continue
                    del self.bot_timers[(kind, seat)]
                    bot_timer.cancel()
        wanted: dict[DeadlineKey, tuple[int, PendingKind, bool]] = {}
        covered: dict[DeadlineKey, list[int]] = {}  # the seats each clock runs for
        # each seat the table decides for now (a bot; a disconnected voter, who declines), and
        # the deadline (its own, or its team's vote) covering it
        bots: dict[DeadlineKey, tuple[int, DeadlineKey]] = {}
        waiting = pending(self.state)
        for p in waiting:
            bot = self.seats[p.seat].bot
            if bot and self._leaves_it_to_partner(p, waiting):
                # no clock of its own: the partner's covers the team's answer (one of the bot's
                # would run out first, or with it, and answer for the team: the partner, who
                # let their clock run out, would never be marked absent)
                continue
            key: DeadlineKey = (("vote", p.seat % 2) if p.team_vote else (p.kind.value, p.seat))
            wanted.setdefault(key, (p.seat, p.kind, p.team_vote))
            covered.setdefault(key, []).append(p.seat)
            if bot or self._declines_for(p):
                bots[(p.kind.value, p.seat)] = (p.seat, key)
        for key in list(self.deadlines):
            if key not in wanted:
                self.deadlines.pop(key).timer.cancel()
        for key in list(self.bot_timers):
            if key not in bots:
                self.bot_timers.pop(key).cancel()
        for key, (seat, kind, team_vote) in wanted.items():
            if key not in self.deadlines:
                if team_vote:
                    seconds = config.vote_clock
                elif seat in self.absent and seat not in self.back_in_seat:
                    seconds = config.absent_delay
                else:
                    self.back_in_seat.discard(seat)
                    seconds = decision_seconds(config, self.kind)
                token = self._token()
                when = self.now + seconds
                timer = self.house.clock.call_at(when, self._deadline_callback(token))
                self.deadlines[key] = Deadline(token, seat, kind, team_vote, when, timer)
            self.deadlines[key].seats = tuple(covered[key])
        for bot_key, (seat, key) in bots.items():
            if bot_key not in self.bot_timers:
                self._schedule_bot(bot_key, seat, self.deadlines[key].token)

    def _deadline_callback(self, token: int) -> Callable[[], None]:
        return lambda: self.post(lambda: self._on_deadline(token))

    def _leaves_it_to_partner(self, p: Pending, waiting: Sequence[Pending]) -> bool:
        """In `first` mode the first answer of a team counts: a bot would always answer before
        its human partner (after its 0.8 s think). It leaves the answer to a partner who is
        here (connected, not absent) and may answer too; their clock covers it."""
        if (p.kind is not PendingKind.ANSWER or self.config.seats != 4
                or self.config.mode is not TeamMode.FIRST):
            return False
        partner = (p.seat + 2) % 4
        return (self.seats[partner].human and self.connected(partner)
                and partner not in self.absent
                and any(q.seat == partner and q.kind is PendingKind.ANSWER for q in waiting))

    def _declines_for(self, p: Pending) -> bool:
        """RULES.md, Team decisions: a disconnected player's pending vote counts as decline.
        A vote: an answer of two partners in `vote` mode (a partner who went to the mazo
        leaves the other to decide alone, with their own clock)."""
        state = self.state
        if (p.kind is not PendingKind.ANSWER or p.team_vote or self.config.seats != 4
                or self.config.mode is not TeamMode.VOTE or state is None or state.hand is None
                or not self.seats[p.seat].human or self.connected(p.seat)
                or p.seat in self.returning):
            return False
        return state.hand.in_hand((p.seat + 2) % 4)

    def _schedule_bot(self, key: DeadlineKey, seat: int, token: int) -> None:
        """The bot decides after its think time (on the injected clock), if still pending; a
        disconnected voter's decline is cast at once."""
        think = self.house.settings.bot_think if self.seats[seat].bot else 0.0
        if think <= 0:
            self.post(lambda: self._bot_move(seat, token))
            self.bot_timers[key] = _Done()
        else:
            bot_timer = _BotTimer()

            def wake() -> None:
                bot_timer.fired = True
                self.post(lambda: self._bot_move(seat, token))
            bot_timer.timer = self.house.clock.call_at(self.now + think, wake)
            self.bot_timers[key] = bot_timer

    async def _bot_move(self, seat: int, token: int) -> None:
        if (self.state is None or not any(d.token == token for d in self.deadlines.values())
                or self.house.shutting_down):
            return  # stopping: see `_on_deadline` (after the restart the bot decides again)
        if self.seats[seat].human:
            # a disconnected voter: their pending vote counts as decline (the engine's timeout
            # of an unanswered vote), no absence of theirs; back by now, they answer themselves
            if not self.connected(seat):
                await self._apply(Action(seat, ActionKind.TIMEOUT), automatic=True,
                                  arrival=time.perf_counter())
            return
        partner = self.seats[(seat + 2) % self.config.seats]
        try:
            if self._bot_rng is None:
                self._bot_rng = random.Random(secrets.randbits(64))
            choice = choose_action(view(self.state, seat), self._bot_rng,
                                   partner_is_person=partner.human)
        except NothingToDo:
            return  # waiting for the partner (or the clock)
        try:
            await self._apply(action_from_json(choice), automatic=False,
                              arrival=time.perf_counter())
        except LiveError as exc:  # the policy only returns legal actions; keep the clock on
            if isinstance(exc, WRITE_FAILURES):
                raise  # not a refusal: the table re-reads what was written (`_run`)
            log.warning("bot action refused", extra={"table": self.id, "error": exc.code})

    async def _on_deadline(self, token: int) -> None:
        key = next((k for k, d in self.deadlines.items() if d.token == token), None)
        if key is None or self.state is None or self.house.shutting_down:
            # the house is stopping (it has closed every socket, `House.close_sockets`): its
            # clocks no longer act for players it disconnected itself; after the restart every
            # pending decision gets its clock in full
            return
        deadline = self.deadlines.pop(key)
        bot_timer = self.bot_timers.pop(key, None)
        if bot_timer is not None:
            bot_timer.cancel()
        self.house.metrics.automatic_lateness.observe(max(0.0, self.now - deadline.at))
        try:
            await self._act_on_deadline(deadline)
        except LiveError:
            # not saved (the database is away): the decision stays pending with a new clock
            if self.state is not None and self.hand is not None:
                self._reschedule()
            raise

    async def _act_on_deadline(self, deadline: Deadline) -> None:
        # never before its deadline: the timer runs on the loop's monotonic clock, set from the
        # wall clock's deadline, and the two drift apart by a little (the evidence said an
        # automatic action came 1 ms early, `late_ms: -1`)
        seat, now = deadline.seat, max(self.now, deadline.at)
        metrics = self.house.metrics
        timeout = Action(seat, ActionKind.TIMEOUT)
        if deadline.team_vote or not self.seats[seat].human:
            # a vote the partners did not agree on in time is no one's absence
            metrics.automatic_actions.inc()
            await self._apply(timeout, automatic=True, arrival=time.perf_counter())
            return
        # one time for the event and the streak it may start: the evidence of an abandonment
        # is read from the streak's start on, this event included
        hand = self.hand.number if self.hand else None
        await self._seat_event(seat, SeatEventKind.DEADLINE,
                               {"decision": deadline.kind.value, "deadline_ms": ms(deadline.at),
                                "hand": hand},
                               when=now)
        streak = self.streaks.setdefault(seat, Streak())
        # a seat left empty at a private or training table is not forfeited by the clock: there
        # a lost connection cancels the match after `empty_seat_cancel` (RULES.md, Clocks), which
        # 10 automatic actions 2 s apart would always forestall. The clock does not pause: its
        # actions go on and count, and the next one once the player is back forfeits.
        if streak.count + 1 >= abandon_limit(self.kind) and seat not in self.empty_timers:
            # begun before this run or before a database fault ended: the house, not the
            # player, stopped the game (`House.clocks_restarted_at`)
            overlap = streak.started_at is not None and \
                streak.started_at < self.house.clocks_restarted_at
            await self._abandon(seat, AbandonTrigger.AUTOMATIC_ACTIONS, restart_overlap=overlap,
                                when=now)
            if not overlap:
                return
            streak = self.streaks.setdefault(seat, Streak())
        metrics.automatic_actions.inc()
        self._ahead = True  # a failed write below re-reads the streak and absence (`_run`)
        self.absent.add(seat)
        self.granted_back.discard(seat)  # an action for the seat: a return may be granted again
        streak.count += 1
        if streak.started_at is None:
            streak.started_at = now
        evidence = (
            "INSERT INTO seat_events (table_id, match_number, seat, kind, at, detail)"
            " VALUES ($1, $2, $3, $4, $5, $6::jsonb)",
            # the lateness from the same rounded instants the evidence shows (`at_ms` of this
            # item, `deadline_ms`): 11.979 - 11.968 is 11 ms, whatever the rounding of the gap
            (self.id, self.match_number, seat, SeatEventKind.AUTOMATIC.value, at(now),
             json.dumps({"streak": streak.count, "hand": self.hand.number if self.hand else None,
                         "deadline_ms": ms(deadline.at),
                         "late_ms": ms(now) - ms(deadline.at)})),
        )
        await self._apply(timeout, automatic=True, arrival=time.perf_counter(), extra=[evidence])
        if seat in self.absent and self.status is TableStatus.PLAYING:
            # every automatic action is said, with the streak so far: the players see how near
            # the forfeit is (`abandon_limit` in the table's JSON)
            self._emit({"type": "absent", "seat": seat, "absent": True,
                        "automatic": self.automatic_streak(seat)})

    async def restart_clocks(self, reason: str) -> None:
        """The house could not write for a while (`House.database_back`): every pending
        decision's clock starts again in full, as after a restart, and the players are told (a
        `clocks` event with the new `pending`). A player's move refused meanwhile
        (`unavailable`), or a clock that ran while nothing could be saved, costs nobody a turn."""
        state = self.state
        if state is None or state.hand_over or state.outcome is not None or not self.deadlines:
            return
        self._cancel_decision_timers()
        self._reschedule()
        self._log("clocks restarted", reason=reason)
        self._emit({"type": "clocks", "reason": reason, "pending": self._deadlines_json()})

    # ----------------------------------------------------------------------------- endings

    async def _abandon(self, seat: int, trigger: AbandonTrigger, *, restart_overlap: bool,
                       when: float | None = None) -> None:
        """Keep the evidence; forfeit the match unless a server restart overlapped the streak.

        `when`: the abandonment's instant, the missed deadline's handling for the clock's (the
        automatic action a restart's exemption lets follow has the same instant: a rebuilt
        streak starts again there, `recovery._restore_streaks`, not one action later)."""
        holder = self.seats[seat]
        moment = self.now if when is None else when
        try:
            evidence = await self.house.evidence(self.id, self.match_number, seat)
        except WRITE_ERRORS as exc:  # the database is away: nothing is decided without it
            raise WriteRefused() from exc
        consequence = (AbandonConsequence.NONE_RESTART if restart_overlap
                       else AbandonConsequence.FORFEIT)
        hand = self.hand.number if self.hand is not None else None
        if trigger is AbandonTrigger.LEFT:
            # leaving is no seat event: the evidence says it, at the hand it ended
            evidence.append({"kind": "left", "at_ms": ms(self.now), "seat": seat, "hand": hand,
                             "abandonment": consequence.value})
        else:
            # the deadline just missed is the abandonment itself (the forfeit, or the one a
            # restart exempted): said so on its item
            final = next((e for e in reversed(evidence) if e.get("kind") == "deadline"), None)
            if final is not None:
                final["abandonment"] = consequence.value
                final.setdefault("hand", hand)
        team = seat % 2
        record = (
            "INSERT INTO abandonments (table_id, match_number, seat, user_id, team, variant,"
            " kind, trigger, consequence, restart_overlap, evidence, created_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12)",
            (self.id, self.match_number, seat, holder.user_id, team,
             self.config.variant.value, self.kind.value, trigger.value, consequence.value,
             restart_overlap, json.dumps(evidence), at(moment)),
        )
        self._log("abandonment", seat=seat, trigger=trigger.value,
                  consequence=consequence.value, restart_overlap=restart_overlap)
        if consequence is AbandonConsequence.FORFEIT and self.hand is not None:
            # the abandonment is written with the end of the match it causes, in one commit
            self._forfeit = (seat, trigger.value, evidence)
            await self._end_match_early(team, Termination.ABANDONMENT, [record])
            self.house.metrics.abandonments.inc()
        else:
            await self._write([record])
        self.streaks.pop(seat, None)

    async def _end_match_early(self, team: int, termination: Termination,
                               extra: Sequence[tuple[str, tuple[Any, ...]]] = ()) -> None:
        """Abandonment or cancellation: the hand in play (dealt now if need be) ends the match.

        Everything is written in one commit with the hand's record (`extra`: the abandonment
        that causes it): a crash leaves all of it or none. The memory moves first; if that
        commit fails, the table re-reads what was written (`_run`)."""
        hand = self.hand
        if hand is None:
            return
        self._cancel_timers()
        self._ahead = True
        statements = []
        if hand.phase is HandPhase.ENTROPY:
            # the commitment is public: the hand is dealt and recorded, so the chain stays whole
            dealer, dealer_by, dealt = self._deal_of(hand, hand.contributions)
            statements.append(dealt)
            self._dealt_now(hand, dealer, dealer_by, announce=False)
        statements += extra
        assert self.state is not None
        self.state = forfeit(self.state, team, termination)
        if termination is Termination.ABANDONMENT:
            await self._finish_hand(RecordEnd.ABANDONMENT, team, statements)
        else:
            await self._finish_hand(RecordEnd.CANCELLED, None, statements)

    async def _finish_hand(self, end: RecordEnd, forfeit_team: int | None,
                           before: Sequence[tuple[str, tuple[Any, ...]]] = ()) -> None:
        """Sign and chain the hand's record (revealing its seed); then the next hand or the end.
        `before`: statements written first, in the same commit."""
        hand, state = self.hand, self.state
        assert hand is not None and state is not None
        assert hand.dealer is not None and hand.dealer_by is not None
        # build_record validates what it builds: the server signs it as built
        record = sign_built_record(build_record(
            table_id=self.id,
            hand_number=hand.number,
            chain_start=hand.chain_start,
            config=self.config,
            dealer=hand.dealer,
            dealer_by=hand.dealer_by,
            score_before=hand.score_before,
            contributions=self._contributions(hand.contributions),
            seed=hand.seed,
            actions=hand.actions,
            end=end,
            forfeit_team=forfeit_team,
            score_after=state.score,
            match_winner=state.match_winner,
            prev_hash=self.prev_hash,
        ), self.house.signing_key)
        digest = record_hash(record, checked=False)
        over = state.outcome is not None
        statements: list[tuple[str, tuple[Any, ...]]] = [*before, (
            "UPDATE live_hands SET record = $3::jsonb, record_hash = $4, seed_sealed = NULL"
            " WHERE table_id = $1 AND hand = $2",
            (self.id, hand.number, orjson.dumps(record).decode(), digest),
        ), *(
            # what was kept to rebuild the hand in play: the record holds its actions and
            # contributions now (they were kept for good, some 40% of the database), and the
            # partner signals were for its players only
            (f"DELETE FROM {table} WHERE table_id = $1 AND hand = $2", (self.id, hand.number))
            for table in ("live_actions", "live_contributions", "live_signals")
        )]
        status = self.status
        if state.outcome is not None:
            # a cancelled match sends everybody back to the lobby
            cancelled = state.outcome.termination is Termination.CANCELLED
            status = TableStatus.CLOSED if cancelled else TableStatus.FINISHED
            statements += [
                ("UPDATE live_matches SET termination = $3, winner = $4, ended_at = $5"
                 " WHERE table_id = $1 AND number = $2",
                 (self.id, self.match_number, state.outcome.termination.value,
                  state.outcome.winner, at(self.now))),
                ("UPDATE live_tables SET status = $2, closed_at = $3 WHERE id = $1",
                 (self.id, status.value, at(self.now) if cancelled else None)),
            ]
        await self._write(statements)
        self.status = status
        self.prev_hash = digest
        self.last_hand = hand.number
        self.score = state.score
        self.next_dealer = (hand.dealer + 1) % self.config.seats
        self.hand = None
        hand_id = f"{self.id}-{hand.number}"
        self._emit({"type": "hand_record", "hand": hand.number, "id": hand_id,
                    "url": f"/hands/{hand_id}"})
        self._log("hand_recorded", hand=hand.number, end=end.value, score=list(state.score))
        if not over:
            await self._begin_hand()
            return
        assert state.outcome is not None
        outcome = state.outcome
        self.house.metrics.live_tables.dec()
        for timer in self.empty_timers.values():
            timer.cancel()
        self.empty_timers.clear()
        self.empty_deadlines.clear()
        self.absent.clear()
        self.back_in_seat.clear()
        self.granted_back.clear()
        self.returning.clear()
        forfeit_seat, forfeit_trigger, evidence = (
            self._forfeit if self._forfeit is not None else (None, None, []))
        self._forfeit = None
        self.forfeit_seat, self.forfeit_trigger = forfeit_seat, forfeit_trigger
        self._emit({"type": "match_over", "termination": outcome.termination.value,
                    "winner": outcome.winner, "score": list(state.score),
                    "forfeit_team": forfeit_team, "forfeit_seat": forfeit_seat,
                    "forfeit_trigger": forfeit_trigger})
        self._log("match_over", match=self.match_number,
                  termination=outcome.termination.value, winner=outcome.winner)
        if self.kind.competitive:
            await self.house.settle(self.match_result(
                outcome.termination, outcome.winner, forfeit_seat, evidence,
                no_show=tuple(s.user_id for s in self.seats if s.user_id is not None)
                if self._no_show else ()))
        self._no_show = False
        self._emit_table()
        if self.status is TableStatus.CLOSED:
            self.house.forget(self)

    def match_result(self, termination: Termination, winner: int | None,
                     forfeit_seat: int | None, evidence: Sequence[dict[str, Any]],
                     no_show: tuple[int, ...] = ()) -> MatchResult:
        """This table's match as it ended, for the ranked service to settle."""
        return MatchResult(
            table_id=self.id, match_number=self.match_number, kind=self.kind,
            variant=self.config.variant, seats=self.config.seats,
            users_by_seat=tuple(s.user_id or 0 for s in self.seats),
            termination=termination, winner_team=winner, forfeit_seat=forfeit_seat,
            evidence=tuple(evidence), no_show=no_show)

    async def back(self, conn: Connection) -> int | None:
        """The player says they are back (the table's "Estou de volta"): their absence ends, so
        their decisions get the full clock again, the one pending now too (restarted in full).
        Acting within the 2 s an absent player is given is out of reach for many (a screen
        reader's user finds no card that fast). The automatic streak stands until they act.
        Returns the `absent` event's number, None when the seat was not absent."""
        seat = self._audience(conn)
        if seat is None:
            raise LiveError("not_seated", "Spectators are never absent.", 403)
        if seat not in self.absent:
            return None
        await self._seat_event(seat, SeatEventKind.BACK, {})
        self.absent.discard(seat)
        self.back_in_seat.discard(seat)
        self.granted_back.discard(seat)
        for kind in PendingKind:
            running = self.deadlines.pop((kind.value, seat), None)
            if running is not None:
                running.timer.cancel()
        state = self.state
        if state is not None and not state.hand_over and state.outcome is None:
            self._reschedule()
        self._log("back", seat=seat)
        return self._emit({"type": "absent", "seat": seat, "absent": False,
                           "automatic": self.automatic_streak(seat),
                           "pending": self._deadlines_json()})

    # ----------------------------------------------------------------------------- signals

    async def signal(self, conn: Connection, code: object) -> None:
        seat = self._audience(conn)
        if seat is None:
            raise LiveError("not_seated", "Spectators send no signals.", 403)
        if self.config.seats != 4:
            raise LiveError("no_partner", "Signals are for partners (2v2 tables).")
        if self.status is not TableStatus.PLAYING:
            raise LiveError("no_hand", "No match is being played now.", 409)
        try:
            signal = parse_signal(self.config.variant, code)
        except ValueError as exc:
            raise LiveError("bad_signal", str(exc)) from None
        partner_seat = (seat + 2) % 4
        partner = self.seats[partner_seat].user_id
        message = signal_json(seat, signal, ms(self.now))
        number = self.hand.number if self.hand is not None else None
        if (partner is not None and number is not None and number == self._signals_hand
                and len(self._signals.get(partner_seat, ())) >= SIGNALS_KEPT):
            raise LiveError("too_many_signals", f"At most {SIGNALS_KEPT} signals to your "
                            "partner in a hand.", 429)
        if partner is not None and number is not None:
            # kept for the partner through the hand, a restart included: written (sealed, as
            # it tells of hidden cards) before it is delivered and acknowledged
            sealed = seal(self.house.config.seed_key, SealedKind.SIGNAL, self.id, number,
                          orjson.dumps({"from": seat, "to": partner_seat, "code": signal.code,
                                        "at_ms": message["at_ms"]}))
            statements: list[tuple[str, tuple[Any, ...]]] = []
            if number != self._signals_hand:  # the first of this hand: the older ones go
                statements.append(("DELETE FROM live_signals WHERE table_id = $1 AND hand < $2",
                                   (self.id, number)))
            statements.append(("INSERT INTO live_signals (table_id, hand, sealed)"
                               " VALUES ($1, $2, $3)", (self.id, number, sealed)))
            await self._write(statements)
        delivered = False
        for other in self.subscribers:
            if partner is not None and other.user_id == partner:
                other.send_json(message)
                delivered = True
        if partner is None or number is None:
            return  # a bot partner (nobody to read it), or between hands (only said live)
        self.keep_signal(number, partner_seat, message, delivered)

    def keep_signal(self, number: int, seat: int, message: dict[str, Any],
                    delivered: bool) -> None:
        """Keep a partner signal of hand `number` for `seat` (the latest `SIGNALS_KEPT`)."""
        if number != self._signals_hand:
            self._signals_hand, self._signals = number, {}
        kept = self._signals.setdefault(seat, [])
        kept.append(_Signal(message, delivered))
        del kept[:-SIGNALS_KEPT]

    def _hand_signals(self, seat: int | None, *, take: bool,
                      undelivered: bool = False) -> list[dict[str, Any]]:
        """The partner signals `seat` got in the hand in play (`undelivered`: only those no
        socket of theirs took yet), oldest first; `take`: they are delivered now."""
        number = self.hand.number if self.hand is not None else None
        if seat is None or number is None or number != self._signals_hand:
            return []
        out = []
        for kept in self._signals.get(seat, []):
            if not (undelivered and kept.delivered):
                out.append(kept.message)
            kept.delivered = kept.delivered or take
        return out


def signal_json(seat: int, signal: Signal, at_ms: int) -> dict[str, Any]:
    """A partner signal from `seat` as its partner gets it: live, in a catch-up, in a snapshot
    (after a restart too, `server.live.recovery`)."""
    return {"type": "signal", "from": seat, "code": signal.code, "label": signal.label,
            "at_ms": at_ms}


# the partner signals one seat may send (and the partner is kept) in one hand: a 2x2 hand has
# a few; each is written, so a flood is refused (`too_many_signals`) past these
SIGNALS_KEPT = 16


@dataclass(slots=True)
class _Signal:
    message: dict[str, Any]
    delivered: bool


class _Done:
    """A timer already fired (a bot that acts at once): nothing to cancel."""

    fired = True

    def cancel(self) -> None:
        return None


class _BotTimer:
    """A bot's think time: whether it has ended (the bot has looked at the table)."""

    __slots__ = ("fired", "timer")

    def __init__(self) -> None:
        self.fired = False
        self.timer: Timer | None = None

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
