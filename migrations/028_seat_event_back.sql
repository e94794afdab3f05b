-- "back": a player marked absent said they are back (the table's "Estou de volta"): their
-- absence ended, their automatic streak did not (server/live/table.py, TableActor.back)
ALTER TABLE seat_events DROP CONSTRAINT seat_events_kind_check;
ALTER TABLE seat_events ADD CONSTRAINT seat_events_kind_check
    CHECK (kind IN ('deadline', 'automatic', 'connected', 'disconnected', 'acted', 'back'));
