"""Argentino envido: the tanto of three cards and the values of an envido chain."""

from __future__ import annotations

from collections.abc import Iterable

from truco.actions import ActionKind
from truco.cards import Card

MAX_TANTO = 33
# envido value of each rank in RANKS order "4567QJKA23": figures (Q J K) count 0, the ace 1
_TANTO_VALUE = (4, 5, 6, 7, 0, 0, 0, 1, 2, 3)
_CALL_POINTS = {ActionKind.ENVIDO: 2, ActionKind.REAL_ENVIDO: 3}

Chain = tuple[ActionKind, ...]
# bound once (Python 3.11 reads `Enum.MEMBER` through a descriptor); read on every round-1 turn
_E, _R, _F = ActionKind.ENVIDO, ActionKind.REAL_ENVIDO, ActionKind.FALTA_ENVIDO
_OPENING = (_E, _R, _F)


def tanto(cards: Iterable[Card]) -> int:
    """Two of one suit: 20 + their values (best two of three); otherwise the best single value."""
    by_suit: dict[int, list[int]] = {}
    best_single = 0
    for card in cards:
        value = _TANTO_VALUE[card.rank_index]
        by_suit.setdefault(card.index & 3, []).append(value)
        best_single = max(best_single, value)
    best = best_single
    for values in by_suit.values():
        if len(values) >= 2:
            values.sort(reverse=True)
            best = max(best, 20 + values[0] + values[1])
    return best


def next_calls(chain: Chain) -> tuple[ActionKind, ...]:
    """The calls that may follow `chain`: envido at most twice, real once, falta closes it."""
    if _F in chain:
        return ()
    if _R in chain:
        return (_F,)
    if chain.count(_E) >= 2:
        return (_R, _F)
    return _OPENING


def falta(score: tuple[int, int], target: int) -> int:
    """What the leading team lacks to reach the target (22-10 at 30: 8)."""
    return target - max(score)


def accepted_points(chain: Chain, score: tuple[int, int], target: int) -> int:
    """Quiero: the sum of the calls, or the falta once falta envido is in the chain."""
    if _F in chain:
        return falta(score, target)
    return sum(_CALL_POINTS[call] for call in chain)


def declined_points(chain: Chain, score: tuple[int, int], target: int) -> int:
    """No quiero: the accepted value of the chain before its last call, at least 1."""
    return max(1, accepted_points(chain[:-1], score, target)) if len(chain) > 1 else 1


def chain_name(chain: Chain) -> str:
    """`EER`, `ERF`, ...: the short name the rules use for a chain."""
    letters = {_E: "E", _R: "R", _F: "F"}
    return "".join(letters[call] for call in chain)
