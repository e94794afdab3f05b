-- Accounts created through the site, by address: too many from one address within an hour
-- are refused (server/accounts.py, BARAJAMOS_REGISTRATIONS_PER_HOUR).
CREATE TABLE registration_attempts (
    id      bigserial PRIMARY KEY,
    remote  text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX registration_attempts_remote_at ON registration_attempts (remote, at);
