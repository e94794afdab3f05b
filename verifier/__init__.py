"""Barajamos' standalone fairness verifier: a library first, with a thin CLI (`barajamos-verify`).

It checks signed hand records and chains against the published scheme (docs/FAIRNESS.md) with
nothing but the rules core (`truco`) and PyNaCl: it never imports the server, aiohttp or asyncpg.
"""
