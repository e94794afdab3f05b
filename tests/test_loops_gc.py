"""`server.loops.quiet_gc`: the collector runs when the heap has grown, not on CPython's
thresholds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from server.loops import Collector
from server.metrics import Metrics
from server.serve import time_pauses


class _Heap:
    """A fake process heap: net new tracked objects, what a collection finds unreachable and
    what it leaves alive."""

    def __init__(self, alive: int) -> None:
        self.new = 0
        self.alive = alive
        self.garbage = 0
        self.collections = 0

    def collect(self) -> int:
        self.collections += 1
        self.new = 0
        found, self.garbage = self.garbage, 0
        return found


def _collector(heap: _Heap, floor: int) -> Collector:
    return Collector(floor, count=lambda: heap.new, collect=heap.collect,
                     alive=lambda: heap.alive)


def test_it_collects_only_once_the_budget_is_spent() -> None:
    heap = _Heap(alive=1_000_000)
    collector = _collector(heap, floor=1_000)
    heap.new = 999
    assert not collector.check() and heap.collections == 0
    heap.new = 1_000
    assert collector.check() and heap.collections == 1
    assert not collector.check() and heap.collections == 1  # nothing new since
    assert collector.collections == 1


def test_a_filling_heap_doubles_the_budget_up_to_what_is_alive() -> None:
    heap = _Heap(alive=3_000)
    collector = _collector(heap, floor=1_000)
    heap.new, heap.garbage = 1_000, 10  # the growth was live objects
    assert collector.check()
    assert collector.budget == 2_000
    heap.new, heap.alive = 2_000, 5_000
    assert collector.check()
    assert collector.budget == 4_000
    heap.new, heap.alive = 4_000, 6_000
    assert collector.check()
    assert collector.budget == 6_000  # never more than the live objects
    heap.new = 5_999
    assert not collector.check() and heap.collections == 3


def test_a_heap_of_garbage_budgets_a_quarter_of_what_is_alive() -> None:
    heap = _Heap(alive=400_000)
    collector = _collector(heap, floor=1_000)
    heap.new, heap.garbage = 1_000, 500  # half of the growth was garbage
    assert collector.check()
    assert collector.budget == 100_000  # CPython's rule for its oldest generation
    heap.new, heap.garbage, heap.alive = 100_000, 90_000, 2_000
    assert collector.check()
    assert collector.budget == 1_000  # never under the floor


def test_each_collection_is_logged_and_told_to_listeners(
        caplog: pytest.LogCaptureFixture) -> None:
    heap = _Heap(alive=40_000)
    collector = _collector(heap, floor=10)
    heard: list[tuple[float, int, int]] = []
    collector.listeners.append(lambda *args: heard.append(args))
    heap.new, heap.garbage = 10, 7
    with caplog.at_level("INFO", logger="barajamos.gc"):
        assert collector.check()
    (record,) = [r for r in caplog.records if r.name == "barajamos.gc"]
    assert record.getMessage() == "garbage collected"
    assert record.__dict__["unreachable"] == 7 and record.__dict__["blocks"] == 40_000
    assert record.__dict__["next_after"] == 10_000 and record.__dict__["seconds"] >= 0
    ((seconds, unreachable, tracked),) = heard
    assert seconds == record.__dict__["seconds"] or abs(seconds - record.__dict__["seconds"]) < 1e-3
    assert (unreachable, tracked) == (7, 40_000)


def test_the_house_times_each_collection_in_its_metrics() -> None:
    heap = _Heap(alive=10)
    collector = _collector(heap, floor=10)
    metrics = Metrics()
    time_pauses(collector, metrics)
    assert b"barajamos_gc_seconds_count 0.0" in metrics.render()
    heap.new = 10
    assert collector.check()
    assert b"barajamos_gc_seconds_count 1.0" in metrics.render()


def test_a_quiet_process_still_frees_its_cyclic_garbage() -> None:
    """In a process of its own (it turns the automatic collector off for good): cycles made
    after `quiet_gc` are freed by its thread once they pass the budget, and not before."""
    script = textwrap.dedent("""
        import gc, time, weakref
        from server.loops import quiet_gc

        class Node:
            pass

        collector = quiet_gc(floor=20_000, every=0.02)
        assert not gc.isenabled()
        freed = []

        def cycles(n):
            for _ in range(n):
                a, b = Node(), Node()
                a.other, b.other = b, a
                weakref.finalize(a, freed.append, 1)

        cycles(100)
        time.sleep(0.3)
        assert not freed and collector.collections == 0, "collected under the budget"
        made = 100
        deadline = time.monotonic() + 20
        while not freed and time.monotonic() < deadline:
            cycles(1_000)
            made += 1_000
            time.sleep(0.05)
        assert collector.collections >= 1 and not gc.isenabled()
        assert len(freed) >= 100, (len(freed), made)  # the first ones too
        assert made <= 40_100, made  # within the budget's reach, not by chance much later
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
