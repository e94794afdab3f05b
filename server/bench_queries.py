"""`barajamos bench queries`: the request path's database queries on a filled database.

It starts an embedded PostgreSQL of its own (or uses the admin URL given with `--admin-url`),
creates a fresh database, migrates it and fills it by `generate_series` at a chosen `--scale`:
1.0 is a house two years old (20,000 players; 50,000 tables, most closed; about 200,000 matches
with their players; 2,000,000 hands with their ~1 KB signed records; 12 M actions; 4 M
contributions; 2 M seat events; abandonments and their review records, ratings and their
history, the chip ledger, arenas, 2,000 server runs, sessions and log-in attempts). Every count
scales with it (`--scale 0.001` fills a small database in seconds). The fill is seeded
(`setseed`): the same scale gives the same rows, but for the times, which are relative to now.
Then VACUUM ANALYZE, as autovacuum would have done on a live house (the visibility map is what
lets a count read an index alone).

Then it times each query of interest, `--runs` times after one unmeasured run, for a heavy
player (the one with the most tables) and a typical one (the median player) where the player
matters: the queries fixed after the EXPLAIN audit (/me/hands, GET /api/me/tables, the
operators' list's `restarts_spanned`, the chip statement, a ranked page's chips) and some of the
hottest ones (the session lookup of every request, a hand record, a table's chain, the
leaderboard, the operators' abandonment list). It prints median and max milliseconds and the
rows each returned, and the row counts of the main tables. Queries run over one pooled
connection, as the server's run: asyncpg prepares each statement once and PostgreSQL may move
to a generic plan after five runs, as it would in the server.

The queries are the server's own: its functions are called where there is one
(`accounts.user_for_token`, `ledger.statement`, `ratings.leaderboard`, `find_abandonments`,
`restarts_spanned`), its query constants are imported (`HANDS_MATCHES_SQL`,
`PLAYED_TABLES_SQL`), and a short query written inline in a handler is copied here, where
tests/test_bench_queries.py fails when a copy and its handler differ (`COPIED`). Nothing here
asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from server import accounts
from server.bench_engine import cpu_model
from server.bench_load import UsageError, UsageParser, cores, number_between, with_database
from server.db import EmbeddedPostgres, migrate
from server.live.api import (
    MAX_LISTED,
    PLAYED_PAGE,
    PLAYED_TABLES_SQL,
    find_abandonments,
    restarts_spanned,
)
from server.pages import HANDS_MATCHES_SQL
from server.ranked import ledger, ratings
from truco.variants import Variant

# --- the fill ------------------------------------------------------------------------------------
# From the audit's scripts (one statement list per step, `:name` the scaled counts). Triggers
# and foreign keys are off while filling (`session_replication_role = replica`): the rows are
# consistent by construction, and the chip ledger's balance triggers would post line by line.

FILL_SETTINGS = """
SET session_replication_role = replica;
SET synchronous_commit = off;
SET work_mem = '256MB';
SET maintenance_work_mem = '1GB';
SELECT setseed(0.25);
"""

FILL: tuple[tuple[str, str], ...] = (
    ("users and tables", """
CREATE FUNCTION pg_temp.pick(n int) RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $$
DECLARE a bigint[] := '{}'; u bigint;
BEGIN
  -- a few players play far more than the rest: user 1 the most
  WHILE cardinality(a) < n LOOP
    u := 1 + floor(:users * random()^2);
    IF NOT u = ANY(a) THEN a := a || u; END IF;
  END LOOP;
  RETURN a;
END $$;

INSERT INTO users (id, name, password_hash, role, created_at)
SELECT i, 'user' || i, '$argon2id$v=19$m=65536,t=3,p=4$' || md5(i::text) || md5(i::text || 'x'),
       CASE WHEN i <= 5 THEN 'operator' ELSE 'player' END,
       now() - interval '730 days' + (i * interval '730 days' / :users)
FROM generate_series(1, :users) i;
SELECT setval('users_id_seq', :users);

CREATE UNLOGGED TABLE fill_t AS
SELECT i, substr(md5('t' || i), 1, 16) AS id,
       CASE WHEN i <= :ranked_end THEN 'ranked' WHEN i <= :arena_end THEN 'arena'
            WHEN i <= :private_end THEN 'private' ELSE 'training' END AS kind,
       (ARRAY['paulista','mineiro','argentino'])[1 + i % 3] AS variant,
       -- every variant both 1v1 and 2v2
       CASE WHEN (i / 3) % 3 = 0 THEN 4 ELSE 2 END AS seats
FROM generate_series(1, :tables) i;
ALTER TABLE fill_t ADD COLUMN status text, ADD COLUMN nmatch int,
    ADD COLUMN created_at timestamptz, ADD COLUMN grp bigint[];
UPDATE fill_t SET
    status = CASE WHEN kind IN ('ranked', 'arena') THEN
                  CASE WHEN i % 100 = 0 THEN 'playing' WHEN i % 100 = 1 THEN 'finished'
                       ELSE 'closed' END
             ELSE CASE WHEN i % 50 = 0 THEN 'playing' WHEN i % 50 = 1 THEN 'open'
                       ELSE 'closed' END END,
    nmatch = CASE WHEN kind IN ('ranked', 'arena') THEN 1 ELSE 16 END;
UPDATE fill_t SET
    created_at = CASE WHEN status IN ('playing', 'open', 'finished')
                      THEN now() - random() * interval '3 hours'
                      ELSE now() - interval '730 days' + random() * interval '729 days' END,
    grp = CASE WHEN kind = 'training' THEN pg_temp.pick(1)
               || (CASE WHEN seats = 4 THEN ARRAY[NULL, NULL, NULL]::bigint[]
                        ELSE ARRAY[NULL]::bigint[] END)
          ELSE pg_temp.pick(seats) END;

INSERT INTO live_tables (id, variant, seats, mode, kind, invite_code, owner_id, status,
                         created_at, closed_at)
SELECT id, variant, seats, CASE WHEN i % 2 = 0 THEN 'vote' ELSE 'first' END, kind,
       CASE WHEN kind = 'private' THEN substr(md5('inv' || i), 1, 8) END,
       CASE WHEN kind IN ('private', 'training') THEN grp[1] END,
       status, created_at,
       CASE WHEN status = 'closed'
            THEN created_at + nmatch * interval '15 minutes' + interval '5 minutes' END
FROM fill_t;

INSERT INTO live_seats (table_id, seat, user_id, bot)
SELECT t.id, s, CASE WHEN t.status = 'closed' THEN NULL ELSE t.grp[s + 1] END,
       t.kind = 'training' AND s > 0
FROM fill_t t, generate_series(0, 3) s WHERE s < t.seats;
"""),
    ("matches", """
CREATE UNLOGGED TABLE fill_m AS
SELECT t.i, t.id AS table_id, n AS number, t.kind, t.status, t.seats, t.grp AS players,
       t.created_at + (n - 1) * interval '15 minutes' AS started_at,
       (t.status = 'playing' AND n = t.nmatch) AS live,
       CASE WHEN (hashtext(t.id || n) & 1023) < 31 THEN 'abandonment'
            WHEN (hashtext(t.id || n) & 1023) < 41 THEN 'cancelled' ELSE 'target' END AS term
FROM fill_t t, generate_series(1, 16) n WHERE n <= t.nmatch;

INSERT INTO live_matches (table_id, number, termination, winner, started_at, ended_at, players)
SELECT table_id, number,
       CASE WHEN live THEN NULL ELSE term END,
       CASE WHEN live OR term = 'cancelled' THEN NULL ELSE (number + i) % 2 END,
       started_at,
       CASE WHEN live THEN NULL ELSE started_at + interval '12 minutes' END,
       players
FROM fill_m;
"""),
    ("hands", """
INSERT INTO live_hands (table_id, hand, match_number, chain_start, commitment, seed_sealed,
                        dealer, dealer_by, score_before, dealt, record, record_hash)
SELECT m.table_id, h, m.number, ((h - 1) / 100) * 100 + 1,
       decode(md5(m.table_id || h) || md5(h || m.table_id), 'hex'),
       CASE WHEN open THEN decode(md5('s' || m.table_id || h) || md5('s2' || h), 'hex') END,
       h % m.seats, CASE WHEN h = 1 THEN 'draw' ELSE 'rotation' END,
       ARRAY[k, k - 1], true,
       CASE WHEN open THEN NULL ELSE jsonb_build_object(
         'v', 1, 'table', m.table_id, 'hand', h, 'match', m.number,
         'dealer', jsonb_build_object('seat', h % m.seats, 'by', 'rotation'),
         'score_before', jsonb_build_array(k, k - 1),
         'score_after', jsonb_build_array(k + 1, k - 1),
         'match_winner', CASE WHEN k = 10 AND m.term <> 'cancelled' THEN (m.number + m.i) % 2 END,
         'end', CASE WHEN k = 10 AND m.term = 'abandonment' THEN 'abandonment'
                     ELSE 'completed' END,
         'commitment', md5(m.table_id || h) || md5(h || m.table_id),
         'seed', md5('seed' || m.table_id || h) || md5(h || 'seed'),
         'prev', md5('prev' || m.table_id || h) || md5(h || 'prev'),
         'contributions', jsonb_build_array(md5('c0' || h), md5('c1' || h)),
         'actions', jsonb_build_array(
            jsonb_build_object('seat', 0, 'play', '4c', 'at_ms', 1000 * h),
            jsonb_build_object('seat', 1, 'play', '7h', 'at_ms', 1000 * h + 900),
            jsonb_build_object('seat', 0, 'call', 'truco', 'at_ms', 1000 * h + 1900),
            jsonb_build_object('seat', 1, 'answer', 'accept', 'at_ms', 1000 * h + 2900),
            jsonb_build_object('seat', 0, 'play', 'As', 'at_ms', 1000 * h + 3900),
            jsonb_build_object('seat', 1, 'play', '3d', 'at_ms', 1000 * h + 4900)),
         'signature', md5('sig' || m.table_id || h) || md5(h || 'sig') || md5('sig2' || h)
                      || md5(h || 'sig2'))
       END,
       CASE WHEN open THEN NULL ELSE decode(md5('rh' || m.table_id || h) || md5(h || 'rh'), 'hex')
       END
FROM fill_m m, generate_series(1, 10) k,
     LATERAL (SELECT (m.number - 1) * 10 + k AS h, (m.live AND k = 10) AS open) x;
"""),
    ("actions", """
INSERT INTO live_actions (table_id, hand, idx, action, automatic, at)
SELECT h.table_id, h.hand, a,
       jsonb_build_object('seat', a % 2,
                          'type', (ARRAY['play','play','call','answer','play','play'])[a + 1],
                          'card', '4c'),
       a = 5 AND h.hand % 17 = 0,
       m.started_at + (h.hand - (h.match_number - 1) * 10) * interval '60 seconds'
       + a * interval '5 seconds'
FROM live_hands h JOIN fill_m m ON m.table_id = h.table_id AND m.number = h.match_number,
     generate_series(0, 5) a;
"""),
    ("contributions and seat events", """
INSERT INTO live_contributions (table_id, hand, seat, data)
SELECT table_id, hand, s, decode(md5(table_id || hand || s), 'hex')
FROM live_hands, generate_series(0, 1) s;

INSERT INTO seat_events (table_id, match_number, seat, kind, at, detail)
SELECT m.table_id, m.number, e % m.seats,
       (ARRAY['connected','acted','deadline','automatic','acted','disconnected','connected',
              'acted','back','acted'])[e + 1],
       m.started_at + e * interval '60 seconds',
       CASE WHEN e IN (2, 3) THEN jsonb_build_object('streak', 1, 'hand', (m.number - 1) * 10 + e)
            ELSE '{}'::jsonb END
FROM fill_m m, generate_series(0, 9) e;
"""),
    ("abandonments, ratings, reviews", """
INSERT INTO abandonments (table_id, match_number, seat, user_id, team, variant, kind, trigger,
                          consequence, restart_overlap, evidence, created_at)
SELECT m.table_id, m.number, s.seat, m.players[s.seat + 1], s.seat % 2, t.variant, t.kind,
       CASE WHEN m.i % 2 = 0 THEN 'automatic_actions' ELSE 'left' END,
       CASE WHEN m.i % 10 = 7 THEN 'none_restart' ELSE 'forfeit' END,
       m.i % 10 = 7,
       (SELECT jsonb_agg(jsonb_build_object('kind', 'deadline', 'at_ms', e * 1000,
                                            'hand', (m.number - 1) * 10 + 9, 'streak', e,
                                            'seat', s.seat))
        FROM generate_series(1, 8) e),
       m.started_at + interval '11 minutes'
FROM fill_m m JOIN fill_t t ON t.id = m.table_id,
     LATERAL (SELECT CASE WHEN t.kind = 'training' THEN 0
                          ELSE abs(hashtext(m.table_id)) % m.seats END AS seat) s
WHERE m.term = 'abandonment' AND NOT m.live;

CREATE UNLOGGED TABLE fill_hist AS
SELECT m.table_id, m.number, t.kind, t.variant, t.seats, p.u AS user_id, p.seat - 1 AS seat,
       t.kind || ':' || m.table_id || ':' || m.number AS match_ref,
       m.started_at + interval '12 minutes' AS at,
       ((p.seat - 1) % 2) = ((m.number + m.i) % 2) AS won, m.term, m.live
FROM fill_m m JOIN fill_t t ON t.id = m.table_id,
     unnest(m.players) WITH ORDINALITY p(u, seat)
WHERE t.kind IN ('ranked', 'arena');
CREATE INDEX ON fill_hist (match_ref);

INSERT INTO ranked_ratings (user_id, variant, seats, rating, rd, volatility, games, last_played_at)
SELECT user_id, variant, seats, 1500 + (random() - 0.5) * 600, 40 + random() * 200, 0.06,
       count(*), max(at)
FROM fill_hist WHERE NOT live AND term <> 'cancelled' GROUP BY user_id, variant, seats
ORDER BY user_id, variant, seats;

INSERT INTO ranked_rating_history (user_id, variant, seats, reference, reason, match_ref,
                                   rating_before, rating_after, rd_after, volatility_after, at)
SELECT user_id, variant, seats, 'match:' || match_ref, 'match', match_ref, 1500,
       1500 + CASE WHEN won THEN 12 ELSE -12 END, 80, 0.06, at
FROM fill_hist WHERE NOT live AND term <> 'cancelled' ORDER BY at, match_ref, seat;

INSERT INTO ranked_abandonments (user_id, match_ref, variant, seats, match_started_at,
    abandoned_at, source_ref, evidence, status, strikes, paused_until, appeal_text, appealed_at,
    appeal_answered, decided_at, decided_by, reversed_at)
SELECT a.user_id, a.kind || ':' || a.table_id || ':' || a.match_number, a.variant, t.seats,
       m.started_at, a.created_at,
       'live:' || a.table_id || ':' || a.match_number || ':' || a.seat,
       a.evidence, st.status, 1,
       CASE WHEN st.status <> 'exempt' THEN a.created_at + interval '1 hour' END,
       CASE WHEN a.id % 3 = 0 THEN 'I lost my connection' END,
       CASE WHEN a.id % 3 = 0 THEN a.created_at + interval '2 hours' END,
       a.id % 3 = 0 AND st.status IN ('upheld', 'overturned'),
       CASE WHEN st.status IN ('upheld', 'overturned') THEN a.created_at + interval '1 day' END,
       CASE WHEN st.status IN ('upheld', 'overturned') THEN 1 + a.id % 5 END,
       CASE WHEN st.status = 'overturned' THEN a.created_at + interval '1 day' END
FROM abandonments a JOIN live_tables t ON t.id = a.table_id
JOIN live_matches m ON m.table_id = a.table_id AND m.number = a.match_number,
LATERAL (SELECT CASE WHEN a.consequence = 'none_restart' THEN 'exempt'
                     WHEN a.id % 10 < 2 THEN 'pending' WHEN a.id % 10 < 8 THEN 'upheld'
                     ELSE 'overturned' END AS status) st
WHERE a.kind IN ('ranked', 'arena')
ORDER BY a.id;

INSERT INTO ranked_review_audit (record_id, actor_id, action, note, detail, at)
SELECT id, NULL::bigint, 'created', '', '{}'::jsonb, abandoned_at FROM ranked_abandonments
UNION ALL
SELECT id, user_id, 'appeal', appeal_text, '{}', appealed_at FROM ranked_abandonments
WHERE appeal_text IS NOT NULL
UNION ALL
SELECT id, decided_by, CASE WHEN status = 'upheld' THEN 'uphold' ELSE 'overturn' END, 'checked',
       CASE WHEN status = 'overturned'
            THEN '{"chips_returned": 50, "rating_returned": 12.0}'::jsonb ELSE '{}' END,
       decided_at
FROM ranked_abandonments WHERE status IN ('upheld', 'overturned')
ORDER BY 6, 1, 3;
"""),
    ("chip ledger", """
INSERT INTO chip_accounts (code, kind, user_id, balance)
SELECT 'wallet:' || i, 'wallet', i, 500 + (i % 1000) FROM generate_series(1, :users) i;
INSERT INTO chip_accounts (code, kind, user_id, balance)
SELECT DISTINCT 'stake:' || match_ref, 'stake', NULL::bigint, 0 FROM fill_hist
ORDER BY 1;

CREATE UNLOGGED TABLE fill_e (ord bigserial, reference text, reason text, match_ref text,
                              created_at timestamptz);
INSERT INTO fill_e (reference, reason, match_ref, created_at)
SELECT reference, reason, match_ref, created_at FROM (
  SELECT 'grant:' || u.id AS reference, 'grant' AS reason, NULL AS match_ref,
         u.created_at + interval '1 day' AS created_at FROM users u
  UNION ALL SELECT DISTINCT 'hold:' || match_ref, 'hold', match_ref, at - interval '12 minutes'
            FROM fill_hist
  UNION ALL SELECT DISTINCT 'settle:' || match_ref,
            CASE WHEN term = 'cancelled' THEN 'refund' ELSE 'payout' END, match_ref, at
            FROM fill_hist WHERE NOT live
  UNION ALL SELECT 'reversal:' || match_ref || ':' || user_id, 'reversal', match_ref, decided_at
            FROM ranked_abandonments WHERE status = 'overturned'
) x ORDER BY created_at, reference;
INSERT INTO chip_entries (id, reference, reason, match_ref, created_at)
SELECT ord, reference, reason, match_ref, created_at FROM fill_e;
SELECT setval('chip_entries_id_seq', (SELECT max(id) FROM chip_entries));

CREATE UNLOGGED TABLE fill_n AS SELECT match_ref, count(*) AS n FROM fill_hist GROUP BY 1;
CREATE INDEX ON fill_n (match_ref);
INSERT INTO chip_lines (entry_id, account_id, amount, balance_after)
SELECT e.id, 1, -1000, -1000 * e.id FROM chip_entries e WHERE e.reason = 'grant'
UNION ALL
SELECT e.id, w.id, 1000, 1000 FROM chip_entries e
  JOIN chip_accounts w ON w.code = 'wallet:' || substr(e.reference, 7) WHERE e.reason = 'grant'
UNION ALL
SELECT e.id, w.id, -50, 950 FROM chip_entries e
  JOIN fill_hist h ON e.reason = 'hold' AND h.match_ref = e.match_ref
  JOIN chip_accounts w ON w.code = 'wallet:' || h.user_id
UNION ALL
SELECT e.id, s.id, 50 * n.n, 0 FROM chip_entries e
  JOIN chip_accounts s ON s.code = 'stake:' || e.match_ref
  JOIN fill_n n ON n.match_ref = e.match_ref WHERE e.reason = 'hold'
UNION ALL
SELECT e.id, s.id, -50 * n.n, 0 FROM chip_entries e
  JOIN chip_accounts s ON s.code = 'stake:' || e.match_ref
  JOIN fill_n n ON n.match_ref = e.match_ref WHERE e.reason IN ('payout', 'refund')
UNION ALL
SELECT e.id, w.id, CASE WHEN e.reason = 'refund' THEN 50 ELSE 100 END, 1050 FROM chip_entries e
  JOIN fill_hist h ON e.reason IN ('payout', 'refund') AND h.match_ref = e.match_ref
       AND (e.reason = 'refund' OR h.won)
  JOIN chip_accounts w ON w.code = 'wallet:' || h.user_id
UNION ALL
SELECT e.id, 1, -50, 0 FROM chip_entries e WHERE e.reason = 'reversal'
UNION ALL
SELECT e.id, w.id, 50, 1000 FROM chip_entries e
  JOIN chip_accounts w ON w.code = 'wallet:' || split_part(e.reference, ':', 5)
  WHERE e.reason = 'reversal';
"""),
    ("arenas, queue, accounts, runs, chains", """
INSERT INTO arena_events (id, variant, seats, starts_at, ends_at, closed_at)
SELECT 'arena-' || i, (ARRAY['paulista','mineiro','argentino'])[1 + i % 3],
       CASE WHEN i % 2 = 0 THEN 2 ELSE 4 END,
       now() - (:arenas - i) * interval '1 day',
       now() - (:arenas - i) * interval '1 day' + interval '1 hour',
       now() - (:arenas - i) * interval '1 day' + interval '1 hour 5 minutes'
FROM generate_series(1, :arenas) i;
-- 30 distinct players an arena (:users is at least 100)
INSERT INTO arena_standings (arena_id, rank, user_id, points, wins, games, podium)
SELECT 'arena-' || i, r, 1 + (i * 37 + r) % :users, 100 - r, 10, 12, r <= 3
FROM generate_series(1, :arenas) i, generate_series(1, 30) r;
INSERT INTO ranked_arenas (id, variant, seats, starts_at, ends_at, status, next_table)
SELECT id, variant, seats, starts_at, ends_at, 'closed', 20 FROM arena_events;
INSERT INTO ranked_arenas (id, variant, seats, starts_at, ends_at, status, next_table)
VALUES ('arena-open-1', 'paulista', 2, now() - interval '10 minutes',
        now() + interval '50 minutes', 'open', 5),
       ('arena-open-2', 'mineiro', 4, now() + interval '1 hour', now() + interval '2 hours',
        'open', 1);
INSERT INTO ranked_arena_entries (arena_id, user_id, seq, rating, active, points, wins, games,
                                  streak, last_opponents, joined_at, left_at)
SELECT a.id, 1 + (h.i * 37 + r) % :users, r, 1500, a.status = 'open', 10, 1, 2, 0, '{}',
       a.starts_at, CASE WHEN a.status = 'open' THEN NULL ELSE a.ends_at END
FROM ranked_arenas a, generate_series(1, 30) r,
     LATERAL (SELECT abs(hashtext(a.id)) % :users AS i) h;
INSERT INTO ranked_arena_tables (arena_id, number, live_table_id, team0, team1, started_at)
SELECT 'arena-open-1', n, substr(md5('arena-live' || n), 1, 16), ARRAY[n::bigint],
       ARRAY[(n + 10)::bigint], now() - interval '5 minutes'
FROM generate_series(1, 4) n;
INSERT INTO ranked_queue_tickets (user_id, variant, seats, rating, enqueued_at)
SELECT :users - i, 'paulista', 2, 1500, now() - i * interval '3 seconds'
FROM generate_series(0, 39) i;

-- session i's token is 'tok<i>'; those with i % 60 < 30 are still valid
INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at)
SELECT sha256(('tok' || i)::bytea), 1 + i % :users, md5('csrf' || i),
       now() - (i % 60) * interval '1 day', now() - (i % 60) * interval '1 day' + interval '30 days'
FROM generate_series(1, :sessions) i;
INSERT INTO login_attempts (name_lower, remote, succeeded, at)
SELECT 'user' || (1 + i % :users), '10.' || (i % 250) || '.' || (i % 199) || '.1', i % 5 <> 0,
       now() - (i % 86400) * interval '1 second'
FROM generate_series(1, :logins) i;
INSERT INTO registration_attempts (remote, at)
SELECT '10.0.' || (i % 200) || '.2', now() - (i % 172800) * interval '1 second'
FROM generate_series(1, :registrations) i;
INSERT INTO server_runs (started_at, stopped_at, clean)
SELECT now() - interval '730 days' + i * interval '730 days' / :runs,
       now() - interval '730 days' + (i + 1) * interval '730 days' / :runs - interval '1 minute',
       i % 20 <> 0
FROM generate_series(0, :runs - 1) i;
INSERT INTO server_faults (kind, started_at, ended_at, note)
SELECT CASE WHEN i % 2 = 0 THEN 'restart' ELSE 'fault' END, now() - i * interval '7 days',
       now() - i * interval '7 days' + interval '20 minutes', 'n'
FROM generate_series(1, 100) i;
INSERT INTO seed_chains (table_id, chain_start, length, tip_sealed, anchor)
SELECT t.id, c * 100 + 1, 100, decode(md5('tip' || t.id || c), 'hex'),
       jsonb_build_object('anchor', md5(t.id || c), 'start', c * 100 + 1)
FROM fill_t t, generate_series(0, 1) c WHERE c * 100 < t.nmatch * 10;
INSERT INTO ledger_heads (table_id, hand, statement)
SELECT id, nmatch * 10, jsonb_build_object('head', md5(id), 'sig', md5(id || 's'))
FROM fill_t WHERE i % 5 <> 0;
INSERT INTO house_keys (name, key_id) VALUES ('seed', 'k1'), ('signing', 'k2');
INSERT INTO key_handovers (old_key, new_key, statement) VALUES ('a', 'b', '{}'), ('b', 'c', '{}');

DROP TABLE fill_t, fill_m, fill_hist, fill_e, fill_n;
"""),
)

# the tables whose rows are counted in the report
COUNTED = ("users", "live_tables", "live_matches", "live_hands", "live_actions",
           "live_contributions", "seat_events", "abandonments", "ranked_abandonments",
           "ranked_rating_history", "chip_entries", "chip_lines", "sessions", "login_attempts",
           "server_runs")


def fill_counts(scale: float) -> dict[str, int]:
    """The fill's `:name` values at a scale (1.0: the audit's volume), with floors that keep a
    tiny database whole (30 distinct players an arena, 40 queue tickets, every kind of table)."""
    users = max(100, round(20_000 * scale))
    tables = max(100, round(50_000 * scale))
    return {
        "users": users, "tables": tables,
        "ranked_end": round(tables * 0.70), "arena_end": round(tables * 0.80),
        "private_end": round(tables * 0.94),
        "arenas": max(5, round(500 * scale)), "runs": max(20, round(2_000 * scale)),
        "sessions": 3 * users, "logins": 5 * users, "registrations": max(10, users // 10),
    }


def fill_sql(text: str, counts: dict[str, int]) -> str:
    """A fill step with its `:name`s replaced (not a `::cast`; an unknown name is a bug)."""
    def value(match: re.Match[str]) -> str:
        return str(counts[match.group(1)])
    return re.sub(r"(?<![:\w]):([a-z_]+)\b", value, text)


# --- the queries ---------------------------------------------------------------------------------
# The longest are the handlers' own constants (imported above). Copies of the short ones written
# inline in a handler, each beside where it lives ("module:function", COPIED):
# tests/test_bench_queries.py checks that each is one of that function's strings.

MY_RECORDS_CHIPS_SQL = (
    "SELECT e.match_ref, sum(l.amount)::bigint AS net FROM chip_entries e "
    "JOIN chip_lines l ON l.entry_id = e.id "
    "AND l.account_id = (SELECT id FROM chip_accounts WHERE code = $1) "
    "WHERE e.match_ref = ANY($2::text[]) AND e.reason <> 'reversal' "
    "GROUP BY e.match_ref"
)
HAND_RECORD_SQL = (
    "SELECT record::text FROM live_hands WHERE table_id = $1 AND hand = $2"
    " AND record IS NOT NULL"
)
TABLE_EXISTS_SQL = "SELECT true FROM live_tables WHERE id = $1"
CHAIN_ANCHORS_SQL = "SELECT chain_start, anchor::text FROM seed_chains WHERE table_id = $1"
CHAIN_RECORDS_SQL = (
    "SELECT hand, record::text FROM live_hands WHERE table_id = $1"
    " AND record IS NOT NULL ORDER BY hand"
)

COPIED: dict[str, tuple[str, ...]] = {
    "server.ranked.http:_my_records": (MY_RECORDS_CHIPS_SQL,),
    "server.live.api:public_record": (HAND_RECORD_SQL,),
    "server.live.api:table_chain": (TABLE_EXISTS_SQL, CHAIN_ANCHORS_SQL, CHAIN_RECORDS_SQL),
}

# the players and tables the queries are asked about, chosen on the filled database
SUBJECTS_SQL = """
WITH tables AS (
  SELECT p.id AS user_id, count(DISTINCT m.table_id) AS n
  FROM live_matches m, unnest(m.players) p(id) WHERE p.id IS NOT NULL GROUP BY p.id
), ranked AS (
  SELECT user_id, n, row_number() OVER (ORDER BY n DESC, user_id) AS place,
         count(*) OVER () AS players FROM tables
)
SELECT (SELECT user_id FROM ranked WHERE place = 1) AS heavy,
       (SELECT n FROM ranked WHERE place = 1) AS heavy_tables,
       (SELECT user_id FROM ranked WHERE place = (players + 1) / 2 LIMIT 1) AS typical,
       (SELECT n FROM ranked WHERE place = (players + 1) / 2 LIMIT 1) AS typical_tables
FROM ranked LIMIT 1
"""
# the heavy player's newest private table (16 matches, 160 hands): the longest chains
LONG_TABLE_SQL = """
SELECT m.table_id FROM live_matches m JOIN live_tables t ON t.id = m.table_id
WHERE m.players @> ARRAY[$1::bigint] AND t.kind = 'private' AND t.status = 'closed'
ORDER BY m.started_at DESC, m.table_id LIMIT 1
"""
# as many match references as a full page of a player's records (ranked page: 50)
RECENT_REFS_SQL = """
SELECT match_ref FROM ranked_rating_history WHERE user_id = $1 ORDER BY id DESC LIMIT 50
"""


@dataclass(frozen=True, slots=True)
class Subjects:
    heavy: int
    heavy_tables: int
    typical: int
    typical_tables: int
    long_table: str
    heavy_refs: tuple[str, ...]
    listed_ids: tuple[int, ...]  # the operators' first page of abandonments


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    where: str  # the code it comes from
    expect_rows: bool  # the fill gives it rows to return
    run: Callable[[asyncpg.Pool], Awaitable[int]]  # one request's worth; returns its rows


@dataclass(frozen=True, slots=True)
class Timing:
    name: str
    where: str
    expect_rows: bool
    ms: tuple[float, ...]
    rows: int

    @property
    def median(self) -> float:
        return statistics.median(self.ms)


@dataclass(frozen=True, slots=True)
class BenchResult:
    scale: float
    fill_steps: tuple[tuple[str, float], ...]  # (step, seconds), VACUUM ANALYZE last
    counts: dict[str, int]
    subjects: Subjects
    server_version: str
    timings: tuple[Timing, ...]


def _fetch(sql: str, *args: Any) -> Callable[[asyncpg.Pool], Awaitable[int]]:
    async def run(pool: asyncpg.Pool) -> int:
        return len(await pool.fetch(sql, *args))
    return run


def queries(s: Subjects) -> list[Query]:
    """The queries timed, with their parameters."""
    heavy_wallet = ledger.wallet(s.heavy)

    async def table_chain(pool: asyncpg.Pool) -> int:
        # the chain page's reads, in order (its ledger head is one more row by key)
        await pool.fetchval(TABLE_EXISTS_SQL, s.long_table)
        await pool.fetch(CHAIN_ANCHORS_SQL, s.long_table)
        return len(await pool.fetch(CHAIN_RECORDS_SQL, s.long_table))

    async def hand_record(pool: asyncpg.Pool) -> int:
        return int(await pool.fetchval(HAND_RECORD_SQL, s.long_table, 77) is not None)

    async def session(pool: asyncpg.Pool) -> int:
        return int(await accounts.user_for_token(pool, "tok1") is not None)

    async def statement(pool: asyncpg.Pool, user_id: int) -> int:
        return len(await ledger.statement(pool, user_id))

    async def leaderboard(pool: asyncpg.Pool) -> int:
        return len(await ratings.leaderboard(pool, Variant.PAULISTA, 2))

    async def listed(pool: asyncpg.Pool, player: str | None) -> int:
        return len(await find_abandonments(pool, player=player, limit=MAX_LISTED + 1))

    async def spanned(pool: asyncpg.Pool) -> int:
        return len(await restarts_spanned(pool, list(s.listed_ids)))

    played = (None, None, PLAYED_PAGE + 1)
    hands = (None, None, None, PLAYED_PAGE)
    return [
        Query("/me/hands, heavy player", "server/pages.py _hands_matches", True,
              _fetch(HANDS_MATCHES_SQL, s.heavy, *hands)),
        Query("/me/hands, typical player", "server/pages.py _hands_matches", True,
              _fetch(HANDS_MATCHES_SQL, s.typical, *hands)),
        Query("GET /api/me/tables, heavy player", "server/live/api.py played_tables", True,
              _fetch(PLAYED_TABLES_SQL, s.heavy, *played)),
        Query("GET /api/me/tables, typical player", "server/live/api.py played_tables", True,
              _fetch(PLAYED_TABLES_SQL, s.typical, *played)),
        Query(f"restarts_spanned, {len(s.listed_ids)} records", "server/live/api.py", False,
              spanned),
        Query("chip statement, heavy player", "server/ranked/ledger.py statement", True,
              lambda pool: statement(pool, s.heavy)),
        Query("chip statement, typical player", "server/ranked/ledger.py statement", True,
              lambda pool: statement(pool, s.typical)),
        Query(f"ranked page chips, heavy, {len(s.heavy_refs)} matches",
              "server/ranked/http.py _my_records", True,
              _fetch(MY_RECORDS_CHIPS_SQL, heavy_wallet, list(s.heavy_refs))),
        Query("session lookup (every request)", "server/accounts.py user_for_token", True,
              session),
        Query("hand record by id", "server/live/api.py public_record", True, hand_record),
        Query("table chain, 160 hands", "server/live/api.py table_chain", True, table_chain),
        Query("leaderboard, paulista 1v1", "server/ranked/ratings.py leaderboard", True,
              leaderboard),
        Query("operators' abandonment list", "server/live/api.py find_abandonments", True,
              lambda pool: listed(pool, None)),
        Query("operators' abandonment list, heavy", "server/live/api.py find_abandonments",
              False, lambda pool: listed(pool, f"user{s.heavy}")),
    ]


async def fill(dsn: str, scale: float, progress: Callable[[str], None]) -> list[tuple[str, float]]:
    counts = fill_counts(scale)
    steps: list[tuple[str, float]] = []
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(FILL_SETTINGS)
        for name, text in FILL:
            started = time.perf_counter()
            await conn.execute(fill_sql(text, counts))
            steps.append((name, time.perf_counter() - started))
            progress(f"  fill: {name} {steps[-1][1]:.1f} s")
        started = time.perf_counter()
        await conn.execute("RESET session_replication_role")
        await conn.execute("VACUUM (ANALYZE)")
        steps.append(("VACUUM ANALYZE", time.perf_counter() - started))
        progress(f"  fill: VACUUM ANALYZE {steps[-1][1]:.1f} s")
    finally:
        await conn.close()
    return steps


async def subjects(pool: asyncpg.Pool) -> Subjects:
    row = await pool.fetchrow(SUBJECTS_SQL)
    assert row is not None, "the fill gave no matches"
    long_table = await pool.fetchval(LONG_TABLE_SQL, row["heavy"])
    refs = [r["match_ref"] for r in await pool.fetch(RECENT_REFS_SQL, row["heavy"])]
    listed = await find_abandonments(pool, limit=MAX_LISTED)
    return Subjects(row["heavy"], row["heavy_tables"], row["typical"], row["typical_tables"],
                    long_table, tuple(refs), tuple(r["id"] for r in listed))


async def time_query(pool: asyncpg.Pool, query: Query, runs: int) -> Timing:
    rows = await query.run(pool)  # unmeasured: prepares the statements, warms the cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        rows = await query.run(pool)
        times.append((time.perf_counter() - started) * 1000)
    return Timing(query.name, query.where, query.expect_rows, tuple(times), rows)


async def measure(admin_url: str, scale: float, runs: int,
                  progress: Callable[[str], None] = lambda _: None) -> BenchResult:
    """Create, migrate and fill a database of its own in the server at `admin_url`, time the
    queries, drop it."""
    name = f"bench_queries_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    dsn = with_database(admin_url, name)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
            version = str(await conn.fetchval("SHOW server_version"))
        finally:
            await conn.close()
        steps = await fill(dsn, scale, progress)
        # one connection: the server's pool lends one to a request; no query waits on another
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=1)
        try:
            counts = {table: int(await pool.fetchval(f"SELECT count(*) FROM {table}"))
                      for table in COUNTED}
            chosen = await subjects(pool)
            timings = []
            for query in queries(chosen):
                timings.append(await time_query(pool, query, runs))
        finally:
            await pool.close()
    finally:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
    return BenchResult(scale, tuple(steps), counts, chosen, version, tuple(timings))


def report(result: BenchResult) -> list[str]:
    s = result.subjects
    fill_s = sum(seconds for step, seconds in result.fill_steps if step != "VACUUM ANALYZE")
    vacuum_s = dict(result.fill_steps).get("VACUUM ANALYZE", 0.0)
    lines = [
        f"PostgreSQL {result.server_version}; scale {result.scale:g}: filled in {fill_s:.0f} s, "
        f"VACUUM ANALYZE {vacuum_s:.0f} s",
        "rows: " + ", ".join(f"{table} {n:,}" for table, n in result.counts.items()),
        f"heavy player: user{s.heavy} ({s.heavy_tables:,} tables); typical player: "
        f"user{s.typical} ({s.typical_tables:,} tables); chain and hand of table {s.long_table}",
        "",
        f"{'query':<44} {'median ms':>10} {'max ms':>9} {'rows':>6}   code",
    ]
    for t in result.timings:
        lines.append(f"{t.name:<44} {t.median:>10.2f} {max(t.ms):>9.2f} {t.rows:>6}   {t.where}")
    return lines


def _scale(text: str) -> float:
    return number_between(0.001, 4.0)(text)


def _runs(text: str) -> int:
    value = number_between(1, 10_000)(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(value)


def _parser() -> UsageParser:
    parser = UsageParser(
        prog="barajamos bench queries",
        description="The request path's database queries, timed on a database filled by "
        "generate_series (scale 1.0: 20,000 players, 2 M hands, 12 M actions).")
    parser.add_argument("--scale", type=_scale, default=1.0,
                        help="fill volume, 1.0 = a two-year-old house (0.001..4; default 1.0; "
                        "about 10 minutes of fill at 1.0)")
    parser.add_argument("--runs", type=_runs, default=20,
                        help="timed runs of each query, 1..10000 (default 20)")
    parser.add_argument("--admin-url",
                        help="an existing PostgreSQL server's admin URL (a superuser: the fill "
                        "turns triggers off) instead of an embedded one; a database of its own "
                        "is created there and dropped")
    parser.add_argument("--work", type=Path,
                        help="folder for the embedded PostgreSQL's data (default: a temporary "
                        "one, removed)")
    return parser


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except UsageError as exc:
        print(f"barajamos bench queries: {exc} (see --help)", file=sys.stderr)
        return 2
    print(f"machine: {cpu_model()}, {len(cores())} cores, {platform.system()} "
          f"{platform.machine()}; python: {platform.python_implementation()} "
          f"{platform.python_version()}; asyncpg {asyncpg.__version__}")
    print(f"scale {args.scale:g}, {args.runs} timed runs per query after one unmeasured",
          flush=True)
    admin_url: str | None = args.admin_url
    embedded: EmbeddedPostgres | None = None
    work: Path | None = None
    try:
        if admin_url is None:
            work = args.work or Path(tempfile.mkdtemp(prefix="barajamos-queries-"))
            embedded = EmbeddedPostgres(work / "pg")
            admin_url = embedded.start()
        result = asyncio.run(measure(admin_url, args.scale, args.runs,
                                     lambda line: print(line, flush=True)))
    except KeyboardInterrupt:
        print("barajamos bench queries: interrupted", file=sys.stderr)
        return 130
    finally:
        if embedded is not None:
            embedded.stop()
        if work is not None and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    for line in report(result):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
