-- A player's past tables (`GET /api/me/tables`): the tables of the matches they played, found
-- through each match's players (migration 026)
CREATE INDEX live_matches_players ON live_matches USING gin (players);
