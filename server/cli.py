"""The `barajamos` command line: one entry point, one module per subcommand.

Subcommands import their module lazily so that `barajamos scenario` or `barajamos bench engine`
never pay for (or need) the server's dependencies.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

# subcommand -> (module, function, one-line help); each function takes argv and returns an exit code
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "scenario": ("server.scenario_cli", "main",
                 "run rules scenario files (../shared/SCENARIOS.md)"),
    "bench": ("server.bench", "main", "benchmarks: engine, fairness, load, relay, queries"),
    "serve": ("server.serve", "main", "start the house (embedded PostgreSQL without DATABASE_URL)"),
    "migrate": ("server.serve", "migrate_main", "apply pending SQL migrations and exit"),
    "operator": ("server.serve", "operator_main", "give an account the operator role"),
    "erase-account": ("server.serve", "erase_account_main",
                      "anonymize an account at its owner's request"),
    "password-link": ("server.serve", "password_link_main",
                      "a one-time link to choose a new password (a forgotten one)"),
    "keys": ("server.keys", "main", "rotate the signing key (keys rotate; the house stopped)"),
    "bots": ("server.botclient", "main", "run bot clients against a server over the protocol"),
}


def _usage() -> str:
    lines = ["usage: barajamos COMMAND [ARGS...]", "", "commands:"]
    for name, (_, _, text) in SUBCOMMANDS.items():
        lines.append(f"  {name:<14} {text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(f"barajamos: unknown command {name!r}\n{_usage()}", file=sys.stderr)
        return 2
    module_name, func_name, _ = SUBCOMMANDS[name]
    func: Callable[[list[str]], int] = getattr(importlib.import_module(module_name), func_name)
    try:
        return func(rest)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM to a command that holds the database
        print(f"barajamos {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
