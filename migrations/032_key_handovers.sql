-- The signing key's hand-overs, made by `barajamos keys rotate` (server/keys.py): each signed by
-- the key it retires and naming the next (docs/FAIRNESS.md, section 8), published at /api/key
-- and in every table's chain, so that whoever pinned an older key follows to the current one
CREATE TABLE key_handovers (
    id         bigserial PRIMARY KEY,
    old_key    text NOT NULL,         -- public keys, hex
    new_key    text NOT NULL UNIQUE,
    statement  jsonb NOT NULL,
    made_at    timestamptz NOT NULL DEFAULT now()
);
