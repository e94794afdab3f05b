"""Cards: the 40-card Spanish deck, backed by small ints so strength lookups are table indexing."""

from __future__ import annotations

from dataclasses import dataclass

RANKS = "4567QJKA23"
SUITS = "CHSD"


@dataclass(frozen=True, order=True, slots=True)
class Card:
    """One card; `index` is its position in CANONICAL_DECK (rank-major, suits C H S D)."""

    index: int

    def __post_init__(self) -> None:
        if not isinstance(self.index, int) or isinstance(self.index, bool):
            raise TypeError(f"card index must be an int, not {self.index!r}")
        if not 0 <= self.index < 40:
            raise ValueError(f"card index {self.index} is outside 0..39")

    def __hash__(self) -> int:
        # the index is already a perfect hash; the generated one would hash a 1-tuple
        return self.index

    @property
    def rank(self) -> str:
        return RANKS[self.index >> 2]

    @property
    def suit(self) -> str:
        return SUITS[self.index & 3]

    @property
    def rank_index(self) -> int:
        """0 for 4 up to 9 for 3: the plain order of RANKS."""
        return self.index >> 2

    def __str__(self) -> str:
        return RANKS[self.index >> 2] + SUITS[self.index & 3]

    def __repr__(self) -> str:
        return f"Card({self})"


CANONICAL_DECK: tuple[Card, ...] = tuple(Card(i) for i in range(40))
# each card's notation, by index: `str(card)` without the method call (views print many cards)
CARD_NAMES: tuple[str, ...] = tuple(str(card) for card in CANONICAL_DECK)
_BY_NOTATION: dict[str, Card] = {str(card): card for card in CANONICAL_DECK}


def card_at(rank: str, suit: str) -> Card:
    """The card of that rank and suit (both single characters of RANKS / SUITS)."""
    return parse_card(rank + suit)


def parse_card(text: str) -> Card:
    """`"7H"` -> Card; anything that is not exactly a card of the notation raises ValueError."""
    if not isinstance(text, str):
        raise ValueError(f"a card is written as a string like '7H', not {text!r}")
    card = _BY_NOTATION.get(text)
    if card is None:
        raise ValueError(
            f"unknown card {text!r}: write rank ({' '.join(RANKS)}) then suit ({' '.join(SUITS)})"
        )
    return card
