"""The published shuffle: the core against the vectors and against a naive re-implementation.

`naive_*` below is written from docs/FAIRNESS.md alone, deliberately simple (plain strings for
cards, one HMAC call per block, no shared code with truco.fairness), so the two implementations
agreeing on random inputs is evidence the spec page and the code say the same thing.
"""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truco.cards import CANONICAL_DECK, parse_card
from truco.fairness import (
    SHUFFLE_VERSION,
    canonical_json,
    commitment,
    deal_cards,
    derive_deck,
    draw_first_dealer,
    seed_chain,
    shuffle_trace,
)
from truco.variants import Variant
from verifier.vectors_run import load_vectors

# --------------------------------------------------------------------------- naive, from the page

NAIVE_CARDS = [rank + suit for rank in "4567QJKA23" for suit in "CHSD"]


def lp(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def naive_message(label: str, table: str, hand: int | None, contributions: list) -> bytes:
    out = lp(b"barajamos-shuffle/v1") + lp(label.encode()) + lp(table.encode("utf-8"))
    if hand is not None:
        out += hand.to_bytes(4, "big")
    out += bytes([len(contributions)])
    for contribution in contributions:
        out += b"\x00" if contribution is None else b"\x01" + lp(contribution)
    return out


class NaiveStream:
    def __init__(self, seed: bytes, message: bytes) -> None:
        self.seed, self.message, self.data, self.read = seed, message, b"", 0

    def byte(self) -> int:
        while self.read >= len(self.data):
            counter = len(self.data) // 32
            block = hmac.new(self.seed, self.message + counter.to_bytes(4, "big"), hashlib.sha256)
            self.data += block.digest()
        self.read += 1
        return self.data[self.read - 1]

    def draw(self, m: int, rejected: list) -> int:
        bound = 256 - (256 % m)
        while True:
            b = self.byte()
            if b < bound:
                return b % m
            rejected.append((self.read - 1, b))


def naive_deck(seed, table, hand, contributions, sattolo=False):
    stream = NaiveStream(seed, naive_message("deck", table, hand, contributions))
    a = list(range(40))
    rejected: list = []
    for i in range(39, 0, -1):
        j = stream.draw(i if sattolo else i + 1, rejected)
        a[i], a[j] = a[j], a[i]
    return [NAIVE_CARDS[k] for k in a], rejected


def naive_first_dealer(seed, table, contributions):
    stream = NaiveStream(seed, naive_message("first-dealer", table, None, contributions))
    return stream.draw(len(contributions), [])


def naive_deal(deck, variant, seats, dealer):
    mano = (dealer + 1) % seats
    hands = [[] for _ in range(seats)]
    for p in range(3):
        for q in range(seats):
            hands[(mano + q) % seats].append(deck[p * seats + q])
    vira = deck[3 * seats] if variant == "paulista" else None
    return hands, vira


# --------------------------------------------------------------------------- strategies

seeds = st.binary(min_size=32, max_size=32)
tables = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=32)
hands = st.integers(min_value=1, max_value=2**32 - 1)
contribution = st.one_of(st.none(), st.binary(min_size=1, max_size=256))
contribution_lists = st.sampled_from([2, 4]).flatmap(
    lambda n: st.lists(contribution, min_size=n, max_size=n)
)


@settings(max_examples=300, deadline=None)
@given(seeds, tables, hands, contribution_lists)
def test_core_matches_the_naive_implementation(seed, table, hand, contributions):
    deck = derive_deck(seed, table, hand, contributions)
    naive, rejected = naive_deck(seed, table, hand, contributions)
    assert [str(card) for card in deck] == naive
    trace = shuffle_trace(seed, table, hand, contributions)
    assert [(r.offset, r.byte) for r in trace.rejections] == rejected
    assert trace.bytes_read == 39 + len(rejected)
    assert draw_first_dealer(seed, table, contributions, len(contributions)) == naive_first_dealer(
        seed, table, contributions
    )


@settings(max_examples=100, deadline=None)
@given(seeds, st.sampled_from(list(Variant)), st.sampled_from([2, 4]), st.data())
def test_deal_matches_the_naive_deal(seed, variant, seats, data):
    dealer = data.draw(st.integers(0, seats - 1))
    deck = derive_deck(seed, "t", 1, [None] * seats)
    deal = deal_cards(deck, variant, seats, dealer)
    hands_, vira = naive_deal([str(c) for c in deck], variant.value, seats, dealer)
    assert [[str(c) for c in hand] for hand in deal.hands] == hands_
    assert (None if deal.vira is None else str(deal.vira)) == vira
    assert deal.dealer == dealer


def test_every_deck_vector_through_the_core():
    cases = load_vectors("decks.json")["cases"]
    assert len(cases) >= 10
    variants = {case["variant"] for case in cases}
    seat_counts = {len(case["contributions"]) for case in cases}
    assert variants == {"paulista", "mineiro", "argentino"} and seat_counts == {2, 4}
    assert any(None in case["contributions"] for case in cases)
    assert any(case["expect"]["rejections"] for case in cases)
    assert any(not case["expect"]["rejections"] for case in cases)
    for case in cases:
        seed = bytes.fromhex(case["seed"])
        contributions = [None if c is None else bytes.fromhex(c) for c in case["contributions"]]
        expect = case["expect"]
        deck = derive_deck(seed, case["table"], case["hand"], contributions)
        assert [str(c) for c in deck] == expect["deck"], case["name"]
        naive, rejected = naive_deck(seed, case["table"], case["hand"], contributions)
        assert naive == expect["deck"], case["name"]
        assert rejected == [(r["offset"], r["byte"]) for r in expect["rejections"]], case["name"]
        seats = len(contributions)
        first = draw_first_dealer(seed, case["table"], contributions, seats)
        assert (
            first
            == expect["first_dealer"]
            == naive_first_dealer(seed, case["table"], contributions)
        )
        dealer = first if case["dealer"] is None else case["dealer"]
        assert dealer == expect["dealer"]
        deal = deal_cards(deck, Variant(case["variant"]), seats, dealer)
        assert [[str(c) for c in hand] for hand in deal.hands] == expect["hands"]
        assert (None if deal.vira is None else str(deal.vira)) == expect["vira"]
        assert commitment(seed).hex() == expect["commitment"] == hashlib.sha256(seed).hexdigest()
        assert (
            naive_message("deck", case["table"], case["hand"], contributions).hex()
            == (expect["deck_message"])
        )


def test_the_rejection_vectors_say_which_draws_rejected():
    cases = {case["name"]: case for case in load_vectors("decks.json")["cases"]}
    many = cases["seven or more bytes rejected"]
    assert len(many["expect"]["rejections"]) >= 7
    for rejection in many["expect"]["rejections"]:
        assert rejection["byte"] >= rejection["bound"] == 256 - 256 % rejection["modulus"]
        assert str(rejection["offset"]) in many["note"]
    assert cases["no byte rejected: exactly 39 bytes read"]["expect"]["bytes_read"] == 39


def test_absent_is_distinct_from_any_bytes():
    seed = bytes(range(32))
    decks = {
        tuple(derive_deck(seed, "t", 1, contributions))
        for contributions in ([None, None], [None, b"\x00"], [b"\x00", None], [b"\x00", b"\x00"])
    }
    assert len(decks) == 4


def test_every_input_changes_the_deck():
    seed = bytes(32)
    base = derive_deck(seed, "t", 1, [b"a", None])
    assert derive_deck(bytes([1]) + bytes(31), "t", 1, [b"a", None]) != base
    assert derive_deck(seed, "u", 1, [b"a", None]) != base
    assert derive_deck(seed, "t", 2, [b"a", None]) != base
    assert derive_deck(seed, "t", 1, [b"b", None]) != base
    assert derive_deck(seed, "t", 1, [None, b"a"]) != base
    assert derive_deck(seed, "t", 1, [b"a", None, None, None]) != base


def test_deck_is_a_permutation_of_the_canonical_deck():
    deck = derive_deck(bytes(32), "t", 1, [None, None])
    assert sorted(deck) == list(CANONICAL_DECK)


def test_seed_chain_links_every_hand_to_its_commitment():
    tip = hashlib.sha256(b"tip").digest()
    chain = seed_chain(tip, 5)
    assert len(chain) == 6 and chain[-1] == tip
    for i in range(1, 6):
        assert commitment(chain[i]) == chain[i - 1]
    assert seed_chain(tip, 1) == (hashlib.sha256(tip).digest(), tip)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: commitment(b"short"), "32 bytes"),
        (lambda: seed_chain(bytes(32), 0), "length"),
        (lambda: derive_deck(bytes(31), "t", 1, [None, None]), "32 bytes"),
        (lambda: derive_deck(bytes(32), "", 1, [None, None]), "table id"),
        (lambda: derive_deck(bytes(32), "t\n", 1, [None, None]), "control"),
        (lambda: derive_deck(bytes(32), "x" * 129, 1, [None, None]), "table id"),
        (lambda: derive_deck(bytes(32), "t", 0, [None, None]), "hand number"),
        (lambda: derive_deck(bytes(32), "t", 2**32, [None, None]), "hand number"),
        (lambda: derive_deck(bytes(32), "t", 1, [None, None, None]), "seats"),
        (lambda: derive_deck(bytes(32), "t", 1, [b"", None]), "contribution"),
        (lambda: derive_deck(bytes(32), "t", 1, [bytes(257), None]), "contribution"),
        (lambda: draw_first_dealer(bytes(32), "t", [None], 2), "per seat"),
        (lambda: deal_cards(CANONICAL_DECK[:39], Variant.PAULISTA, 2, 0), "40 distinct"),
        (lambda: deal_cards(CANONICAL_DECK, Variant.PAULISTA, 3, 0), "seats"),
        (lambda: deal_cards(CANONICAL_DECK, Variant.PAULISTA, 2, 2), "dealer"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_canonical_json_vectors_and_rules():
    for case in load_vectors("canonical.json")["cases"]:
        encoded = canonical_json(case["value"])
        assert encoded == case["canonical"].encode("utf-8")
        # ensure_ascii=False + sorted keys + compact separators is the whole definition
        assert encoded == json.dumps(
            case["value"], ensure_ascii=False, sort_keys=True, separators=(",", ":")
        ).encode("utf-8")
    assert canonical_json({"b": [1, None], "a": True}) == b'{"a":true,"b":[1,null]}'
    assert canonical_json({"s": "ñ\n"}) == '{"s":"ñ\\n"}'.encode()
    for bad in ({"x": 1.0}, {1: "x"}, {"é": 1}, {"x": 2**53}, {"x": {1, 2}}, {"x": "\ud800"}):
        with pytest.raises(ValueError):
            canonical_json(bad)


def test_version_string_is_the_published_one():
    assert SHUFFLE_VERSION == "barajamos-shuffle/v1"
    assert parse_card("3D") == CANONICAL_DECK[39]


def test_the_stream_goes_on_past_the_precomputed_blocks():
    # A shuffle that rejects more than 25 bytes needs a third block: no seed found does, so the
    # stream itself is compared with the naive one far beyond two blocks.
    import itertools

    from truco.fairness import _stream

    seed, message = bytes(range(32)), naive_message("deck", "t", 1, [None, None])
    naive = NaiveStream(seed, message)
    expected = bytes(naive.byte() for _ in range(200))
    for eager in (0, 1, 2):
        assert bytes(itertools.islice(_stream(seed, message, eager), 200)) == expected
