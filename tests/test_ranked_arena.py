"""The arena: joining, repeated pairing, streak scoring, the end and the podium."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ranked.arena import REMATCH_WAIT, Arena, ArenaError, Entrant

START = 1_800_000_000.0
END = START + 3600.0


def arena(*ratings: float, seats: int = 2) -> Arena:
    a = Arena(START, END, seats)
    for player, rating in enumerate(ratings, start=1):
        a = a.join(player, rating, START - 60)
    return a


def play(a: Arena, now: float, winners: set[int]) -> Arena:
    """Pair everyone waiting and finish every table: the team holding a player of `winners`."""
    a, tables = a.pair(now)
    for t in tables:
        winner = 0 if set(t.teams[0]) & winners else 1
        a = a.finish(t.id, winner, now + 60)
    return a


def test_nothing_is_paired_before_the_start_or_after_the_end() -> None:
    a = arena(1500, 1500)
    assert a.pair(START - 1)[1] == ()
    assert a.pair(END)[1] == ()
    assert len(a.pair(START)[1]) == 1


def test_pairing_follows_the_standings_and_seats_everyone_once() -> None:
    a = arena(1500, 1900, 1700, 1600, 1200)
    a, tables = a.pair(START)
    # by rating while nobody has points: 2-3, 4-1; player 5 waits
    assert [t.teams for t in tables] == [((2,), (3,)), ((4,), (1,))]
    assert a.entrant(5) is not None and not a.entrant(5).busy  # type: ignore[union-attr]
    assert a.pair(START + 1)[1] == ()  # one player cannot make a table


def test_players_are_paired_again_as_they_finish_avoiding_a_rematch() -> None:
    a = arena(1500, 1500, 1500, 1500)
    a, tables = a.pair(START)
    assert [t.teams for t in tables] == [((1,), (2,)), ((3,), (4,))]
    a = a.finish(tables[0].id, 0, START + 300)
    # 1 and 2 are free again while 3 and 4 still play: they wait for someone else a little
    assert a.pair(START + 300)[1] == ()
    assert a.pair(START + 300 + REMATCH_WAIT - 1)[1] == ()
    # 3 and 4 finish meanwhile: the four mix (a review saw two pairs meet each other all event)
    a = a.finish(tables[1].id, 1, START + 305)
    a, mixed = a.pair(START + 305)
    assert sorted(sorted(t.players) for t in mixed) in ([[1, 3], [2, 4]], [[1, 4], [2, 3]])
    for table in mixed:
        a = a.finish(table.id, 0, START + 600)
    # alone together long enough, the two who just met play again
    b = arena(1500, 1500, 1500, 1500)
    b, tables = b.pair(START)
    b = b.finish(tables[0].id, 0, START + 300)
    b, (again,) = b.pair(START + 300 + REMATCH_WAIT)
    assert again.teams == ((1,), (2,))


def test_everyone_gets_turns_when_there_are_more_players_than_seats() -> None:
    # a review's 2x2 arena of 7: the four just freed always ranked above the three waiting and
    # took the only table all event (25 games each, 3 for the others)
    a = arena(*(1500 + 10 * n for n in range(7)), seats=4)
    now = START
    for _ in range(14):
        a, tables = a.pair(now)
        assert len(tables) == 1
        now += 60
        a = a.finish(tables[0].id, 0, now)
    games = sorted(e.games for e in a.entrants)
    assert games[-1] - games[0] <= 1, games
    # 1x1 with 3: the leader does not play every table
    b = arena(2000, 1500, 1400)
    now = START
    for _ in range(12):
        b, tables = b.pair(now)
        for table in tables:
            b = b.finish(table.id, 0 if 1 in table.teams[0] else 1, now + 60)
        now += 60 + REMATCH_WAIT
    games = sorted(e.games for e in b.entrants)
    assert games[-1] - games[0] <= 1, games


def test_streak_bonus_doubles_wins_from_the_third_in_a_row() -> None:
    a = arena(2000, 1500, 1500, 1500)
    points = []
    for n in range(4):
        a = play(a, START + 600 * n, {1})
        entrant = a.entrant(1)
        assert entrant is not None
        points.append(entrant.points)
    assert points == [2, 4, 8, 12]
    assert a.standings()[0].on_fire and a.standings()[0].streak == 4
    # a loss ends the streak; the next win is worth 2 again
    a, (table, *_) = a.pair(START + 3000)
    a = a.finish(table.id, 1 if 1 in table.teams[0] else 0, START + 3010)
    one = a.entrant(1)
    assert one is not None and one.streak == 0 and one.points == 12 and not one.on_fire


def test_a_cancelled_table_scores_nothing_and_keeps_streaks() -> None:
    a = play(arena(1500, 1400), START, {1})
    a = play(a, START + 100, {1})
    a, (table,) = a.pair(START + 200)
    a = a.finish(table.id, None, START + 250)
    one = a.entrant(1)
    assert one is not None and (one.points, one.games, one.streak) == (4, 2, 2)


def test_abandoners_lose_and_leave_the_pairing_until_they_rejoin() -> None:
    a = arena(1500, 1500, 1500)
    a, (table,) = a.pair(START)
    loser = table.teams[1][0]
    with pytest.raises(ArenaError):
        a.finish(table.id, 1, START + 10, abandoned=[loser])  # the abandoning side cannot win
    a = a.finish(table.id, 0, START + 10, abandoned=[loser])
    gone = a.entrant(loser)
    assert gone is not None and not gone.active and gone.games == 1 and gone.out == "abandoned"
    a, tables = a.pair(START + 10)
    assert all(loser not in t.players for t in tables)
    a = a.join(loser, 1500, START + 20)
    back = a.entrant(loser)
    assert back is not None and back.active and back.out == ""


def test_leaving_and_rejoining_keeps_points() -> None:
    a = play(arena(1500, 1500), START, {1})
    a = a.leave(1)
    assert a.entrant(1).out == "left"  # type: ignore[union-attr]
    assert a.pair(START + 100)[1] == ()
    a = a.join(1, 1600, START + 200)
    assert a.entrant(1).points == 2  # type: ignore[union-attr]
    with pytest.raises(ArenaError) as err:
        a.join(1, 1600, START + 200)
    assert err.value.code == "already_joined"
    with pytest.raises(ArenaError) as err:
        a.leave(99)
    assert err.value.code == "not_joined"


def test_two_v_two_tables_balance_by_standing() -> None:
    a = arena(1800, 1700, 1600, 1500, seats=4)
    a, (table,) = a.pair(START)
    assert table.teams == ((1, 4), (2, 3))
    a = a.finish(table.id, 0, START + 100)
    assert [s.points for s in a.standings()] == [2, 2, 0, 0]
    assert {s.player for s in a.standings()[:2]} == {1, 4}


def test_equal_points_and_wins_rank_the_fewer_games_first() -> None:
    # points, then wins, then fewer games, then join order: player 1 joined first but needed
    # one game more for the same points and wins
    a = Arena(START, END, entrants=(
        Entrant(1, 1500, seq=0, points=2, wins=1, games=2),
        Entrant(2, 1500, seq=1, points=2, wins=1, games=1),
    ))
    assert [s.player for s in a.standings()] == [2, 1]


def test_tables_running_at_the_end_do_not_count_and_the_podium_is_fixed_at_close() -> None:
    a = arena(1500, 1500, 1500, 1500, 1500, 1500)
    a = play(a, START, {1, 3, 5})
    # round two: 1-3, 5-2, 4-6 (standings order, no rematch); 1 and 5 win again, 6 beats 4
    a = play(a, START + 600, {1, 5, 6})
    a, tables = a.pair(END - 30)
    with pytest.raises(ArenaError) as err:
        a.close(END - 1)
    assert err.value.code == "still_running"
    late = a.finish(tables[0].id, 0, END + 10)
    assert [s.points for s in late.standings()] == [s.points for s in a.standings()]
    closed = late.close(END + 20)
    assert closed.closed and closed.tables == ()
    # ties on points, wins and games go to the earlier entrant
    assert [s.player for s in closed.podium] == [1, 5, 3]
    assert [s.points for s in closed.podium] == [4, 4, 2]
    actions: list[Callable[[], Arena]] = [
        lambda: closed.join(9, 1500, END + 30), lambda: closed.close(END + 30),
    ]
    for action in actions:
        with pytest.raises(ArenaError) as err:
            action()
        assert err.value.code == "closed"
    assert closed.pair(END + 30)[1] == ()


def test_bad_events_and_results_are_refused() -> None:
    builds: list[Callable[[], Arena]] = [
        lambda: Arena(END, START), lambda: Arena(START, END, 3),
        lambda: Arena(START, float("inf")),
    ]
    for build in builds:
        with pytest.raises(ArenaError):
            build()
    a, (table,) = arena(1500, 1500).pair(START)
    for table_id, winner in ((table.id + 1, 0), (table.id, 2), (table.id, True)):
        with pytest.raises(ArenaError):
            a.finish(table_id, winner, START + 5)
    with pytest.raises(ArenaError):
        a.finish(table.id, 0, START + 5, abandoned=[42])
    with pytest.raises(ArenaError):
        arena().join(1, 1500, END)
    with pytest.raises(ArenaError):
        arena().join(1, float("nan"), START)


@settings(max_examples=60)
@given(st.integers(2, 12), st.sampled_from([2, 4]), st.lists(st.integers(0, 2), max_size=40))
def test_points_always_match_wins_and_streaks(players: int, seats: int,
                                             choices: list[int]) -> None:
    a = Arena(START, END, seats)
    for p in range(players):
        a = a.join(p, 1500 + p, START)
    now = START
    for choice in choices:
        now += 30
        a, _ = a.pair(now)
        if not a.tables:
            continue
        table = a.tables[0]
        a = a.finish(table.id, None if choice == 2 else choice, now)
        busy = {p for t in a.tables for p in t.players}
        assert {e.player for e in a.entrants if e.busy} == busy
    for e in a.entrants:
        assert e.wins * 2 <= e.points <= e.wins * 4 and e.points % 2 == 0
        assert e.streak <= e.wins <= e.games
    total_games = sum(e.games for e in a.entrants)
    assert total_games % seats == 0


def test_an_operator_ends_an_arena_early_as_at_its_end() -> None:
    a = arena(1500, 1500, 1500, 1500)
    a, tables = a.pair(START + 10)
    a = a.finish(tables[0].id, 0, START + 100)
    ended = a.end_now(START + 200)
    assert not ended.running(START + 200) and ended.pair(START + 200)[1] == ()
    # the table still playing does not count; the podium is the standings of now
    late = ended.finish(tables[1].id, 0, START + 250)
    closed = late.close(START + 300)
    assert [s.player for s in closed.podium] == [1]
    with pytest.raises(ArenaError) as err:
        closed.end_now(START + 400)
    assert err.value.code == "closed"
    # one not started yet never starts
    upcoming = Arena(START + 600, END).join(1, 1500, START).join(2, 1500, START)
    stopped = upcoming.end_now(START)
    assert stopped.pair(START + 700)[1] == () and stopped.close(START + 1).podium == ()


def test_players_of_a_table_none_of_them_came_to_leave_the_pairing() -> None:
    # a table nobody came to is cancelled; its players paired again at once would make one
    # more such table every 30 s until the arena's end
    a = arena(1500, 1500, 1500)
    a, (table,) = a.pair(START)
    a = a.finish(table.id, None, START + 15, gone=table.players)
    assert a.pair(START + 100)[1] == ()
    for player in table.players:
        e = a.entrant(player)
        assert e is not None and not e.active and e.games == 0 and e.points == 0
        assert e.out == "absent"
    a = a.join(table.players[0], 1500, START + 200)  # back by joining again
    assert len(a.pair(START + 200)[1]) == 1


def test_players_from_one_address_never_meet() -> None:
    # a review: a second account joined with the first, was paired with it and threw every
    # match (2, 4, then 8 points in 45 s)
    one = {1: "203.0.113.5", 2: "203.0.113.5"}
    a = arena(1500, 1500)
    assert a.pair(START, addresses=one)[1] == ()
    assert a.pair(START + REMATCH_WAIT + 60, addresses=one)[1] == ()
    a = arena(1500, 1500, 1500)
    _, tables = a.pair(START, addresses={**one, 3: "198.51.100.7"})
    assert [t.teams for t in tables] == [((1,), (3,))]
    # 2v2: the next players in the order, none from an address already at the table
    a = arena(1500, 1500, 1500, 1500, 1500, seats=4)
    _, tables = a.pair(START, addresses={1: "a", 2: "a", 3: "b", 4: "c", 5: "d"})
    assert [sorted(t.players) for t in tables] == [[1, 3, 4, 5]]
    a = arena(1500, 1500, 1500, 1500, seats=4)
    assert a.pair(START, addresses={1: "a", 2: "a", 3: "b", 4: "c"})[1] == ()
