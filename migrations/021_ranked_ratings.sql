-- Glicko-2 ratings per player, variant and seat count, and every change to them.
CREATE TABLE ranked_ratings (
    user_id         bigint NOT NULL REFERENCES users (id),
    variant         text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats           smallint NOT NULL CHECK (seats IN (2, 4)),
    rating          double precision NOT NULL,
    rd              double precision NOT NULL CHECK (rd > 0 AND rd <= 350),
    volatility      double precision NOT NULL CHECK (volatility > 0),
    games           integer NOT NULL DEFAULT 0 CHECK (games >= 0),
    last_played_at  timestamptz,
    PRIMARY KEY (user_id, variant, seats)
);
CREATE INDEX ranked_ratings_board ON ranked_ratings (variant, seats, rating DESC);

CREATE TABLE ranked_rating_history (
    id                bigserial PRIMARY KEY,
    user_id           bigint NOT NULL REFERENCES users (id),
    variant           text NOT NULL,
    seats             smallint NOT NULL,
    -- 'match:<match>' or 'reversal:<abandonment record id>': each applies to a player once
    reference         text NOT NULL,
    reason            text NOT NULL CHECK (reason IN ('match', 'reversal')),
    match_ref         text NOT NULL,
    rating_before     double precision NOT NULL,
    rating_after      double precision NOT NULL,
    rd_after          double precision NOT NULL,
    volatility_after  double precision NOT NULL,
    at                timestamptz NOT NULL,
    UNIQUE (reference, user_id),
    FOREIGN KEY (user_id, variant, seats) REFERENCES ranked_ratings (user_id, variant, seats)
);
CREATE INDEX ranked_rating_history_player
    ON ranked_rating_history (user_id, variant, seats, id DESC);

CREATE FUNCTION ranked_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only (%)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER ranked_rating_history_append_only
    BEFORE UPDATE OR DELETE ON ranked_rating_history
    FOR EACH ROW EXECUTE FUNCTION ranked_history_append_only();
CREATE TRIGGER ranked_rating_history_no_truncate BEFORE TRUNCATE ON ranked_rating_history
    FOR EACH STATEMENT EXECUTE FUNCTION ranked_history_append_only();
