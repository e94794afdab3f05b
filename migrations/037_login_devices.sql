-- The browser a login attempt came from, when it carries a device cookie of the name's owner
-- (server/accounts.py: such a browser is held to its own failure limit, so strangers' wrong
-- guesses cannot lock the owner out). NULL for every other attempt.
ALTER TABLE login_attempts ADD COLUMN device text;
