"""`barajamos bench fairness`: how fast decks are derived and records verified, and whether the
derived decks look uniform.

    barajamos bench fairness [--decks N] [--speed-decks N] [--records N] [--json]

Prints the machine (CPU model, Python), then:
- decks derived per second (target >= 50,000 per core),
- signed hand records verified per second, signature and full engine replay included
  (target >= 2,000 per core),
- statistics over N derived decks (default 1,000,000): the card x position chi-square with its
  degrees of freedom and p-value (regularized upper incomplete gamma, stdlib only), the mean
  number of fixed points (1 for a uniform shuffle; Sattolo's mistake gives 0), and the
  first-dealer draw's uniformity for 2 and 4 seats.

Single process: the figures are per core, counted in CPU seconds of this process (best of three
runs), with the wall-clock rate beside them. Seeds are SHA-256 of a counter, so runs repeat.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from truco.cards import CANONICAL_DECK, Card
from truco.fairness import derive_deck, draw_first_dealer
from truco.variants import MatchConfig, TeamMode, Variant
from verifier.check import check_hand
from verifier.samples import sample_signing_key, sample_table

DECK_SIZE = len(CANONICAL_DECK)
DERIVE_TARGET = 50_000
VERIFY_TARGET = 2_000
_TABLE = "bench-table"
_CONTRIBUTIONS: tuple[bytes | None, ...] = (b"\x01" * 32, None, b"bench phrase", b"\x02" * 32)


# --------------------------------------------------------------------------- statistics


def _lower_series(a: float, x: float) -> float:
    # P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)...(a+n))   (converges for x < a + 1)
    term = total = 1.0 / a
    denominator = a
    for _ in range(100_000):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _upper_continued_fraction(a: float, x: float) -> float:
    # Q(a, x) by Lentz's method on the continued fraction (converges for x >= a + 1)
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for n in range(1, 100_000):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def regularized_upper_gamma(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a), for a > 0 and x >= 0."""
    if a <= 0 or x < 0:
        raise ValueError("Q(a, x) needs a > 0 and x >= 0")
    if x == 0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _lower_series(a, x))
    return _upper_continued_fraction(a, x)


def chi_square_p_value(statistic: float, degrees_of_freedom: int) -> float:
    """P(X >= statistic) for X chi-square distributed with that many degrees of freedom."""
    return regularized_upper_gamma(degrees_of_freedom / 2.0, statistic / 2.0)


@dataclass(frozen=True, slots=True)
class ChiSquare:
    statistic: float
    degrees_of_freedom: int
    p_value: float


def chi_square_uniform(counts: Sequence[int], degrees_of_freedom: int | None = None) -> ChiSquare:
    """Pearson's chi-square of counts against equal expected counts."""
    total = sum(counts)
    expected = total / len(counts)
    statistic = sum((count - expected) ** 2 for count in counts) / expected
    dof = len(counts) - 1 if degrees_of_freedom is None else degrees_of_freedom
    return ChiSquare(statistic, dof, chi_square_p_value(statistic, dof))


def bench_seed(index: int) -> bytes:
    return hashlib.sha256(b"barajamos bench seed " + index.to_bytes(8, "big")).digest()


@dataclass(frozen=True, slots=True)
class DeckStatistics:
    decks: int
    card_position: ChiSquare  # 40 x 40 table: every row and column sums to `decks`
    mean_fixed_points: float
    first_dealer_2: ChiSquare
    first_dealer_4: ChiSquare
    first_dealer_counts_2: tuple[int, ...]
    first_dealer_counts_4: tuple[int, ...]


def _derive(seed: bytes) -> Sequence[Card]:
    return derive_deck(seed, _TABLE, 1, _CONTRIBUTIONS)


def deck_statistics(
    decks: int, shuffle: Callable[[bytes], Sequence[Card]] = _derive
) -> DeckStatistics:
    """Card x position counts, fixed points and first-dealer counts over `decks` decks.

    `shuffle` maps a seed to a deck (the published derivation by default; the tests pass a
    deliberately broken one to show these statistics catch it).
    """
    counts = [0] * (DECK_SIZE * DECK_SIZE)
    fixed_points = 0
    dealers_2 = [0, 0]
    dealers_4 = [0, 0, 0, 0]
    positions = range(DECK_SIZE)
    for seed in map(bench_seed, range(decks)):
        deck = shuffle(seed)
        for position, card in zip(positions, deck, strict=True):
            index = card.index
            counts[index * DECK_SIZE + position] += 1
            fixed_points += index == position
        dealers_2[draw_first_dealer(seed, _TABLE, _CONTRIBUTIONS[:2], 2)] += 1
        dealers_4[draw_first_dealer(seed, _TABLE, _CONTRIBUTIONS, 4)] += 1
    # A permutation table: each card appears once per deck and each position once, so the
    # margins are fixed and the table has (40 - 1) x (40 - 1) degrees of freedom.
    card_position = chi_square_uniform(counts, (DECK_SIZE - 1) ** 2)
    return DeckStatistics(
        decks=decks,
        card_position=card_position,
        mean_fixed_points=fixed_points / decks,
        first_dealer_2=chi_square_uniform(dealers_2),
        first_dealer_4=chi_square_uniform(dealers_4),
        first_dealer_counts_2=tuple(dealers_2),
        first_dealer_counts_4=tuple(dealers_4),
    )


# --------------------------------------------------------------------------- speed


@dataclass(frozen=True, slots=True)
class Rate:
    """Operations per CPU second of this process (the per-core figure, robust to other load on
    the machine) and per wall-clock second."""

    per_cpu_second: float
    per_wall_second: float


ROUNDS = 3


def _timed(count: int, run: Callable[[], object]) -> Rate:
    """The best of ROUNDS runs (as timeit does: slower runs measure interference, not code)."""
    best_cpu = best_wall = float("inf")
    for _ in range(ROUNDS):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return Rate(count / max(best_cpu, 1e-9), count / max(best_wall, 1e-9))


def derive_speed(decks: int) -> Rate:
    """Decks derived per second (one process)."""
    seeds = [bench_seed(index) for index in range(decks)]

    def run() -> None:
        for hand, seed in enumerate(seeds, start=1):
            derive_deck(seed, _TABLE, hand, _CONTRIBUTIONS)

    return _timed(decks, run)


def verify_speed(records: int) -> tuple[Rate, float]:
    """Signed records verified per second (signature, deck, deal, replay), and actions/record."""
    key = sample_signing_key()
    pinned = [bytes(key.verify_key)]
    samples: list[dict[str, Any]] = []
    configs = [
        MatchConfig(variant, seats, TeamMode.VOTE) for variant in Variant for seats in (2, 4)
    ]
    per_table = max(1, records // len(configs))
    for number, config in enumerate(configs):
        table = sample_table(
            table_id=f"bench-{number}", config=config, hands=per_table, seed=number, signing_key=key
        )
        samples.extend(table.records)

    def run() -> None:
        for record in samples:
            report = check_hand(record, pinned=pinned)
            if not report.ok:
                raise RuntimeError(f"a sample record failed verification: {report.failures}")

    rate = _timed(len(samples), run)
    actions = sum(len(record["actions"]) for record in samples) / len(samples)
    return rate, actions


def machine() -> dict[str, str]:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
    }


def _rate(rate: Rate, target: int) -> str:
    verdict = "meets" if rate.per_cpu_second >= target else "MISSES"
    return (
        f"{rate.per_cpu_second:,.0f} per CPU second ({verdict} the {target:,} per core target;"
        f" {rate.per_wall_second:,.0f} per wall second)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="barajamos bench fairness", description=__doc__)
    parser.add_argument("--decks", type=int, default=1_000_000, help="decks for the statistics")
    parser.add_argument("--speed-decks", type=int, default=100_000, help="decks for the speed run")
    parser.add_argument("--records", type=int, default=2_000, help="records for the verify run")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if min(args.decks, args.speed_decks, args.records) < 1:
        print("barajamos bench fairness: counts must be positive", file=sys.stderr)
        return 2

    info = machine()
    if not args.json:
        print(f"machine: {info['cpu']}; {info['python']}; {info['platform']}")
    derived = derive_speed(args.speed_decks)
    if not args.json:
        print(f"derive ({args.speed_decks:,} decks): {_rate(derived, DERIVE_TARGET)}")
    verified, actions = verify_speed(args.records)
    if not args.json:
        print(f"verify (signature, commitment, deck, deal, full replay; {actions:.1f} actions"
              f" per hand): {_rate(verified, VERIFY_TARGET)}")  # fmt: skip
    start = time.perf_counter()
    stats = deck_statistics(args.decks)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps({"machine": info, "decks_per_second": asdict(derived),
                          "records_per_second": asdict(verified), "actions_per_record": actions,
                          "statistics": asdict(stats), "statistics_seconds": elapsed},
                         indent=2))  # fmt: skip
        return 0
    cp = stats.card_position
    print(f"statistics over {stats.decks:,} decks ({elapsed:.1f} s):")
    print(f"  card x position chi-square = {cp.statistic:.1f}, df = {cp.degrees_of_freedom},"
          f" p = {cp.p_value:.4f}")  # fmt: skip
    print(f"  mean fixed points = {stats.mean_fixed_points:.4f} (uniform: 1; Sattolo: 0)")
    for seats, chi, counts in (
        (2, stats.first_dealer_2, stats.first_dealer_counts_2),
        (4, stats.first_dealer_4, stats.first_dealer_counts_4),
    ):
        print(f"  first dealer, {seats} seats: counts {list(counts)}, chi-square ="
              f" {chi.statistic:.2f}, df = {chi.degrees_of_freedom},"
              f" p = {chi.p_value:.4f}")  # fmt: skip
    return 0
