-- Arena events as they closed: the final standings and the podium, recorded once at close.
CREATE TABLE arena_events (
    id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.:-]{1,64}$'),
    variant    text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats      smallint NOT NULL CHECK (seats IN (2, 4)),
    starts_at  timestamptz NOT NULL,
    ends_at    timestamptz NOT NULL,
    closed_at  timestamptz NOT NULL,
    CHECK (starts_at < ends_at AND ends_at <= closed_at)
);

CREATE TABLE arena_standings (
    arena_id  text NOT NULL REFERENCES arena_events (id),
    rank      integer NOT NULL CHECK (rank >= 1),
    user_id   bigint NOT NULL REFERENCES users (id),
    points    integer NOT NULL CHECK (points >= 0),
    wins      integer NOT NULL CHECK (wins >= 0),
    games     integer NOT NULL CHECK (games >= wins),
    podium    boolean NOT NULL,
    PRIMARY KEY (arena_id, rank),
    UNIQUE (arena_id, user_id),
    CHECK (NOT podium OR (rank <= 3 AND wins > 0))
);
CREATE INDEX arena_standings_user ON arena_standings (user_id);

-- a closed event is history
CREATE FUNCTION arena_results_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only (%)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER arena_events_append_only BEFORE UPDATE OR DELETE ON arena_events
    FOR EACH ROW EXECUTE FUNCTION arena_results_append_only();
CREATE TRIGGER arena_standings_append_only BEFORE UPDATE OR DELETE ON arena_standings
    FOR EACH ROW EXECUTE FUNCTION arena_results_append_only();
CREATE TRIGGER arena_events_no_truncate BEFORE TRUNCATE ON arena_events
    FOR EACH STATEMENT EXECUTE FUNCTION arena_results_append_only();
CREATE TRIGGER arena_standings_no_truncate BEFORE TRUNCATE ON arena_standings
    FOR EACH STATEMENT EXECUTE FUNCTION arena_results_append_only();
