"""What a seat can do, and its JSON form (the scenario format of shared/SCENARIOS.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from truco._frozen import fast_init
from truco.cards import CARD_NAMES, Card, parse_card


class ActionKind(StrEnum):
    """The values are the scenario verbs."""

    PLAY = "play"
    RAISE = "raise"
    ACCEPT = "accept"
    DECLINE = "decline"
    ENVIDO = "envido"
    REAL_ENVIDO = "real_envido"
    FALTA_ENVIDO = "falta_envido"
    FOLD = "fold"
    TIMEOUT = "timeout"


ENVIDO_CALLS: tuple[ActionKind, ...] = (
    ActionKind.ENVIDO,
    ActionKind.REAL_ENVIDO,
    ActionKind.FALTA_ENVIDO,
)


@fast_init
@dataclass(frozen=True, slots=True)
class Action:
    """One seat's action. PLAY carries `card` (and `covered`), or in mão de ferro `position`."""

    seat: int
    kind: ActionKind
    card: Card | None = None
    covered: bool = False
    position: int | None = None


# each kind's verb: Python 3.11 reads `Enum.value` through a descriptor, and every view lists
# the legal actions of its seat
_VERB: dict[ActionKind, str] = {kind: kind.value for kind in ActionKind}


def action_to_json(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"seat": action.seat, "do": _VERB[action.kind]}
    if action.card is not None:
        out["card"] = CARD_NAMES[action.card.index]
    if action.covered:
        out["covered"] = True
    if action.position is not None:
        out["position"] = action.position
    return out


_FIELDS = frozenset({"seat", "do", "card", "covered", "position"})
_VERBS = frozenset(kind.value for kind in ActionKind)


def action_from_json(obj: object) -> Action:
    """Parse the scenario form; raises ValueError naming what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f"an action is a JSON object, not {type(obj).__name__}")
    extra = set(obj) - _FIELDS
    if extra:
        named = ", ".join(map(repr, sorted(map(str, extra))))  # repr: one line whatever they hold
        raise ValueError(f"unknown action field(s): {named}")
    seat = obj.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool) or seat < 0:
        raise ValueError(f"action seat must be a non-negative integer, not {seat!r}")
    verb = obj.get("do")
    if not isinstance(verb, str) or verb not in _VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    kind = ActionKind(verb)
    card: Card | None = None
    if "card" in obj:
        card = parse_card(obj["card"])
    covered = obj.get("covered", False)
    if not isinstance(covered, bool):
        raise ValueError(f"'covered' must be true or false, not {covered!r}")
    position = obj.get("position")
    if position is not None and (
        not isinstance(position, int) or isinstance(position, bool) or not 0 <= position <= 2
    ):
        raise ValueError(f"'position' must be 0, 1 or 2, not {position!r}")
    if kind is ActionKind.PLAY:
        if card is None and position is None:
            raise ValueError("'play' needs a 'card' (or a 'position' in mão de ferro)")
    elif card is not None or covered or position is not None:
        raise ValueError(f"{kind.value!r} takes no card, covered or position")
    return Action(seat=seat, kind=kind, card=card, covered=covered, position=position)
