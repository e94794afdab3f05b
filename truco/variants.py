"""Variants as data: one `VariantRules` per variant, looked up by `Variant`.

The engine asks the rules object for everything that differs between Paulista, Mineiro and
Argentino: the strength table (the only real hook: it depends on the vira), the stake ladder,
the target, which optional features exist and what the special hands are worth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache

from truco.cards import CANONICAL_DECK, RANKS, SUITS, Card, parse_card


class Variant(StrEnum):
    PAULISTA = "paulista"
    MINEIRO = "mineiro"
    ARGENTINO = "argentino"


class TeamMode(StrEnum):
    """How a 2v2 team answers a request: a vote of both partners, or the first answer."""

    VOTE = "vote"
    FIRST = "first"


# A card's strength is a small int: higher wins, equal ties. Covered cards get COVERED, below all.
Strengths = tuple[int, ...]
COVERED = -1


def _plain_strength(card: Card) -> int:
    # Outside the manilhas Brazilian order is just the rank order 4 5 6 7 Q J K A 2 3, suit ignored.
    return card.rank_index


def _manilha_strength(suit_index: int) -> int:
    # Manilhas sit above every plain card (max plain is 9); among them C > H > S > D.
    return 13 - suit_index


@cache
def _paulista_strengths(vira: Card | None) -> Strengths:
    if vira is None:
        raise ValueError("Paulista needs a vira")
    manilha_rank = (vira.rank_index + 1) % len(RANKS)
    return tuple(
        _manilha_strength(card.index & 3)
        if card.rank_index == manilha_rank
        else _plain_strength(card)
        for card in CANONICAL_DECK
    )


@cache
def _paulista_manilhas(vira: Card | None) -> tuple[Card, ...]:
    if vira is None:
        raise ValueError("Paulista needs a vira")
    rank = RANKS[(vira.rank_index + 1) % len(RANKS)]
    return tuple(parse_card(rank + suit) for suit in SUITS)


_MINEIRO_MANILHAS: tuple[Card, ...] = tuple(parse_card(c) for c in ("4C", "7H", "AS", "7D"))


@cache
def _mineiro_strengths(vira: Card | None) -> Strengths:
    table = [_plain_strength(card) for card in CANONICAL_DECK]
    for order, card in enumerate(_MINEIRO_MANILHAS):
        table[card.index] = 13 - order
    return tuple(table)


def _mineiro_manilhas(vira: Card | None) -> tuple[Card, ...]:
    return _MINEIRO_MANILHAS


# Argentino, strongest first; cards on one line are equal.
_ARGENTINO_ORDER: tuple[tuple[str, ...], ...] = (
    ("AS",),
    ("AC",),
    ("7S",),
    ("7D",),
    ("3C", "3H", "3S", "3D"),
    ("2C", "2H", "2S", "2D"),
    ("AH", "AD"),
    ("KC", "KH", "KS", "KD"),
    ("JC", "JH", "JS", "JD"),
    ("QC", "QH", "QS", "QD"),
    ("7H", "7C"),
    ("6C", "6H", "6S", "6D"),
    ("5C", "5H", "5S", "5D"),
    ("4C", "4H", "4S", "4D"),
)


@cache
def _argentino_strengths(vira: Card | None) -> Strengths:
    table = [0] * len(CANONICAL_DECK)
    for step, cards in enumerate(_ARGENTINO_ORDER):
        for text in cards:
            table[parse_card(text).index] = len(_ARGENTINO_ORDER) - 1 - step
    return tuple(table)


def _no_manilhas(vira: Card | None) -> tuple[Card, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class VariantRules:
    """Everything the engine needs to know about one variant."""

    variant: Variant
    target: int
    # stake ladder: ladder[0] is the hand's base value, then each raise's step
    ladder: tuple[int, ...]
    raise_names: tuple[str, ...]  # names of ladder steps 1.. (truco, seis, ...)
    uses_vira: bool
    covered_cards: bool
    envido: bool
    fold: bool
    # the score making a mão de onze / dez (one team at it) or de ferro (both); None: no such hand
    special_score: int | None
    special_name: str
    special_value: int  # the mão de onze/dez when played
    special_run_points: int  # the other team's points when the team at onze/dez runs
    # all three rounds tied: False = nobody scores, True = mano's team scores the hand
    all_ties_to_mano: bool
    # Argentino counts envido points at once and ends the match the moment a team reaches target
    ends_mid_hand: bool
    strengths: Callable[[Card | None], Strengths]
    manilhas: Callable[[Card | None], tuple[Card, ...]]

    # the ladder's last step (derived from `ladder`; kept as a field, read on every turn)
    top_level: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "top_level", len(self.ladder) - 1)

    @property
    def base_value(self) -> int:
        return self.ladder[0]


RULES: dict[Variant, VariantRules] = {
    Variant.PAULISTA: VariantRules(
        variant=Variant.PAULISTA,
        target=12,
        ladder=(1, 3, 6, 9, 12),
        raise_names=("truco", "seis", "nove", "doze"),
        uses_vira=True,
        covered_cards=True,
        envido=False,
        fold=False,
        special_score=11,
        special_name="mão de onze",
        special_value=3,
        special_run_points=1,
        all_ties_to_mano=False,
        ends_mid_hand=False,
        strengths=_paulista_strengths,
        manilhas=_paulista_manilhas,
    ),
    Variant.MINEIRO: VariantRules(
        variant=Variant.MINEIRO,
        target=12,
        ladder=(2, 4, 6, 10, 12),
        raise_names=("truco", "seis", "nove", "doze"),  # Mineiro's "nove" is worth 10
        uses_vira=False,
        covered_cards=True,
        envido=False,
        fold=False,
        special_score=10,
        special_name="mão de dez",
        special_value=4,
        special_run_points=2,
        all_ties_to_mano=False,
        ends_mid_hand=False,
        strengths=_mineiro_strengths,
        manilhas=_mineiro_manilhas,
    ),
    Variant.ARGENTINO: VariantRules(
        variant=Variant.ARGENTINO,
        target=30,
        ladder=(1, 2, 3, 4),
        raise_names=("truco", "retruco", "vale cuatro"),
        uses_vira=False,
        covered_cards=False,
        envido=True,
        fold=True,
        special_score=None,
        special_name="",
        special_value=0,
        special_run_points=0,
        all_ties_to_mano=True,
        ends_mid_hand=True,
        strengths=_argentino_strengths,
        manilhas=_no_manilhas,
    ),
}


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """A table's fixed settings."""

    variant: Variant
    seats: int
    mode: TeamMode = TeamMode.VOTE
    # looked up once: the engine reads it on every action
    rules: VariantRules = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # accept the plain strings of the enums (JSON, the command line) but store the enums
        try:
            object.__setattr__(self, "variant", Variant(self.variant))
        except ValueError:
            raise ValueError(f"unknown variant {self.variant!r}") from None
        try:
            object.__setattr__(self, "mode", TeamMode(self.mode))
        except ValueError:
            raise ValueError(f"unknown team mode {self.mode!r}") from None
        if isinstance(self.seats, bool) or self.seats not in (2, 4):
            raise ValueError(f"seats must be 2 or 4, not {self.seats!r}")
        object.__setattr__(self, "rules", RULES[self.variant])

    @property
    def target(self) -> int:
        return self.rules.target

    @property
    def hand_size(self) -> int:
        return 3

    @property
    def uses_vira(self) -> bool:
        return self.rules.uses_vira


def rules_for(variant: Variant) -> VariantRules:
    return RULES[variant]
