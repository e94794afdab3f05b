"""Barajamos game server: aiohttp application, persistence, clocks, bots."""
