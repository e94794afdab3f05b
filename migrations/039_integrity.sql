-- What the code relied on and the schema did not hold (an outside review of the database):
--
-- A chip account's identity is fixed: only its balance moves (by posted lines). An account's
-- kind, code and user could be changed by hand (a wallet made 'house' escaped the non-negative
-- check; 'wallet:5' could belong to user 7), and a second house could be made.
ALTER TABLE chip_accounts
    ADD CONSTRAINT chip_accounts_code_of_kind CHECK (
        (kind = 'house' AND code = 'house')
        OR (kind = 'wallet' AND code = 'wallet:' || user_id)
        OR (kind = 'stake' AND code LIKE 'stake:_%'));
CREATE UNIQUE INDEX chip_accounts_one_house ON chip_accounts ((true)) WHERE kind = 'house';

CREATE FUNCTION chip_account_identity_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a chip account''s code, kind and user never change'
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER chip_accounts_identity_fixed BEFORE UPDATE OF code, kind, user_id ON chip_accounts
    FOR EACH ROW WHEN (OLD.code IS DISTINCT FROM NEW.code OR OLD.kind IS DISTINCT FROM NEW.kind
                       OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION chip_account_identity_fixed();

-- A finished hand's signed record is public history: once written it never changes, and the
-- hand is never deleted (a DELETE of its table cascaded to it).
CREATE FUNCTION live_hand_record_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'hand %-% has its signed record: it is kept as written', OLD.table_id, OLD.hand
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER live_hands_record_kept BEFORE UPDATE OF record, record_hash ON live_hands
    FOR EACH ROW WHEN (OLD.record IS NOT NULL AND (NEW.record IS DISTINCT FROM OLD.record
                                                  OR NEW.record_hash IS DISTINCT FROM OLD.record_hash))
    EXECUTE FUNCTION live_hand_record_kept();
CREATE TRIGGER live_hands_record_not_deleted BEFORE DELETE ON live_hands
    FOR EACH ROW WHEN (OLD.record IS NOT NULL)
    EXECUTE FUNCTION live_hand_record_kept();

-- /arena lists the newest closed arenas.
CREATE INDEX arena_events_closed ON arena_events (closed_at DESC);
