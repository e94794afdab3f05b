"""What each seat and an observer see: own cards, never others', covered cards, ferro, onze."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine_support import begin, do, steps
from truco import (
    Action,
    ActionKind,
    MatchState,
    action_to_json,
    apply,
    events_json,
    hidden_cards_for,
    legal_actions,
    parse_card,
    view,
    views,
)

FOUR = [["3C", "2C", "4D"], ["4H", "5H", "6H"], ["AC", "KC", "JC"], ["AH", "KH", "JH"]]


def _faces(node: Any) -> set[str]:
    """Every card notation anywhere in a JSON value."""
    found: set[str] = set()
    if isinstance(node, dict):
        for value in node.values():
            found |= _faces(value)
    elif isinstance(node, list):
        for value in node:
            found |= _faces(value)
    elif isinstance(node, str) and len(node) == 2:
        try:
            parse_card(node)
        except ValueError:
            return found
        found.add(node)
    return found


def _hand_faces(state: MatchState, viewer: int | None, owner: int) -> list[str | None]:
    return [slot["card"] for slot in view(state, viewer)["hand"]["players"][owner]["hand"]]


def test_a_seat_sees_its_own_cards_only() -> None:
    state = begin("paulista", FOUR, vira="7C")
    assert _hand_faces(state, 0, 0) == ["3C", "2C", "4D"]
    for other in (1, 2, 3):
        assert _hand_faces(state, 0, other) == [None, None, None]
    seen = _faces(view(state, 0))
    assert seen == {"3C", "2C", "4D", "7C", "QC", "QH", "QS", "QD"}  # hand, vira, manilhas


def test_an_observer_sees_the_table_only() -> None:
    state = steps(begin("paulista", FOUR, vira="7C"), (0, "play", "4D"))
    observed = view(state, None)
    assert _faces(observed) == {"4D", "7C", "QC", "QH", "QS", "QD"}
    assert observed["legal"] == []
    hidden = hidden_cards_for(state, None)
    dealt = {parse_card(card) for hand in FOUR for card in hand}
    assert dealt - hidden == {parse_card("4D")}
    assert parse_card("7C") not in hidden


def test_a_covered_card_is_known_to_its_owner_only_also_after_the_hand() -> None:
    hands = [["3C", "4D", "5S"], ["2H", "6D", "7S"]]
    state = steps(begin("paulista", hands, vira="7C"), (0, "play", "3C"), (1, "play", "2H"))
    state = do(state, 0, "play", "5S", covered=True)
    assert parse_card("5S") in hidden_cards_for(state, 1)
    assert parse_card("5S") not in hidden_cards_for(state, 0)
    assert "5S" not in _faces(view(state, 1)) and "5S" not in _faces(view(state, None))
    state = steps(state, (1, "play", "6D"), (1, "play", "7S"), (0, "play", "4D"))
    assert state.hand_over
    assert "5S" not in _faces(view(state, 1)) and "5S" not in _faces(view(state, None))
    assert view(state, 0)["hand"]["rounds"][1]["plays"][0] == {
        "seat": 0,
        "card": "5S",
        "covered": True,
    }


def test_a_covered_card_is_hidden_from_the_partner_too() -> None:
    state = steps(
        begin("paulista", FOUR, vira="7C"),
        (0, "play", "3C"), (1, "play", "4H"), (2, "play", "AC"), (3, "play", "AH"),
    )  # seat 0's 3 takes round 1 and leads round 2
    state = do(state, 0, "play", "4D", covered=True)
    assert parse_card("4D") in hidden_cards_for(state, 2)  # the partner
    assert "4D" not in _faces(view(state, 2))
    covered = {"seat": 0, "card": None, "covered": True}
    assert view(state, 2)["hand"]["table"] == [covered]
    assert view(state, 0)["hand"]["table"] == [{**covered, "card": "4D"}]


def test_mao_de_ferro_hides_even_ones_own_cards() -> None:
    state = begin("paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], vira="7C", score=(11, 11))
    for seat in (0, 1, None):
        assert _faces(view(state, seat)) == {"7C", "QC", "QH", "QS", "QD"}
    assert [slot["position"] for slot in view(state, 0)["hand"]["players"][0]["hand"]] == [0, 1, 2]
    state = do(state, 0, "play", position=2)
    assert "4D" in _faces(view(state, 1))  # shown when played
    assert _hand_faces(state, 0, 0) == [None, None]


def test_mao_de_onze_partners_see_each_other_opponents_do_not() -> None:
    state = begin("paulista", FOUR, vira="7C", score=(11, 4))
    assert _hand_faces(state, 0, 2) == ["AC", "KC", "JC"]
    assert _hand_faces(state, 2, 0) == ["3C", "2C", "4D"]
    assert _hand_faces(state, 1, 3) == [None, None, None]
    assert _hand_faces(state, 1, 0) == [None, None, None]
    normal = begin("paulista", FOUR, vira="7C", score=(10, 4))
    assert _hand_faces(normal, 0, 2) == [None, None, None]


def test_the_envido_winner_shows_the_cards_at_the_end_of_the_hand() -> None:
    hands = [["7D", "6D", "AH"], ["7S", "3S", "JS"]]
    state = steps(begin("argentino", hands), (0, "envido"), (1, "accept"))
    assert "6D" not in _faces(view(state, 1))
    state = steps(state, (0, "play", "7D"), (1, "play", "7S"), (1, "play", "3S"), (0, "play", "AH"))
    assert state.hand_over
    shown = view(state, 1)["hand"]["players"][0]
    assert shown["shown"] == ["7D", "6D", "AH"]
    assert {"7D", "6D", "AH"} <= _faces(view(state, None))
    assert "JS" not in _faces(view(state, 0))  # the loser's unplayed card stays hidden


def test_view_carries_state_and_legal_actions() -> None:
    state = do(begin("paulista", FOUR, vira="7C"), 0, "raise")
    seen = view(state, 1)
    json.dumps(seen)  # JSON-ready
    assert seen["score"] == [0, 0] and seen["phase"] == "in_hand"
    assert seen["hand"]["request"]["kind"] == "truco" and seen["hand"]["request"]["value"] == 3
    assert seen["hand"]["turn"] is None  # nobody plays while the request waits
    assert seen["legal"] == [action_to_json(a) for a in legal_actions(state, 1)]
    assert {p["seat"] for p in seen["pending"]} == {1, 3}
    after, events = apply(state, Action(1, ActionKind.ACCEPT))
    assert view(after, 3)["hand"]["votes"] == {"1": "accept"}  # the partner reads it
    assert view(after, 1)["hand"]["votes"] == {"1": "accept"}
    # the other team and observers learn that seat 1 voted, not what (partner talk)
    assert view(after, 0)["hand"]["votes"] == {"1": None}
    assert view(after, None)["hand"]["votes"] == {"1": None}
    assert views(after, (0, 1, 2, 3, None))[2]["hand"]["votes"] == {"1": None}
    assert [e["vote"] for e in events_json(events, 3) if e["type"] == "vote_cast"] == ["accept"]
    for viewer in (0, 2, None):
        assert [e["vote"] for e in events_json(events, viewer)
                if e["type"] == "vote_cast"] == [None]
    # the team's answer, once the partners agree, is everybody's
    answered, events = apply(after, Action(3, ActionKind.ACCEPT))
    assert "raise_accepted" in [e["type"] for e in events_json(events, 0)]
    assert view(answered, 0)["hand"]["value"] == 3


def test_unknown_viewers_are_refused() -> None:
    state = begin("paulista", FOUR, vira="7C")
    for seat in (4, -1, True):
        with pytest.raises(ValueError):
            view(state, seat)
        with pytest.raises(ValueError):
            hidden_cards_for(state, seat)


def test_next_raise_names_the_step_a_raise_asks_for() -> None:
    from truco import (
        Action,
        ActionKind,
        Card,
        Deal,
        MatchConfig,
        Variant,
        apply,
        new_match,
        start_hand,
    )

    def cards(*names: str) -> tuple[Card, Card, Card]:
        a, b, c = (parse_card(n) for n in names)
        return (a, b, c)

    state = new_match(MatchConfig(Variant.MINEIRO, 2), first_dealer=0)
    state, _ = start_hand(state, Deal(0, (cards("4C", "5C", "6C"), cards("4H", "5H", "6H")), None))
    steps = []
    for seat, kind in [(1, ActionKind.RAISE), (0, ActionKind.RAISE), (1, ActionKind.RAISE),
                       (0, ActionKind.RAISE)]:
        steps.append(view(state, seat)["hand"]["next_raise"])
        state, _ = apply(state, Action(seat, kind))
    steps.append(view(state, 1)["hand"]["next_raise"])
    assert steps == [
        {"name": "truco", "value": 4}, {"name": "seis", "value": 6},
        {"name": "nove", "value": 10}, {"name": "doze", "value": 12}, None,
    ]
    # a truco answered with envido first: once the envido is settled, a raise asks for the step
    # above that truco (it said truco, which was already asked)
    state = new_match(MatchConfig(Variant.ARGENTINO, 2), first_dealer=1)
    state, _ = start_hand(state, Deal(1, (cards("7S", "6S", "KD"), cards("5H", "4H", "3C")),
                                      None))
    state, _ = apply(state, Action(0, ActionKind.RAISE))
    state, _ = apply(state, Action(1, ActionKind.ENVIDO))
    assert view(state, 1)["hand"]["next_raise"] == {"name": "retruco", "value": 3}
    # no raise at all in mão de onze or mão de ferro (it said truco, worth 3)
    for score in ((11, 4), (11, 11)):
        special = begin("paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], vira="7C",
                        score=score)
        assert view(special, 0)["hand"]["next_raise"] is None


def test_a_request_says_whether_it_was_the_teams_answer() -> None:
    # a raise back or an envido sung in answer is the team's, decided by its vote: the view says
    # so (a page opened after it names the team, not the partner whose vote completed it)
    def request(state: MatchState) -> dict[str, Any]:
        asked = view(state, 0)["hand"]["request"]
        assert asked is not None
        return {key: asked[key] for key in ("kind", "seat", "team", "in_answer")}

    state = steps(begin("paulista", FOUR, vira="7C"), (0, "raise"))
    assert request(state) == {"kind": "truco", "seat": 0, "team": 0, "in_answer": False}
    state = steps(state, (1, "raise"))  # one vote of two: still the truco asked
    assert request(state) == {"kind": "truco", "seat": 0, "team": 0, "in_answer": False}
    state = steps(state, (3, "raise"))
    assert request(state) == {"kind": "truco", "seat": 3, "team": 1, "in_answer": True}
    state = steps(state, (0, "accept"), (2, "accept"))
    assert view(state, 0)["hand"]["request"] is None
    state = steps(state, (0, "raise"))  # at my own turn, after the seis accepted
    assert request(state) == {"kind": "truco", "seat": 0, "team": 0, "in_answer": False}
    # Argentino: an envido sung at one's turn, and sung or raised in answer
    argentino = begin("argentino", FOUR)
    assert request(steps(argentino, (0, "envido"))) == {
        "kind": "envido", "seat": 0, "team": 0, "in_answer": False}
    state = steps(argentino, (0, "raise"), (1, "envido"), (3, "envido"))
    assert request(state) == {"kind": "envido", "seat": 3, "team": 1, "in_answer": True}
    state = steps(state, (2, "real_envido"), (0, "real_envido"))
    assert request(state) == {"kind": "envido", "seat": 0, "team": 0, "in_answer": True}
    assert view(state, None)["hand"]["request"]["in_answer"] is True  # public, as the log is
