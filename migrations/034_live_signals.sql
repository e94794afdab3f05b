-- Partner signals of the hand in play (RULES.md: partner talk, to the partner only). Each is
-- written before it is delivered and acknowledged, so a restart keeps it for the rest of its
-- hand. Sealed at rest like a seed not yet revealed (AES-256-GCM; associated data: "signal",
-- table id, hand number): a signal tells something of cards still hidden. A table's signals of
-- earlier hands are deleted with its first signal of a new hand (in the same transaction).
CREATE TABLE live_signals (
    id        bigserial PRIMARY KEY,
    table_id  text NOT NULL,
    hand      integer NOT NULL,
    sealed    bytea NOT NULL,
    FOREIGN KEY (table_id, hand) REFERENCES live_hands (table_id, hand) ON DELETE CASCADE
);
CREATE INDEX live_signals_hand ON live_signals (table_id, hand);
