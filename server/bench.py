"""`barajamos bench engine|fairness|load|relay|queries`: each benchmark lives in its own module,
imported lazily so that `bench engine` needs nothing but the rules core."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

# benchmark -> (module, function, one-line help)
BENCHMARKS: dict[str, tuple[str, str, str]] = {
    "engine": ("server.bench_engine", "main", "random legal playouts: hands/s, actions/s"),
    "fairness": ("server.bench_fairness", "main", "commit, derive and verify deals"),
    "load": ("server.bench_load", "main", "many tables and clients against a live server"),
    "relay": ("server.bench_relay", "main", "the wire alone: a bare aiohttp relay, same machine"),
    "queries": ("server.bench_queries", "main",
                "request-path database queries on a filled database"),
}


def _usage() -> str:
    lines = ["usage: barajamos bench BENCHMARK [ARGS...]", "", "benchmarks:"]
    lines += [f"  {name:<10} {text}" for name, (_, _, text) in BENCHMARKS.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in BENCHMARKS:
        print(f"barajamos bench: unknown benchmark {name!r}\n{_usage()}", file=sys.stderr)
        return 2
    module_name, func_name, _ = BENCHMARKS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        # only "this benchmark is not installed"; a missing dependency inside it is a real error
        if error.name != module_name:
            raise
        print(
            f"barajamos bench: the {name} benchmark is not available ({module_name})",
            file=sys.stderr,
        )
        return 2
    func: Callable[[list[str]], int] = getattr(module, func_name)
    return func(rest)
