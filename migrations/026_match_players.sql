-- Who played each match, seat by seat, as seated when it started (NULL for a bot seat): a
-- finished ranked match is settled for them even after a seat was emptied, a restart's
-- settlement too (the seats of `live_seats` are the table's now, not the match's). Rows
-- written before this migration keep NULL: their players are unknown here.
ALTER TABLE live_matches ADD COLUMN players bigint[]
    CHECK (players IS NULL OR (array_ndims(players) = 1 AND cardinality(players) IN (2, 4)));
