"""Barajamos' pure truco rules core: Paulista, Mineiro and Argentino for 2 and 4 seats.

Standard library only; no I/O, clock or randomness: time and randomness come in as values.
The public API is documented in docs/ENGINE.md.
"""

from truco.actions import Action, ActionKind, action_from_json, action_to_json
from truco.cards import CANONICAL_DECK, RANKS, SUITS, Card, parse_card
from truco.envido import tanto
from truco.events import (
    CardPlayed,
    EnvidoAccepted,
    EnvidoCalled,
    EnvidoDeclined,
    Event,
    Folded,
    HandEnded,
    HandStarted,
    MatchEnded,
    RaiseAccepted,
    RaiseDeclined,
    RaiseRequested,
    RoundEnded,
    SpecialHandAnswered,
    VoteCast,
    VoteExpired,
)
from truco.match import (
    apply,
    check_deal,
    forfeit,
    legal_actions,
    new_match,
    pending,
    start_hand,
)
from truco.outcome import Outcome, Termination
from truco.reasons import IllegalAction, Reason
from truco.signals import Signal, SignalFamily, parse_signal, signals_for
from truco.state import (
    Deal,
    HandEnd,
    HandKind,
    HandState,
    MatchState,
    Pending,
    PendingKind,
    Phase,
    RequestKind,
)
from truco.variants import MatchConfig, TeamMode, Variant, VariantRules, rules_for
from truco.views import events_json, hidden_cards_for, view, views

__all__ = [
    "CANONICAL_DECK",
    "RANKS",
    "SUITS",
    "Action",
    "ActionKind",
    "Card",
    "CardPlayed",
    "Deal",
    "EnvidoAccepted",
    "EnvidoCalled",
    "EnvidoDeclined",
    "Event",
    "Folded",
    "HandEnd",
    "HandEnded",
    "HandKind",
    "HandStarted",
    "HandState",
    "IllegalAction",
    "MatchConfig",
    "MatchEnded",
    "MatchState",
    "Outcome",
    "Pending",
    "PendingKind",
    "Phase",
    "RaiseAccepted",
    "RaiseDeclined",
    "RaiseRequested",
    "Reason",
    "RequestKind",
    "RoundEnded",
    "Signal",
    "SignalFamily",
    "SpecialHandAnswered",
    "TeamMode",
    "Termination",
    "Variant",
    "VariantRules",
    "VoteCast",
    "VoteExpired",
    "action_from_json",
    "action_to_json",
    "apply",
    "check_deal",
    "events_json",
    "forfeit",
    "hidden_cards_for",
    "legal_actions",
    "new_match",
    "parse_card",
    "parse_signal",
    "pending",
    "rules_for",
    "signals_for",
    "start_hand",
    "tanto",
    "view",
    "views",
]
