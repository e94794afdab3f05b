"""Ranked queues: windows that widen with waiting, closest pairing, duos kept whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ranked.matchmaking import (
    Matchmaker,
    MatchmakingError,
    QueueKey,
    Window,
)
from truco.variants import Variant

SOLO = QueueKey(Variant.PAULISTA, 2)
DUOS = QueueKey(Variant.PAULISTA, 4)
T0 = 1_800_000_000.0


def queue(*entries: tuple[QueueKey, list[tuple[int, float]], float]) -> Matchmaker:
    mm = Matchmaker()
    for key, players, at in entries:
        mm = mm.enqueue(key, players, T0 + at)
    return mm


def test_window_widens_by_50_every_10_seconds_up_to_the_cap() -> None:
    w = Window()
    assert [w.width(s) for s in (0, 9.99, 10, 19.99, 20, 50, 60, 600)] == [
        100, 100, 150, 150, 200, 350, 400, 400,
    ]
    assert w.width(-5) == 100  # a clock that stepped back never narrows below the base
    with pytest.raises(MatchmakingError):
        Window(base=500, cap=400)
    with pytest.raises(MatchmakingError):
        Window(every=0)


def test_close_ratings_pair_at_once() -> None:
    mm, matches = queue((SOLO, [(1, 1500)], 0), (SOLO, [(2, 1600)], 3)).pair(T0 + 3)
    assert [m.teams for m in matches] == [((1,), (2,))]
    assert mm.tickets == ()


def test_far_ratings_wait_until_both_windows_are_wide_enough() -> None:
    mm = queue((SOLO, [(1, 1500)], 0), (SOLO, [(2, 1740)], 0))
    for t in (0, 9, 19.9):
        assert mm.pair(T0 + t)[1] == ()  # gap 240 > 100, 150
    # at 30 s both windows are 250
    assert [m.teams for m in mm.pair(T0 + 30)[1]] == [((1,), (2,))]
    # the newcomer's narrow window holds the match back, even if the other waited long
    late = queue((SOLO, [(1, 1500)], 0), (SOLO, [(2, 1740)], 60))
    assert late.pair(T0 + 60)[1] == ()
    assert late.pair(T0 + 79.9)[1] == ()
    assert len(late.pair(T0 + 90)[1]) == 1


def test_the_gap_never_exceeds_the_cap() -> None:
    mm = queue((SOLO, [(1, 1000)], 0), (SOLO, [(2, 1401)], 0))
    assert mm.pair(T0 + 100_000)[1] == ()


def test_longest_waiting_goes_first_and_takes_the_closest_rating() -> None:
    mm = queue(
        (SOLO, [(1, 1500)], 0),
        (SOLO, [(2, 1560)], 1),
        (SOLO, [(3, 1520)], 2),
        (SOLO, [(4, 1530)], 3),
    )
    mm, matches = mm.pair(T0 + 3)
    assert [m.teams for m in matches] == [((1,), (3,)), ((2,), (4,))]
    # equal gaps: the longer waiting opponent
    _, matches = queue(
        (SOLO, [(1, 1500)], 0), (SOLO, [(2, 1550)], 2), (SOLO, [(3, 1450)], 1)
    ).pair(T0 + 2)
    assert matches[0].teams == ((1,), (3,))


def test_queues_never_mix() -> None:
    other = QueueKey(Variant.MINEIRO, 2)
    mm = queue((SOLO, [(1, 1500)], 0), (other, [(2, 1500)], 0))
    assert mm.pair(T0 + 500)[1] == ()


def test_four_solos_make_the_most_even_teams() -> None:
    mm = queue(
        (DUOS, [(1, 1500)], 0),
        (DUOS, [(2, 1510)], 1),
        (DUOS, [(3, 1600)], 2),
        (DUOS, [(4, 1590)], 3),
    )
    _, (match,) = mm.pair(T0 + 3)
    assert match.teams == ((1, 3), (2, 4))
    assert match.seating == (1, 2, 3, 4)


def test_a_duo_stays_together() -> None:
    mm = queue(
        (DUOS, [(1, 1500), (2, 1560)], 0),  # a duo rated 1530
        (DUOS, [(3, 1520)], 1),
        (DUOS, [(4, 1540)], 2),
    )
    _, (match,) = mm.pair(T0 + 2)
    assert match.teams == ((1, 2), (3, 4))
    # two duos play each other
    mm = queue((DUOS, [(5, 1500), (6, 1500)], 0), (DUOS, [(7, 1480), (8, 1560)], 0))
    _, (match,) = mm.pair(T0)
    assert match.teams == ((5, 6), (7, 8))


def test_a_duo_and_a_single_solo_do_not_make_a_table() -> None:
    mm = queue((DUOS, [(1, 1500), (2, 1500)], 0), (DUOS, [(3, 1500)], 0))
    assert mm.pair(T0 + 100)[1] == ()
    # two duos plus one solo: the duos meet and the solo keeps waiting
    mm = mm.enqueue(DUOS, [(4, 1500), (5, 1500)], T0 + 1)
    mm, (match,) = mm.pair(T0 + 1)
    assert match.teams == ((1, 2), (4, 5))
    assert [t.players for t in mm.tickets] == [(3,)]


def test_every_member_of_a_table_must_accept_every_other() -> None:
    # 1 accepts 2 (gap 90) and 3 (gap 90), but 2 and 3 are 180 apart
    mm = queue(
        (DUOS, [(1, 1500)], 0), (DUOS, [(2, 1410)], 0), (DUOS, [(3, 1590)], 0),
        (DUOS, [(4, 1500)], 0),
    )
    assert mm.pair(T0)[1] == ()
    assert len(mm.pair(T0 + 20)[1]) == 1


def test_no_player_twice_and_leaving() -> None:
    mm = queue((SOLO, [(1, 1500)], 0), (DUOS, [(2, 1500), (3, 1500)], 0))
    for key, players in [(SOLO, [(1, 1500)]), (DUOS, [(1, 1500)]), (DUOS, [(4, 1), (3, 1)])]:
        with pytest.raises(MatchmakingError) as err:
            mm.enqueue(key, players, T0)
        assert err.value.code == "already_queued"
    mm, ticket = mm.leave(3)
    assert ticket.players == (2, 3)  # a duo leaves together
    assert mm.queued(2) is None and mm.queued(1) is not None
    with pytest.raises(MatchmakingError) as err:
        mm.leave(3)
    assert err.value.code == "not_queued"
    mm = mm.enqueue(DUOS, [(3, 1500)], T0)  # free to queue again


@pytest.mark.parametrize(
    ("key", "players"),
    [
        (SOLO, [(1, 1500), (2, 1500)]),  # no duos in 1v1
        (DUOS, [(1, 1500), (2, 1500), (3, 1500)]),
        (DUOS, [(1, 1500), (1, 1500)]),
        (SOLO, []),
        (SOLO, [(1, float("nan"))]),
    ],
)
def test_bad_tickets_are_refused(key: QueueKey, players: list[tuple[int, float]]) -> None:
    with pytest.raises(MatchmakingError):
        Matchmaker().enqueue(key, players, T0)


def test_bad_queues_are_refused() -> None:
    with pytest.raises(MatchmakingError):
        QueueKey(Variant.ARGENTINO, 3)
    with pytest.raises(MatchmakingError):
        QueueKey("truco", 2)  # type: ignore[arg-type]


tickets = st.lists(
    st.tuples(
        st.sampled_from([SOLO, DUOS, QueueKey(Variant.ARGENTINO, 4)]),
        st.booleans(),
        st.floats(1000, 2000),
        st.floats(1000, 2000),
        st.floats(0, 120),
    ),
    max_size=30,
)


@settings(max_examples=150)
@given(tickets, st.floats(0, 200))
def test_pairing_invariants(entries: list[tuple[QueueKey, bool, float, float, float]],
                            later: float) -> None:
    mm = Matchmaker()
    next_id = 1
    for key, duo, r1, r2, at in entries:
        players = [(next_id, r1)] + ([(next_id + 1, r2)] if duo and key.seats == 4 else [])
        next_id += len(players)
        mm = mm.enqueue(key, players, T0 + at)
    now = T0 + 120 + later
    rest, matches = mm.pair(now)
    # deterministic
    assert mm.pair(now) == (rest, matches)
    seen: list[int] = []
    for match in matches:
        assert all(len(team) == match.key.team_size for team in match.teams)
        for t in match.tickets:
            assert t.key == match.key
            assert any(set(t.players) <= set(team) for team in match.teams)  # duos whole
            assert all(mm.acceptable(t, u, now) for u in match.tickets if u is not t)
        seen.extend(match.seating)
    assert len(seen) == len(set(seen))
    assert sorted(seen + [p for t in rest.tickets for p in t.players]) == list(range(1, next_id))
    # nothing left in the queue could still be paired now
    assert rest.pair(now)[1] == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["join", "duo", "leave", "pair"]),
                          st.integers(0, 11), st.floats(1000, 2000)), max_size=40))
def test_who_is_queued_is_what_the_tickets_say(
        steps: list[tuple[str, int, float]]) -> None:
    # `queued` reads an index of the tickets (built at the first lookup, carried by enqueue):
    # through any joins, leaves and pairings it answers what a scan of the tickets would
    mm = Matchmaker()
    clock = T0
    for kind, player, rating in steps:
        clock += 7.0
        try:
            if kind == "join":
                mm = mm.enqueue(SOLO if player % 2 else DUOS, [(player, rating)], clock)
            elif kind == "duo":
                mm = mm.enqueue(DUOS, [(player, rating), ((player + 1) % 12, rating)], clock)
            elif kind == "leave":
                mm, _ = mm.leave(player)
            else:
                mm, _ = mm.pair(clock)
        except MatchmakingError:
            pass
        for someone in range(12):
            scanned = next((t for t in mm.tickets if someone in t.players), None)
            assert mm.queued(someone) is scanned


def test_tickets_from_one_address_never_meet() -> None:
    # a review: one person's two accounts queued together were paired with each other, one
    # throwing every hand to hand the other its stake and rating points
    home, away = {1: "203.0.113.5", 2: "203.0.113.5"}, {3: "198.51.100.7"}
    mm = queue((SOLO, [(1, 1500)], 0), (SOLO, [(2, 1500)], 1))
    assert mm.pair(T0 + 600, home)[1] == ()  # any wait: never
    assert len(mm.pair(T0 + 1)[1]) == 1  # told nothing of their addresses: paired
    # a third player elsewhere meets the longest-waiting one, however farther their ratings
    mm = queue((SOLO, [(1, 1500)], 0), (SOLO, [(2, 1500)], 1), (SOLO, [(3, 1580)], 2))
    mm, matches = mm.pair(T0 + 2, {**home, **away})
    assert [m.teams for m in matches] == [((1,), (3,))]
    assert [t.players for t in mm.tickets] == [(2,)]
    # 2v2: a duo from one address plays together as ever; two solos from one address are never
    # at one table, on either side
    duo = queue((DUOS, [(1, 1500), (2, 1500)], 0), (DUOS, [(3, 1500)], 1),
                (DUOS, [(4, 1500)], 2))
    assert len(duo.pair(T0 + 2, {1: "a", 2: "a", 3: "b", 4: "c"})[1]) == 1
    assert duo.pair(T0 + 2, {1: "a", 2: "a", 3: "b", 4: "b"})[1] == ()
    assert duo.pair(T0 + 2, {1: "a", 2: "b", 3: "b", 4: "c"})[1] == ()
    solos = queue(*((DUOS, [(p, 1500)], p) for p in range(1, 6)))
    _, matches = solos.pair(T0 + 6, {1: "a", 2: "a", 3: "b", 4: "c", 5: "d"})
    assert [sorted(m.seating) for m in matches] == [[1, 3, 4, 5]]
