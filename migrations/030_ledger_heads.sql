-- The newest signed ledger head of each table (docs/FAIRNESS.md, section 8): the statement
-- `GET /tables/{id}/chain` ends with, signed when a chain longer than the last one signed is
-- first served, so that serving a chain costs a signature once per hand at most
CREATE TABLE ledger_heads (
    table_id   text PRIMARY KEY REFERENCES live_tables (id) ON DELETE CASCADE,
    hand       integer NOT NULL CHECK (hand >= 1),
    statement  jsonb NOT NULL
);
