-- Two lookups that read every row of a growing table (found by EXPLAIN on a database of 2,000
-- server runs and 100,000 rating changes):
-- the operators' abandonment list asks, per record, which server restarts fell inside its
-- match: each such question read every server run (77 ms for a page of 500 at 2,000 runs;
-- 2 ms with this index). One row is written per server start.
CREATE INDEX server_runs_started ON server_runs (started_at);
-- a player's page lists their latest rating changes across every queue, newest first; the
-- index by queue (021) could not give that order (every change of the player was read and
-- sorted). One row is written per rated match and player.
CREATE INDEX ranked_rating_history_recent ON ranked_rating_history (user_id, id DESC);
