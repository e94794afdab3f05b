"""The arena: a time-boxed event of repeated pairings (pure; the server passes `now`).

- The event runs over [starts_at, ends_at) (e.g. 60 min). Players join before or during it,
  may leave (they keep their points and may come back) and are paired again as soon as their
  table finishes, while the event is running.
- Pairing (`pair`): the waiting players (joined, not at a table), those waiting longest first
  (free since they joined or their last table ended), then those with fewer games, then in
  standings order (points, rating, player id): every waiting player gets a turn, where
  seating the standings' top first let the players just freed take every table while others
  sat out the whole event. 1v1 takes each
  waiting player with the next one in that order who is not the opponent they just met; that
  opponent again only once both have waited `REMATCH_WAIT` (two players who finish together
  would otherwise meet every time while the rest of the arena plays on). 2v2 takes four players
  in that order and seats them by standing as (1st + 4th) against (2nd + 3rd), the most even
  split. Players left over wait for the next call. Players from one address (`pair`'s
  `addresses`) never meet at one table: one person's second account would feed the first its
  wins.
- Scoring (`finish`): a win is worth 2 points; a win when the player's last two results were
  wins (a streak of 2 or more) is worth double, 4. A loss scores 0 and ends the streak. A table
  cancelled by a server fault scores nothing and leaves streaks alone. An abandoner loses and is
  taken out of the pairing until they join again.
- The end: no table is started at or after `ends_at`; a table still playing when the event
  ends does not count (its players are freed with no points). `close` fixes the standings and
  the podium: the first three with at least one win.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

PlayerId = int
WIN_POINTS = 2
STREAK_FOR_BONUS = 2  # wins in a row before a win counts double
PODIUM_SIZE = 3
# seconds two 1v1 players who just met wait for someone else before they meet again
REMATCH_WAIT = 15.0


class ArenaError(ValueError):
    """Codes: bad_event, not_open, closed, already_joined, not_joined, unknown_table,
    bad_result, still_running."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Entrant:
    player: PlayerId
    rating: float
    seq: int  # join order
    active: bool = True
    busy: bool = False
    points: int = 0
    wins: int = 0
    games: int = 0
    streak: int = 0
    last_opponents: tuple[PlayerId, ...] = ()
    # when they were last free to be paired (joined, or their table ended); kept in memory only:
    # after a restart everyone waits from then on
    free_since: float = 0.0
    # why an entrant no longer active stopped being paired: `left` (they left the arena),
    # `abandoned` (they lost a table by abandonment), `absent` (none of a table's players came
    # to it); "" while active
    out: str = ""

    @property
    def on_fire(self) -> bool:
        """The next win counts double."""
        return self.streak >= STREAK_FOR_BONUS


@dataclass(frozen=True, slots=True)
class Table:
    id: int
    teams: tuple[tuple[PlayerId, ...], tuple[PlayerId, ...]]
    started_at: float

    @property
    def players(self) -> tuple[PlayerId, ...]:
        return self.teams[0] + self.teams[1]


@dataclass(frozen=True, slots=True)
class Standing:
    rank: int
    player: PlayerId
    points: int
    wins: int
    games: int
    streak: int
    on_fire: bool


@dataclass(frozen=True, slots=True)
class Arena:
    starts_at: float
    ends_at: float
    seats: int = 2
    entrants: tuple[Entrant, ...] = ()
    tables: tuple[Table, ...] = ()
    next_table: int = 1
    closed: bool = False
    podium: tuple[Standing, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.starts_at) and math.isfinite(self.ends_at)
                and self.starts_at < self.ends_at):
            raise ArenaError("bad_event", "An arena ends after it starts.")
        if self.seats not in (2, 4):
            raise ArenaError("bad_event", "Arena tables have 2 or 4 seats.")

    def running(self, now: float) -> bool:
        return self.starts_at <= now < self.ends_at and not self.closed

    def counts(self, now: float) -> bool:
        """Whether a table's result at `now` still scores: before the end, and not closed."""
        return now < self.ends_at and not self.closed

    def entrant(self, player: PlayerId) -> Entrant | None:
        return next((e for e in self.entrants if e.player == player), None)

    def _with(self, *changed: Entrant) -> tuple[Entrant, ...]:
        by_player = {e.player: e for e in changed}
        return tuple(by_player.get(e.player, e) for e in self.entrants)

    def join(self, player: PlayerId, rating: float, now: float) -> Arena:
        if self.closed:
            raise ArenaError("closed", "The arena is closed.")
        if now >= self.ends_at:
            raise ArenaError("not_open", "The arena is over.")
        if not math.isfinite(rating):
            raise ArenaError("bad_event", "A rating is a finite number.")
        known = self.entrant(player)
        if known is None:
            entrant = Entrant(player, float(rating), len(self.entrants), free_since=now)
            return replace(self, entrants=(*self.entrants, entrant))
        if known.active:
            raise ArenaError("already_joined", "Already in the arena.")
        free_since = known.free_since if known.busy else now
        return replace(self, entrants=self._with(replace(known, active=True, out="",
                                                         free_since=free_since)))

    def leave(self, player: PlayerId) -> Arena:
        """Stop being paired; a table in progress still finishes and counts."""
        known = self.entrant(player)
        if known is None or not known.active:
            raise ArenaError("not_joined", "Not in the arena (never joined, or left it).")
        return replace(self, entrants=self._with(replace(known, active=False, out="left")))

    def end_now(self, now: float) -> Arena:
        """An operator ends the event early (one made by mistake, or at the wrong time): it ends
        at `now`, so that the next `close` fixes it as any arena's end does (tables still playing
        do not count); one not started yet never starts."""
        if self.closed:
            raise ArenaError("closed", "The arena is already closed.")
        if now >= self.ends_at:
            return self  # over already: it closes at the next round
        return replace(self, starts_at=min(self.starts_at, now - 0.001), ends_at=now)

    def standings(self) -> tuple[Standing, ...]:
        ordered = sorted(self.entrants, key=lambda e: (-e.points, -e.wins, e.games, e.seq))
        return tuple(
            Standing(rank, e.player, e.points, e.wins, e.games, e.streak, e.on_fire)
            for rank, e in enumerate(ordered, start=1)
        )

    def pair(self, now: float, away: frozenset[PlayerId] = frozenset(),
             addresses: Mapping[PlayerId, str] | None = None
             ) -> tuple[Arena, tuple[Table, ...]]:
        """Seat every waiting player that can be seated now (those `away`, playing elsewhere,
        wait for a later round); players from one of `addresses` never at one table."""
        if not self.running(now):
            return self, ()
        known = addresses or {}

        def apart(e: Entrant, others: Sequence[Entrant]) -> bool:
            mine = known.get(e.player)
            return mine is None or all(known.get(o.player) != mine for o in others)

        def standing(e: Entrant) -> tuple[float, float, PlayerId]:
            return (-e.points, -e.rating, e.player)

        waiting = sorted(
            (e for e in self.entrants if e.active and not e.busy and e.player not in away),
            key=lambda e: (e.free_since, e.games, *standing(e)),
        )
        tables: list[Table] = []
        next_id = self.next_table
        while len(waiting) >= self.seats:
            first = waiting.pop(0)
            teams: tuple[tuple[PlayerId, ...], tuple[PlayerId, ...]]
            if self.seats == 2:
                pick = next((i for i, e in enumerate(waiting)
                             if e.player not in first.last_opponents and apart(e, [first])),
                            None)
                if pick is None:
                    pick = next((i for i, e in enumerate(waiting)
                                 if now - max(first.free_since, e.free_since) >= REMATCH_WAIT
                                 and apart(e, [first])), None)
                if pick is None:
                    continue  # only the opponent just met is free: both wait a little
                second = waiting.pop(pick)
                teams = ((first.player,), (second.player,))
            else:
                # the next three in the order, none from an address already at the table
                chosen = [first]
                for e in waiting:
                    if len(chosen) == 4:
                        break
                    if apart(e, chosen):
                        chosen.append(e)
                if len(chosen) < 4:
                    continue  # no table without two from one address: they wait
                for e in chosen[1:]:
                    waiting.remove(e)
                a, b, c, d = sorted(chosen, key=standing)
                teams = ((a.player, d.player), (b.player, c.player))
            tables.append(Table(next_id, teams, now))
            next_id += 1
        seated = {p for t in tables for p in t.players}
        entrants = tuple(replace(e, busy=True) if e.player in seated else e
                         for e in self.entrants)
        return (replace(self, entrants=entrants, tables=(*self.tables, *tables),
                        next_table=next_id), tuple(tables))

    def finish(
        self,
        table_id: int,
        winner: int | None,
        now: float,
        abandoned: Sequence[PlayerId] = (),
        gone: Sequence[PlayerId] = (),
    ) -> Arena:
        """A table's result: `winner` the winning team (0 or 1), None when cancelled by a fault.
        Players in `abandoned` lose and leave the arena's pairing; players in `gone` (a table
        none of its players came to) leave it without a loss: they join again to come back."""
        table = next((t for t in self.tables if t.id == table_id), None)
        if table is None:
            raise ArenaError("unknown_table", f"No table {table_id} is playing in the arena.")
        if winner not in (None, 0, 1) or isinstance(winner, bool):
            raise ArenaError("bad_result", "The winner is team 0, team 1, or None (cancelled).")
        if not set(abandoned) <= set(table.players):
            raise ArenaError("bad_result", "Only a player of the table can abandon it.")
        if winner is not None and any(p in table.teams[winner] for p in abandoned):
            raise ArenaError("bad_result", "The abandoning side cannot win.")
        counts = winner is not None and self.counts(now)
        changed = []
        for team, players in enumerate(table.teams):
            for player in players:
                e = self.entrant(player)
                assert e is not None
                out = e.out
                if e.active and player in abandoned:
                    out = "abandoned"
                elif e.active and player in gone:
                    out = "absent"
                e = replace(e, busy=False, last_opponents=table.teams[1 - team],
                            active=e.active and player not in abandoned and player not in gone,
                            free_since=now, out=out)
                if counts and team == winner:
                    gain = WIN_POINTS * (2 if e.on_fire else 1)
                    e = replace(e, points=e.points + gain, wins=e.wins + 1, games=e.games + 1,
                                streak=e.streak + 1)
                elif counts:
                    e = replace(e, games=e.games + 1, streak=0)
                changed.append(e)
        return replace(self, entrants=self._with(*changed),
                       tables=tuple(t for t in self.tables if t.id != table_id))

    def close(self, now: float) -> Arena:
        """End the event at or after `ends_at`: unfinished tables do not count; the podium is
        the first three of the standings with at least one win."""
        if self.closed:
            raise ArenaError("closed", "The arena is already closed.")
        if now < self.ends_at:
            raise ArenaError("still_running", "The arena closes when its time is up.")
        freed = tuple(replace(e, busy=False) for e in self.entrants)
        ended = replace(self, entrants=freed, tables=(), closed=True)
        podium = tuple(s for s in ended.standings() if s.wins > 0)[:PODIUM_SIZE]
        return replace(ended, podium=podium)
