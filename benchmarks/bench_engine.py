"""Engine benchmark: random legal playouts per variant and seat count (same as
`barajamos bench engine`). Usage: python benchmarks/bench_engine.py [--seconds N] [--variant V]
[--seats S] [--mode vote|first] [--rounds R] [--seed N]"""

from __future__ import annotations

import sys

from server.bench_engine import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
