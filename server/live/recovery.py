"""Rebuild every live table from what was written, after a clean stop or a crash (even SIGKILL).

Only committed rows count: the seats, the seed chain (its tip unsealed with the seed key), the
hand in play with its seed, contributions and actions, replayed through the engine exactly as
the verifier replays a record. Play then goes on where it stood; every deadline (and the entropy
window of a hand not yet dealt) starts again in full.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import asyncpg

from server.live.model import AbandonConsequence, HandPhase, TableKind, TableStatus
from server.live.seeds import SealedKind, SealError, unseal
from server.live.table import (
    Chain,
    HandRun,
    MatchResult,
    Seat,
    Streak,
    TableActor,
    at_rest_action,
    signal_json,
)
from truco import MatchConfig, Termination, apply, parse_signal
from truco.fairness import commitment, seed_chain
from truco.records import DealerChoice, parse_record, replay

if TYPE_CHECKING:
    from server.live.house import House

log = logging.getLogger("barajamos.live.recovery")


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


TABLES = ("SELECT t.*, u.name AS owner_name FROM live_tables t"
          " LEFT JOIN users u ON u.id = t.owner_id")

REOPENED_MATCHMAKER_TABLES = (
    "UPDATE live_tables t SET status = 'finished' WHERE t.kind IN ('ranked', 'arena')"
    " AND t.status = 'open' AND EXISTS (SELECT 1 FROM live_matches m WHERE m.table_id = t.id)")

# what `_restore` raises for written rows that do not rebuild a table (a seed key that does not
# open its seeds, a row that does not replay): that table is not served, the rows stay as written
UNRESTORABLE = (ValueError, KeyError, RuntimeError, SealError)


async def restore_tables(house: House, pool: asyncpg.Pool) -> list[TableActor]:
    actors: list[TableActor] = []
    async with pool.acquire() as conn:
        # a ranked or arena table plays one match and never reopens; one that an earlier
        # version sent back to `open` when a player left its finished match is finished again
        await conn.execute(REOPENED_MATCHMAKER_TABLES)
        rows = await conn.fetch(TABLES + " WHERE t.status <> 'closed' ORDER BY t.created_at, t.id")
        for row in rows:
            try:
                actors.append(await _restore(house, conn, row))
            except UNRESTORABLE as exc:
                # one table that cannot be rebuilt must not keep the house closed: it stays as
                # written for an operator to look at, and is not served
                log.error("table not restored", extra={"table": row["id"], "error": str(exc)})
                house.metrics.tables_unavailable.labels("not_restored").inc()
    for actor in actors:
        actor.start()
        if actor.status is TableStatus.PLAYING:
            actor.post(actor.resume)
    return actors


async def written_result(house: House, actor: TableActor) -> MatchResult | None:
    """The end of `actor`'s match as written, to settle (`TableActor._reload`: a match whose
    last write was in doubt, and stood); None while it has not ended. A cancellation for
    players who never came is settled as a plain one (who did not come is not written)."""
    async with house.pool.acquire(timeout=10) as conn:
        match = await conn.fetchrow(
            "SELECT termination, winner FROM live_matches WHERE table_id = $1 AND number = $2",
            actor.id, actor.match_number)
        if match is None or match["termination"] is None:
            return None
        forfeit = await conn.fetchrow(
            "SELECT seat, evidence FROM abandonments WHERE table_id = $1 AND match_number = $2"
            " AND consequence = $3 ORDER BY id LIMIT 1",
            actor.id, actor.match_number, AbandonConsequence.FORFEIT.value)
    evidence = [] if forfeit is None else [
        item for item in _loads(forfeit["evidence"]) if isinstance(item, dict)]
    return actor.match_result(Termination(match["termination"]), match["winner"],
                              None if forfeit is None else forfeit["seat"], evidence)


async def reread(house: House, table_id: str) -> TableActor:
    """One table as written, not started: what a live actor whose write ended in doubt takes
    up (`TableActor._reload`). Its rows hold still meanwhile: the actor is their only writer,
    and it is waiting for this."""
    async with house.pool.acquire(timeout=10) as conn:
        row = await conn.fetchrow(TABLES + " WHERE t.id = $1", table_id)
        if row is None:
            raise RuntimeError(f"table {table_id} is not written")
        return await _restore(house, conn, row)


async def _restore(house: House, conn: Any, row: asyncpg.Record) -> TableActor:
    table_id: str = row["id"]
    config = MatchConfig(row["variant"], row["seats"], row["mode"])
    actor = TableActor(house, table_id, config, TableKind(row["kind"]), row["invite_code"],
                       row["owner_name"], TableStatus(row["status"]))
    for seat in await conn.fetch(
            "SELECT s.seat, s.user_id, s.bot, s.rematch, u.name FROM live_seats s"
            " LEFT JOIN users u ON u.id = s.user_id WHERE s.table_id = $1", table_id):
        actor.put_seat(seat["seat"], Seat(
            user_id=seat["user_id"], name="bot" if seat["bot"] else seat["name"],
            bot=seat["bot"], rematch=seat["rematch"]))
    # the latest match and who played it by seat (a bot, or a row written before migration 026,
    # which has no players: unnamed)
    latest = await conn.fetchrow(
        "SELECT m.number, array(SELECT u.name FROM unnest(m.players) WITH ORDINALITY"
        " AS p(user_id, seat) LEFT JOIN users u ON u.id = p.user_id ORDER BY p.seat) AS names,"
        " (SELECT min(h.hand) FROM live_hands h WHERE h.table_id = m.table_id"
        "  AND h.match_number = m.number) AS first_hand"
        " FROM live_matches m WHERE m.table_id = $1 ORDER BY m.number DESC LIMIT 1", table_id)
    first_hand = None if latest is None else latest["first_hand"]
    if latest is not None:
        actor.match_number = latest["number"]
        for seat, name in enumerate(latest["names"][:config.seats]):
            actor.played_by[seat] = name
        forfeit = await conn.fetchrow(
            "SELECT seat, trigger FROM abandonments WHERE table_id = $1 AND match_number = $2"
            " AND consequence = 'forfeit' ORDER BY id LIMIT 1", table_id, latest["number"])
        if forfeit is not None:
            actor.forfeit_seat, actor.forfeit_trigger = forfeit["seat"], forfeit["trigger"]

    shown: dict[str, Any] | None = None
    last = await conn.fetchrow(
        "SELECT hand, match_number, record, record_hash FROM live_hands"
        " WHERE table_id = $1 AND record IS NOT NULL ORDER BY hand DESC LIMIT 1", table_id)
    if last is not None:
        record = _loads(last["record"])
        actor.last_hand = last["hand"]
        actor.prev_hash = bytes(last["record_hash"])
        actor.score = (record["score_after"][0], record["score_after"][1])
        if last["match_number"] == actor.match_number and record["match_winner"] is None \
                and record["end"] == "completed":
            actor.next_dealer = (record["dealer"]["seat"] + 1) % config.seats
        else:
            actor.score = (0, 0) if actor.status is TableStatus.PLAYING else actor.score
        ended = record["match_winner"] is not None
        if last["match_number"] == actor.match_number and (
                (actor.status is TableStatus.FINISHED and ended)
                or (actor.status is TableStatus.PLAYING and not ended
                    and record["end"] == "completed")):
            shown = record  # the match's last recorded hand: replayed below, if still shown

    # a match with no hand yet begins with the next one
    actor.match_first_hand = actor.last_hand + 1 if first_hand is None else first_hand
    chain_row = await conn.fetchrow(
        "SELECT chain_start, length, tip_sealed, anchor FROM seed_chains WHERE table_id = $1"
        " ORDER BY chain_start DESC LIMIT 1", table_id)
    if chain_row is not None:
        tip = unseal(house.config.seed_key, SealedKind.TIP, table_id,
                     chain_row["chain_start"], bytes(chain_row["tip_sealed"]))
        actor.chain = Chain(chain_row["chain_start"], seed_chain(tip, chain_row["length"]),
                            _loads(chain_row["anchor"]))

    if actor.status is TableStatus.PLAYING:
        await _restore_hand(house, conn, actor)
        await _restore_streaks(conn, actor)
    if shown is not None and actor.state is None:
        # no hand dealt since: the state after the match's last recorded hand, replayed from
        # its record exactly as the verifier does. A snapshot of a finished table shows how the
        # match ended (the view's outcome), one between hands the hand just finished. Only
        # what is shown depends on it: a record that does not replay leaves it out
        try:
            actor.state = replay(parse_record(shown))
        except ValueError as exc:
            log.error("last hand not replayed", extra={"table": table_id, "error": str(exc)})
    return actor


async def _restore_hand(house: House, conn: Any, actor: TableActor) -> None:
    row = await conn.fetchrow(
        "SELECT * FROM live_hands WHERE table_id = $1 AND record IS NULL"
        " ORDER BY hand DESC LIMIT 1", actor.id)
    if row is None:
        return  # the previous hand was recorded; `resume` begins the next one
    number: int = row["hand"]
    seed = unseal(house.config.seed_key, SealedKind.SEED, actor.id, number,
                  bytes(row["seed_sealed"]))
    if commitment(seed) != bytes(row["commitment"]):
        raise RuntimeError(f"table {actor.id} hand {number}: the stored seed does not match"
                           " its commitment")
    chain = actor.chain
    hand = HandRun(
        number=number,
        match_number=row["match_number"],
        chain_start=row["chain_start"],
        seed=seed,
        commitment=bytes(row["commitment"]),
        score_before=(row["score_before"][0], row["score_before"][1]),
        anchor=chain.anchor if chain is not None and chain.start == number else None,
    )
    for c in await conn.fetch(
            "SELECT seat, data FROM live_contributions WHERE table_id = $1 AND hand = $2",
            actor.id, number):
        hand.contributions[c["seat"]] = bytes(c["data"])
    actor.hand = hand
    actor.score = hand.score_before
    for kept in await conn.fetch(
            "SELECT sealed FROM live_signals WHERE table_id = $1 AND hand = $2 ORDER BY id",
            actor.id, number):
        said = json.loads(unseal(house.config.seed_key, SealedKind.SIGNAL, actor.id, number,
                                 bytes(kept["sealed"])))
        message = signal_json(said["from"], parse_signal(actor.config.variant, said["code"]),
                              said["at_ms"])
        # not delivered since the restart: the partner's next catch-up or snapshot has it
        actor.keep_signal(number, said["to"], message, delivered=False)
    if not row["dealt"]:
        hand.phase = HandPhase.ENTROPY
        return
    actor.start_dealt(hand, row["dealer"], DealerChoice(row["dealer_by"]))
    for a in await conn.fetch(
            "SELECT action FROM live_actions WHERE table_id = $1 AND hand = $2 ORDER BY idx",
            actor.id, number):
        assert actor.state is not None
        action = at_rest_action(actor.state, _loads(a["action"]))
        actor.state, _ = apply(actor.state, action)
        hand.actions.append(action)


async def _restore_streaks(conn: Any, actor: TableActor) -> None:
    """Consecutive automatic actions survive a restart (the review then sees the overlap).

    A streak ends when its player acts, and also at an abandonment that a restart exempted
    (the live table starts a new streak there; its automatic action comes after it)."""
    resets: dict[int, list[Any]] = {}
    for row in await conn.fetch(
            "SELECT seat, created_at FROM abandonments WHERE table_id = $1 AND match_number = $2"
            " AND consequence = $3 ORDER BY created_at, id",
            actor.id, actor.match_number, AbandonConsequence.NONE_RESTART.value):
        resets.setdefault(row["seat"], []).append(row["created_at"])
    for row in await conn.fetch(
            "SELECT seat, kind, at FROM seat_events WHERE table_id = $1 AND match_number = $2"
            " AND kind IN ('automatic', 'acted') ORDER BY id", actor.id, actor.match_number):
        ended = resets.get(row["seat"], [])
        while ended and ended[0] <= row["at"]:
            ended.pop(0)
            actor.streaks.pop(row["seat"], None)
        streak = actor.streaks.setdefault(row["seat"], Streak())
        if row["kind"] == "acted":
            streak.count, streak.started_at = 0, None
        else:
            streak.count += 1
            if streak.started_at is None:
                streak.started_at = row["at"].timestamp()
    for seat, ended in resets.items():
        if ended:  # an exempted abandonment after the streak's last automatic action
            actor.streaks.pop(seat, None)


# how long a finished match's seat events (connections, deadlines, automatic actions: when a
# player was where) are kept: nothing reads them once the match ended (an abandonment keeps its
# own evidence, copied when it happened); a month for any question about a match
SEAT_EVENTS_KEPT = timedelta(days=30)


async def prune_seat_events(pool: asyncpg.Pool, kept: timedelta = SEAT_EVENTS_KEPT,
                            batch: int = 5000, batches: int = 100) -> int:
    """Delete the seat events of matches that ended more than `kept` ago (a privacy review:
    every connection, disconnection and missed deadline of every player was kept for good).
    A batch at a time, at most `batches` a call. Returns how many went."""
    total = 0
    for _ in range(batches):
        status = await pool.execute(
            "DELETE FROM seat_events WHERE id = ANY (ARRAY(SELECT e.id FROM seat_events e"
            " JOIN live_matches m ON m.table_id = e.table_id AND m.number = e.match_number"
            " WHERE m.ended_at < now() - $1::interval LIMIT $2))", kept, batch)
        done = int(status.split()[-1])
        total += done
        if done < batch:
            break
    return total


# what `prune_recorded_rows` deletes at a time, and how many times a call
PRUNE_BATCH = 5000
PRUNE_BATCHES = 100


async def prune_recorded_rows(pool: asyncpg.Pool, batch: int = PRUNE_BATCH,
                              batches: int = PRUNE_BATCHES) -> dict[str, int]:
    """Delete the rows kept to rebuild a hand in play (actions, contributions, partner signals)
    of hands recorded since: the record's commit drops them, but a database served before it
    did (the twenty-ninth session) keeps them for good, some 40% of its size. A batch at a time,
    at most `batches` of them a table a call (the hourly pruning drains the rest later).
    Returns how many rows of each table went."""
    gone: dict[str, int] = {}
    for table in ("live_actions", "live_contributions", "live_signals"):
        total = 0
        for _ in range(batches):
            status = await pool.execute(
                f"DELETE FROM {table} WHERE ctid = ANY (ARRAY(SELECT k.ctid FROM {table} k"
                " JOIN live_hands h USING (table_id, hand) WHERE h.record IS NOT NULL"
                " LIMIT $1))", batch)
            done = int(status.split()[-1])
            total += done
            if done < batch:
                break
        gone[table] = total
    return gone
