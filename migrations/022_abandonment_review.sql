-- Ranked abandonment records, their review by operators, and the append-only audit log.
-- The live house keeps its own abandonment evidence; `source_ref` points at it.

-- Server faults and restarts: an abandonment overlapping one carries no penalty.
CREATE TABLE server_faults (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('restart', 'fault')),
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    note        text NOT NULL DEFAULT '',
    CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX server_faults_span ON server_faults (started_at, ended_at);

CREATE TABLE ranked_abandonments (
    id                bigserial PRIMARY KEY,
    user_id           bigint NOT NULL REFERENCES users (id),
    match_ref         text NOT NULL,
    variant           text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats             smallint NOT NULL CHECK (seats IN (2, 4)),
    match_started_at  timestamptz NOT NULL,
    abandoned_at      timestamptz NOT NULL,
    source_ref        text,
    -- the evidence timeline, oldest first: the live house's items {"kind", "at_ms", ...}
    evidence          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(evidence) = 'array'),
    status            text NOT NULL
                      CHECK (status IN ('pending', 'upheld', 'overturned', 'exempt')),
    strikes           integer NOT NULL CHECK (strikes >= 0),
    paused_until      timestamptz,
    appeal_text       text,
    appealed_at       timestamptz,
    appeal_answered   boolean NOT NULL DEFAULT false,
    decided_at        timestamptz,
    decided_by        bigint REFERENCES users (id),
    reversed_at       timestamptz,
    UNIQUE (match_ref, user_id),
    CHECK (abandoned_at >= match_started_at),
    CHECK ((appeal_text IS NULL) = (appealed_at IS NULL)),
    -- an overturned record was reversed; nothing else ever was
    CHECK ((status = 'overturned') = (reversed_at IS NOT NULL)),
    CHECK (status <> 'exempt' OR paused_until IS NULL)
);
CREATE INDEX ranked_abandonments_user ON ranked_abandonments (user_id, abandoned_at);
CREATE INDEX ranked_abandonments_status ON ranked_abandonments (status, abandoned_at);

-- The transitions a review may make, enforced whatever the application does: an overturn is
-- final and reverses once, an appeal is filed once, the facts of the record never change.
CREATE FUNCTION ranked_abandonment_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.user_id, NEW.match_ref, NEW.variant, NEW.seats, NEW.match_started_at,
        NEW.abandoned_at, NEW.source_ref, NEW.evidence, NEW.strikes, NEW.paused_until)
       IS DISTINCT FROM
       (OLD.user_id, OLD.match_ref, OLD.variant, OLD.seats, OLD.match_started_at,
        OLD.abandoned_at, OLD.source_ref, OLD.evidence, OLD.strikes, OLD.paused_until) THEN
        RAISE EXCEPTION 'the facts of abandonment record % never change', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.status IN ('overturned', 'exempt') AND NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'abandonment record % is % for good', OLD.id, OLD.status
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.status = 'pending' AND OLD.status <> 'pending' THEN
        RAISE EXCEPTION 'abandonment record % cannot go back to pending', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    IF OLD.reversed_at IS NOT NULL AND NEW.reversed_at IS DISTINCT FROM OLD.reversed_at THEN
        RAISE EXCEPTION 'abandonment record % was already reversed', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    IF OLD.appeal_text IS NOT NULL AND (NEW.appeal_text, NEW.appealed_at)
       IS DISTINCT FROM (OLD.appeal_text, OLD.appealed_at) THEN
        RAISE EXCEPTION 'abandonment record % was already appealed', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER ranked_abandonments_transition BEFORE UPDATE ON ranked_abandonments
    FOR EACH ROW EXECUTE FUNCTION ranked_abandonment_transition();
CREATE FUNCTION ranked_abandonment_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'abandonment records are never deleted'
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER ranked_abandonments_keep BEFORE DELETE ON ranked_abandonments
    FOR EACH ROW EXECUTE FUNCTION ranked_abandonment_keep();
CREATE TRIGGER ranked_abandonments_no_truncate BEFORE TRUNCATE ON ranked_abandonments
    FOR EACH STATEMENT EXECUTE FUNCTION ranked_abandonment_keep();

-- Every event in a record's life, who did it and when; rows are only ever added.
CREATE TABLE ranked_review_audit (
    id         bigserial PRIMARY KEY,
    record_id  bigint NOT NULL REFERENCES ranked_abandonments (id),
    -- NULL: the house itself (the record was created by the server)
    actor_id   bigint REFERENCES users (id),
    action     text NOT NULL CHECK (action IN ('created', 'appeal', 'uphold', 'overturn')),
    note       text NOT NULL DEFAULT '',
    detail     jsonb NOT NULL DEFAULT '{}',
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ranked_review_audit_record ON ranked_review_audit (record_id, id);
CREATE INDEX ranked_review_audit_actor ON ranked_review_audit (actor_id, id);

CREATE FUNCTION ranked_review_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the review audit log is append-only (%)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER ranked_review_audit_append_only BEFORE UPDATE OR DELETE ON ranked_review_audit
    FOR EACH ROW EXECUTE FUNCTION ranked_review_audit_append_only();
CREATE TRIGGER ranked_review_audit_no_truncate BEFORE TRUNCATE ON ranked_review_audit
    FOR EACH STATEMENT EXECUTE FUNCTION ranked_review_audit_append_only();
