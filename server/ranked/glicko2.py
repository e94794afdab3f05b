"""Glicko-2, step by step as in Glickman's "Example of the Glicko-2 system" (2013).

One rating period is one ranked match: when a match ends each player is updated from that single
result. A player who sits out whole periods only sees their deviation grow (`idle`).

The steps below are numbered as in the paper so the code can be read side by side with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# the Glicko-1 <-> Glicko-2 scale factor of the paper (400 / ln 10)
SCALE = 173.7178
DEFAULT_RATING = 1500.0
DEFAULT_RD = 350.0
DEFAULT_VOLATILITY = 0.06
# the system constant; the paper's example uses 0.5 (it suggests 0.3 to 1.2)
TAU = 0.5
# convergence tolerance of the volatility iteration (step 5)
EPSILON = 0.000001
# a deviation never grows past a newcomer's: an idle player is at worst as unknown as a new one
MAX_RD = DEFAULT_RD
# below this deviation a rating is established; above it, leaderboards mark it provisional
PROVISIONAL_RD = 110.0


class RatingError(ValueError):
    """A rating or result that is not a valid Glicko-2 input."""


@dataclass(frozen=True, slots=True)
class Rating:
    """A rating on the Glicko-1 scale (what players see): r, RD and the volatility sigma."""

    rating: float = DEFAULT_RATING
    rd: float = DEFAULT_RD
    volatility: float = DEFAULT_VOLATILITY

    def __post_init__(self) -> None:
        if not math.isfinite(self.rating):
            raise RatingError(f"rating must be a finite number, got {self.rating!r}")
        if not (math.isfinite(self.rd) and self.rd > 0):
            raise RatingError(f"rating deviation must be positive, got {self.rd!r}")
        if not (math.isfinite(self.volatility) and self.volatility > 0):
            raise RatingError(f"volatility must be positive, got {self.volatility!r}")

    @property
    def provisional(self) -> bool:
        return self.rd > PROVISIONAL_RD


@dataclass(frozen=True, slots=True)
class Result:
    """One game of the period against `opponent`: score 1 win, 0.5 draw, 0 loss."""

    opponent: Rating
    score: float

    def __post_init__(self) -> None:
        if self.score not in (0.0, 0.5, 1.0):
            raise RatingError(f"score must be 1, 0.5 or 0, got {self.score!r}")


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _e(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def _new_volatility(phi: float, sigma: float, delta: float, v: float, tau: float) -> float:
    """Step 5: sigma' by the Illinois variant of regula falsi, as in the paper."""
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        num = ex * (delta * delta - phi * phi - v - ex)
        den = 2.0 * (phi * phi + v + ex) ** 2
        return num / den - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


@dataclass(frozen=True, slots=True)
class Period:
    """The intermediate quantities of one rating period on the Glicko-2 scale (steps 3 to 7)."""

    v: float  # step 3: estimated variance of the rating from the games alone
    delta: float  # step 4: estimated improvement
    volatility: float  # step 5: sigma'
    phi_star: float  # step 6: pre-period deviation
    mu: float  # step 7: mu'
    phi: float  # step 7: phi'

    def rating(self) -> Rating:
        """Step 8: back to the Glicko-1 scale."""
        return Rating(
            rating=SCALE * self.mu + DEFAULT_RATING,
            rd=min(SCALE * self.phi, MAX_RD),
            volatility=self.volatility,
        )


def period(player: Rating, results: Sequence[Result], tau: float = TAU) -> Period:
    """Steps 2 to 7 for a period with at least one game."""
    if not (math.isfinite(tau) and tau > 0):
        raise RatingError(f"tau must be positive, got {tau!r}")
    if not results:
        raise RatingError("a rating period with games needs at least one result")
    # step 2: to the Glicko-2 scale
    mu = (player.rating - DEFAULT_RATING) / SCALE
    phi = player.rd / SCALE
    v_inv = 0.0
    delta_sum = 0.0  # step 4's sum, before it is multiplied by v
    for result in results:
        mu_j = (result.opponent.rating - DEFAULT_RATING) / SCALE
        phi_j = result.opponent.rd / SCALE
        g = _g(phi_j)
        e = _e(mu, mu_j, phi_j)
        v_inv += g * g * e * (1.0 - e)
        delta_sum += g * (result.score - e)
    v = 1.0 / v_inv
    delta = v * delta_sum
    sigma_new = _new_volatility(phi, player.volatility, delta, v, tau)
    phi_star = math.sqrt(phi * phi + sigma_new * sigma_new)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * delta_sum
    return Period(v, delta, sigma_new, phi_star, mu_new, phi_new)


def update(player: Rating, results: Sequence[Result], tau: float = TAU) -> Rating:
    """The player's rating after one rating period with these results.

    With no results the period was idle: only the deviation grows (step 6 alone).
    """
    if not results:
        return idle(player)
    return period(player, results, tau).rating()


def idle(player: Rating, periods: int = 1) -> Rating:
    """The rating after `periods` rating periods without games: phi' = sqrt(phi^2 + n sigma^2).

    Applying step 6 n times with an unchanged sigma is the same as adding n sigma^2 at once.
    """
    if periods < 0:
        raise RatingError(f"idle periods must not be negative, got {periods}")
    phi = player.rd / SCALE
    phi_new = math.sqrt(phi * phi + periods * player.volatility * player.volatility)
    return Rating(player.rating, min(SCALE * phi_new, MAX_RD), player.volatility)


def team_average(team: Sequence[Rating]) -> Rating:
    """A team seen as one opponent: the mean rating and the mean deviation of its players."""
    if not team:
        raise RatingError("a team needs at least one player")
    n = len(team)
    return Rating(
        rating=sum(p.rating for p in team) / n,
        rd=sum(p.rd for p in team) / n,
        volatility=sum(p.volatility for p in team) / n,
    )


def rate_match(
    team_a: Sequence[Rating], team_b: Sequence[Rating], score_a: float, tau: float = TAU
) -> tuple[tuple[Rating, ...], tuple[Rating, ...]]:
    """New ratings after a match of team A against team B (1v1: one player each).

    Each player is rated on the team result against the other team's average rating and RD
    (`team_average`), so partners keep their own ratings and deviations.
    """
    if score_a not in (0.0, 0.5, 1.0):
        raise RatingError(f"score must be 1, 0.5 or 0, got {score_a!r}")
    versus_b = team_average(team_b)
    versus_a = team_average(team_a)
    new_a = tuple(update(p, [Result(versus_b, score_a)], tau) for p in team_a)
    new_b = tuple(update(p, [Result(versus_a, 1.0 - score_a)], tau) for p in team_b)
    return new_a, new_b
