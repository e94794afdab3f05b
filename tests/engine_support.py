"""Helpers for the engine tests: set up a hand from card notation and act on it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from truco import (
    Action,
    ActionKind,
    Deal,
    IllegalAction,
    MatchConfig,
    MatchState,
    Reason,
    TeamMode,
    Variant,
    apply,
    new_match,
    parse_card,
    start_hand,
)
from truco.events import Event


def begin(
    variant: str,
    hands: Sequence[Sequence[str]],
    *,
    vira: str | None = None,
    dealer: int | None = None,
    score: tuple[int, int] = (0, 0),
    mode: str = "vote",
) -> MatchState:
    """A match at `score` with one hand dealt; by default the last seat deals, so seat 0 is mano."""
    seats = len(hands)
    config = MatchConfig(Variant(variant), seats, TeamMode(mode))
    dealer = seats - 1 if dealer is None else dealer
    state = new_match(config, dealer, score)
    deal = Deal(
        dealer,
        tuple(tuple(parse_card(card) for card in hand) for hand in hands),
        None if vira is None else parse_card(vira),
    )
    state, _ = start_hand(state, deal)
    return state


def action(
    seat: int,
    verb: str,
    card: str | None = None,
    *,
    covered: bool = False,
    position: int | None = None,
) -> Action:
    return Action(
        seat,
        ActionKind(verb),
        None if card is None else parse_card(card),
        covered=covered,
        position=position,
    )


def do(
    state: MatchState,
    seat: int,
    verb: str,
    card: str | None = None,
    *,
    covered: bool = False,
    position: int | None = None,
) -> MatchState:
    return apply(state, action(seat, verb, card, covered=covered, position=position))[0]


def do_events(
    state: MatchState, seat: int, verb: str, card: str | None = None
) -> tuple[Event, ...]:
    return apply(state, action(seat, verb, card))[1]


def steps(state: MatchState, *moves: tuple[int, str] | tuple[int, str, str]) -> MatchState:
    """Apply (seat, verb[, card]) moves in order."""
    for move in moves:
        state = do(state, *move)
    return state


def refused(
    state: MatchState,
    seat: int,
    verb: str,
    card: str | None = None,
    *,
    covered: bool = False,
    position: int | None = None,
) -> Reason:
    """Assert the action is refused (and changes nothing); return the reason code."""
    before = state
    with pytest.raises(IllegalAction) as caught:
        apply(state, action(seat, verb, card, covered=covered, position=position))
    assert state == before
    return caught.value.reason
