"""Fairness benchmark: deck derivation and record verification speed, deck statistics.

    .venv/bin/python benchmarks/bench_fairness.py [--decks N] [--speed-decks N] [--records N]

The same as `barajamos bench fairness` (server/bench_fairness.py holds the code).
"""

from __future__ import annotations

import sys

from server.bench_fairness import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
