"""What the house keeps of where each player was (seat events: connections, disconnections,
deadlines, automatic actions): a month after their match ended they go, in the hourly pruning
(a privacy review: they were kept for good, though nothing reads them once a match ended; an
abandonment keeps its own evidence)."""

from __future__ import annotations

import asyncpg

from server.live.recovery import prune_recorded_rows, prune_seat_events


async def test_seat_events_go_a_month_after_their_match_ended(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO live_tables (id, variant, seats, mode, kind) VALUES"
            " ('00000000000000d1', 'paulista', 2, 'vote', 'training')")
        # match 1 ended 40 days ago, match 2 yesterday, match 3 still in play
        await conn.execute(
            "INSERT INTO live_matches (table_id, number, termination, started_at, ended_at)"
            " VALUES ('00000000000000d1', 1, 'target', now() - interval '41 days',"
            "         now() - interval '40 days'),"
            " ('00000000000000d1', 2, 'target', now() - interval '2 days', now() - interval"
            "  '1 day'), ('00000000000000d1', 3, NULL, now(), NULL)")
        await conn.execute(
            "INSERT INTO seat_events (table_id, match_number, seat, kind, at)"
            " SELECT '00000000000000d1', m, s, 'connected', now() FROM generate_series(1, 3) m,"
            " generate_series(0, 1) s, generate_series(1, 4) n")
        pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
        try:
            assert await prune_seat_events(pool, batch=3, batches=2) == 6  # a batch at a time
            assert await prune_seat_events(pool) == 2
            assert await prune_seat_events(pool) == 0
        finally:
            await pool.close()
        left = await conn.fetch("SELECT match_number, count(*) FROM seat_events"
                                " GROUP BY match_number ORDER BY match_number")
        assert [(r["match_number"], r["count"]) for r in left] == [(2, 8), (3, 8)]
    finally:
        await conn.close()


async def test_pruning_keeps_the_rebuild_rows_of_a_hand_still_in_play(database_url: str) -> None:
    # the rows kept to rebuild a hand go once its record is signed, never before (a restart
    # rebuilds a hand in play from them)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO live_tables (id, variant, seats, mode, kind) VALUES"
            " ('00000000000000d2', 'paulista', 2, 'vote', 'training')")
        await conn.execute(
            "INSERT INTO live_matches (table_id, number, termination, started_at, ended_at)"
            " VALUES ('00000000000000d2', 1, NULL, now(), NULL)")
        # hand 1 recorded, hand 2 in play
        await conn.execute(
            "INSERT INTO live_hands (table_id, hand, match_number, chain_start, commitment,"
            " score_before, record) VALUES"
            " ('00000000000000d2', 1, 1, 1, '\\x00', '{0,0}', '{}'),"
            " ('00000000000000d2', 2, 1, 1, '\\x00', '{0,0}', NULL)")
        await conn.execute(
            "INSERT INTO live_actions (table_id, hand, idx, action, automatic, at)"
            " SELECT '00000000000000d2', h, 0, '{}', false, now() FROM generate_series(1, 2) h")
        pool = await asyncpg.create_pool(database_url, min_size=1, max_size=1)
        try:
            gone = await prune_recorded_rows(pool)
        finally:
            await pool.close()
        assert gone["live_actions"] == 1
        left = await conn.fetch("SELECT hand FROM live_actions WHERE table_id ="
                                " '00000000000000d2'")
        assert [r["hand"] for r in left] == [2]
    finally:
        await conn.close()
