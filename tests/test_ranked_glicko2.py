"""Glicko-2 against Glickman's worked example, the 2v2 team rule and idle periods."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.ranked import glicko2
from server.ranked.glicko2 import Rating, RatingError, Result

PAPER_PLAYER = Rating(1500, 200, 0.06)
PAPER_RESULTS = [
    Result(Rating(1400, 30), 1),
    Result(Rating(1550, 100), 0),
    Result(Rating(1700, 300), 0),
]


def test_paper_worked_example_step_by_step() -> None:
    # "Example of the Glicko-2 system", section 2: every intermediate value the paper prints
    p = glicko2.period(PAPER_PLAYER, PAPER_RESULTS)
    # the paper computes v and delta from g and E rounded to 4 places, so they agree to 1e-3
    assert p.v == pytest.approx(1.7785, abs=1e-3)
    assert p.delta == pytest.approx(-0.4834, abs=1e-3)
    assert round(p.volatility, 5) == 0.06000 and p.volatility == pytest.approx(0.05999, abs=1e-5)
    assert round(p.phi_star, 4) == 1.1529
    assert round(p.phi, 4) == 0.8722
    assert round(p.mu, 4) == -0.2069
    # the paper converts its rounded mu' and phi': 173.7178 * -0.2069 + 1500 = 1464.06
    assert round(glicko2.SCALE * round(p.mu, 4) + 1500, 2) == 1464.06
    assert round(glicko2.SCALE * round(p.phi, 4), 2) == 151.52


def test_paper_worked_example_final_rating() -> None:
    new = glicko2.update(PAPER_PLAYER, PAPER_RESULTS)
    # full precision gives 1464.0507 (the paper's 1464.06 rounds mu' to 4 places first)
    assert new.rating == pytest.approx(1464.06, abs=0.01)
    assert round(new.rd, 2) == 151.52
    assert new.volatility == pytest.approx(0.05999, abs=0.00001)
    assert new.volatility < 0.06


def test_one_v_one_winner_gains_what_loser_loses_when_symmetric() -> None:
    (a,), (b,) = glicko2.rate_match([Rating(1500, 100)], [Rating(1500, 100)], 1)
    assert a.rating > 1500 > b.rating
    assert a.rating - 1500 == pytest.approx(1500 - b.rating)
    assert a.rd < 100 and b.rd < 100


def test_team_rule_rates_each_player_against_the_other_teams_average() -> None:
    team_a = [Rating(1500, 80), Rating(1700, 60, 0.07)]
    team_b = [Rating(1600, 100), Rating(1550, 300)]
    new_a, new_b = glicko2.rate_match(team_a, team_b, 1)
    average_b = Rating(1575, 200, 0.06)
    average_a = Rating(1600, 70, 0.065)
    assert glicko2.team_average(team_b) == average_b
    assert glicko2.team_average(team_a) == average_a
    assert new_a == tuple(glicko2.update(p, [Result(average_b, 1)]) for p in team_a)
    assert new_b == tuple(glicko2.update(p, [Result(average_a, 0)]) for p in team_b)
    # partners keep their own deviations: the uncertain one moves further
    assert all(n.rating > o.rating for n, o in zip(new_a, team_a, strict=True))
    assert all(n.rating < o.rating for n, o in zip(new_b, team_b, strict=True))
    assert (1550 - new_b[1].rating) > (1600 - new_b[0].rating)


def test_draw_between_equals_changes_no_rating() -> None:
    (a,), (b,) = glicko2.rate_match([Rating(1500, 100)], [Rating(1500, 100)], 0.5)
    assert a.rating == pytest.approx(1500) and b.rating == pytest.approx(1500)


def test_idle_periods_grow_the_deviation_up_to_a_newcomers() -> None:
    player = Rating(1620, 50, 0.06)
    one = glicko2.idle(player)
    assert one.rating == 1620 and one.volatility == 0.06
    assert one.rd == pytest.approx(glicko2.SCALE * math.sqrt((50 / glicko2.SCALE) ** 2 + 0.06**2))
    assert glicko2.idle(player, 3) == glicko2.idle(glicko2.idle(glicko2.idle(player)))
    assert glicko2.idle(player, 0) == player
    assert glicko2.idle(player, 10_000).rd == glicko2.MAX_RD
    # an empty period is an idle one
    assert glicko2.update(player, []) == one


@pytest.mark.parametrize(
    "build",
    [
        lambda: Rating(1500, 0),
        lambda: Rating(1500, -5),
        lambda: Rating(float("nan")),
        lambda: Rating(1500, 100, 0),
        lambda: Result(Rating(), 2),
        lambda: glicko2.rate_match([], [Rating()], 1),
        lambda: glicko2.rate_match([Rating()], [Rating()], 0.7),
        lambda: glicko2.update(Rating(), [Result(Rating(), 1)], tau=0),
        lambda: glicko2.idle(Rating(), -1),
        lambda: glicko2.period(Rating(), []),
    ],
)
def test_bad_inputs_are_refused(build: object) -> None:
    with pytest.raises(RatingError):
        build()  # type: ignore[operator]


ratings = st.builds(
    Rating,
    st.floats(800, 2600),
    st.floats(30, 350),
    st.floats(0.03, 0.1),
)


@given(ratings, ratings, st.sampled_from([0.0, 0.5, 1.0]))
def test_winning_never_lowers_and_losing_never_raises(a: Rating, b: Rating, score: float) -> None:
    (new_a,), (new_b,) = glicko2.rate_match([a], [b], score)
    if score == 1:
        assert new_a.rating >= a.rating and new_b.rating <= b.rating
    if score == 0:
        assert new_a.rating <= a.rating and new_b.rating >= b.rating
    for new in (new_a, new_b):
        assert math.isfinite(new.rating) and 0 < new.rd <= glicko2.MAX_RD
        assert 0 < new.volatility < 1
