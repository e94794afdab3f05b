"""The live house: lobby, tables, WebSocket protocol, clocks, records (being built)."""

from aiohttp import web


def setup(app: web.Application) -> None:
    del app
