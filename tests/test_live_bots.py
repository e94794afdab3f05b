"""The bot policy: always legal over whole random matches of every variant, and sensible in
the situations RULES.md makes it decide (raise, answer, envido, mão de onze/dez, card choice)."""

from __future__ import annotations

import random

import pytest

from server.bots import NothingToDo, choose_action
from truco import (
    CANONICAL_DECK,
    Action,
    ActionKind,
    Deal,
    MatchConfig,
    MatchState,
    action_from_json,
    action_to_json,
    apply,
    legal_actions,
    new_match,
    parse_card,
    pending,
    start_hand,
    view,
)
from truco.fairness import deal_cards


def _deal(state: MatchState, rng: random.Random) -> MatchState:
    deck = list(CANONICAL_DECK)
    rng.shuffle(deck)
    deal = deal_cards(deck, state.config.variant, state.config.seats, state.next_dealer)
    state, _ = start_hand(state, deal)
    return state


@pytest.mark.parametrize("variant", ["paulista", "mineiro", "argentino"])
@pytest.mark.parametrize(("seats", "mode"), [(2, "vote"), (4, "vote"), (4, "first")])
def test_policy_plays_whole_matches_legally(variant: str, seats: int, mode: str) -> None:
    rng = random.Random(f"{variant}{seats}{mode}")
    for _ in range(3):
        state = new_match(MatchConfig(variant, seats, mode), first_dealer=rng.randrange(seats))
        for _step in range(5000):
            if state.outcome is not None:
                break
            if state.hand is None or state.hand_over:
                state = _deal(state, rng)
                continue
            moved = False
            for seat in rng.sample(range(seats), seats):
                try:
                    choice = choose_action(view(state, seat), rng)
                except NothingToDo:
                    continue
                assert choice in [action_to_json(a) for a in legal_actions(state, seat)]
                state, _ = apply(state, action_from_json(choice))
                moved = True
                break
            if not moved:  # the partners wait on each other: the vote clock runs out
                waiting = [p.seat for p in pending(state)]
                state, _ = apply(state, Action(waiting[0], ActionKind.TIMEOUT))
        assert state.outcome is not None


def _hand(variant: str, seats: int, hands: list[list[str]], vira: str | None = None,
          score: tuple[int, int] = (0, 0), dealer: int = 1) -> MatchState:
    state = new_match(MatchConfig(variant, seats), first_dealer=dealer, score=score)
    deal = Deal(dealer=dealer, hands=tuple(tuple(parse_card(c) for c in h) for h in hands),
                vira=parse_card(vira) if vira else None)
    state, _ = start_hand(state, deal)
    return state


def _choices(state: MatchState, seat: int, tries: int = 200) -> set[str]:
    rng = random.Random(1)
    return {choose_action(view(state, seat), rng)["do"] for _ in range(tries)}


def test_answers_by_strength() -> None:
    # seat 0 is mano and asks truco; seat 1 answers with the best cards, or with the worst
    strong = _hand("mineiro", 2, [["5C", "6H", "QS"], ["4C", "7H", "AS"]])
    weak = _hand("mineiro", 2, [["4C", "7H", "AS"], ["4D", "5H", "6S"]])
    state, _ = apply(strong, Action(0, ActionKind.RAISE))
    assert _choices(state, 1) == {"accept", "raise"}
    state, _ = apply(weak, Action(0, ActionKind.RAISE))
    rng = random.Random(2)
    answers = [choose_action(view(state, 1), rng)["do"] for _ in range(400)]
    # mostly runs; a rare bluff keeps it from being read like a book
    assert answers.count("decline") > 0.85 * len(answers)
    assert set(answers) == {"decline", "accept"}
    # with nothing asked, a strong hand sometimes raises, a weak one rarely bluffs
    strong_turn = _hand("mineiro", 2, [["4C", "7H", "AS"], ["4D", "5H", "6S"]])
    assert "raise" in _choices(strong_turn, 0)


def test_envido_with_a_good_tanto() -> None:
    # 7 and 6 of one suit: tanto 33, the best there is
    state = _hand("argentino", 2, [["7S", "6S", "4H"], ["QC", "KD", "4D"]])
    assert _choices(state, 0) & {"envido", "real_envido", "falta_envido"}
    state, _ = apply(state, Action(0, ActionKind.ENVIDO))
    # seat 1 holds a tanto of 4: no quiero
    assert _choices(state, 1) == {"decline"}


def test_mao_de_onze_by_team_strength() -> None:
    good = _hand("paulista", 2, [["5C", "5H", "3S"], ["4D", "6S", "QH"]], vira="4C",
                 score=(11, 3))
    bad = _hand("paulista", 2, [["4D", "6S", "QH"], ["5C", "5H", "3S"]], vira="4C",
                score=(11, 3))
    assert _choices(good, 0) == {"accept"}
    assert _choices(bad, 0) == {"decline"}


def test_plays_the_cheapest_winning_card() -> None:
    state = _hand("argentino", 2, [["4C", "5H", "6S"], ["AS", "KD", "7H"]])
    state, _ = apply(state, Action(0, ActionKind.PLAY, parse_card("6S")))
    rng = random.Random(5)
    plays = {choose_action(view(state, 1), rng).get("card") for _ in range(100)} - {None}
    assert plays == {"7H"}  # 7 of copas beats the 6 and is cheaper than the king or the ace
    state = _hand("argentino", 2, [["AS", "5H", "6S"], ["4C", "KD", "7H"]])
    state, _ = apply(state, Action(0, ActionKind.PLAY, parse_card("AS")))
    plays = {choose_action(view(state, 1), rng).get("card") for _ in range(100)} - {None}
    assert plays == {"4C"}  # cannot beat the ace: throw the weakest


def test_nothing_to_do() -> None:
    state = _hand("paulista", 2, [["5C", "5H", "3S"], ["4D", "6S", "QH"]], vira="4C")
    with pytest.raises(NothingToDo):
        choose_action(view(state, 1), random.Random(0))  # seat 0 is mano: not seat 1's turn
