"""Round trips of every format the engine speaks: action JSON and event JSON."""

from __future__ import annotations

import json

import pytest

from truco import (
    CANONICAL_DECK,
    Action,
    ActionKind,
    Outcome,
    Termination,
    action_from_json,
    action_to_json,
    parse_card,
)
from truco.events import (
    CardPlayed,
    EnvidoAccepted,
    EnvidoCalled,
    EnvidoDeclined,
    Event,
    Folded,
    HandEnded,
    HandStarted,
    MatchEnded,
    RaiseAccepted,
    RaiseDeclined,
    RaiseRequested,
    RoundEnded,
    SpecialHandAnswered,
    VoteCast,
    VoteExpired,
)

EVERY_ACTION = [
    Action(0, ActionKind.PLAY, parse_card("3C")),
    Action(1, ActionKind.PLAY, parse_card("7H"), covered=True),
    Action(2, ActionKind.PLAY, position=2),
    *(Action(3, kind) for kind in ActionKind if kind is not ActionKind.PLAY),
]


@pytest.mark.parametrize("action", EVERY_ACTION, ids=lambda a: a.kind.value)
def test_action_json_round_trip(action: Action) -> None:
    encoded = action_to_json(action)
    assert encoded["do"] == action.kind.value
    assert action_from_json(json.loads(json.dumps(encoded))) == action


def test_play_json_for_every_card() -> None:
    for card in CANONICAL_DECK:
        action = Action(1, ActionKind.PLAY, card)
        assert action_to_json(action) == {"seat": 1, "do": "play", "card": str(card)}
        assert action_from_json(action_to_json(action)) == action


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        "play",
        {"do": "play", "card": "3C"},
        {"seat": "0", "do": "raise"},
        {"seat": -1, "do": "raise"},
        {"seat": True, "do": "raise"},
        {"seat": 0, "do": "shout"},
        {"seat": 0, "do": None},
        {"seat": 0, "do": ["play"]},
        {"seat": 0, "do": "play", "card": ["3C"]},
        {"seat": 0, "do": "play"},
        {"seat": 0, "do": "play", "card": "8C"},
        {"seat": 0, "do": "play", "card": "3C", "covered": "yes"},
        {"seat": 0, "do": "play", "position": 3},
        {"seat": 0, "do": "raise", "card": "3C"},
        {"seat": 0, "do": "accept", "covered": True},
        {"seat": 0, "do": "fold", "extra": 1},
    ],
)
def test_action_from_json_refuses_malformed_input(value: object) -> None:
    with pytest.raises(ValueError):
        action_from_json(value)


C = parse_card
EVERY_EVENT: list[Event] = [
    HandStarted(3, 1, 2, "normal", 1, C("7C")),
    HandStarted(0, 0, 1, "ferro", 2, None),
    CardPlayed(0, C("3C"), False, 0, 0),
    CardPlayed(1, C("5S"), True, 2, 1, automatic=True),
    VoteCast(3, ActionKind.RAISE),
    VoteExpired(1),
    RaiseRequested(0, 0, 3, "truco"),
    RaiseAccepted(1, 3),
    RaiseDeclined(1, 3),
    SpecialHandAnswered(0, True),
    EnvidoCalled(0, 0, ActionKind.REAL_ENVIDO, "ER"),
    EnvidoAccepted("E", ((0, 33), (1, 30)), 0, 0, 2),
    EnvidoDeclined("EE", 1, 2),
    RoundEnded(1, None, None),
    Folded(2),
    HandEnded(0, 3, "rounds", (5, 2)),
    MatchEnded(Outcome(Termination.TARGET, 0), (12, 7)),
]


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda e: e.type)
def test_event_to_json(event: Event) -> None:
    encoded = event.to_json()
    assert encoded["type"] == event.type
    assert json.loads(json.dumps(encoded)) == encoded
    for name in event.__dataclass_fields__:
        if name not in ("card", "outcome"):
            assert name in encoded, name


def test_every_event_type_is_covered_and_distinct() -> None:
    types = {type(e) for e in EVERY_EVENT}
    assert types == set(Event.__args__)  # type: ignore[attr-defined]
    assert len({t.type for t in types}) == len(types)


def test_a_covered_card_is_not_published() -> None:
    encoded = CardPlayed(1, C("5S"), True, 2, 1).to_json()
    assert encoded["card"] is None and "5S" not in json.dumps(encoded)
    assert CardPlayed(1, C("5S"), False, 2, 1).to_json()["card"] == "5S"
