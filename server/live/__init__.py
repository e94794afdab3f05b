"""The live house: lobby, tables, the WebSocket protocol, clocks, records (docs/PROTOCOL.md).

`setup(app)` is called by the app factory: it adds the routes, creates the house, starts it
once the database pool exists (rebuilding every live table), closes the sockets with GOING_AWAY
on shutdown and then stops the tables and flushes the pending writes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

from aiohttp import web

from server.app import CLOCK, CONFIG, DSN, METRICS, POOL, WRITES_CHECK
from server.live import api
from server.live.house import House
from server.live.model import LiveSettings
from server.live.table import MatchResult
from server.live.ws import table_socket

HOUSE = web.AppKey("live_house", House)
# tests may replace the settings after create_app and before the app starts
LIVE_SETTINGS = web.AppKey("live_settings", LiveSettings)

__all__ = ["HOUSE", "LIVE_SETTINGS", "House", "LiveSettings", "setup"]


async def _house(app: web.Application) -> AsyncIterator[None]:
    house = app[HOUSE]
    house.settings = app[LIVE_SETTINGS]
    await house.start(app[POOL], app[DSN])
    try:
        yield
    finally:
        await house.stop()


async def _close_sockets(app: web.Application) -> None:
    await app[HOUSE].close_sockets()


async def _settle(app: web.Application, result: MatchResult) -> None:
    """Finished ranked and arena matches go to the ranked service, when the app has one."""
    from server.ranked.service import RANKED

    service = app.get(RANKED)
    if service is None:
        raise RuntimeError("a ranked or arena match ended but no ranked service is running")
    lineup = app[HOUSE].lineup(result)
    await service.match_ended(
        table_id=result.table_id, match_number=result.match_number, kind=result.kind,
        variant=result.variant, seats=result.seats, users_by_seat=result.users_by_seat,
        termination=result.termination, winner_team=result.winner_team,
        forfeit_seat=result.forfeit_seat,
        restart_overlap=lineup is not None and lineup.restart_overlap, evidence=result.evidence,
        no_show=result.no_show)


def setup(app: web.Application) -> None:
    from server.ranked.service import LAUNCHER

    app[LIVE_SETTINGS] = LiveSettings()
    house = House(app[CONFIG], app[CLOCK], app[METRICS], app[LIVE_SETTINGS])
    house.settler = partial(_settle, app)
    app[HOUSE] = house
    app[WRITES_CHECK] = house.writes_problem  # /health: whether moves can be saved now
    # the ranked service opens its ranked and arena tables through the house
    app[LAUNCHER] = house
    app.cleanup_ctx.append(_house)
    app.on_shutdown.append(_close_sockets)
    r = app.router
    r.add_post("/api/tables", api.create_table, name="live_create")
    r.add_get("/api/tables", api.list_tables, name="live_list")
    r.add_get("/api/me/tables", api.played_tables, name="live_played")
    r.add_get("/api/me/tables/{table_id}", api.played_table, name="live_played_table")
    r.add_get("/api/tables/{table_id}", api.get_table, name="live_table")
    r.add_post("/api/tables/{table_id}/join", api.join_table, name="live_join")
    r.add_post("/api/tables/{table_id}/seat", api.pick_seat, name="live_seat")
    r.add_post("/api/tables/{table_id}/start", api.start_table, name="live_start")
    r.add_post("/api/tables/{table_id}/rematch", api.rematch, name="live_rematch")
    r.add_post("/api/tables/{table_id}/leave", api.leave_table, name="live_leave")
    r.add_get("/ws/tables/{table_id}", table_socket, name="live_socket")
    r.add_get("/api/key", api.public_key, name="live_key")
    r.add_get("/hands/{hand_id}", api.hand_record, name="live_hand")
    r.add_get("/tables/{table_id}/chain", api.table_chain, name="live_chain")
    r.add_get("/api/operator/abandonments", api.list_abandonments,
              name="operator_abandonments")
    r.add_get("/api/operator/abandonments/{abandonment_id}", api.get_abandonment,
              name="operator_abandonment")
