"""How a match ended: data, with stable codes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Termination(StrEnum):
    TARGET = "target"
    ABANDONMENT = "abandonment"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Outcome:
    termination: Termination
    winner: int | None  # the winning team, None when cancelled
