"""Escalating pauses and the review rules (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.ranked import penalties
from server.ranked.penalties import (
    DAY,
    HOUR,
    MINUTE,
    Decision,
    Interval,
    PauseRecord,
    PriorRecord,
    RecordStatus,
    ReviewError,
    ReviewState,
)

T = 1_800_000_000.0
PENDING = RecordStatus.PENDING


def test_pause_ladder_doubles_from_15_minutes_and_caps_at_a_day() -> None:
    assert [penalties.pause_for(n) / MINUTE for n in range(1, 11)] == [
        0, 15, 30, 60, 120, 240, 480, 960, 1440, 1440,
    ]
    assert penalties.pause_for(10_000) == 24 * HOUR
    with pytest.raises(ValueError):
        penalties.pause_for(-1)


def test_first_abandonment_loses_the_match_but_pauses_nobody() -> None:
    a = penalties.assess(T, T - 600, [], [])
    assert (a.status, a.strikes, a.pause, a.paused_until) == (PENDING, 1, 0.0, None)


def test_repeats_within_the_rolling_window_escalate() -> None:
    prior = [PriorRecord(T - 3 * DAY, PENDING), PriorRecord(T - 2 * HOUR, RecordStatus.UPHELD)]
    a = penalties.assess(T, T - 600, prior, [])
    assert a.strikes == 3 and a.pause == 30 * MINUTE and a.paused_until == T + 30 * MINUTE


def test_old_overturned_and_exempt_records_do_not_count() -> None:
    prior = [
        PriorRecord(T - 7 * DAY, PENDING),  # exactly a week ago: outside the window
        PriorRecord(T - 8 * DAY, RecordStatus.UPHELD),
        PriorRecord(T - HOUR, RecordStatus.OVERTURNED),
        PriorRecord(T - HOUR, RecordStatus.EXEMPT),
        PriorRecord(T + HOUR, PENDING),  # after this one (records arrive out of order)
    ]
    assert penalties.assess(T, T - 600, prior, []).strikes == 1
    prior.append(PriorRecord(T - 7 * DAY + 1, PENDING))
    assert penalties.assess(T, T - 600, prior, []).pause == 15 * MINUTE


@pytest.mark.parametrize(
    "fault",
    [
        Interval(T - 300, T - 250),  # a restart in the middle of the match
        Interval(T - 5000, T - 600),  # ended the instant the match started
        Interval(T, T + 60),  # began the instant the player was declared gone
        Interval(T - 100),  # still going on
    ],
)
def test_a_server_fault_during_the_match_exempts_the_record(fault: Interval) -> None:
    prior = [PriorRecord(T - HOUR, PENDING)] * 4
    a = penalties.assess(T, T - 600, prior, [fault])
    assert (a.status, a.strikes, a.pause, a.paused_until) == (RecordStatus.EXEMPT, 0, 0.0, None)


def test_faults_outside_the_match_change_nothing() -> None:
    faults = [Interval(T - 5000, T - 601), Interval(T + 1, T + 50), Interval(T + 10)]
    assert penalties.assess(T, T - 600, [], faults).status is PENDING
    with pytest.raises(ReviewError) as err:
        penalties.assess(T, T + 1, [], [])
    assert err.value.code == "bad_times"


def test_pause_remaining_ignores_lifted_pauses() -> None:
    records = [
        PauseRecord(PENDING, T + 900),
        PauseRecord(RecordStatus.OVERTURNED, T + 9000),
        PauseRecord(RecordStatus.UPHELD, T + 1800),
        PauseRecord(PENDING, None),
    ]
    assert penalties.pause_remaining(records, T) == 1800
    assert penalties.pause_remaining(records, T + 2000) == 0
    assert penalties.pause_remaining([], T) == 0


def state(status: RecordStatus, appealed: bool = False, answered: bool = False) -> ReviewState:
    return ReviewState(status, appealed, answered)


def test_review_transitions() -> None:
    ruling, note = penalties.decide(state(PENDING), Decision.UPHOLD, "  replay shows it  ")
    assert ruling.state.status is RecordStatus.UPHELD and not ruling.reverse
    assert note == "replay shows it"
    ruling, _ = penalties.decide(state(PENDING), Decision.OVERTURN, "network outage")
    assert ruling.state.status is RecordStatus.OVERTURNED and ruling.reverse
    ruling, _ = penalties.decide(state(RecordStatus.UPHELD), Decision.OVERTURN, "on appeal")
    assert ruling.reverse


@pytest.mark.parametrize(
    ("before", "decision", "code"),
    [
        (state(RecordStatus.OVERTURNED), Decision.OVERTURN, "already_overturned"),
        (state(RecordStatus.OVERTURNED), Decision.UPHOLD, "already_overturned"),
        (state(RecordStatus.EXEMPT), Decision.UPHOLD, "exempt"),
        (state(RecordStatus.UPHELD), Decision.UPHOLD, "already_upheld"),
        (state(RecordStatus.UPHELD, True, True), Decision.UPHOLD, "already_upheld"),
    ],
)
def test_refused_decisions(before: ReviewState, decision: Decision, code: str) -> None:
    with pytest.raises(ReviewError) as err:
        penalties.decide(before, decision, "a note")
    assert err.value.code == code


def test_a_new_appeal_may_be_answered_by_upholding_again() -> None:
    upheld = state(RecordStatus.UPHELD)
    appealed, text = penalties.appeal(upheld, " I lost power ")
    assert appealed == state(RecordStatus.UPHELD, True, False) and text == "I lost power"
    ruling, _ = penalties.decide(appealed, Decision.UPHOLD, "no sign of a house fault")
    assert ruling.state == state(RecordStatus.UPHELD, True, True) and not ruling.reverse


@pytest.mark.parametrize(
    ("before", "text", "code"),
    [
        (state(PENDING, True), "again", "already_appealed"),
        (state(RecordStatus.OVERTURNED), "why", "nothing_to_appeal"),
        (state(RecordStatus.EXEMPT), "why", "nothing_to_appeal"),
        (state(PENDING), "   ", "bad_text"),
        (state(PENDING), None, "bad_text"),
        (state(PENDING), "x" * (penalties.MAX_APPEAL + 1), "bad_text"),
    ],
)
def test_refused_appeals(before: ReviewState, text: object, code: str) -> None:
    with pytest.raises(ReviewError) as err:
        penalties.appeal(before, text)
    assert err.value.code == code


def test_a_decision_needs_a_note() -> None:
    for note in ("", "  ", None, "n" * (penalties.MAX_NOTE + 1)):
        with pytest.raises(ReviewError) as err:
            penalties.decide(state(PENDING), Decision.UPHOLD, note)
        assert err.value.code == "bad_text"


@given(st.lists(st.sampled_from([Decision.UPHOLD, Decision.OVERTURN, "appeal"]), max_size=12))
def test_reversal_happens_at_most_once_whatever_the_sequence(steps: list[object]) -> None:
    current = state(PENDING)
    reversals = 0
    for step in steps:
        try:
            if step == "appeal":
                current, _ = penalties.appeal(current, "please")
            else:
                assert isinstance(step, Decision)
                ruling, _ = penalties.decide(current, step, "note")
                current = ruling.state
                reversals += ruling.reverse
        except ReviewError:
            continue
    assert reversals <= 1
    assert reversals == (current.status is RecordStatus.OVERTURNED)
