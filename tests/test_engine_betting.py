"""Raising the stake, team answers (vote / first), timeouts, mão de onze / dez / ferro."""

from __future__ import annotations

import pytest

from tests.engine_support import action, begin, do, refused, steps
from truco import (
    ActionKind,
    Deal,
    HandEnd,
    HandKind,
    Pending,
    PendingKind,
    Phase,
    Reason,
    apply,
    legal_actions,
    parse_card,
    pending,
    start_hand,
    view,
)
from truco.events import CardPlayed, RaiseRequested, VoteCast, VoteExpired

VIRA = "7C"  # Paulista: the Qs are manilhas
TWO = [["3C", "2C", "4D"], ["4H", "5H", "6H"]]
FOUR = [["3C", "2C", "4D"], ["4H", "5H", "6H"], ["AC", "KC", "JC"], ["AH", "KH", "JH"]]


class TestLadder:
    def test_paulista_ladder_and_raise_back(self) -> None:
        state = begin("paulista", TWO, vira=VIRA)
        _, events = apply(state, action(0, "raise"))
        assert events == (RaiseRequested(0, 0, 3, "truco"),)
        state = steps(state, (0, "raise"), (1, "accept"))
        assert state.hand is not None and state.hand.stake == 3
        assert state.hand.turn == 0  # play resumes with the seat whose turn it was
        assert refused(state, 0, "raise") is Reason.RAISE_NOT_ALLOWED  # team 0 asked last
        state = do(state, 0, "play", "4D")
        state = steps(state, (1, "raise"), (0, "raise"), (1, "raise"))  # seis, nove, doze
        hand = state.hand
        assert hand is not None and hand.stake == 9 and hand.truco is not None
        assert hand.truco.level == 4  # doze asked
        assert refused(state, 0, "raise") is Reason.RAISE_NOT_ALLOWED  # nothing above 12
        state = do(state, 0, "decline")
        assert state.score == (0, 9) and state.hand_over
        hand = state.hand
        assert hand is not None and hand.result is not None
        assert hand.result.reason is HandEnd.DECLINED

    @pytest.mark.parametrize(
        ("variant", "raises", "declined"),
        [
            ("paulista", 1, 1),
            ("paulista", 2, 3),
            ("paulista", 3, 6),
            ("paulista", 4, 9),
            ("mineiro", 1, 2),
            ("mineiro", 2, 4),
            ("mineiro", 3, 6),
            ("mineiro", 4, 10),
            ("argentino", 1, 1),
            ("argentino", 2, 2),
            ("argentino", 3, 3),
        ],
    )
    def test_decline_scores_the_value_before_the_request(
        self, variant: str, raises: int, declined: int
    ) -> None:
        state = begin(variant, TWO, vira=VIRA if variant == "paulista" else None)
        state = do(state, 0, "raise")
        asker = 0
        for _ in range(raises - 1):
            asker = 1 - asker
            state = do(state, asker, "raise")  # raise back
        state = do(state, 1 - asker, "decline")
        expected = [0, 0]
        expected[asker] = declined
        assert list(state.score) == expected

    @pytest.mark.parametrize(
        ("variant", "top"), [("paulista", 12), ("mineiro", 12), ("argentino", 4)]
    )
    def test_nothing_above_the_top(self, variant: str, top: int) -> None:
        state = begin(variant, TWO, vira=VIRA if variant == "paulista" else None)
        seat = 0
        state = do(state, seat, "raise")
        while True:
            hand = state.hand
            assert hand is not None
            if ActionKind.RAISE not in {a.kind for a in legal_actions(state, 1 - seat)}:
                break
            seat = 1 - seat
            state = do(state, seat, "raise")
        state = do(state, 1 - seat, "accept")
        hand = state.hand
        assert hand is not None and hand.stake == top
        turn = hand.turn
        assert refused(state, turn, "raise") is Reason.RAISE_NOT_ALLOWED

    def test_while_a_request_waits_nothing_else_happens(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA)
        state = do(state, 0, "raise")
        assert refused(state, 0, "play", "3C") is Reason.ANSWER_PENDING
        assert refused(state, 1, "play", "4H") is Reason.ANSWER_PENDING
        assert refused(state, 2, "accept") is Reason.ANSWER_PENDING  # the asking team
        assert refused(state, 0, "raise") is Reason.ANSWER_PENDING
        assert {p.seat for p in pending(state)} == {1, 3}

    def test_only_on_ones_turn(self) -> None:
        state = begin("paulista", TWO, vira=VIRA)
        assert refused(state, 1, "raise") is Reason.NOT_YOUR_TURN


class TestTeamAnswers:
    def test_vote_waits_for_agreement_and_votes_can_change(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA)
        state = steps(state, (0, "raise"), (1, "accept"))
        assert state.hand is not None and state.hand.truco is not None  # still waiting
        assert refused(state, 1, "accept") is Reason.ALREADY_VOTED
        assert pending(state) == (Pending(3, PendingKind.ANSWER),)
        state = do(state, 3, "decline")  # disagree: the 10 s to agree start
        assert pending(state) == (
            Pending(1, PendingKind.ANSWER, team_vote=True),
            Pending(3, PendingKind.ANSWER, team_vote=True),
        )
        state = do(state, 3, "accept")  # changed: now they agree
        hand = state.hand
        assert hand is not None and hand.truco is None and hand.stake == 3
        assert hand.votes == (None, None, None, None)

    def test_agreeing_on_raise_back(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA)
        state = steps(state, (0, "raise"), (1, "raise"), (3, "raise"))
        hand = state.hand
        assert hand is not None and hand.stake == 3
        assert hand.truco is not None and hand.truco.team == 1 and hand.truco.level == 2
        assert {p.seat for p in pending(state)} == {0, 2}

    def test_first_mode_takes_the_first_answer(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA, mode="first")
        state = steps(state, (0, "raise"), (3, "decline"))
        assert state.score == (1, 0) and state.hand_over

    def test_timeout_casts_a_decline_vote(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA)
        state = steps(state, (0, "raise"), (1, "accept"))
        state, events = apply(state, action(3, "timeout"))
        assert events == (VoteCast(3, ActionKind.DECLINE, automatic=True),)
        assert all(p.team_vote for p in pending(state))
        state, events = apply(state, action(1, "timeout"))  # the 10 s to agree ran out
        assert isinstance(events[0], VoteExpired)
        assert state.score == (1, 0) and state.hand_over

    def test_timeout_only_for_a_pending_decision(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA)
        assert refused(state, 1, "timeout") is Reason.TIMEOUT_NOT_PENDING
        state = steps(state, (0, "raise"), (1, "accept"))
        assert refused(state, 1, "timeout") is Reason.TIMEOUT_NOT_PENDING  # 1 voted, 3 did not
        assert refused(state, 0, "timeout") is Reason.TIMEOUT_NOT_PENDING

    def test_timeout_on_a_turn_plays_the_weakest_card_face_up(self) -> None:
        state = begin(
            "paulista", [["3C", "QC", "4D"], ["4H", "4S", "6H"]], vira=VIRA
        )  # QC is the zap
        state, events = apply(state, action(0, "timeout"))
        assert events[0] == CardPlayed(0, parse_card("4D"), False, 2, 0, automatic=True)
        state, events = apply(state, action(1, "timeout"))  # 4H and 4S tie: the first dealt
        assert events[0] == CardPlayed(1, parse_card("4H"), False, 0, 0, automatic=True)

    def test_one_player_decides_in_1v1(self) -> None:
        state = steps(begin("paulista", TWO, vira=VIRA), (0, "raise"), (1, "accept"))
        assert state.hand is not None and state.hand.stake == 3


class TestMaoDeOnze:
    def test_the_team_at_eleven_decides_before_any_card(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA, score=(11, 5))
        hand = state.hand
        assert hand is not None and hand.kind is HandKind.ONZE
        assert refused(state, 0, "play", "3C") is Reason.ANSWER_PENDING
        assert refused(state, 1, "accept") is Reason.ANSWER_PENDING
        assert {p.seat for p in pending(state)} == {0, 2}
        state = steps(state, (0, "accept"), (2, "accept"))
        hand = state.hand
        assert hand is not None and hand.stake == 3
        assert refused(state, 0, "raise") is Reason.RAISE_NOT_ALLOWED
        state = steps(state, (0, "play", "3C"), (1, "play", "4H"), (2, "play", "AC"))
        assert refused(state, 3, "raise") is Reason.RAISE_NOT_ALLOWED
        state = steps(state, (3, "play", "AH"), (0, "play", "2C"), (1, "play", "5H"))
        state = steps(state, (2, "play", "KC"), (3, "play", "KH"))
        assert state.score == (14, 5) and state.phase is Phase.MATCH_OVER

    def test_running_gives_the_others_one(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA, score=(5, 11))
        assert {p.seat for p in pending(state)} == {1, 3}
        state = steps(state, (1, "decline"), (3, "decline"))
        assert state.score == (6, 11) and state.hand_over
        hand = state.hand
        assert hand is not None and hand.result is not None and hand.result.reason is HandEnd.RAN

    def test_timeout_runs(self) -> None:
        state = begin("paulista", TWO, vira=VIRA, score=(11, 0))
        state, _ = apply(state, action(0, "timeout"))
        assert state.score == (11, 1)

    def test_the_team_at_eleven_sees_the_partners_cards(self) -> None:
        state = begin("paulista", FOUR, vira=VIRA, score=(11, 5))
        partner = view(state, 0)["hand"]["players"][2]["hand"]
        assert [slot["card"] for slot in partner] == ["AC", "KC", "JC"]
        opponent_partner = view(state, 1)["hand"]["players"][3]["hand"]
        assert [slot["card"] for slot in opponent_partner] == [None, None, None]

    def test_mineiro_mao_de_dez(self) -> None:
        state = begin("mineiro", TWO, score=(4, 10))
        state = do(state, 1, "decline")
        assert state.score == (6, 10)
        state = begin("mineiro", TWO, score=(4, 10))
        state = do(state, 1, "accept")
        assert state.hand is not None and state.hand.stake == 4
        state = steps(
            state, (0, "play", "3C"), (1, "play", "4H"), (0, "play", "2C"), (1, "play", "5H")
        )
        assert state.score == (8, 10)


class TestMaoDeFerro:
    def test_blind_play_by_position_and_the_winner_reaches_twelve(self) -> None:
        state = begin("paulista", TWO, vira=VIRA, score=(11, 11))
        hand = state.hand
        assert hand is not None and hand.kind is HandKind.FERRO and hand.stake == 1
        assert refused(state, 0, "play", "3C") is Reason.POSITION_REQUIRED
        assert refused(state, 0, "raise") is Reason.RAISE_NOT_ALLOWED
        assert refused(state, 0, "play", position=0, covered=True) is Reason.COVER_NOT_ALLOWED
        assert [a.position for a in legal_actions(state, 0)] == [0, 1, 2]
        me = view(state, 0)["hand"]["players"][0]
        assert [slot["card"] for slot in me["hand"]] == [None, None, None]
        state, events = apply(state, action(0, "play", position=1))
        assert events[0] == CardPlayed(0, parse_card("2C"), False, 1, 0)
        assert refused(state, 0, "play", position=1) is Reason.NOT_YOUR_TURN
        state = do(state, 1, "play", position=0)
        assert refused(state, 0, "play", position=1) is Reason.CARD_NOT_IN_HAND
        state = do(state, 0, "play", position=0)
        state = do(state, 1, "play", position=1)
        assert state.score == (12, 11) and state.match_winner == 0

    def test_three_ties_score_nothing_and_deal_another_ferro(self) -> None:
        state = begin(
            "paulista", [["3C", "2C", "AC"], ["3H", "2H", "AH"]], vira=VIRA, score=(11, 11)
        )
        for position in range(3):
            state = do(state, state.hand.turn, "play", position=position)  # type: ignore[union-attr]
            state = do(state, state.hand.turn, "play", position=position)  # type: ignore[union-attr]
        assert state.score == (11, 11) and state.hand_over and state.phase is Phase.AWAITING_DEAL
        deal = Deal(
            state.next_dealer,
            (
                tuple(map(parse_card, ["4C", "5C", "6C"])),
                tuple(map(parse_card, ["4H", "5H", "6H"])),
            ),
            parse_card("KD"),
        )
        state, _ = start_hand(state, deal)
        assert state.hand is not None and state.hand.kind is HandKind.FERRO

    def test_timeout_plays_the_first_position(self) -> None:
        state = begin("mineiro", TWO, score=(10, 10))
        state, events = apply(state, action(0, "timeout"))
        assert events[0] == CardPlayed(0, parse_card("3C"), False, 0, 0, automatic=True)
        assert state.hand is not None and state.hand.stake == 2
