"""Statistics of derived decks on a small sample (the benchmark runs 1,000,000), with teeth:
the same statistics must reject a Sattolo shuffle and a modulo-biased one."""

from __future__ import annotations

import hashlib
import hmac
import math
import platform

import pytest

from server.bench_fairness import (
    bench_seed,
    chi_square_p_value,
    chi_square_uniform,
    deck_statistics,
    main,
    regularized_upper_gamma,
)
from truco.cards import CANONICAL_DECK, Card
from truco.fairness import deck_message

SAMPLE = 20_000
# Generous: a correct shuffle fails these with probability far below one in a million.
MIN_P = 1e-6


@pytest.mark.parametrize("x", [0.0, 0.1, 1.0, 2.5, 10.0, 50.0])
def test_regularized_gamma_against_closed_forms(x):
    assert regularized_upper_gamma(1.0, x) == pytest.approx(math.exp(-x), rel=1e-12, abs=1e-300)
    assert regularized_upper_gamma(0.5, x) == pytest.approx(math.erfc(math.sqrt(x)), rel=1e-10)
    # a = 2: Q = e^-x (1 + x)
    assert regularized_upper_gamma(2.0, x) == pytest.approx(math.exp(-x) * (1 + x), rel=1e-12)


def test_chi_square_p_values():
    # df = 2: P(X >= s) = exp(-s / 2); large df: the median is about df (1 - 2 / (9 df))^3
    assert chi_square_p_value(3.0, 2) == pytest.approx(math.exp(-1.5))
    median = 1521 * (1 - 2 / (9 * 1521)) ** 3
    assert chi_square_p_value(median, 1521) == pytest.approx(0.5, abs=0.01)
    assert chi_square_p_value(2000.0, 1521) < 1e-9
    assert chi_square_uniform([10, 10, 10, 10]).statistic == 0.0
    with pytest.raises(ValueError):
        regularized_upper_gamma(0.0, 1.0)


@pytest.fixture(scope="module")
def published():
    return deck_statistics(SAMPLE)


def test_card_position_table_is_uniform(published):
    cp = published.card_position
    assert cp.degrees_of_freedom == 39 * 39
    assert cp.p_value > MIN_P, cp


def test_mean_fixed_points_is_one(published):
    # sd of the number of fixed points is 1, so the sample mean has sd 1 / sqrt(20,000) = 0.007
    assert abs(published.mean_fixed_points - 1.0) < 0.05


def test_first_dealer_is_uniform_for_2_and_4_seats(published):
    assert sum(published.first_dealer_counts_2) == sum(published.first_dealer_counts_4) == SAMPLE
    assert published.first_dealer_2.p_value > MIN_P
    assert published.first_dealer_4.p_value > MIN_P


def _broken_shuffle(seed: bytes, *, sattolo: bool = False, modulo: bool = False) -> list[Card]:
    message = deck_message("bench-table", 1, [None, None])
    stream = b"".join(hmac.digest(seed, message + k.to_bytes(4, "big"), "sha256") for k in range(3))
    deck, read = list(CANONICAL_DECK), 0
    for i in range(39, 0, -1):
        m = i if sattolo else i + 1
        while True:
            byte, read = stream[read], read + 1
            if modulo or byte < 256 - 256 % m:
                break
        j = byte % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_the_statistics_catch_sattolos_mistake():
    stats = deck_statistics(2_000, lambda seed: _broken_shuffle(seed, sattolo=True))
    assert stats.mean_fixed_points == 0.0


def test_the_statistics_catch_modulo_bias():
    stats = deck_statistics(SAMPLE, lambda seed: _broken_shuffle(seed, modulo=True))
    assert stats.card_position.p_value < MIN_P


def test_hash_of_counter_seeds_are_distinct():
    assert len({bench_seed(i) for i in range(1000)}) == 1000
    assert bench_seed(0) == hashlib.sha256(b"barajamos bench seed " + bytes(8)).digest()


def test_the_benchmark_runs_and_prints_its_figures(capsys):
    assert main(["--decks", "300", "--speed-decks", "300", "--records", "12"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("machine: ") and platform.python_version() in out
    assert "decks" in out and "per CPU second" in out and "df = 1521" in out
    assert "mean fixed points" in out and "first dealer, 4 seats" in out
    assert main(["--decks", "0"]) == 2
