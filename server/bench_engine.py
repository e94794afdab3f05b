"""`barajamos bench engine`: random legal playouts of whole matches, timed per variant and seats.

Each step asks `pending` which seats the table waits for, picks one of them and applies one of
its `legal_actions` at random, exactly what a server-side bot for that seat would do, so
legal-action generation is part of the figure. Deals are random too (seeded), dealt one card at
a time from mano as the rules say. Rates are per CPU second of this process (one core): time
spent waiting for the CPU does not count, though neighbours still slow it through shared caches,
so each line runs in several timed rounds and reports the best and the median.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import NoReturn

from truco import (
    CANONICAL_DECK,
    Deal,
    MatchConfig,
    MatchState,
    Phase,
    TeamMode,
    Variant,
    apply,
    legal_actions,
    new_match,
    pending,
    start_hand,
)


@dataclass(frozen=True, slots=True)
class BenchResult:
    variant: Variant
    seats: int
    seconds: float
    matches: int
    hands: int
    actions: int

    @property
    def hands_per_second(self) -> float:
        return self.hands / self.seconds

    @property
    def actions_per_second(self) -> float:
        return self.actions / self.seconds


def random_deal(rng: random.Random, config: MatchConfig, dealer: int) -> Deal:
    """A uniformly random deal, dealt one card at a time from mano, then the vira (Paulista)."""
    seats = config.seats
    dealt = config.hand_size * seats
    drawn = dealt + (1 if config.uses_vira else 0)
    # the top `drawn` cards of a shuffled deck: a partial Fisher-Yates shuffle (one C-level
    # random() per card, cheaper than Random.sample's bit-by-bit draws)
    deck = list(CANONICAL_DECK)
    size = len(deck)
    for i in range(drawn):
        j = i + int(rng.random() * (size - i))
        deck[i], deck[j] = deck[j], deck[i]
    top = tuple(deck[:drawn])
    mano = (dealer + 1) % seats
    # the i-th seat from mano gets cards i, i + seats, i + 2 * seats
    hands = tuple(top[(seat - mano) % seats : dealt : seats] for seat in range(seats))
    vira = top[dealt] if config.uses_vira else None
    return Deal(dealer, hands, vira)


def play_match(rng: random.Random, config: MatchConfig) -> tuple[MatchState, int, int]:
    """One random legal match: (final state, hands played, actions applied)."""
    state = new_match(config, rng.randrange(config.seats))
    hands = actions = 0
    in_hand, match_over = Phase.IN_HAND, Phase.MATCH_OVER  # enum reads are slow in 3.11
    while state.phase is not match_over:
        state, _ = start_hand(state, random_deal(rng, config, state.next_dealer))
        hands += 1
        while state.phase is in_hand:
            # one of the seats the table waits for (both partners during a vote) acts, as its
            # bot would: a random one of its legal actions. random() is one C call, cheaper
            # than choice()'s bit loop, and as uniform.
            decisions = pending(state)
            seat = decisions[int(rng.random() * len(decisions))].seat
            options = legal_actions(state, seat)
            state, _ = apply(state, options[int(rng.random() * len(options))])
            actions += 1
    return state, hands, actions


def bench(config: MatchConfig, seconds: float, seed: int) -> BenchResult:
    """Play random matches for `seconds` of this process's CPU time."""
    rng = random.Random(seed)
    matches = hands = actions = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        _, match_hands, match_actions = play_match(rng, config)
        matches += 1
        hands += match_hands
        actions += match_actions
        now = time.process_time()
        if now >= deadline:
            break
    return BenchResult(config.variant, config.seats, now - start, matches, hands, actions)


def bench_rounds(config: MatchConfig, seconds: float, rounds: int, seed: int) -> list[BenchResult]:
    """`rounds` timed slices of `seconds / rounds` each, with different seeds: other load on a
    shared machine slows some slices, so the best and the median say more than one long run."""
    return [bench(config, seconds / rounds, seed + i) for i in range(rounds)]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def peak_memory_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Reports bad arguments to `main` instead of exiting, so main returns 2 itself."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="barajamos bench engine",
        description="random legal playouts of whole matches; prints hands/s and actions/s",
    )
    parser.add_argument(
        "--seconds", type=_positive, default=5.0, help="CPU time per variant and seat count"
    )
    parser.add_argument("--variant", choices=[v.value for v in Variant], help="default: all")
    parser.add_argument("--seats", type=int, choices=[2, 4], help="default: 2 and 4")
    parser.add_argument(
        "--mode", choices=[m.value for m in TeamMode], default="vote", help="team answers"
    )
    parser.add_argument(
        "--rounds", type=_count, default=10, help="timed slices per line (default 10)"
    )
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as error:
        print(f"{parser.format_usage().rstrip()}\nbarajamos bench engine: {error}", file=sys.stderr)
        return 2
    variants = [Variant(args.variant)] if args.variant else list(Variant)
    seat_counts = [args.seats] if args.seats else [2, 4]
    print(f"machine: {cpu_model()}, {platform.system()} {platform.machine()}")
    print(f"python: {platform.python_implementation()} {platform.python_version()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"one core (rates per CPU second of this process), seed {args.seed}, "
        f"{args.seconds:g} s per line in {args.rounds} rounds, team mode {args.mode}"
    )
    header = f"{'variant':<10} {'seats':>5} {'matches':>8} {'hands':>8}"
    print(f"{header} {'hands/s best':>13} {'median':>7} {'actions/s best':>15} {'median':>7}")
    for variant in variants:
        for seats in seat_counts:
            config = MatchConfig(variant, seats, TeamMode(args.mode))
            results = bench_rounds(config, args.seconds, args.rounds, args.seed)
            hands = sorted(r.hands_per_second for r in results)
            actions = sorted(r.actions_per_second for r in results)
            print(
                f"{variant.value:<10} {seats:>5} {sum(r.matches for r in results):>8} "
                f"{sum(r.hands for r in results):>8} {hands[-1]:>13.0f} "
                f"{statistics.median(hands):>7.0f} {actions[-1]:>15.0f} "
                f"{statistics.median(actions):>7.0f}",
                flush=True,
            )
    print(f"peak memory (max RSS): {peak_memory_mib():.1f} MiB")
    return 0
