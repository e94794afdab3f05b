-- Duo invitations waiting for their answer (a player named a partner for a 2v2 queue), written
-- before the inviter is answered, so a restart keeps them with their original time (they lapse
-- 10 minutes after it, as before the restart). They lived in the server's memory only: a
-- restart dropped them, and the partner found nothing to accept.
CREATE TABLE ranked_invitations (
    inviter_id  bigint PRIMARY KEY REFERENCES users (id),
    partner_id  bigint NOT NULL REFERENCES users (id),
    variant     text NOT NULL CHECK (variant IN ('paulista', 'mineiro', 'argentino')),
    seats       smallint NOT NULL CHECK (seats = 4),
    invited_at  timestamptz NOT NULL,
    CHECK (partner_id <> inviter_id)
);
