"""Abandonment penalties and their review: pure rules (times are epoch seconds passed in).

Penalty. Abandoning a ranked match loses it: the rating change and the stake follow from the
loss like any other. A repeat within the rolling window (7 days) also pauses the player from the
ranked queues: the n-th counting record in the window (this one included) pauses for
15 min * 2^(n-2), capped at 24 h; the first pauses nobody (0, 15 min, 30 min, 1 h, ... 24 h).
A record counts unless it was overturned or is exempt. A record whose match overlapped a server
fault or restart (any instant of [match start, abandonment] inside a fault interval) is exempt:
no strike and no pause. The exemption waives the penalty, not the result: a match that ended by
a forfeit is lost, its stake and rating settled as for any loss. A record whose match could not
count (`void`: an arena table its arena's end left in play) is exempt too: walking away from a
match that cannot count harms nobody.

Review. pending -> upheld | overturned; upheld -> overturned; overturned is final. An upheld
record may be upheld again only to answer an appeal filed after the last decision. Overturning
reverses the record's rating change, stake and pause, and that reversal happens once: it is tied
to the one transition into `overturned`. A player may appeal a pending or upheld record once.

A decision may name the state it was taken on (`ReviewState.token`, what the operator read): a
record that changed since (an appeal filed, another operator's decision) refuses it. The token
never comes back to an earlier value (the status only moves forward, an appeal goes from none
to open to answered), so an equal token is the very state that was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

MINUTE = 60.0
HOUR = 60 * MINUTE
DAY = 24 * HOUR
ROLLING_WINDOW = 7 * DAY
FIRST_PAUSE = 15 * MINUTE
PAUSE_CAP = 24 * HOUR
MAX_APPEAL = 2_000
MAX_NOTE = 2_000


class RecordStatus(StrEnum):
    PENDING = "pending"
    UPHELD = "upheld"
    OVERTURNED = "overturned"
    EXEMPT = "exempt"

    @property
    def counts(self) -> bool:
        """Whether the record still weighs on the player (strikes and pause)."""
        return self in (RecordStatus.PENDING, RecordStatus.UPHELD)


class Decision(StrEnum):
    UPHOLD = "uphold"
    OVERTURN = "overturn"


class ReviewError(ValueError):
    """Codes: exempt, already_overturned, already_upheld, already_appealed, nothing_to_appeal,
    bad_text, bad_times, bad_state, stale."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Interval:
    """A server fault or restart; `end` None while it lasts."""

    start: float
    end: float | None = None

    def overlaps(self, start: float, end: float) -> bool:
        return self.start <= end and (self.end is None or self.end >= start)


@dataclass(frozen=True, slots=True)
class PriorRecord:
    at: float
    status: RecordStatus


@dataclass(frozen=True, slots=True)
class Assessment:
    status: RecordStatus  # PENDING, or EXEMPT when a fault overlapped
    strikes: int  # counting records in the window, this one included (0 when exempt)
    pause: float  # seconds
    paused_until: float | None


def pause_for(strikes: int) -> float:
    """The pause for the n-th counting record in the window: 0, 15 min, 30 min, ..., 24 h."""
    if strikes < 0:
        raise ValueError(f"strikes must not be negative, got {strikes}")
    if strikes <= 1:
        return 0.0
    # 2^(strikes-2) grows past the cap by strikes = 9; stop early to keep the number small
    return min(FIRST_PAUSE * (1 << min(strikes - 2, 16)), PAUSE_CAP)


def assess(
    abandoned_at: float,
    match_started_at: float,
    prior: Sequence[PriorRecord],
    faults: Sequence[Interval],
    void: bool = False,
) -> Assessment:
    """The penalty of a new abandonment record (`void`: its match could not count)."""
    if match_started_at > abandoned_at:
        raise ReviewError("bad_times", "A match cannot be abandoned before it started.")
    if void or any(f.overlaps(match_started_at, abandoned_at) for f in faults):
        return Assessment(RecordStatus.EXEMPT, 0, 0.0, None)
    strikes = 1 + sum(
        1 for r in prior
        if r.status.counts and abandoned_at - ROLLING_WINDOW < r.at <= abandoned_at
    )
    pause = pause_for(strikes)
    return Assessment(RecordStatus.PENDING, strikes, pause,
                      abandoned_at + pause if pause else None)


@dataclass(frozen=True, slots=True)
class PauseRecord:
    status: RecordStatus
    paused_until: float | None


def pause_remaining(records: Sequence[PauseRecord], now: float) -> float:
    """Seconds until the player may queue for ranked again (0: free)."""
    ends = [r.paused_until for r in records if r.status.counts and r.paused_until is not None]
    return max([0.0, *(end - now for end in ends)])


# a record's appeal: none filed, filed and waiting for a decision, answered by one
APPEALS = ("none", "open", "answered")
# every state a record can be in, as its token `<status>:<appeal>`
STATE_TOKENS = frozenset(f"{s.value}:{a}" for s in RecordStatus for a in APPEALS)


@dataclass(frozen=True, slots=True)
class ReviewState:
    status: RecordStatus
    appealed: bool
    appeal_answered: bool  # a decision was taken after the appeal

    @property
    def appeal(self) -> str:
        """`none`, `open` (filed, waiting for a decision) or `answered`."""
        return "none" if not self.appealed else "answered" if self.appeal_answered else "open"

    @property
    def token(self) -> str:
        """The state as a decision names it (`pending:none`, `upheld:open`, ...): what changes
        with every appeal and every decision, and never returns to an earlier value."""
        return f"{self.status.value}:{self.appeal}"


@dataclass(frozen=True, slots=True)
class Ruling:
    """What a decision does: the record's new state, and whether to reverse its penalty now."""

    state: ReviewState
    reverse: bool


def _text(text: object, limit: int, what: str) -> str:
    if not isinstance(text, str):
        raise ReviewError("bad_text", f"The {what} is a text (a JSON string).")
    # a browser's form sends each line break as CRLF: a text the textarea's maxlength let
    # through came here up to a character a line longer than it
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise ReviewError("bad_text", f"The {what} must not be empty.")
    if len(text) > limit:
        raise ReviewError("bad_text", f"The {what} takes at most {limit} characters.")
    return text


def decide(state: ReviewState, decision: Decision, note: object,
           expected: object = None) -> tuple[Ruling, str]:
    """An operator's decision on a record, with its (required) note. `expected`, when given, is
    the token of the state the operator decided on (what their page or their last read showed):
    a record that changed since is refused (`stale`) before anything else, so that a decision
    never answers an appeal nobody read, nor silently replaces another operator's."""
    if expected is not None:
        if not isinstance(expected, str) or expected not in STATE_TOKENS:
            raise ReviewError("bad_state", "expected_state is the record's review_state, "
                                           "'<status>:<appeal>' (e.g. 'pending:none').")
        if expected != state.token:
            raise ReviewError("stale", f"The record changed since it was read: it is "
                                       f"{state.token}, not {expected}. Read it again before "
                                       "deciding.")
    clean = _text(note, MAX_NOTE, "note")
    if state.status is RecordStatus.EXEMPT:
        raise ReviewError("exempt", "This record is exempt (its match spanned a server restart "
                                    "or a recorded server fault): it has no penalty.")
    if state.status is RecordStatus.OVERTURNED:
        raise ReviewError("already_overturned", "This record was overturned; that is final.")
    answered = state.appealed
    if decision is Decision.OVERTURN:
        return Ruling(ReviewState(RecordStatus.OVERTURNED, state.appealed, answered), True), clean
    if state.status is RecordStatus.UPHELD and not (state.appealed and not state.appeal_answered):
        raise ReviewError("already_upheld", "This record is upheld and has no new appeal.")
    return Ruling(ReviewState(RecordStatus.UPHELD, state.appealed, answered), False), clean


def appeal(state: ReviewState, text: object) -> tuple[ReviewState, str]:
    """A player's one appeal against a record."""
    if not state.status.counts:
        raise ReviewError("nothing_to_appeal", f"This record is {state.status}: it carries no"
                                               " penalty to appeal.")
    if state.appealed:
        raise ReviewError("already_appealed", "A record can be appealed once.")
    clean = _text(text, MAX_APPEAL, "appeal")
    return ReviewState(state.status, True, False), clean
