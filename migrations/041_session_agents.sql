-- What each session was opened with, said as a person reads it ("Firefox no Windows", from the
-- browser's User-Agent at the login; server/accounts.py `agent_label`): the account page lists
-- the open sessions so that their owner recognizes theirs and ends the others. Only the label
-- is kept, never the header itself; it goes with its session. NULL: a session opened before
-- this column, or by a client that said nothing.
ALTER TABLE sessions ADD COLUMN agent text CHECK (char_length(agent) <= 80);
