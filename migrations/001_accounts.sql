-- Accounts, sessions and the login rate limiter.
CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL,
    password_hash text NOT NULL,
    role          text NOT NULL DEFAULT 'player' CHECK (role IN ('player', 'operator')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_name_format CHECK (name ~ '^[A-Za-z0-9_.-]{3,24}$')
);
-- names are unique without regard to case: "Ana" and "ana" are one player
CREATE UNIQUE INDEX users_name_lower ON users (lower(name));

CREATE TABLE sessions (
    -- SHA-256 of the cookie token: a leaked table does not hand out live sessions
    token_hash  bytea PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE login_attempts (
    id          bigserial PRIMARY KEY,
    name_lower  text NOT NULL,
    remote      text NOT NULL,
    succeeded   boolean NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_attempts_name_at ON login_attempts (name_lower, at);
CREATE INDEX login_attempts_remote_at ON login_attempts (remote, at);
