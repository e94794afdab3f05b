-- The chips ledger: double-entry bookkeeping. Chips move only as journal entries whose lines sum
-- to zero; an account's balance is changed only by the lines posted to it (by trigger), and the
-- journal is append-only. See docs/RANKED.md.
CREATE TABLE chip_accounts (
    id       bigserial PRIMARY KEY,
    -- 'house', 'wallet:<user id>', 'stake:<match>'
    code     text NOT NULL UNIQUE,
    kind     text NOT NULL CHECK (kind IN ('house', 'wallet', 'stake')),
    user_id  bigint REFERENCES users (id),
    balance  bigint NOT NULL DEFAULT 0,
    CONSTRAINT chip_accounts_wallet_user CHECK ((kind = 'wallet') = (user_id IS NOT NULL)),
    -- the house issues every chip, so its balance is minus the chips in circulation; every other
    -- account may never go below zero
    CONSTRAINT chip_accounts_not_negative CHECK (kind = 'house' OR balance >= 0)
);
CREATE UNIQUE INDEX chip_accounts_one_wallet ON chip_accounts (user_id) WHERE kind = 'wallet';

-- the house is created here, before any other account, so it has the lowest id: movements lock
-- accounts in id order, and the house is always locked first
INSERT INTO chip_accounts (code, kind) VALUES ('house', 'house');

CREATE TABLE chip_entries (
    id          bigserial PRIMARY KEY,
    -- the idempotency key: a second movement with the same reference is never posted
    reference   text NOT NULL UNIQUE,
    reason      text NOT NULL
                CHECK (reason IN ('grant', 'hold', 'payout', 'refund', 'reversal')),
    match_ref   text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chip_entries_match ON chip_entries (match_ref) WHERE match_ref IS NOT NULL;

CREATE TABLE chip_lines (
    entry_id       bigint NOT NULL REFERENCES chip_entries (id),
    account_id     bigint NOT NULL REFERENCES chip_accounts (id),
    amount         bigint NOT NULL CHECK (amount <> 0),
    -- the account's balance right after this line: a player's statement reads it directly
    balance_after  bigint NOT NULL,
    PRIMARY KEY (entry_id, account_id)
);
CREATE INDEX chip_lines_account ON chip_lines (account_id, entry_id);

-- Posting a line moves the account's balance, under the row lock the UPDATE takes; the CHECK on
-- chip_accounts then refuses any balance below zero, whatever the caller computed.
CREATE FUNCTION chip_line_post() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chip_accounts SET balance = balance + NEW.amount
     WHERE id = NEW.account_id
    RETURNING balance INTO NEW.balance_after;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'chip account % does not exist', NEW.account_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chip_lines_post BEFORE INSERT ON chip_lines
    FOR EACH ROW EXECUTE FUNCTION chip_line_post();

-- At commit every entry has at least two lines and its lines sum to zero.
CREATE FUNCTION chip_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    n integer;
BEGIN
    SELECT coalesce(sum(amount), 0), count(*) INTO total, n
      FROM chip_lines WHERE entry_id = NEW.id;
    IF n < 2 OR total <> 0 THEN
        RAISE EXCEPTION 'chip entry % is unbalanced (% lines, sum %)', NEW.id, n, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER chip_entries_balanced AFTER INSERT ON chip_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chip_entry_balanced();

-- The journal is history: nothing in it is ever changed or removed.
CREATE FUNCTION chip_journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the chips journal is append-only (% on %)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER chip_entries_append_only BEFORE UPDATE OR DELETE ON chip_entries
    FOR EACH ROW EXECUTE FUNCTION chip_journal_append_only();
CREATE TRIGGER chip_lines_append_only BEFORE UPDATE OR DELETE ON chip_lines
    FOR EACH ROW EXECUTE FUNCTION chip_journal_append_only();
CREATE TRIGGER chip_entries_no_truncate BEFORE TRUNCATE ON chip_entries
    FOR EACH STATEMENT EXECUTE FUNCTION chip_journal_append_only();
CREATE TRIGGER chip_lines_no_truncate BEFORE TRUNCATE ON chip_lines
    FOR EACH STATEMENT EXECUTE FUNCTION chip_journal_append_only();

-- Balances move only through posted lines (the UPDATE in chip_line_post runs one trigger level
-- down); a direct UPDATE of a balance would create or destroy chips outside the journal.
CREATE FUNCTION chip_balance_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'chip balances change only by posting journal lines'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chip_accounts_balance_guard BEFORE UPDATE OF balance ON chip_accounts
    FOR EACH ROW EXECUTE FUNCTION chip_balance_guard();
