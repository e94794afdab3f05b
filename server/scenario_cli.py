"""`barajamos scenario [--check] FILE...`: run rules scenario files (../shared/SCENARIOS.md).

One JSON line per scenario on stdout, in file order. Exit 0 when everything ran, 1 when `--check`
found a difference (printed on stderr), 2 when a file is not a valid scenario file (one line on
stderr naming the file and the problem; nothing is run then).
"""

from __future__ import annotations

import json
import os
import sys

from truco.scenario import Scenario, ScenarioError, differences, parse_scenarios, run_scenario

USAGE = "usage: barajamos scenario [--check] FILE [FILE ...]"


def _load(path: str, check: bool) -> tuple[Scenario, ...]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ScenarioError(f"cannot read the file: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScenarioError(
            f"malformed JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise ScenarioError("malformed JSON: nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ScenarioError("malformed JSON: a number has too many digits") from None
    return parse_scenarios(data, check=check)


def main(argv: list[str]) -> int:
    check = False
    paths: list[str] = []
    options_done = False
    for arg in argv:
        if options_done or not arg.startswith("-") or arg == "-":
            paths.append(arg)
        elif arg == "--":
            options_done = True
        elif arg == "--check":
            check = True
        elif arg in ("-h", "--help"):
            print(USAGE)
            return 0
        else:
            print(f"barajamos scenario: unknown option {arg}\n{USAGE}", file=sys.stderr)
            return 2
    if not paths:
        print(f"barajamos scenario: no scenario file given\n{USAGE}", file=sys.stderr)
        return 2

    files: list[tuple[str, tuple[Scenario, ...]]] = []
    invalid = False
    for path in paths:
        try:
            files.append((path, _load(path, check)))
        except ScenarioError as error:
            print(f"barajamos scenario: {path}: {error}", file=sys.stderr)
            invalid = True
    if invalid:
        return 2

    failed = False
    try:
        for path, scenarios in files:
            for scenario in scenarios:
                result = run_scenario(scenario)
                # ASCII with escapes: a line whatever the output's encoding, and no U+2028 or
                # lone surrogate a line reader would split or fail on
                print(json.dumps(result.to_json()))
                if check:
                    for difference in differences(scenario, result):
                        print(f"{path}: {scenario.name!r}: {difference}", file=sys.stderr)
                        failed = True
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 1 if failed else 0
