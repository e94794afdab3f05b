-- Why an arena entrant no longer active stopped being paired, so that the arena page can say it:
-- 'left' (they left the arena), 'abandoned' (they lost a table by abandonment), 'absent' (none
-- of a table's players came to it). NULL while active, and for entrants out before this column.
ALTER TABLE ranked_arena_entries
    ADD COLUMN left_why text CHECK (left_why IN ('left', 'abandoned', 'absent')),
    ADD CHECK (NOT active OR left_why IS NULL);
