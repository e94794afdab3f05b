-- Two holes in the ledger's guards (020): an entry was checked for balance only when it was
-- inserted, so a line added to an old entry later went unchecked; and an account could be
-- created holding chips no journal line put there. Both now fail, whatever the caller.

-- At commit, the entry of every line posted in the transaction still sums to zero.
CREATE FUNCTION chip_line_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    n integer;
BEGIN
    SELECT coalesce(sum(amount), 0), count(*) INTO total, n
      FROM chip_lines WHERE entry_id = NEW.entry_id;
    IF n < 2 OR total <> 0 THEN
        RAISE EXCEPTION 'chip entry % is unbalanced (% lines, sum %)', NEW.entry_id, n, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER chip_lines_balanced AFTER INSERT ON chip_lines
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chip_line_entry_balanced();

-- An account opens empty: its balance then moves only by posted lines (chip_balance_guard).
CREATE FUNCTION chip_account_opens_empty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.balance <> 0 THEN
        RAISE EXCEPTION 'chip account % would open holding % chips', NEW.code, NEW.balance
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chip_accounts_open_empty BEFORE INSERT ON chip_accounts
    FOR EACH ROW EXECUTE FUNCTION chip_account_opens_empty();
