-- The ranked house's acknowledged in-memory state, so a restart rebuilds it: queue tickets and
-- running arenas. Written in the request that acknowledges a change; a ticket row goes when its
-- table opens or its player leaves, an arena's rows turn 'closed' when its results are recorded.
-- Duo invitations stay in memory (they lapse in 10 minutes anyway). See docs/RANKED.md.
CREATE TABLE ranked_queue_tickets (
    -- a solo ticket, or the first player of a duo (the one who invited)
    user_id         bigint PRIMARY KEY REFERENCES users (id),
    variant         text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats           smallint NOT NULL CHECK (seats IN (2, 4)),
    rating          double precision NOT NULL,
    -- the original join time: the rating window widens with it, across restarts too
    enqueued_at     timestamptz NOT NULL,
    partner_id      bigint UNIQUE REFERENCES users (id),
    partner_rating  double precision,
    CHECK ((partner_id IS NULL) = (partner_rating IS NULL)),
    CHECK (partner_id IS NULL OR (seats = 4 AND partner_id <> user_id))
);

CREATE TABLE ranked_arenas (
    id          text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.:-]{1,64}$'),
    variant     text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats       smallint NOT NULL CHECK (seats IN (2, 4)),
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    next_table  integer NOT NULL DEFAULT 1 CHECK (next_table >= 1),
    CHECK (starts_at < ends_at)
);
CREATE INDEX ranked_arenas_open ON ranked_arenas (status) WHERE status = 'open';

CREATE TABLE ranked_arena_entries (
    arena_id        text NOT NULL REFERENCES ranked_arenas (id),
    user_id         bigint NOT NULL REFERENCES users (id),
    seq             integer NOT NULL CHECK (seq >= 0),  -- join order, a standings tie-break
    rating          double precision NOT NULL,
    active          boolean NOT NULL,
    points          integer NOT NULL CHECK (points >= 0),
    wins            integer NOT NULL CHECK (wins >= 0),
    games           integer NOT NULL CHECK (games >= wins),
    streak          integer NOT NULL CHECK (streak >= 0),
    last_opponents  bigint[] NOT NULL DEFAULT '{}',
    joined_at       timestamptz NOT NULL,
    left_at         timestamptz,
    PRIMARY KEY (arena_id, user_id),
    UNIQUE (arena_id, seq),
    CHECK (active = (left_at IS NULL))
);

-- arena tables the live house opened and that still play: their result scores after a restart
CREATE TABLE ranked_arena_tables (
    arena_id       text NOT NULL REFERENCES ranked_arenas (id),
    number         integer NOT NULL CHECK (number >= 1),
    live_table_id  text NOT NULL UNIQUE CHECK (live_table_id ~ '^[0-9a-f]{16}$'),
    team0          bigint[] NOT NULL,
    team1          bigint[] NOT NULL,
    started_at     timestamptz NOT NULL,
    PRIMARY KEY (arena_id, number)
);
