"""Starting matches and hands, the dealer rotation, pending clocks, forfeits, signals."""

from __future__ import annotations

import pytest

from tests.engine_support import begin, refused, steps
from truco import (
    Deal,
    IllegalAction,
    MatchConfig,
    Outcome,
    Pending,
    PendingKind,
    Phase,
    Reason,
    TeamMode,
    Termination,
    Variant,
    forfeit,
    new_match,
    parse_card,
    parse_signal,
    pending,
    signals_for,
    start_hand,
)
from truco.events import HandStarted


def _deal(dealer: int, hands: list[list[str]], vira: str | None) -> Deal:
    cards = tuple(tuple(parse_card(c) for c in hand) for hand in hands)
    return Deal(dealer, cards, None if vira is None else parse_card(vira))


HANDS = [["3C", "2C", "4D"], ["4H", "5H", "6H"]]


class TestConfig:
    def test_targets_and_flags(self) -> None:
        assert MatchConfig(Variant.PAULISTA, 4).target == 12
        assert MatchConfig(Variant.MINEIRO, 2).target == 12
        assert MatchConfig(Variant.ARGENTINO, 4).target == 30
        assert MatchConfig(Variant.PAULISTA, 2).uses_vira
        assert not MatchConfig(Variant.MINEIRO, 2).uses_vira
        assert MatchConfig(Variant.ARGENTINO, 2).hand_size == 3
        assert MatchConfig(Variant.PAULISTA, 4).mode is TeamMode.VOTE

    @pytest.mark.parametrize(
        ("variant", "seats", "mode"),
        [
            ("paulista", 3, "vote"),
            ("paulista", True, "vote"),
            ("truco", 2, "vote"),
            ("mineiro", 2, "x"),
        ],
    )
    def test_bad_config(self, variant: str, seats: int, mode: str) -> None:
        with pytest.raises(ValueError):
            MatchConfig(variant, seats, mode)  # type: ignore[arg-type]

    def test_bad_match_start(self) -> None:
        config = MatchConfig(Variant.PAULISTA, 2)
        with pytest.raises(ValueError):
            new_match(config, 2)
        with pytest.raises(ValueError):
            new_match(config, 0, (12, 0))
        with pytest.raises(ValueError):
            new_match(config, 0, (-1, 0))


class TestDeals:
    def test_dealer_rotation_and_mano(self) -> None:
        config = MatchConfig(Variant.PAULISTA, 2)
        state = new_match(config, 1)
        assert state.phase is Phase.AWAITING_DEAL and state.next_dealer == 1
        state, events = start_hand(state, _deal(1, HANDS, "7C"))
        assert events == (HandStarted(0, 1, 0, "normal", 1, parse_card("7C")),)
        assert state.hand_number == 1 and state.dealer == 1
        assert pending(state) == (Pending(0, PendingKind.PLAY),)
        state = steps(state, (0, "play", "3C"), (1, "play", "4H"), (0, "play", "2C"))
        state = steps(state, (1, "play", "5H"))
        assert state.next_dealer == 0
        with pytest.raises(ValueError, match="deals this hand"):
            start_hand(state, _deal(1, HANDS, "7C"))
        state, _ = start_hand(state, _deal(0, [HANDS[1], HANDS[0]], "7C"))
        assert pending(state) == (Pending(1, PendingKind.PLAY),)

    @pytest.mark.parametrize(
        ("variant", "hands", "vira", "message"),
        [
            ("paulista", [["3C", "2C", "4D"], ["4H", "5H", "3C"]], "7C", "twice"),
            ("paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], "3C", "vira"),
            ("paulista", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], None, "needs a vira"),
            ("mineiro", [["3C", "2C", "4D"], ["4H", "5H", "6H"]], "7C", "no vira"),
            ("mineiro", [["3C", "2C"], ["4H", "5H", "6H"]], None, "3 cards"),
            ("mineiro", [["3C", "2C", "4D"]], None, "2 hands"),
        ],
    )
    def test_bad_deals(
        self, variant: str, hands: list[list[str]], vira: str | None, message: str
    ) -> None:
        state = new_match(MatchConfig(Variant(variant), 2), 1)
        with pytest.raises(ValueError, match=message):
            start_hand(state, _deal(1, hands, vira))
        assert state.phase is Phase.AWAITING_DEAL

    def test_no_deal_during_a_hand(self) -> None:
        state = begin("mineiro", HANDS)
        with pytest.raises(IllegalAction) as caught:
            start_hand(state, _deal(1, HANDS, None))
        assert caught.value.reason is Reason.HAND_IN_PROGRESS


class TestForfeit:
    def test_abandonment_gives_the_match_to_the_other_team(self) -> None:
        state = begin("paulista", HANDS, vira="7C")
        over = forfeit(state, 1, Termination.ABANDONMENT)
        assert over.outcome == Outcome(Termination.ABANDONMENT, 0)
        assert over.match_winner == 0 and over.phase is Phase.MATCH_OVER
        assert over.score == state.score
        assert refused(over, 0, "play", "3C") is Reason.MATCH_OVER
        assert pending(over) == ()
        with pytest.raises(IllegalAction) as caught:
            forfeit(over, 0, Termination.CANCELLED)
        assert caught.value.reason is Reason.MATCH_OVER

    def test_cancelled_has_no_winner(self) -> None:
        state = new_match(MatchConfig(Variant.MINEIRO, 4), 0)
        over = forfeit(state, 0, Termination.CANCELLED)
        assert over.outcome == Outcome(Termination.CANCELLED, None)
        with pytest.raises(IllegalAction) as caught:
            start_hand(
                over, _deal(0, [HANDS[0], HANDS[1], ["AC", "KC", "JC"], ["AH", "KH", "JH"]], None)
            )
        assert caught.value.reason is Reason.MATCH_OVER

    def test_bad_forfeits(self) -> None:
        state = new_match(MatchConfig(Variant.MINEIRO, 2), 0)
        with pytest.raises(ValueError):
            forfeit(state, 2, Termination.ABANDONMENT)
        with pytest.raises(ValueError):
            forfeit(state, 0, Termination.TARGET)


class TestSignals:
    def test_codes_per_family(self) -> None:
        brazilian = [s.code for s in signals_for(Variant.PAULISTA)]
        assert brazilian == [s.code for s in signals_for(Variant.MINEIRO)]
        assert len(brazilian) == 8 and len(set(brazilian)) == 8
        assert parse_signal(Variant.PAULISTA, "zap").label == "Tenho o zap"
        argentine = [s.code for s in signals_for(Variant.ARGENTINO)]
        assert len(argentine) == 8 and "macho" in argentine and "zap" not in argentine
        assert parse_signal(Variant.ARGENTINO, "tengo_envido").label == "Tengo envido"

    @pytest.mark.parametrize("code", ["macho", "", None, 3, "ZAP"])
    def test_unknown_signals(self, code: object) -> None:
        with pytest.raises(ValueError):
            parse_signal(Variant.MINEIRO, code)
