"""Load benchmark: many bot tables against a real server process (same as
`barajamos bench load`). Usage: python benchmarks/bench_load.py [--tables 100,500,1000,2500]
[--rate R | --full-speed] [--seconds N] [--warmup N] [--clients K] [--absent-share F]
[--variant V] [--seats S] [--keep DIR]"""

from __future__ import annotations

import sys

from server.bench_load import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
