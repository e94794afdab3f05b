"""Ranked play: Glicko-2 ratings, the chips ledger, matchmaking, the arena, abandonment penalties
and their review. The pure rules (`glicko2`, `matchmaking`, `arena`, `penalties`) take time as a
value and touch no database; `ledger`, `ratings` and `review` are the PostgreSQL stores.
See docs/RANKED.md."""
