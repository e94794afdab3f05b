"""Request-path database queries timed on a database filled by generate_series (same as
`barajamos bench queries`). Usage: python benchmarks/bench_queries.py [--scale 1.0] [--runs N]
[--admin-url URL] [--work DIR]"""

from __future__ import annotations

import sys

from server.bench_queries import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
