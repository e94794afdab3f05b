"""What happened: each transition returns a tuple of these.

Events are public facts of the table, except a covered card's face: `CardPlayed.card` holds it
for its owner's record, and `to_json()` leaves it out. What each seat is shown comes from
`truco.views.view`, never from filtering events ad hoc.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from truco._frozen import fast_init
from truco.actions import ActionKind
from truco.cards import Card
from truco.outcome import Outcome


def _card(card: Card | None) -> str | None:
    return None if card is None else str(card)


@fast_init
@dataclass(frozen=True, slots=True)
class HandStarted:
    type: ClassVar[str] = "hand_started"
    hand_number: int
    dealer: int
    mano: int
    kind: str
    value: int
    vira: Card | None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "hand_number": self.hand_number,
            "dealer": self.dealer,
            "mano": self.mano,
            "kind": self.kind,
            "value": self.value,
            "vira": _card(self.vira),
        }


@fast_init
@dataclass(frozen=True, slots=True)
class CardPlayed:
    type: ClassVar[str] = "card_played"
    seat: int
    card: Card
    covered: bool
    position: int
    round: int
    automatic: bool = False

    def to_json(self) -> dict[str, Any]:
        # a covered card's face is never published: only its owner knows it
        return {
            "type": self.type,
            "seat": self.seat,
            "card": None if self.covered else str(self.card),
            "covered": self.covered,
            "position": self.position,
            "round": self.round,
            "automatic": self.automatic,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class VoteCast:
    type: ClassVar[str] = "vote_cast"
    seat: int
    vote: ActionKind
    automatic: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "vote": self.vote.value,
            "automatic": self.automatic,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class VoteExpired:
    """The partners did not agree in time: the team's answer is decline."""

    type: ClassVar[str] = "vote_expired"
    team: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "team": self.team}


@fast_init
@dataclass(frozen=True, slots=True)
class RaiseRequested:
    type: ClassVar[str] = "raise_requested"
    seat: int
    team: int
    value: int  # the stake asked for
    name: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "team": self.team,
            "value": self.value,
            "name": self.name,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class RaiseAccepted:
    type: ClassVar[str] = "raise_accepted"
    team: int
    value: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "team": self.team, "value": self.value}


@fast_init
@dataclass(frozen=True, slots=True)
class RaiseDeclined:
    type: ClassVar[str] = "raise_declined"
    team: int
    points: int  # what the asking team scores

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "team": self.team, "points": self.points}


@fast_init
@dataclass(frozen=True, slots=True)
class SpecialHandAnswered:
    """The team at onze/dez decided to play the hand or run from it."""

    type: ClassVar[str] = "special_hand_answered"
    team: int
    play: bool

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "team": self.team, "play": self.play}


@fast_init
@dataclass(frozen=True, slots=True)
class EnvidoCalled:
    type: ClassVar[str] = "envido_called"
    seat: int
    team: int
    call: ActionKind
    chain: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "seat": self.seat,
            "team": self.team,
            "call": self.call.value,
            "chain": self.chain,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class EnvidoAccepted:
    type: ClassVar[str] = "envido_accepted"
    chain: str
    tantos: tuple[tuple[int, int], ...]  # (seat, tanto) as sung: the others said son buenas
    winner_seat: int
    winner_team: int
    points: int

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "chain": self.chain,
            "tantos": [{"seat": seat, "tanto": value} for seat, value in self.tantos],
            "winner_seat": self.winner_seat,
            "winner_team": self.winner_team,
            "points": self.points,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class EnvidoDeclined:
    type: ClassVar[str] = "envido_declined"
    chain: str
    team: int  # the team that scores (the last caller's)
    points: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "chain": self.chain, "team": self.team, "points": self.points}


@fast_init
@dataclass(frozen=True, slots=True)
class RoundEnded:
    type: ClassVar[str] = "round_ended"
    round: int
    winner_team: int | None  # None: tied
    winner_seat: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "round": self.round,
            "winner_team": self.winner_team,
            "winner_seat": self.winner_seat,
            "tied": self.winner_team is None,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class Folded:
    type: ClassVar[str] = "folded"
    seat: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "seat": self.seat}


@fast_init
@dataclass(frozen=True, slots=True)
class HandEnded:
    type: ClassVar[str] = "hand_ended"
    winner_team: int | None
    points: int
    reason: str
    score: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "winner_team": self.winner_team,
            "points": self.points,
            "reason": self.reason,
            "score": list(self.score),
        }


@fast_init
@dataclass(frozen=True, slots=True)
class MatchEnded:
    type: ClassVar[str] = "match_ended"
    outcome: Outcome
    score: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "termination": self.outcome.termination.value,
            "winner": self.outcome.winner,
            "score": list(self.score),
        }


Event = (
    HandStarted
    | CardPlayed
    | VoteCast
    | VoteExpired
    | RaiseRequested
    | RaiseAccepted
    | RaiseDeclined
    | SpecialHandAnswered
    | EnvidoCalled
    | EnvidoAccepted
    | EnvidoDeclined
    | RoundEnded
    | Folded
    | HandEnded
    | MatchEnded
)
