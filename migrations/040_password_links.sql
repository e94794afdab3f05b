-- One-time links to set a new password (server/password_links.py): a player who forgot theirs
-- asks an operator, who makes one (the operators' accounts page, or `barajamos password-link`
-- for any account). The token itself is never kept, only its SHA-256. A link is good once,
-- for 24 hours, and only the newest of an account: making one replaces the account's unused
-- ones. Rows are kept (who made a link for whom, and whether it was used, is what the account's
-- page and the operators' list show), never changed but to be used or replaced once.
CREATE TABLE password_links (
    id          bigserial PRIMARY KEY,
    token_hash  bytea NOT NULL UNIQUE,
    user_id     bigint NOT NULL REFERENCES users (id),
    -- the operator who made it; NULL: the command line on the house's machine
    made_by     bigint REFERENCES users (id),
    made_at     timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    replaced_at timestamptz,
    CONSTRAINT password_links_once CHECK (used_at IS NULL OR replaced_at IS NULL)
);
CREATE INDEX password_links_user ON password_links (user_id, id);
