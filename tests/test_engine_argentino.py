"""Argentino: the envido chain, el envido va primero, falta envido, ir al mazo, 30 points."""

from __future__ import annotations

import pytest

from tests.engine_support import action, begin, do, refused, steps
from truco import ActionKind, HandEnd, Phase, Reason, apply, legal_actions, pending, view
from truco.events import EnvidoAccepted, EnvidoDeclined, Folded, HandEnded
from truco.match import _sung

# seat 0 (mano): tanto 33; seat 1: tanto 30
TWO = [["7D", "6D", "AH"], ["7S", "3S", "JS"]]
FOUR = [["7D", "6D", "AH"], ["7S", "3S", "JS"], ["4C", "5H", "QS"], ["KC", "2H", "6S"]]


class TestEnvido:
    def test_accepted_envido_goes_to_the_best_tanto(self) -> None:
        state = do(begin("argentino", TWO), 0, "envido")
        assert refused(state, 0, "play", "7D") is Reason.ANSWER_PENDING
        state, events = apply(state, action(1, "accept"))
        # 33 is sung; seat 1's 30 does not beat it: "son buenas", and it stays hidden
        assert events[-1] == EnvidoAccepted("E", ((0, 33),), 0, 0, 2)
        assert state.score == (2, 0) and not state.hand_over
        assert state.hand is not None and state.hand.turn == 0  # play resumes
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED  # once per hand

    def test_declined_envido(self) -> None:
        state = steps(begin("argentino", TWO), (0, "envido"), (1, "decline"))
        assert state.score == (1, 0)

    @pytest.mark.parametrize(
        ("calls", "answer", "score"),
        [
            (["envido", "envido"], "accept", (4, 0)),
            (["envido", "envido"], "decline", (0, 2)),
            (["envido", "real_envido"], "decline", (0, 2)),
            (["envido", "envido", "real_envido"], "accept", (0, 7)),
            (["envido", "envido", "real_envido"], "decline", (4, 0)),
            (["real_envido", "falta_envido"], "decline", (0, 3)),
            (["envido", "real_envido", "falta_envido"], "decline", (5, 0)),
            (["envido", "envido", "real_envido", "falta_envido"], "decline", (0, 7)),
        ],
    )
    def test_chains(self, calls: list[str], answer: str, score: tuple[int, int]) -> None:
        state = begin("argentino", TWO)
        seat = 0
        for call in calls:
            state = do(state, seat, call)
            seat = 1 - seat
        state = do(state, seat, answer)
        if answer == "accept":  # seat 0's 33 wins every accepted chain here
            score = (sum(score), 0)
        assert state.score == score

    def test_each_call_must_raise_the_chain(self) -> None:
        state = steps(begin("argentino", TWO), (0, "real_envido"))
        assert refused(state, 1, "envido") is Reason.ENVIDO_NOT_ALLOWED
        assert refused(state, 1, "real_envido") is Reason.ENVIDO_NOT_ALLOWED
        state = do(state, 1, "falta_envido")
        assert refused(state, 0, "falta_envido") is Reason.ENVIDO_NOT_ALLOWED
        state = steps(begin("argentino", TWO), (0, "envido"), (1, "envido"))
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED

    def test_only_in_round_one_and_before_truco(self) -> None:
        state = steps(begin("argentino", TWO), (0, "play", "AH"), (1, "play", "JS"))
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED  # round 2
        state = steps(begin("argentino", TWO), (0, "raise"), (1, "accept"))
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED  # truco was called
        state = steps(begin("argentino", TWO), (0, "play", "AH"))
        assert do(state, 1, "envido").hand is not None  # seat 1 has not played yet

    def test_brazilian_variants_have_no_envido(self) -> None:
        state = begin("paulista", TWO, vira="4C")
        assert refused(state, 0, "envido") is Reason.WRONG_VARIANT

    def test_ties_go_to_the_seat_nearest_mano(self) -> None:
        hands = [["7D", "6D", "AH"], ["7H", "6H", "AS"]]  # 33 each
        state = steps(begin("argentino", hands), (0, "envido"), (1, "accept"))
        assert state.score == (2, 0)
        state = steps(begin("argentino", hands, dealer=0), (1, "envido"), (0, "accept"))
        assert state.score == (0, 2)

    def test_a_played_card_still_counts(self) -> None:
        state = steps(begin("argentino", TWO), (0, "play", "7D"), (1, "envido"), (0, "accept"))
        assert state.score == (2, 0)


class TestEnvidoGoesFirst:
    def test_answering_a_truco_with_envido(self) -> None:
        state = steps(begin("argentino", TWO), (0, "raise"), (1, "envido"))
        hand = state.hand
        assert hand is not None and hand.truco is not None  # the truco waits
        assert {p.seat for p in pending(state)} == {0}  # the envido is answered first
        state = do(state, 0, "accept")
        assert state.score == (2, 0)
        assert {p.seat for p in pending(state)} == {1}  # now the truco
        assert refused(state, 1, "envido") is Reason.ENVIDO_NOT_ALLOWED
        state = do(state, 1, "accept")
        assert state.hand is not None and state.hand.stake == 2 and state.hand.turn == 0

    def test_not_after_the_truco_is_answered(self) -> None:
        state = steps(begin("argentino", TWO), (0, "raise"), (1, "raise"))  # quiero retruco
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED

    def test_not_once_the_answering_team_has_played_in_round_one(self) -> None:
        state = steps(begin("argentino", TWO), (0, "play", "AH"), (1, "play", "JS"))
        state = steps(state, (0, "play", "7D"), (1, "raise"))  # round 2
        assert refused(state, 0, "envido") is Reason.ENVIDO_NOT_ALLOWED
        hands = FOUR
        state = steps(begin("argentino", hands), (0, "play", "AH"), (1, "play", "JS"))
        state = do(state, 2, "raise")  # team 1: seat 1 played, seat 3 has not
        assert ActionKind.ENVIDO in {a.kind for a in legal_actions(state, 1)}
        state = steps(state, (1, "envido"), (3, "envido"))
        assert state.hand is not None and state.hand.envido is not None


class TestFalta:
    def test_the_leader_winning_falta_wins_the_match_mid_hand(self) -> None:
        state = begin("argentino", TWO, score=(22, 10))
        state = steps(state, (0, "falta_envido"))
        state, events = apply(state, action(1, "accept"))
        assert state.score == (30, 10)
        assert state.phase is Phase.MATCH_OVER and state.match_winner == 0 and state.hand_over
        hand = state.hand
        assert hand is not None and hand.result is not None
        assert hand.result.reason is HandEnd.MATCH_ENDED
        assert any(isinstance(e, HandEnded) for e in events)
        assert refused(state, 0, "play", "7D") is Reason.MATCH_OVER

    def test_the_trailing_team_adds_the_falta(self) -> None:
        hands = [TWO[1], TWO[0]]  # seat 1 holds the 33
        state = steps(begin("argentino", hands, score=(22, 10)), (0, "falta_envido"), (1, "accept"))
        assert state.score == (22, 18) and state.phase is Phase.IN_HAND

    def test_declined_envido_can_end_the_match(self) -> None:
        state = steps(begin("argentino", TWO, score=(29, 0)), (0, "envido"))
        state, events = apply(state, action(1, "decline"))
        assert any(isinstance(e, EnvidoDeclined) for e in events)
        assert state.score == (30, 0) and state.match_winner == 0


class TestMazo:
    def test_1v1_fold_scores_the_hand_plus_one_while_envido_is_open(self) -> None:
        state, events = apply(begin("argentino", TWO), action(0, "fold"))
        assert events[0] == Folded(0)
        assert state.score == (0, 2) and state.hand_over
        hand = state.hand
        assert hand is not None and hand.result is not None and hand.result.reason is HandEnd.FOLD

    def test_no_bonus_once_envido_was_called_or_truco_accepted(self) -> None:
        state = steps(begin("argentino", TWO), (0, "envido"), (1, "decline"), (0, "fold"))
        assert state.score == (1, 1)
        state = steps(begin("argentino", TWO), (0, "raise"), (1, "accept"), (0, "fold"))
        assert state.score == (0, 2)
        state = steps(begin("argentino", TWO), (0, "play", "AH"), (1, "play", "JS"), (0, "fold"))
        assert state.score == (0, 1)  # round 2: envido no longer possible

    def test_only_on_ones_turn_and_only_in_argentino(self) -> None:
        state = begin("argentino", TWO)
        assert refused(state, 1, "fold") is Reason.FOLD_NOT_ALLOWED
        state = do(state, 0, "raise")
        assert refused(state, 1, "fold") is Reason.ANSWER_PENDING
        assert refused(begin("paulista", TWO, vira="4C"), 0, "fold") is Reason.WRONG_VARIANT

    def test_2v2_the_partner_plays_on_and_the_folded_seat_is_skipped(self) -> None:
        state = do(begin("argentino", FOUR), 0, "fold")
        assert not state.hand_over
        assert refused(state, 0, "play", "7D") is Reason.FOLDED
        state = steps(state, (1, "play", "7S"), (2, "play", "4C"), (3, "play", "KC"))
        hand = state.hand
        assert hand is not None and len(hand.rounds) == 1 and len(hand.rounds[0].plays) == 3
        assert hand.rounds[0].winner_seat == 1
        state = do(state, 1, "raise")
        assert {p.seat for p in pending(state)} == {2}  # the folded partner does not vote
        state = do(state, 2, "accept")
        assert state.hand is not None and state.hand.stake == 2
        state = do(state, 1, "play", "3S")
        state = do(state, 2, "fold")  # the whole team is gone
        assert state.score == (0, 2) and state.hand_over

    def test_after_a_tie_the_seat_that_led_it_leads_again_not_mano(self) -> None:
        hands = [["4C", "5C", "6C"], ["3C", "5H", "6H"], ["3H", "5S", "6S"], ["4D", "5D", "6D"]]
        state = do(begin("argentino", hands), 0, "fold")  # mano folds: seat 1 leads round 1
        state = steps(state, (1, "play", "3C"), (2, "play", "3H"), (3, "play", "4D"))
        hand = state.hand
        assert hand is not None and not state.hand_over
        assert len(hand.rounds) == 1 and hand.rounds[0].winner_team is None  # 3 against 3: parda
        assert hand.turn == 1  # the tied round's leader, not mano
        assert legal_actions(state, 1)

    def test_a_folded_seat_does_not_compete_for_envido(self) -> None:
        state = steps(begin("argentino", FOUR), (0, "fold"), (1, "envido"), (2, "accept"))
        assert state.score == (0, 2)  # 30 beats seat 2's 5 and seat 3's 6; 33 folded
        assert view(state, 2)["hand"]["envido"]["result"]["tantos"] == [
            {"seat": 1, "tanto": 30},  # seat 2's 5 and seat 3's 6 stay hidden: son buenas
        ]


@pytest.mark.parametrize(("everyone", "winner", "sung"), [
    # (seat, tanto) from mano; seats 0 and 2 are one team, 1 and 3 the other
    (((0, 33), (1, 30)), 0, ((0, 33),)),
    (((0, 20), (1, 25)), 1, ((0, 20), (1, 25))),
    (((1, 25), (0, 25)), 1, ((1, 25),)),  # equal: the seat nearer mano keeps it
    # round the table again: seat 3 beats seat 0, then seat 2 (silent while 0 led) beats 3
    (((0, 30), (1, 5), (2, 33), (3, 31)), 2, ((0, 30), (3, 31), (2, 33))),
    # seat 2 equals seat 3 and is nearer mano: it beats it
    (((0, 30), (1, 5), (2, 31), (3, 31)), 2, ((0, 30), (3, 31), (2, 31))),
    # the other team never beats mano's 30; the partner's 33 wins and is sung last
    (((0, 30), (1, 20), (2, 33), (3, 25)), 2, ((0, 30), (2, 33))),
])
def test_the_table_sings_the_tantos_son_buenas(
        everyone: tuple[tuple[int, int], ...], winner: int,
        sung: tuple[tuple[int, int], ...]) -> None:
    assert _sung(everyone, winner) == sung
