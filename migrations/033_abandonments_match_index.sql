-- The abandonment that ended a table's match, by its table and match: a table rebuilt at start
-- (or reloaded) names the seat that abandoned its last match (`forfeit_seat` in TableJson)
CREATE INDEX abandonments_match ON abandonments (table_id, match_number);
