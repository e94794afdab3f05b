"""Rules scenarios (shared/SCENARIOS.md): parse one scripted hand, run it, compare the result.

Pure: a decoded JSON value in, results out. Reading files and printing is the command line's job
(`server/scenario_cli.py`), so the verifier and the tests reuse this module directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from truco.actions import Action, ActionKind, action_from_json
from truco.cards import Card, parse_card
from truco.match import apply, check_deal, new_match, start_hand
from truco.reasons import IllegalAction
from truco.state import Deal, HandKind, MatchState
from truco.variants import MatchConfig, TeamMode, Variant

EXPECT_KEYS = ("score", "hand_over", "match_winner", "rejected")


class ScenarioError(ValueError):
    """The input is not a valid scenario; the message names the problem."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    config: MatchConfig
    score: tuple[int, int]
    deal: Deal
    actions: tuple[Action, ...]
    expect: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    score: tuple[int, int]
    hand_over: bool
    match_winner: int | None
    rejected: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score": list(self.score),
            "hand_over": self.hand_over,
            "match_winner": self.match_winner,
            "rejected": list(self.rejected),
        }


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _card(value: object, where: str) -> Card:
    try:
        if isinstance(value, str):
            return parse_card(value)
    except ValueError:
        pass
    raise ScenarioError(f"unknown card {value!r} in {where}")


def parse_scenarios(data: object, *, check: bool = True) -> tuple[Scenario, ...]:
    """A file's decoded JSON: one scenario object or a list of them.

    `expect` is used only by `--check` (../shared/SCENARIOS.md): with `check=False` it is not
    read, so a plain run never refuses a file for it (a newer version's expect key included).
    """
    if isinstance(data, dict):
        return (parse_scenario(data, check=check),)
    if isinstance(data, list):
        if not data:
            raise ScenarioError("the list holds no scenario")
        scenarios = []
        for index, item in enumerate(data):
            try:
                scenarios.append(parse_scenario(item, check=check))
            except ScenarioError as error:
                raise ScenarioError(f"scenario {index}: {error}") from None
        return tuple(scenarios)
    raise ScenarioError("a scenario file holds a JSON object or a list of objects")


def parse_scenario(obj: object, *, check: bool = True) -> Scenario:
    if not isinstance(obj, dict):
        raise ScenarioError(f"a scenario is a JSON object, not {type(obj).__name__}")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError("missing or empty 'name'")
    try:
        return _parse_body(name, obj, check)
    except ScenarioError as error:
        raise ScenarioError(f"{name!r}: {error}") from None


def _parse_body(name: str, obj: dict[str, Any], check: bool) -> Scenario:
    variant = obj.get("variant")
    if variant not in tuple(Variant):
        raise ScenarioError(f"unknown variant {variant!r}")
    seats = obj.get("seats")
    if not _is_int(seats) or seats not in (2, 4):
        raise ScenarioError(f"seats must be 2 or 4, not {seats!r}")
    mode = obj.get("mode", TeamMode.VOTE.value)
    if mode not in tuple(TeamMode):
        raise ScenarioError(f"unknown mode {mode!r} (vote or first)")
    config = MatchConfig(Variant(variant), seats, TeamMode(mode))

    score = obj.get("score", [0, 0])
    if not isinstance(score, list) or len(score) != 2 or not all(_is_int(p) for p in score):
        raise ScenarioError(f"score must be two integers, not {score!r}")
    if min(score) < 0 or max(score) >= config.target:
        raise ScenarioError(f"bad score {score}: each must be 0..{config.target - 1}")
    dealer = obj.get("dealer")
    if not _is_int(dealer) or not 0 <= dealer < seats:
        raise ScenarioError(f"dealer must be a seat 0..{seats - 1}, not {dealer!r}")

    hands_value = obj.get("hands")
    if not isinstance(hands_value, list) or len(hands_value) != seats:
        raise ScenarioError(f"hands must list {seats} hands, one per seat")
    hands: list[tuple[Card, ...]] = []
    for seat, cards in enumerate(hands_value):
        if not isinstance(cards, list) or len(cards) != config.hand_size:
            raise ScenarioError(f"hands[{seat}] must hold {config.hand_size} cards")
        hands.append(tuple(_card(text, f"hands[{seat}]") for text in cards))
    vira_value = obj.get("vira")
    if config.uses_vira and vira_value is None:
        raise ScenarioError(f"missing vira: {variant} turns one")
    if not config.uses_vira and vira_value is not None:
        raise ScenarioError(f"{variant} has no vira")
    vira = None if vira_value is None else _card(vira_value, "vira")
    deal = Deal(dealer, tuple(hands), vira)
    try:
        check_deal(config, deal)
    except ValueError as error:
        raise ScenarioError(str(error)) from None

    actions_value = obj.get("actions", [])
    if not isinstance(actions_value, list):
        raise ScenarioError("actions must be a list")
    actions = []
    for index, item in enumerate(actions_value):
        try:
            action = action_from_json(item)
        except ValueError as error:
            raise ScenarioError(f"actions[{index}]: {error}") from None
        if action.seat >= seats:
            raise ScenarioError(f"actions[{index}]: no seat {action.seat} at a {seats}-seat table")
        actions.append(action)
    expect = obj.get("expect") if check else None
    if expect is not None:
        _check_expect(expect, seats)
    return Scenario(name, config, (score[0], score[1]), deal, tuple(actions), expect)


def _check_expect(expect: object, seats: int) -> None:
    if not isinstance(expect, dict):
        raise ScenarioError("expect must be an object")
    unknown = set(expect) - set(EXPECT_KEYS)
    if unknown:
        raise ScenarioError(f"unknown expect key(s): {', '.join(map(repr, sorted(unknown)))}")
    score = expect.get("score", [0, 0])
    if not isinstance(score, list) or len(score) != 2 or not all(_is_int(p) for p in score):
        raise ScenarioError(f"expect.score must be two integers, not {score!r}")
    if not isinstance(expect.get("hand_over", False), bool):
        raise ScenarioError("expect.hand_over must be true or false")
    if expect.get("match_winner") not in (None, 0, 1) or isinstance(
        expect.get("match_winner"), bool
    ):
        raise ScenarioError("expect.match_winner must be 0, 1 or null")
    rejected = expect.get("rejected", [])
    if not isinstance(rejected, list) or not all(_is_int(i) for i in rejected):
        raise ScenarioError("expect.rejected must be a list of action indices")


def _blind(state: MatchState, action: Action) -> Action:
    """In mão de ferro a scenario names the card; the player really picks its position."""
    hand = state.hand
    if (
        hand is None
        or hand.kind is not HandKind.FERRO
        or action.kind is not ActionKind.PLAY
        or action.card is None
        or action.position is not None
        or action.card not in hand.hands[action.seat]
    ):
        return action
    position = hand.hands[action.seat].index(action.card)
    return Action(action.seat, ActionKind.PLAY, covered=action.covered, position=position)


def run_scenario(scenario: Scenario) -> ScenarioResult:
    state = new_match(scenario.config, scenario.deal.dealer, scenario.score)
    state, _ = start_hand(state, scenario.deal)
    rejected = []
    for index, action in enumerate(scenario.actions):
        try:
            state, _ = apply(state, _blind(state, action))
        except IllegalAction:
            rejected.append(index)
    return ScenarioResult(
        name=scenario.name,
        score=state.score,
        hand_over=state.hand_over,
        match_winner=state.match_winner,
        rejected=tuple(rejected),
    )


def differences(scenario: Scenario, result: ScenarioResult) -> list[str]:
    """What differs from the scenario's `expect` (empty when it matches or has no expect)."""
    if scenario.expect is None:
        return []
    got = result.to_json()
    return [
        f"{key}: expected {json.dumps(scenario.expect[key])}, got {json.dumps(got[key])}"
        for key in EXPECT_KEYS
        if key in scenario.expect and scenario.expect[key] != got[key]
    ]
