"""Rounds, ties, the hand table of RULES.md, covered cards and the end of a match."""

from __future__ import annotations

import pytest

from tests.engine_support import action, begin, do, refused, steps
from truco import HandEnd, MatchState, Phase, Reason, Termination, apply, pending
from truco.events import HandEnded, MatchEnded, RoundEnded

# Paulista with vira 7C: the manilhas are the Qs; plain order 3 2 A K J 7 6 5 4.
VIRA = "7C"


def test_round_winner_leads_the_next_round() -> None:
    state = begin("paulista", [["4C", "3C", "5S"], ["2H", "6D", "7S"]], vira=VIRA)
    state = steps(state, (0, "play", "4C"), (1, "play", "2H"))
    hand = state.hand
    assert hand is not None
    assert hand.rounds[0].winner_team == 1 and hand.rounds[0].winner_seat == 1
    assert hand.turn == 1
    assert refused(state, 0, "play", "3C") is Reason.NOT_YOUR_TURN


def test_tie_between_teams_and_the_leader_of_the_tied_round_leads_again() -> None:
    state = begin(
        "paulista",
        [["3C", "4C", "5C"], ["3H", "4H", "5H"], ["6C", "6D", "AS"], ["6H", "6S", "KS"]],
        vira=VIRA,
        dealer=0,  # mano is seat 1
    )
    state = steps(state, (1, "play", "3H"), (2, "play", "6C"), (3, "play", "6H"), (0, "play", "3C"))
    hand = state.hand
    assert hand is not None
    assert hand.rounds[0].winner_team is None
    assert hand.turn == 1  # seat 1 led the tied round


def test_equal_best_cards_of_partners_win_for_the_first_of_them() -> None:
    state = begin(
        "paulista",
        [["3C", "4C", "5C"], ["4H", "5H", "6H"], ["3D", "6C", "AS"], ["5S", "6S", "KS"]],
        vira=VIRA,
    )
    state = steps(state, (0, "play", "4C"), (1, "play", "4H"), (2, "play", "3D"), (3, "play", "5S"))
    hand = state.hand
    assert hand is not None and hand.rounds[0].winner_seat == 2
    state = steps(state, (2, "play", "6C"), (3, "play", "6S"), (0, "play", "3C"), (1, "play", "5H"))
    hand = state.hand
    assert hand is not None and hand.result is not None
    assert state.score == (1, 0)


def _two_seat_hand(seat0: list[str], seat1: list[str], variant: str = "paulista") -> MatchState:
    """Play a 1v1 hand where each round seat 0's card i meets seat 1's card i."""
    vira = VIRA if variant == "paulista" else None
    state = begin(variant, [seat0, seat1], vira=vira)
    for i in range(3):
        hand = state.hand
        assert hand is not None
        if hand.result is not None:
            break
        first = hand.turn
        order = [first, 1 - first]
        cards = {0: seat0[i], 1: seat1[i]}
        for seat in order:
            state = do(state, seat, "play", cards[seat])
    return state


@pytest.mark.parametrize(
    ("seat0", "seat1", "winner", "rounds"),
    [
        (["3C", "2C", "4D"], ["4H", "5H", "6H"], 0, 2),  # X X
        (["3C", "2C", "4D"], ["3H", "5H", "6H"], 0, 2),  # tie X
        (["3C", "5C", "4D"], ["4H", "5H", "6H"], 0, 2),  # X tie
        (["3C", "4C", "2D"], ["4H", "5H", "AH"], 0, 3),  # X Y X
        (["4C", "3C", "5D"], ["5H", "4H", "6H"], 1, 3),  # Y X Y
        (["3C", "2C", "AC"], ["3H", "2H", "KH"], 0, 3),  # tie tie X
        (["3C", "4C", "AC"], ["4H", "5H", "AH"], 0, 3),  # X Y tie: round 1 decides
        (["4C", "3C", "AC"], ["5H", "4H", "AH"], 1, 3),  # Y X tie
        (["3C", "2C", "AC"], ["3H", "2H", "AH"], None, 3),  # tie tie tie: nobody
    ],
)
def test_the_hand_table(
    seat0: list[str], seat1: list[str], winner: int | None, rounds: int
) -> None:
    state = _two_seat_hand(seat0, seat1)
    hand = state.hand
    assert hand is not None and hand.result is not None
    assert len(hand.rounds) == rounds
    assert hand.result.winner_team == winner
    expected = (0, 0) if winner is None else ((1, 0) if winner == 0 else (0, 1))
    assert state.score == expected
    assert hand.result.reason is (HandEnd.TIED if winner is None else HandEnd.ROUNDS)


def test_argentino_three_ties_go_to_manos_team() -> None:
    state = _two_seat_hand(["3C", "2C", "KC"], ["3H", "2H", "KH"], "argentino")
    assert state.score == (1, 0)  # seat 0 is mano
    state = begin("argentino", [["3C", "2C", "KC"], ["3H", "2H", "KH"]], dealer=0)
    state = steps(
        state,
        (1, "play", "3H"), (0, "play", "3C"), (1, "play", "2H"), (0, "play", "2C"),
        (1, "play", "KH"), (0, "play", "KC"),
    )  # fmt: skip
    assert state.score == (0, 1)


def test_round_events() -> None:
    state = begin("paulista", [["3C", "4C", "5C"], ["4H", "5H", "6H"]], vira=VIRA)
    state = do(state, 0, "play", "3C")
    _, events = apply(state, action(1, "play", "4H"))
    ended = [e for e in events if isinstance(e, RoundEnded)]
    assert ended == [RoundEnded(0, 0, 0)]


COVER_HANDS = (("3C", "4D", "5S"), ("2H", "6D", "7S"))


class TestCoveredCards:
    def test_not_in_round_one(self) -> None:
        state = begin("paulista", COVER_HANDS, vira=VIRA)
        assert refused(state, 0, "play", "3C", covered=True) is Reason.COVER_NOT_ALLOWED

    def test_a_covered_card_never_wins_and_all_covered_ties(self) -> None:
        state = begin("paulista", COVER_HANDS, vira=VIRA)
        state = steps(state, (0, "play", "3C"), (1, "play", "2H"))
        state = do(state, 0, "play", "5S", covered=True)  # a 5 would beat the 4 below... covered
        state = do(state, 1, "play", "6D")
        hand = state.hand
        assert hand is not None and hand.rounds[1].winner_team == 1
        state = do(state, 1, "play", "7S", covered=True)
        state = do(state, 0, "play", "4D", covered=True)
        hand = state.hand
        assert hand is not None and hand.rounds[2].winner_team is None
        assert state.score == (1, 0)  # X Y tie: round 1 decides

    def test_covered_loses_even_to_the_weakest_open_card(self) -> None:
        state = begin("paulista", [["3C", "QC", "5S"], ["2H", "4D", "7S"]], vira=VIRA)
        state = steps(state, (0, "play", "3C"), (1, "play", "2H"))
        state = do(state, 0, "play", "QC", covered=True)  # the zap, covered: worth nothing
        state = do(state, 1, "play", "4D")
        hand = state.hand
        assert hand is not None and hand.rounds[1].winner_team == 1

    def test_mineiro_allows_covering_argentino_has_none(self) -> None:
        state = begin("mineiro", COVER_HANDS)
        state = steps(state, (0, "play", "3C"), (1, "play", "2H"))
        assert do(state, 0, "play", "4D", covered=True).hand is not None
        state = begin("argentino", COVER_HANDS)
        state = steps(state, (0, "play", "3C"), (1, "play", "2H"))
        assert refused(state, 0, "play", "4D", covered=True) is Reason.WRONG_VARIANT


class TestPlays:
    def test_card_not_in_hand_and_not_twice(self) -> None:
        state = begin("paulista", [["3C", "4D", "5S"], ["2H", "6D", "7S"]], vira=VIRA)
        assert refused(state, 0, "play", "2H") is Reason.CARD_NOT_IN_HAND
        assert refused(state, 0, "play", "AC") is Reason.CARD_NOT_IN_HAND
        state = steps(state, (0, "play", "3C"), (1, "play", "2H"))
        assert refused(state, 0, "play", "3C") is Reason.CARD_NOT_IN_HAND

    def test_bad_shapes(self) -> None:
        state = begin("paulista", [["3C", "4D", "5S"], ["2H", "6D", "7S"]], vira=VIRA)
        assert refused(state, 0, "play") is Reason.BAD_ACTION
        assert refused(state, 0, "play", "3C", position=0) is Reason.BAD_ACTION
        assert refused(state, 0, "raise", "3C") is Reason.BAD_ACTION
        assert refused(state, 7, "play", "3C") is Reason.UNKNOWN_SEAT
        assert refused(state, -1, "raise") is Reason.UNKNOWN_SEAT
        assert refused(state, 0, "accept") is Reason.NOTHING_TO_ANSWER
        assert refused(state, 1, "decline") is Reason.NOTHING_TO_ANSWER


class TestMatchEnd:
    def test_the_match_ends_when_a_team_reaches_twelve_and_keeps_the_real_sum(self) -> None:
        state = begin(
            "paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], vira=VIRA, score=(10, 3)
        )
        state = steps(state, (0, "raise"), (1, "accept"), (0, "play", "3C"), (1, "play", "4H"))
        state, events = apply(state, action(0, "play", "2C"))
        state, events = apply(state, action(1, "play", "5H"))
        assert state.score == (13, 3)
        assert state.phase is Phase.MATCH_OVER
        assert state.outcome is not None and state.outcome.termination is Termination.TARGET
        assert state.match_winner == 0
        assert isinstance(events[-1], MatchEnded)
        assert isinstance(events[-2], HandEnded)
        assert refused(state, 0, "play", "4D") is Reason.MATCH_OVER
        assert pending(state) == ()

    def test_not_before_the_target(self) -> None:
        state = begin("paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], vira=VIRA, score=(9, 3))
        state = steps(
            state, (0, "play", "3C"), (1, "play", "4H"), (0, "play", "2C"), (1, "play", "5H")
        )
        assert state.score == (10, 3)
        assert state.phase is Phase.AWAITING_DEAL and state.match_winner is None
        assert state.hand_over
        assert state.next_dealer == 0  # seat 1 dealt; the deal passes on
        assert refused(state, 0, "play", "4D") is Reason.HAND_NOT_IN_PROGRESS
