"""Why an action was refused: stable codes (persisted, sent to clients, asserted by tests)."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    NOT_YOUR_TURN = "not_your_turn"
    CARD_NOT_IN_HAND = "card_not_in_hand"
    RAISE_NOT_ALLOWED = "raise_not_allowed"
    NOTHING_TO_ANSWER = "nothing_to_answer"
    ANSWER_PENDING = "answer_pending"
    ENVIDO_NOT_ALLOWED = "envido_not_allowed"
    COVER_NOT_ALLOWED = "cover_not_allowed"
    FOLD_NOT_ALLOWED = "fold_not_allowed"
    HAND_NOT_IN_PROGRESS = "hand_not_in_progress"
    HAND_IN_PROGRESS = "hand_in_progress"
    MATCH_OVER = "match_over"
    UNKNOWN_SEAT = "unknown_seat"
    WRONG_VARIANT = "wrong_variant"
    BAD_ACTION = "bad_action"
    TIMEOUT_NOT_PENDING = "timeout_not_pending"
    POSITION_REQUIRED = "position_required"
    ALREADY_VOTED = "already_voted"
    FOLDED = "folded"


class IllegalAction(ValueError):
    """An action the rules refuse now; `reason` is the stable code, the message says why."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
