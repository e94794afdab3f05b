"""The engine benchmark's command line (figures are printed, never asserted: no timing here)."""

from __future__ import annotations

import random

import pytest

from server import bench, bench_engine
from truco import MatchConfig, Phase, TeamMode, Variant


def test_engine_bench_prints_figures_and_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["engine", "--seconds", "0.1", "--rounds", "2", "--variant", "mineiro", "--seats", "4"]
    code = bench.main(argv)
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("machine: ") and lines[1].startswith("python: ")
    assert lines[2].startswith("load average")
    row = next(line.split() for line in lines if line.startswith("mineiro"))
    assert row[1] == "4" and int(row[3]) > 0  # seats, hands played
    assert "peak memory" in lines[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["engine", "--seconds", "0"],
        ["engine", "--seconds", "nan"],
        ["engine", "--rounds", "0"],
        ["engine", "--seats", "3"],
        ["engine", "--variant", "x"],
        ["x"],
        [],
    ],
)
def test_bench_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err and "Traceback" not in err


def test_a_missing_benchmark_module_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(bench.BENCHMARKS, "load", ("server.no_such_bench", "main", "absent"))
    assert bench.main(["load"]) == 2
    assert "not available" in capsys.readouterr().err


@pytest.mark.parametrize("variant", list(Variant))
def test_random_deals_and_playouts_are_legal_whole_matches(variant: Variant) -> None:
    config = MatchConfig(variant, 4, TeamMode.FIRST)
    rng = random.Random(3)
    deal = bench_engine.random_deal(rng, config, 3)
    assert deal.dealer == 3 and all(len(hand) == 3 for hand in deal.hands)
    assert (deal.vira is not None) == config.uses_vira
    state, hands, actions = bench_engine.play_match(rng, config)
    assert state.phase is Phase.MATCH_OVER and hands >= 1 and actions >= hands
