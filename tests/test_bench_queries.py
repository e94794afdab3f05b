"""`barajamos bench queries`: a tiny fill gives every query something to read, each query runs,
and the copies of handlers' inline queries are the handlers' own text."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import pytest

from server.bench_queries import COPIED, fill_counts, fill_sql, main, measure, report


def _strings(qualified: str) -> set[str]:
    """Every string constant of a function: adjacent literals are one constant to the parser,
    whatever comments sit between them."""
    module_name, _, name = qualified.partition(":")
    source = textwrap.dedent(inspect.getsource(getattr(importlib.import_module(module_name), name)))
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


@pytest.mark.parametrize("qualified", sorted(COPIED))
def test_copied_queries_are_the_handlers_own(qualified: str) -> None:
    strings = _strings(qualified)
    for sql in COPIED[qualified]:
        assert sql in strings, f"bench_queries' copy of a query of {qualified} drifted"


def test_fill_names_are_all_known() -> None:
    counts = fill_counts(0.001)
    assert counts["users"] == 100 and counts["tables"] == 100
    assert fill_sql("x::int, :users, 'wallet:' || i", counts) == "x::int, 100, 'wallet:' || i"
    with pytest.raises(KeyError):
        fill_sql(":nope", counts)


async def test_a_tiny_scale_runs_every_query(pg_admin_url: str) -> None:
    result = await measure(pg_admin_url, 0.001, 2)
    counts = result.counts
    assert counts["users"] == 100 and counts["live_tables"] == 100
    assert counts["live_hands"] == 10 * counts["live_matches"] > 0
    assert counts["live_actions"] == 6 * counts["live_hands"]
    assert min(counts.values()) > 0
    s = result.subjects
    assert s.heavy_tables > s.typical_tables >= 1 and s.long_table and s.heavy_refs
    assert len(result.timings) >= 14
    for timing in result.timings:
        assert len(timing.ms) == 2
        if timing.expect_rows:
            assert timing.rows > 0, timing.name
    by_name = {t.name: t for t in result.timings}
    assert by_name["table chain, 160 hands"].rows == 160
    assert by_name["session lookup (every request)"].rows == 1
    lines = report(result)
    assert lines[0].startswith("PostgreSQL ") and "scale 0.001" in lines[0]
    assert any(line.startswith("/me/hands, heavy player ") for line in lines)


@pytest.mark.parametrize("argv", [["--scale", "0"], ["--scale", "x"], ["--runs", "0"],
                                  ["--runs", "2.5"], ["--bogus"]])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("barajamos bench queries: ")


def test_main_prints_the_machine_then_the_figures(pg_admin_url: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scale", "0.001", "--runs", "1", "--admin-url", pg_admin_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("machine: ") and "python: " in out[0]
    assert any(line.startswith("rows: users 100, ") for line in out)
    assert any(line.startswith("leaderboard, paulista 1v1 ") for line in out)
