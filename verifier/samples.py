"""Deterministic sample tables: signed hand records exactly as the house builds them.

Used to generate the shipped vectors, by the tests (tampering, chains) and by the benchmark. A
sample table does what the server does for a live one (docs/FAIRNESS.md): draw a seed-chain tip
(here from a seeded generator instead of the OS CSPRNG, so the output is reproducible), publish
the signed anchor, then for each hand take the players' contributions, derive and deal the deck,
play the hand through the engine, and publish the signed, chained record. Everything is signed
with the published TEST key, which must never sign anything real.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from truco.actions import Action, ActionKind
from truco.fairness import (
    Contribution,
    deal_cards,
    derive_deck,
    draw_first_dealer,
    seed_chain,
)
from truco.match import apply, forfeit, legal_actions, new_match, pending, start_hand
from truco.outcome import Termination
from truco.records import (
    GENESIS_HASH,
    DealerChoice,
    RecordEnd,
    build_record,
    build_seed_anchor,
    record_hash,
)
from truco.state import MatchState, Phase
from truco.variants import MatchConfig
from verifier.signing import SigningKey, sign_record, sign_statement, signing_key_from_seed

# The test key: derived from a public phrase, so anyone can reproduce the vectors' signatures.
TEST_KEY_SEED: Final = hashlib.sha256(
    b"barajamos-shuffle/v1 TEST signing key: public, never use it for real records"
).digest()
# A hand that goes on this long is a random policy changing votes back and forth: the clock wins.
_PATIENCE: Final = 60


def sample_signing_key() -> SigningKey:
    return signing_key_from_seed(TEST_KEY_SEED)


Policy = Callable[[MatchState, random.Random], Action]


def random_policy(timeout_rate: float = 0.03) -> Policy:
    """Any legal action of any seat that may act, now and then a clock running out."""

    def choose(state: MatchState, rng: random.Random) -> Action:
        clocked = pending(state)
        if clocked and rng.random() < timeout_rate:
            return Action(rng.choice(clocked).seat, ActionKind.TIMEOUT)
        options = [
            action for seat in range(state.config.seats) for action in legal_actions(state, seat)
        ]
        if not options:
            # Only the clock can move the hand on (never expected, but a sample must terminate).
            return Action(clocked[0].seat, ActionKind.TIMEOUT)
        return rng.choice(options)

    return choose


def play_hand(
    state: MatchState, rng: random.Random, policy: Policy, max_actions: int | None = None
) -> tuple[MatchState, tuple[Action, ...]]:
    """Play the dealt hand to its end (or `max_actions` actions); returns the state and actions."""
    actions: list[Action] = []
    while state.phase is Phase.IN_HAND and not state.hand_over:
        if max_actions is not None and len(actions) >= max_actions:
            break
        if len(actions) >= _PATIENCE and pending(state):
            action = Action(pending(state)[0].seat, ActionKind.TIMEOUT)
        else:
            action = policy(state, rng)
        state, _ = apply(state, action)
        actions.append(action)
    return state, tuple(actions)


@dataclass(frozen=True, slots=True)
class SampleTable:
    table_id: str
    config: MatchConfig
    anchor_statement: dict[str, Any]
    records: tuple[dict[str, Any], ...]


def _contributions(rng: random.Random, seats: int, absent_rate: float) -> list[Contribution]:
    contributions: list[Contribution] = []
    for _ in range(seats):
        roll = rng.random()
        if roll < absent_rate:
            contributions.append(None)
        elif roll < absent_rate + 0.15:
            contributions.append(
                rng.choice(["boa sorte", "truco!", "zap na mão", "ñandú"]).encode()
            )
        else:
            contributions.append(rng.randbytes(32))
    return contributions


def sample_table(
    *,
    table_id: str,
    config: MatchConfig,
    hands: int,
    seed: int,
    signing_key: SigningKey | None = None,
    policy: Policy | None = None,
    absent_rate: float = 0.2,
    last_end: RecordEnd = RecordEnd.COMPLETED,
    chain_length: int | None = None,
) -> SampleTable:
    """`hands` consecutive signed records of one table (matches follow each other as needed).

    `last_end` makes the last hand abandoned (by team 1) or cancelled half-way through.
    """
    rng = random.Random(seed)
    key = signing_key or sample_signing_key()
    choose = policy or random_policy()
    seeds = seed_chain(rng.randbytes(32), chain_length or hands)
    anchor = sign_statement(build_seed_anchor(table_id, 1, len(seeds) - 1, seeds[0]), key)

    records: list[dict[str, Any]] = []
    prev = GENESIS_HASH
    state: MatchState | None = None
    for number in range(1, hands + 1):
        hand_seed = seeds[number]
        contributions = _contributions(rng, config.seats, absent_rate)
        if state is None or state.phase is Phase.MATCH_OVER:
            dealer = draw_first_dealer(hand_seed, table_id, contributions, config.seats)
            state = new_match(config, first_dealer=dealer)
            dealer_by = DealerChoice.DRAW
        else:
            dealer = state.next_dealer
            dealer_by = DealerChoice.ROTATION
        score_before = state.score
        deck = derive_deck(hand_seed, table_id, number, contributions)
        state, _ = start_hand(state, deal_cards(deck, config.variant, config.seats, dealer))
        end = last_end if number == hands else RecordEnd.COMPLETED
        if end is RecordEnd.COMPLETED:
            state, actions = play_hand(state, rng, choose)
        else:
            dealt = state
            state, actions = play_hand(dealt, rng, choose, max_actions=rng.randint(0, 3))
            if state.phase is Phase.MATCH_OVER:
                end = RecordEnd.COMPLETED  # the match ended by the rules first (Argentino envido)
            elif state.hand_over:
                # the rules ended the hand first (a fold, a refused truco): the house ends the
                # match before that last action, so the hand is still in play (FAIRNESS.md 7)
                actions = actions[:-1]
                state = dealt
                for action in actions:
                    state, _ = apply(state, action)
        forfeit_team = 1 if end is RecordEnd.ABANDONMENT else None
        if end is not RecordEnd.COMPLETED:
            termination = (
                Termination.ABANDONMENT if end is RecordEnd.ABANDONMENT else Termination.CANCELLED
            )
            # The engine ignores the team of a cancellation: nobody is at fault.
            state = forfeit(state, forfeit_team if forfeit_team is not None else 0, termination)
        unsigned = build_record(
            table_id=table_id,
            hand_number=number,
            chain_start=1,
            config=config,
            dealer=dealer,
            dealer_by=dealer_by,
            score_before=score_before,
            contributions=contributions,
            seed=hand_seed,
            actions=actions,
            end=end,
            forfeit_team=forfeit_team,
            score_after=state.score,
            match_winner=state.match_winner,
            prev_hash=prev,
        )
        record = sign_record(unsigned, key)
        records.append(record)
        prev = record_hash(record)
    return SampleTable(table_id, config, anchor, tuple(records))
