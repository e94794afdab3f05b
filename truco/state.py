"""The immutable state of a match and of the hand in progress.

Every transition in `truco.match` builds new values; nothing here is edited in place. The one
exception is the memo a `HandState` keeps of its own `legal_actions` (per seat) and `pending`:
derived data, filled on first use and invisible to equality and hashing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from truco._frozen import evolver, fast_init
from truco.actions import Action, ActionKind
from truco.cards import Card
from truco.outcome import Outcome
from truco.variants import MatchConfig, Strengths, VariantRules


class Phase(StrEnum):
    AWAITING_DEAL = "awaiting_deal"
    IN_HAND = "in_hand"
    MATCH_OVER = "match_over"


# team -> its seats, per table size
_TEAM_SEATS: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
    2: ((0,), (1,)),
    4: ((0, 2), (1, 3)),
}

# (hand size, bitmask of played positions) -> the positions not played yet, in dealt order.
# Views and legal moves ask for them several times per action; a hand has at most a few
# cards, so the table stays tiny and the answer is one dictionary look-up.
_UNPLAYED: dict[tuple[int, int], tuple[int, ...]] = {}


def _unplayed(size: int, used: int) -> tuple[int, ...]:
    key = (size, used)
    positions = _UNPLAYED.get(key)
    if positions is None:
        positions = _UNPLAYED[key] = tuple(p for p in range(size) if not (used >> p) & 1)
    return positions


class HandKind(StrEnum):
    NORMAL = "normal"
    # one team at 11 (Paulista, mão de onze) or 10 (Mineiro, mão de dez): it decides to play or run
    ONZE = "onze"
    # both teams there: mão de ferro, played blind by position
    FERRO = "ferro"


class HandEnd(StrEnum):
    """Why a hand ended (stable codes)."""

    ROUNDS = "rounds"  # decided by the rounds
    TIED = "tied"  # every round tied and the variant scores nobody
    DECLINED = "declined"  # a raise was declined (corre / no quiero)
    RAN = "ran"  # the team at onze/dez ran
    FOLD = "fold"  # a whole team went to the mazo
    MATCH_ENDED = "match_ended"  # envido points ended the match mid-hand (Argentino)
    ABANDONED = "abandoned"  # the match was forfeited or cancelled during the hand


class RequestKind(StrEnum):
    """What the table waits for while a request is pending."""

    TRUCO = "truco"
    ENVIDO = "envido"
    SPECIAL = "special"  # play or run the mão de onze / dez


# bound once: Python 3.11 reads `Enum.MEMBER` through a descriptor, and `request` is hot
_ENVIDO_REQUEST, _TRUCO_REQUEST, _SPECIAL_REQUEST = (
    RequestKind.ENVIDO,
    RequestKind.TRUCO,
    RequestKind.SPECIAL,
)


class PendingKind(StrEnum):
    PLAY = "play"
    ANSWER = "answer"


@fast_init
@dataclass(frozen=True, slots=True)
class Pending:
    """A decision the server must clock."""

    seat: int
    kind: PendingKind
    team_vote: bool = False  # partners disagree: the 10 s to agree are running


@dataclass(frozen=True, slots=True)
class Deal:
    """The cards each seat was dealt (in dealt order) and the vira (Paulista only)."""

    dealer: int
    hands: tuple[tuple[Card, ...], ...]
    vira: Card | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Play:
    seat: int
    card: Card
    covered: bool
    position: int  # index into the seat's hand as dealt


@fast_init
@dataclass(frozen=True, slots=True)
class RoundResult:
    plays: tuple[Play, ...]
    winner_team: int | None  # None: tied
    winner_seat: int | None

    @property
    def leader(self) -> int:
        return self.plays[0].seat


@fast_init
@dataclass(frozen=True, slots=True)
class TrucoRequest:
    seat: int  # who asked (for a team's raise back: the partner whose vote decided it)
    team: int
    level: int  # the ladder step asked for
    in_answer: bool = False  # a raise back: the team's answer to the other's request


@fast_init
@dataclass(frozen=True, slots=True)
class EnvidoResult:
    accepted: bool
    winner_team: int  # the team that scored
    points: int
    winner_seat: int | None  # accepted: whose tanto won (their cards are shown at hand end)
    tantos: tuple[tuple[int, int], ...]  # accepted: the (seat, tanto) sung, in order (_sung)


@fast_init
@dataclass(frozen=True, slots=True)
class EnvidoState:
    chain: tuple[ActionKind, ...]
    seat: int  # the last caller
    team: int  # the last caller's team; the other team answers
    result: EnvidoResult | None = None  # None while the chain waits for its answer
    in_answer: bool = False  # the last call was the team's answer (to a truco, or an envido)


@fast_init
@dataclass(frozen=True, slots=True)
class HandResult:
    winner_team: int | None
    points: int
    reason: HandEnd


@fast_init
@fast_init
@dataclass(frozen=True, slots=True)
class HandSetup:
    """What a hand's deal fixed: it never changes while the hand is played."""

    kind: HandKind
    dealer: int
    mano: int
    hands: tuple[tuple[Card, ...], ...]  # per seat, in dealt order
    vira: Card | None
    strengths: Strengths = field(repr=False, compare=False)
    special_team: int | None  # ONZE: the team at onze/dez (it sees the partner's cards)
    seats: int


@fast_init
@dataclass(frozen=True, slots=True)
class Bet:
    """The stake and the truco ladder of a hand."""

    level: int  # ladder step of the accepted stake
    stake: int  # what the hand is worth now
    raise_team: int | None  # who may raise next; None: anyone (no raise accepted yet)
    truco: TrucoRequest | None  # a raise waiting for its answer
    truco_called: bool
    truco_answered: bool
    special_pending: bool  # ONZE: the team at onze/dez has not yet decided to play or run


@fast_init
@dataclass(frozen=True, slots=True)
class HandState:
    """A hand in progress (or just finished: `result` set).

    The deal's fixed facts live in `setup`, the stake in `bet`, so that playing a card copies
    only the few fields that change. The properties below read through them.
    """

    setup: HandSetup
    used: tuple[int, ...]  # per seat: bitmask of dealt positions already played
    folded: int  # bitmask of seats gone to the mazo
    rounds: tuple[RoundResult, ...]
    table: tuple[Play, ...]  # the round in progress
    turn: int  # whose turn it is to play (meaningless once `result` is set)
    bet: Bet
    envido: EnvidoState | None
    votes: tuple[ActionKind | None, ...]  # per seat: latest vote on the pending request
    result: HandResult | None
    # memos of legal_actions (per seat) and pending: derived, so not compared
    legal_cache: dict[int, tuple[Action, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    pending_cache: list[tuple[Pending, ...]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    @property
    def kind(self) -> HandKind:
        return self.setup.kind

    @property
    def dealer(self) -> int:
        return self.setup.dealer

    @property
    def mano(self) -> int:
        return self.setup.mano

    @property
    def hands(self) -> tuple[tuple[Card, ...], ...]:
        return self.setup.hands

    @property
    def vira(self) -> Card | None:
        return self.setup.vira

    @property
    def strengths(self) -> Strengths:
        return self.setup.strengths

    @property
    def special_team(self) -> int | None:
        return self.setup.special_team

    @property
    def seats(self) -> int:
        return self.setup.seats

    @property
    def level(self) -> int:
        return self.bet.level

    @property
    def stake(self) -> int:
        return self.bet.stake

    @property
    def raise_team(self) -> int | None:
        return self.bet.raise_team

    @property
    def truco(self) -> TrucoRequest | None:
        return self.bet.truco

    @property
    def truco_called(self) -> bool:
        return self.bet.truco_called

    @property
    def truco_answered(self) -> bool:
        return self.bet.truco_answered

    @property
    def special_pending(self) -> bool:
        return self.bet.special_pending

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def round_number(self) -> int:
        """0-based index of the round in progress."""
        return len(self.rounds)

    @property
    def request(self) -> RequestKind | None:
        """The request waiting for an answer; an envido over a truco is answered first."""
        if self.result is not None:
            return None
        if self.envido is not None and self.envido.result is None:
            return _ENVIDO_REQUEST
        if self.bet.truco is not None:
            return _TRUCO_REQUEST
        if self.bet.special_pending:
            return _SPECIAL_REQUEST
        return None

    @property
    def answering_team(self) -> int | None:
        """The team that must answer the pending request (None: nothing pending)."""
        if self.result is not None:
            return None
        envido = self.envido
        if envido is not None and envido.result is None:
            return 1 - envido.team
        bet = self.bet
        if bet.truco is not None:
            return 1 - bet.truco.team
        if bet.special_pending:
            return self.setup.special_team
        return None

    def in_hand(self, seat: int) -> bool:
        """Not gone to the mazo."""
        return not (self.folded >> seat) & 1

    def voters(self, team: int) -> tuple[int, ...]:
        """The seats that answer for `team`: its players still in the hand."""
        seats = _TEAM_SEATS[self.setup.seats][team]
        if not self.folded:
            return seats
        return tuple([s for s in seats if not (self.folded >> s) & 1])

    def remaining(self, seat: int) -> tuple[int, ...]:
        """Positions (into the dealt hand) the seat has not played yet."""
        return _unplayed(len(self.setup.hands[seat]), self.used[seat])

    def played_this_round(self, seat: int) -> bool:
        return any(play.seat == seat for play in self.table)


# `dataclasses.replace` for hands and bets, without re-running __init__ (caches start empty)
evolve_hand = evolver(HandState)
evolve_bet = evolver(Bet)


@fast_init
@dataclass(frozen=True, slots=True)
class MatchState:
    config: MatchConfig
    score: tuple[int, int]
    hand_number: int  # hands started so far: the next deal is hand number `hand_number`
    dealer: int  # dealer of the hand in progress or last played (before any: the first dealer)
    phase: Phase
    hand: HandState | None
    outcome: Outcome | None

    @property
    def rules(self) -> VariantRules:
        return self.config.rules

    @property
    def next_dealer(self) -> int:
        if self.hand_number == 0:
            return self.dealer
        return (self.dealer + 1) % self.config.seats

    @property
    def hand_over(self) -> bool:
        return self.hand is not None and self.hand.result is not None

    @property
    def match_winner(self) -> int | None:
        return None if self.outcome is None else self.outcome.winner
