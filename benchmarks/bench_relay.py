"""Relay floor: what a bare aiohttp server on this machine costs per table action, without the
engine, the database or the clocks (same as `barajamos bench relay`). Usage: python
benchmarks/bench_relay.py [--tables 100,400] [--seconds N] [--warmup N] [--clients K]"""

from __future__ import annotations

import sys

from server.bench_relay import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
