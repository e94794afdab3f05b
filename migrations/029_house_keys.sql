-- The keys this database's sealed seeds and signed records were made with, by id (a hash of the
-- seed key, the signing key's public half; never a key itself): a house started with other keys
-- refuses to serve it instead of making its hands in play undecryptable (server/live/house.py)
CREATE TABLE house_keys (
    name        text PRIMARY KEY CHECK (name IN ('seed', 'signing')),
    key_id      text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
