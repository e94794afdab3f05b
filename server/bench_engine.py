"""`barajamos bench engine`: random legal playouts of whole matches, timed per variant and seats.

Each step asks `pending` who must act, gathers those seats' `legal_actions` and applies one at
random, exactly what a server-side bot would do, so legal-action generation is part of the
figure. Deals are random too (seeded), dealt one card at a time from mano as the rules say.
"""

from __future__ import annotations

import argparse
import platform
import random
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from truco import (
    CANONICAL_DECK,
    Action,
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
    # drawing the dealt cards (and the vira) at random is the same as shuffling the whole deck
    deck = tuple(rng.sample(CANONICAL_DECK, dealt + (1 if config.uses_vira else 0)))
    mano = (dealer + 1) % seats
    # the i-th seat from mano gets cards i, i + seats, i + 2 * seats
    hands = tuple(deck[(seat - mano) % seats : dealt : seats] for seat in range(seats))
    vira = deck[dealt] if config.uses_vira else None
    return Deal(dealer, hands, vira)


def play_match(rng: random.Random, config: MatchConfig) -> tuple[MatchState, int, int]:
    """One random legal match: (final state, hands played, actions applied)."""
    state = new_match(config, rng.randrange(config.seats))
    hands = actions = 0
    while state.phase is not Phase.MATCH_OVER:
        state, _ = start_hand(state, random_deal(rng, config, state.next_dealer))
        hands += 1
        while state.phase is Phase.IN_HAND:
            decisions = pending(state)
            if len(decisions) == 1:
                options: Sequence[Action] = legal_actions(state, decisions[0].seat)
            else:  # partners voting: either may act
                options = [a for d in decisions for a in legal_actions(state, d.seat)]
            # uniform choice; random() is a single C call, cheaper than choice()'s bit loop
            state, _ = apply(state, options[int(rng.random() * len(options))])
            actions += 1
    return state, hands, actions


def bench(config: MatchConfig, seconds: float, seed: int) -> BenchResult:
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="barajamos bench engine",
        description="random legal playouts of whole matches; prints hands/s and actions/s",
    )
    parser.add_argument(
        "--seconds", type=_positive, default=3.0, help="time per variant and seat count"
    )
    parser.add_argument("--variant", choices=[v.value for v in Variant], help="default: all")
    parser.add_argument("--seats", type=int, choices=[2, 4], help="default: 2 and 4")
    parser.add_argument(
        "--mode", choices=[m.value for m in TeamMode], default="vote", help="team answers"
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
    print(f"one core, seed {args.seed}, {args.seconds:g} s per line, team mode {args.mode}")
    header = f"{'variant':<10} {'seats':>5} {'matches':>8} {'hands':>8}"
    print(f"{header} {'hands/s':>9} {'actions/s':>10}")
    for variant in variants:
        for seats in seat_counts:
            config = MatchConfig(variant, seats, TeamMode(args.mode))
            result = bench(config, args.seconds, args.seed)
            print(
                f"{variant.value:<10} {seats:>5} {result.matches:>8} {result.hands:>8} "
                f"{result.hands_per_second:>9.0f} {result.actions_per_second:>10.0f}",
                flush=True,
            )
    print(f"peak memory (max RSS): {peak_memory_mib():.1f} MiB")
    return 0
