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


# --- what a review of the bots' play found (22nd session), kept fixed ------------------------


def _play(state: MatchState, seat: int, card: str) -> MatchState:
    state, _ = apply(state, Action(seat, ActionKind.PLAY, parse_card(card)))
    return state


def test_never_runs_from_a_truco_its_cards_have_already_won() -> None:
    # it judged the hand by the cards still held: after winning round 1 and leading the zap,
    # or with no card left, it ran (in 505 of 543 seeds), giving away a won hand
    state = _hand("paulista", 2, [["4C", "3H", "5D"], ["2S", "KD", "6H"]], vira="3S",
                  score=(5, 5), dealer=1)
    state = _play(_play(state, 0, "3H"), 1, "2S")  # round 1 to seat 0
    state = _play(state, 0, "4C")  # the zap leads round 2, and seat 1 asks truco
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    assert "decline" not in _choices(state, 0, tries=300)
    state = _hand("paulista", 2, [["4C", "2H", "AD"], ["3C", "KD", "6H"]], vira="3S",
                  score=(5, 5), dealer=1)
    state = _play(_play(state, 0, "2H"), 1, "3C")  # round 1 to seat 1
    state = _play(_play(state, 1, "KD"), 0, "AD")  # round 2 to seat 0
    state = _play(state, 0, "4C")  # its last card, the zap, leads round 3
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    assert "decline" not in _choices(state, 0, tries=300)
    # after a round lost, two are needed: one good card alone still runs, mostly
    state = _hand("paulista", 2, [["4C", "5H", "6D"], ["3C", "KD", "2H"]], vira="3S",
                  score=(5, 5), dealer=1)
    state = _play(_play(state, 0, "5H"), 1, "3C")  # round 1 to seat 1
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    assert "decline" in _choices(state, 0)


def test_partners_go_with_the_bolder_vote() -> None:
    # the second voter copied the first: a weak partner's quick "run" made the team run while
    # the other held the two best manilhas (905 of 1000 seeds)
    state = _hand("paulista", 4, [["4C", "4H", "3S"], ["KD", "JD", "QD"], ["5D", "6S", "QC"],
                                  ["7C", "7H", "JS"]], vira="3D", score=(5, 5), dealer=0)
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    state, _ = apply(state, Action(2, ActionKind.DECLINE))  # the weak partner votes first
    assert "decline" not in _choices(state, 0, tries=300)
    state, _ = apply(state, Action(0, ActionKind.ACCEPT))
    # the partner who ran comes over; the one who accepted waits for it
    assert _choices(state, 2) == {"accept"}
    with pytest.raises(NothingToDo):
        choose_action(view(state, 0), random.Random(0))
    state, _ = apply(state, Action(2, ActionKind.ACCEPT))
    assert state.hand is not None and state.hand.bet.stake == 3  # the team accepted
    # a weak hand still follows a partner who accepted (trusting the cards it holds)
    state = _hand("paulista", 4, [["5D", "6S", "QC"], ["KD", "JD", "QD"], ["4C", "4H", "3S"],
                                  ["7C", "7H", "JS"]], vira="3D", score=(5, 5), dealer=0)
    state, _ = apply(state, Action(1, ActionKind.RAISE))
    state, _ = apply(state, Action(2, ActionKind.ACCEPT))
    assert "decline" not in _choices(state, 0)


def test_a_round_the_partner_only_ties_is_not_won() -> None:
    # the opponent's jack tied the partner's: it threw its 6 and lost the round's chance
    state = _hand("mineiro", 4, [["3H", "QD", "4D"], ["5S", "JH", "6C"], ["2S", "JS", "6D"],
                                 ["6H", "5D", "AC"]], score=(5, 5), dealer=3)
    for seat, card in ((0, "3H"), (1, "5S"), (2, "2S"), (3, "5D")):  # round 1 to team 0
        state = _play(state, seat, card)
    for seat, card in ((0, "QD"), (1, "JH"), (2, "JS")):
        state = _play(state, seat, card)
    plays = {choose_action(view(state, 3), random.Random(n)).get("card") for n in range(50)}
    assert plays - {None} == {"AC"}  # (None: a truco asked now and then)


def test_plays_a_mao_de_onze_worth_playing() -> None:
    # playing it wins above a third of the time: a 3 and two jacks did, and the bot ran
    state = _hand("paulista", 2, [["3C", "JH", "JS"], ["4D", "6S", "QH"]], vira="4C",
                  score=(11, 5))
    assert _choices(state, 0) == {"accept"}
