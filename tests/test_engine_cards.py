"""Cards, strength orders per variant, tanto and the envido chain values."""

from __future__ import annotations

import pytest

from truco import CANONICAL_DECK, RANKS, SUITS, Card, Variant, parse_card, rules_for, tanto
from truco.actions import ActionKind
from truco.envido import accepted_points, declined_points, falta, next_calls


def test_notation_round_trips_for_all_40_cards() -> None:
    assert len(CANONICAL_DECK) == 40
    assert len(set(CANONICAL_DECK)) == 40
    for index, card in enumerate(CANONICAL_DECK):
        assert card.index == index
        assert parse_card(str(card)) == card
        assert str(card) == card.rank + card.suit


def test_canonical_order_is_rank_major_with_suits_c_h_s_d() -> None:
    assert [str(c) for c in CANONICAL_DECK[:5]] == ["4C", "4H", "4S", "4D", "5C"]
    assert str(CANONICAL_DECK[39]) == "3D"
    assert [str(c) for c in CANONICAL_DECK] == [r + s for r in RANKS for s in SUITS]
    assert sorted(CANONICAL_DECK, reverse=True)[0] == parse_card("3D")


@pytest.mark.parametrize("text", ["", "8C", "7h", " 7H", "7HH", "10C", "7X", "QQ"])
def test_parse_card_refuses_anything_but_notation(text: str) -> None:
    with pytest.raises(ValueError):
        parse_card(text)


@pytest.mark.parametrize("value", [None, 7, ["7H"]])
def test_parse_card_refuses_non_strings(value: object) -> None:
    with pytest.raises(ValueError):
        parse_card(value)  # type: ignore[arg-type]


def test_card_index_is_checked() -> None:
    with pytest.raises(ValueError):
        Card(40)
    with pytest.raises(TypeError):
        Card(True)


def _strength(variant: Variant, vira: str | None, card: str) -> int:
    table = rules_for(variant).strengths(None if vira is None else parse_card(vira))
    return table[parse_card(card).index]


@pytest.mark.parametrize(
    ("vira", "manilha"),
    [("4C", "5"), ("7D", "Q"), ("QH", "J"), ("JS", "K"), ("KC", "A"), ("2D", "3"), ("3C", "4")],
)
def test_paulista_manilha_is_the_rank_after_the_vira(vira: str, manilha: str) -> None:
    rules = rules_for(Variant.PAULISTA)
    assert [str(c) for c in rules.manilhas(parse_card(vira))] == [manilha + s for s in "CHSD"]
    strengths = [_strength(Variant.PAULISTA, vira, manilha + s) for s in "CHSD"]
    assert strengths == sorted(strengths, reverse=True) and len(set(strengths)) == 4
    plain = [c for c in CANONICAL_DECK if c.rank != manilha]
    assert min(strengths) > max(_strength(Variant.PAULISTA, vira, str(c)) for c in plain)


def test_paulista_plain_order_ignores_suits() -> None:
    order = ["3", "2", "A", "K", "J", "7", "6", "5", "4"]  # vira 7: Q is the manilha
    values = [_strength(Variant.PAULISTA, "7C", rank + "H") for rank in order]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    assert _strength(Variant.PAULISTA, "7C", "3C") == _strength(Variant.PAULISTA, "7C", "3D")


def test_mineiro_fixed_manilhas_and_their_siblings() -> None:
    manilhas = ["4C", "7H", "AS", "7D"]
    values = [_strength(Variant.MINEIRO, None, c) for c in manilhas]
    assert values == sorted(values, reverse=True) and len(set(values)) == 4
    assert min(values) > _strength(Variant.MINEIRO, None, "3C")
    # siblings are ordinary cards
    assert _strength(Variant.MINEIRO, None, "4H") == _strength(Variant.MINEIRO, None, "4D")
    assert _strength(Variant.MINEIRO, None, "4S") < _strength(Variant.MINEIRO, None, "5C")
    assert _strength(Variant.MINEIRO, None, "7C") == _strength(Variant.MINEIRO, None, "7S")
    assert _strength(Variant.MINEIRO, None, "AC") < _strength(Variant.MINEIRO, None, "2C")


def test_argentino_order() -> None:
    steps = [
        ["AS"], ["AC"], ["7S"], ["7D"], ["3C", "3H", "3S", "3D"], ["2C", "2H", "2S", "2D"],
        ["AH", "AD"], ["KC", "KD"], ["JC", "JS"], ["QH", "QD"], ["7H", "7C"], ["6C", "6S"],
        ["5H", "5D"], ["4C", "4D"],
    ]  # fmt: skip
    previous = None
    for cards in steps:
        values = {_strength(Variant.ARGENTINO, None, c) for c in cards}
        assert len(values) == 1, cards
        value = values.pop()
        if previous is not None:
            assert value < previous, cards
        previous = value


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        (["7D", "6D", "AH"], 33),  # the rules' examples
        (["7S", "3S", "JS"], 30),
        (["KC", "JC", "4H"], 20),
        (["5C", "4H", "QS"], 5),
        (["QS", "JS", "KS"], 20),
        (["AC", "QH", "KD"], 1),
        (["QC", "JH", "KD"], 0),
        (["7C", "6C", "5C"], 33),
        (["AD", "2D", "7H"], 23),
    ],
)
def test_tanto(cards: list[str], expected: int) -> None:
    assert tanto(parse_card(c) for c in cards) == expected


E, R, F = ActionKind.ENVIDO, ActionKind.REAL_ENVIDO, ActionKind.FALTA_ENVIDO


@pytest.mark.parametrize(
    ("chain", "quiero", "no_quiero"),
    [
        ((E,), 2, 1),
        ((R,), 3, 1),
        ((F,), "falta", 1),
        ((E, E), 4, 2),
        ((E, R), 5, 2),
        ((E, F), "falta", 2),
        ((R, F), "falta", 3),
        ((E, E, R), 7, 4),
        ((E, E, F), "falta", 4),
        ((E, R, F), "falta", 5),
        ((E, E, R, F), "falta", 7),
    ],
)
def test_envido_chain_values(chain: tuple[ActionKind, ...], quiero: object, no_quiero: int) -> None:
    score = (22, 10)
    expected = falta(score, 30) if quiero == "falta" else quiero
    assert accepted_points(chain, score, 30) == expected
    assert declined_points(chain, score, 30) == no_quiero


def test_falta_is_what_the_leader_lacks() -> None:
    assert falta((22, 10), 30) == 8
    assert falta((10, 22), 30) == 8
    assert falta((0, 0), 30) == 30


def test_envido_chain_grammar() -> None:
    assert next_calls(()) == (E, R, F)
    assert next_calls((E,)) == (E, R, F)
    assert next_calls((E, E)) == (R, F)
    assert next_calls((E, R)) == (F,)
    assert next_calls((R,)) == (F,)
    assert next_calls((E, E, R, F)) == ()
