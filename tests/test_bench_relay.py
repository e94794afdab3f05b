"""`barajamos bench relay`: the bare relay really relays, between real processes, and says so."""

from __future__ import annotations

import orjson
import pytest

from server import loops
from server.bench_relay import SEATS, main, measure, report, sample_views


def test_sample_views_are_each_seats_own_view() -> None:
    bodies = [orjson.loads(body) for body in sample_views()]
    assert [body["seat"] for body in bodies] == list(range(SEATS))
    assert all(body["variant"] == "paulista" and body["hand"] is not None for body in bodies)


def test_a_short_run_relays_and_reports() -> None:
    result = loops.run(measure(2, seconds=1.0, warmup=0.3, clients=2, server_core=None,
                               client_core=None))
    assert result.tables == 2 and result.seconds >= 1.0
    assert result.relayed > 0 and result.server_cpu > 0 and result.clients_cpu > 0
    line = report(result)
    assert line.startswith("2 tables: ") and "relayed actions/s" in line


@pytest.mark.parametrize("argv", [["--seconds", "0"], ["--tables", "x"], ["--clients", "0"],
                                  ["--bogus"]])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("barajamos bench relay: ")
