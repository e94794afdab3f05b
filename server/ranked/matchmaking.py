"""The ranked queues: pure and clock-injected (the server passes `now`; nothing here reads time).

One queue per variant and seat count (`QueueKey`): 1v1, and 2v2 where a ticket is a solo player
or a duo who queued together. The acceptable rating gap of a ticket widens with its waiting time:

    window(waited) = min(base + step * floor(waited / every), cap)     (default 100, 50, 10 s, 400)

Tickets may meet when the gap between their ratings fits inside BOTH windows (each side agreed to
a gap that wide). A duo's rating is its players' mean.

`pair(now)` is deterministic: the longest-waiting ticket (earliest `joined_at`, then queue order)
is served first and takes the closest acceptable ratings (ties: the longer waiting). In 2v2,
for each way to fill the other seats (a duo, or solos), it takes the closest tickets of those
sizes that are acceptable to every member already taken, and keeps the table whose farthest
member is nearest the anchor. Duos stay together; four solos are split so the two teams' summed
ratings are as close as possible. The first team holds
the longest-waiting ticket; seats alternate teams (team 0 on seats 0 and 2). A player is in at
most one ticket of one queue.

Tickets whose players come from one address (`pair`'s `addresses`: each player's latest, as the
server saw it) never meet at one table: one person's accounts would otherwise be paired with
each other to hand over chips and rating (a duo, one ticket, plays together as ever).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import combinations

from truco.variants import Variant

PlayerId = int


class MatchmakingError(ValueError):
    """Codes: bad_queue, bad_ticket, already_queued, not_queued."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class QueueKey:
    variant: Variant
    seats: int  # 2: 1v1; 4: 2v2

    def __post_init__(self) -> None:
        if not isinstance(self.variant, Variant):
            raise MatchmakingError("bad_queue", f"Unknown variant {self.variant!r}.")
        if self.seats not in (2, 4):
            raise MatchmakingError("bad_queue", "A ranked table has 2 or 4 seats.")

    @property
    def team_size(self) -> int:
        return self.seats // 2


@dataclass(frozen=True, slots=True)
class Window:
    """How far apart two ratings may be, by seconds waited."""

    base: float = 100.0
    step: float = 50.0
    every: float = 10.0
    cap: float = 400.0

    def __post_init__(self) -> None:
        if not (0 <= self.base <= self.cap and self.step >= 0 and self.every > 0):
            raise MatchmakingError("bad_queue", "A window needs 0 <= base <= cap, step >= 0, "
                                                "every > 0.")

    def width(self, waited: float) -> float:
        steps = math.floor(max(0.0, waited) / self.every)
        return min(self.base + self.step * steps, self.cap)


@dataclass(frozen=True, slots=True)
class Ticket:
    key: QueueKey
    players: tuple[PlayerId, ...]  # one, or a duo of two in 2v2
    ratings: tuple[float, ...]
    joined_at: float
    seq: int  # queue order, breaks ties between equal join times

    @property
    def rating(self) -> float:
        return sum(self.ratings) / len(self.ratings)


@dataclass(frozen=True, slots=True)
class Match:
    key: QueueKey
    teams: tuple[tuple[PlayerId, ...], tuple[PlayerId, ...]]
    tickets: tuple[Ticket, ...]

    @property
    def seating(self) -> tuple[PlayerId, ...]:
        """Players by seat: team 0 on the even seats, team 1 on the odd ones."""
        a, b = self.teams
        return tuple(p for pair in zip(a, b, strict=True) for p in pair)


def _order(ticket: Ticket) -> tuple[float, int]:
    return (ticket.joined_at, ticket.seq)


@dataclass(frozen=True, slots=True)
class Matchmaker:
    window: Window = Window()
    tickets: tuple[Ticket, ...] = ()
    next_seq: int = field(default=0)
    # each queued player's ticket, built at the first lookup (every queue page asks for its
    # player's state every 2 s: a scan of the tickets cost 38 us at 2,000 of them)
    _by_player: dict[PlayerId, Ticket] | None = field(
        default=None, init=False, repr=False, compare=False)

    def queued(self, player: PlayerId) -> Ticket | None:
        index = self._by_player
        if index is None:
            index = {p: t for t in self.tickets for p in t.players}
            object.__setattr__(self, "_by_player", index)
        return index.get(player)

    def enqueue(
        self,
        key: QueueKey,
        players: Sequence[tuple[PlayerId, float]],
        now: float,
    ) -> Matchmaker:
        """Queue a solo player, or in 2v2 a duo, as (player, rating) pairs."""
        if not 1 <= len(players) <= key.team_size:
            raise MatchmakingError(
                "bad_ticket",
                "1v1 takes one player; 2v2 takes a solo player or a duo.",
            )
        ids = tuple(p for p, _ in players)
        ratings = tuple(float(r) for _, r in players)
        if len(set(ids)) != len(ids):
            raise MatchmakingError("bad_ticket", "A duo is two different players.")
        if not all(math.isfinite(r) for r in ratings) or not math.isfinite(now):
            raise MatchmakingError("bad_ticket", "Ratings and times must be finite numbers.")
        for player in ids:
            if self.queued(player) is not None:
                raise MatchmakingError("already_queued", "Already queued.")
        ticket = Ticket(key, ids, ratings, now, self.next_seq)
        queue = replace(self, tickets=(*self.tickets, ticket), next_seq=self.next_seq + 1)
        if self._by_player is not None:  # (built by the check above) one ticket more
            object.__setattr__(queue, "_by_player",
                               {**self._by_player, **dict.fromkeys(ids, ticket)})
        return queue

    def leave(self, player: PlayerId) -> tuple[Matchmaker, Ticket]:
        """Take the player's ticket out of the queue (a duo leaves together)."""
        ticket = self.queued(player)
        if ticket is None:
            raise MatchmakingError("not_queued", "Not queued.")
        return replace(self, tickets=tuple(t for t in self.tickets if t is not ticket)), ticket

    def acceptable(self, a: Ticket, b: Ticket, now: float) -> bool:
        gap = abs(a.rating - b.rating)
        return gap <= min(self.window.width(now - a.joined_at),
                          self.window.width(now - b.joined_at))

    def pair(self, now: float, addresses: Mapping[PlayerId, str] | None = None
             ) -> tuple[Matchmaker, tuple[Match, ...]]:
        """Every match that can be made now, and the queue without their tickets; tickets with
        a player each at one of `addresses` never meet (a player not in it is told apart from
        everyone)."""
        known = addresses or {}
        waiting = sorted(self.tickets, key=_order)
        # per queue, the tickets by rating: an anchor looks outwards from its own place, nearest
        # ratings first, and stops where its own window ends
        books: dict[QueueKey, tuple[list[Ticket], list[tuple[float, int]]]] = {}
        sizes: dict[QueueKey, Counter[int]] = {}  # solos and duos still waiting, per queue
        for ticket in sorted(waiting, key=lambda t: (t.rating, t.seq)):
            book = books.setdefault(ticket.key, ([], []))
            book[0].append(ticket)
            book[1].append((ticket.rating, ticket.seq))
            sizes.setdefault(ticket.key, Counter())[len(ticket.players)] += 1
        taken: set[int] = set()
        matches: list[Match] = []
        for anchor in waiting:
            if anchor.seq in taken:
                continue
            book = books[anchor.key]
            others = sizes[anchor.key].copy()
            others[len(anchor.players)] -= 1
            nearest = partial(self._nearest, anchor, book[0], book[1], now, known)
            group = self._gather(anchor, nearest, others, now, known)
            if group is None:
                continue
            for ticket in group:
                sizes[anchor.key][len(ticket.players)] -= 1
                del_at = bisect_left(book[1], (ticket.rating, ticket.seq))
                del book[0][del_at], book[1][del_at]
            taken.update(t.seq for t in group)
            matches.append(Match(anchor.key, _teams(group), tuple(group)))
        rest = tuple(t for t in self.tickets if t.seq not in taken)
        return replace(self, tickets=rest), tuple(matches)

    def _nearest(
        self, anchor: Ticket, tickets: list[Ticket], keys: list[tuple[float, int]], now: float,
        addresses: Mapping[PlayerId, str],
    ) -> Iterator[Ticket]:
        """The tickets acceptable to the anchor, by rating gap; equal gaps longest-waiting first."""
        reach = self.window.width(now - anchor.joined_at)
        at = bisect_left(keys, (anchor.rating, anchor.seq))
        left, right = at - 1, at + 1
        while True:
            left_gap = anchor.rating - tickets[left].rating if left >= 0 else math.inf
            right_gap = tickets[right].rating - anchor.rating if right < len(tickets) else math.inf
            gap = min(left_gap, right_gap)
            if gap > reach:
                return
            tied: list[Ticket] = []
            while left >= 0 and anchor.rating - tickets[left].rating == gap:
                tied.append(tickets[left])
                left -= 1
            while right < len(tickets) and tickets[right].rating - anchor.rating == gap:
                tied.append(tickets[right])
                right += 1
            for ticket in sorted(tied, key=_order):
                if self.acceptable(anchor, ticket, now) and apart(anchor, ticket, addresses):
                    yield ticket

    def _gather(
        self,
        anchor: Ticket,
        candidates: Callable[[], Iterator[Ticket]],
        available: Counter[int],
        now: float,
        addresses: Mapping[PlayerId, str],
    ) -> list[Ticket] | None:
        """The anchor's table: for each way to fill the remaining seats with solos and duos, take
        the closest candidates of those sizes that accept every member so far; of the tables so
        found, the one whose farthest member is closest to the anchor (then the smaller sum of
        gaps, then the longer waiting members)."""
        found: list[list[Ticket]] = []
        for sizes in _partitions(anchor.key.seats - len(anchor.players), anchor.key.team_size):
            needed = list(sizes)
            if any(available[size] < needed.count(size) for size in set(needed)):
                continue  # not enough solos or duos queued: no need to look
            group = [anchor]
            for ticket in candidates():
                if not needed:
                    break
                size = len(ticket.players)
                if size in needed and all(self.acceptable(ticket, m, now)
                                          and apart(ticket, m, addresses) for m in group):
                    group.append(ticket)
                    needed.remove(size)
            if not needed:
                found.append(group)
        if not found:
            return None

        def rank(group: list[Ticket]) -> tuple[float, float, list[tuple[float, int]]]:
            gaps = [abs(t.rating - anchor.rating) for t in group[1:]]
            return (max(gaps), sum(gaps), sorted(_order(t) for t in group[1:]))

        return min(found, key=rank)


def apart(a: Ticket, b: Ticket, addresses: Mapping[PlayerId, str]) -> bool:
    """Whether no player of `a` came from the address of a player of `b`."""
    mine = {addresses[p] for p in a.players if p in addresses}
    return not mine or not any(addresses.get(p) in mine for p in b.players)


def _partitions(total: int, largest: int) -> list[tuple[int, ...]]:
    """The ways to write `total` as a sum of ticket sizes up to `largest`, largest parts first."""
    if total == 0:
        return [()]
    return [
        (part, *rest)
        for part in range(min(total, largest), 0, -1)
        for rest in _partitions(total - part, part)
    ]


def _teams(group: list[Ticket]) -> tuple[tuple[PlayerId, ...], tuple[PlayerId, ...]]:
    anchor = group[0]
    if anchor.key.team_size == 1:
        return (anchor.players, group[1].players)
    # every way to split the tickets into two teams of two that keeps duos whole, anchor first
    entries = [(p, r, t.seq) for t in group for p, r in zip(t.players, t.ratings, strict=True)]
    best: tuple[float, tuple[PlayerId, ...], tuple[PlayerId, ...]] | None = None
    for team in combinations(range(4), 2):
        if 0 not in team:
            continue
        chosen = [entries[i] for i in team]
        others = [entries[i] for i in range(4) if i not in team]
        if any(_splits_a_duo(chosen, others, t) for t in group):
            continue
        gap = abs(sum(r for _, r, _ in chosen) - sum(r for _, r, _ in others))
        if best is None or gap < best[0]:
            best = (gap, tuple(p for p, _, _ in chosen), tuple(p for p, _, _ in others))
    assert best is not None  # at most two duos among four players: a split always exists
    return best[1], best[2]


def _splits_a_duo(
    a: list[tuple[PlayerId, float, int]], b: list[tuple[PlayerId, float, int]], ticket: Ticket
) -> bool:
    return len(ticket.players) == 2 and (
        {p for p, _, _ in a} & set(ticket.players) != set()
        and {p for p, _, _ in b} & set(ticket.players) != set()
    )
