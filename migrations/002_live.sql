-- The live house: tables, seats, matches, hands (seeds encrypted until revealed), contributions,
-- actions, signed records, server runs and abandonment evidence. Every accepted table action is
-- a row here before it is acknowledged, so a restarted server rebuilds each live table exactly.

-- one row per server process: abandonment reviews need to know whether a restart overlapped
CREATE TABLE server_runs (
    id          bigserial PRIMARY KEY,
    started_at  timestamptz NOT NULL,
    stopped_at  timestamptz,
    clean       boolean NOT NULL DEFAULT false
);

CREATE TABLE live_tables (
    id           text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    variant      text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats        integer NOT NULL CHECK (seats IN (2, 4)),
    mode         text NOT NULL CHECK (mode IN ('vote', 'first')),
    kind         text NOT NULL CHECK (kind IN ('private', 'training', 'ranked', 'arena')),
    invite_code  text,
    owner_id     bigint REFERENCES users (id) ON DELETE SET NULL,
    status       text NOT NULL DEFAULT 'open'
                 CHECK (status IN ('open', 'playing', 'finished', 'closed')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    closed_at    timestamptz
);
CREATE INDEX live_tables_status ON live_tables (status) WHERE status <> 'closed';

CREATE TABLE live_seats (
    table_id  text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    seat      integer NOT NULL CHECK (seat BETWEEN 0 AND 3),
    user_id   bigint REFERENCES users (id) ON DELETE SET NULL,
    bot       boolean NOT NULL DEFAULT false,
    rematch   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (table_id, seat),
    CHECK (NOT (bot AND user_id IS NOT NULL))
);
CREATE INDEX live_seats_user ON live_seats (user_id);

-- a table's seed chains (docs/FAIRNESS.md 3): the tip is secret until every hand it seeds is
-- revealed, so it is kept AES-256-GCM encrypted (associated data: table id + chain_start)
CREATE TABLE seed_chains (
    table_id     text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    chain_start  integer NOT NULL CHECK (chain_start >= 1),
    length       integer NOT NULL CHECK (length >= 1),
    tip_sealed   bytea NOT NULL,
    anchor       jsonb NOT NULL,  -- the signed seed-anchor statement
    PRIMARY KEY (table_id, chain_start)
);

CREATE TABLE live_matches (
    table_id     text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    number       integer NOT NULL CHECK (number >= 1),
    termination  text CHECK (termination IN ('target', 'abandonment', 'cancelled')),
    winner       integer CHECK (winner IN (0, 1)),
    started_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    PRIMARY KEY (table_id, number)
);

CREATE TABLE live_hands (
    table_id      text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    hand          integer NOT NULL CHECK (hand >= 1),
    match_number  integer NOT NULL,
    chain_start   integer NOT NULL,
    commitment    bytea NOT NULL,
    -- AES-256-GCM(nonce || ciphertext), associated data: table id + hand number; NULL once the
    -- record reveals the seed
    seed_sealed   bytea,
    -- set at the deal
    dealer        integer,
    dealer_by     text CHECK (dealer_by IN ('draw', 'rotation')),
    score_before  integer[] NOT NULL,
    dealt         boolean NOT NULL DEFAULT false,
    -- set when the hand is over: the signed record and its hash (the next record's `prev`)
    record        jsonb,
    record_hash   bytea,
    PRIMARY KEY (table_id, hand),
    FOREIGN KEY (table_id, match_number) REFERENCES live_matches (table_id, number)
);
CREATE INDEX live_hands_open ON live_hands (table_id) WHERE record IS NULL;

CREATE TABLE live_contributions (
    table_id  text NOT NULL,
    hand      integer NOT NULL,
    seat      integer NOT NULL CHECK (seat BETWEEN 0 AND 3),
    data      bytea NOT NULL CHECK (octet_length(data) BETWEEN 1 AND 256),
    PRIMARY KEY (table_id, hand, seat),
    FOREIGN KEY (table_id, hand) REFERENCES live_hands (table_id, hand) ON DELETE CASCADE
);

CREATE TABLE live_actions (
    table_id   text NOT NULL,
    hand       integer NOT NULL,
    idx        integer NOT NULL CHECK (idx >= 0),
    action     jsonb NOT NULL,  -- the scenario format
    automatic  boolean NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (table_id, hand, idx),
    FOREIGN KEY (table_id, hand) REFERENCES live_hands (table_id, hand) ON DELETE CASCADE
);

-- clock and connection evidence per seat and match, kept for abandonment reviews
CREATE TABLE seat_events (
    id            bigserial PRIMARY KEY,
    table_id      text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    match_number  integer NOT NULL,
    seat          integer NOT NULL,
    kind          text NOT NULL
                  CHECK (kind IN ('deadline', 'automatic', 'connected', 'disconnected',
                                  'acted')),
    at            timestamptz NOT NULL,
    detail        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX seat_events_match ON seat_events (table_id, match_number, seat, id);

CREATE TABLE abandonments (
    id               bigserial PRIMARY KEY,
    table_id         text NOT NULL REFERENCES live_tables (id) ON DELETE CASCADE,
    match_number     integer NOT NULL,
    seat             integer NOT NULL,
    user_id          bigint REFERENCES users (id) ON DELETE SET NULL,
    team             integer NOT NULL CHECK (team IN (0, 1)),
    variant          text NOT NULL,
    kind             text NOT NULL,
    trigger          text NOT NULL CHECK (trigger IN ('automatic_actions', 'left')),
    consequence      text NOT NULL CHECK (consequence IN ('forfeit', 'none_restart')),
    restart_overlap  boolean NOT NULL,
    evidence         jsonb NOT NULL,
    created_at       timestamptz NOT NULL
);
CREATE INDEX abandonments_created ON abandonments (created_at DESC);
CREATE INDEX abandonments_user ON abandonments (user_id);
