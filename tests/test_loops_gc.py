"""`server.loops.quiet_gc`: the collector walks what is new once enough of it is alive, not on
CPython's thresholds, and everything (the frozen objects too) only seldom."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from server.loops import Collector
from server.metrics import Metrics
from server.serve import time_pauses


class _Heap:
    """A fake process heap: net new tracked objects since the last freeze, what a collection
    finds unreachable, what is alive (in memory blocks), and what each check did."""

    def __init__(self, alive: int) -> None:
        self.new = 0
        self.alive = alive
        self.garbage = 0
        self.frozen = True  # as quiet_gc leaves the process
        self.done: list[str] = []  # "young" (a walk of the new objects), "whole", "froze"
        self.now = 0.0

    def collect(self) -> int:
        self.done.append("young" if self.frozen else "whole")
        found, self.garbage = self.garbage, 0
        return found

    def freeze(self) -> None:
        self.frozen, self.new = True, 0  # gc.freeze() sets the young count to 0
        self.done.append("froze")

    def unfreeze(self) -> None:
        self.frozen = False


def _collector(heap: _Heap, floor: int, whole_growth: int = 2,
               whole_every: float = 600.0, floor_share: float = 0.0) -> Collector:
    return Collector(floor, whole_growth, whole_every, 4, floor_share, count=lambda: heap.new,
                     collect=heap.collect, freeze=heap.freeze, unfreeze=heap.unfreeze,
                     alive=lambda: heap.alive, clock=lambda: heap.now)


def test_the_floor_grows_with_the_house() -> None:
    # a busy house grows by more than the floor in many a second, all of it live: walking it
    # paused the house when it was busiest; the floor is a share of what is alive when more
    heap = _Heap(alive=1_000_000)
    collector = _collector(heap, floor=1_000, floor_share=0.01)
    heap.new = 9_999  # under 1% of the blocks alive: frozen, not walked
    assert not collector.check() and heap.done == ["froze"]
    heap.new = 10_000
    assert collector.check() and heap.done == ["froze", "young", "froze"]
    heap.alive, heap.new = 50_000, 1_000  # a small house: the absolute floor
    assert collector.check() and heap.done[-2:] == ["young", "froze"]


def test_a_quiet_second_is_frozen_without_a_walk() -> None:
    heap = _Heap(alive=1_000_000)
    collector = _collector(heap, floor=1_000)
    heap.new = 999
    assert not collector.check()
    assert heap.done == ["froze"] and heap.new == 0
    assert not collector.check() and heap.done == ["froze", "froze"]
    assert collector.collections == 0


def test_a_second_that_grew_by_the_floor_is_walked_then_frozen() -> None:
    heap = _Heap(alive=1_000_000)
    collector = _collector(heap, floor=1_000)
    heap.new, heap.garbage = 1_000, 300
    assert collector.check()
    assert heap.done == ["young", "froze"]  # the frozen objects left out of the walk
    heap.new = 10
    assert not collector.check() and heap.done[-1] == "froze"
    assert collector.collections == 1 and collector.whole_collections == 0


def test_a_whole_collection_needs_the_heap_doubled_and_ten_minutes() -> None:
    heap = _Heap(alive=100_000)
    collector = _collector(heap, floor=1_000)
    heap.alive, heap.now = 200_000, 599.0  # doubled, too soon
    assert not collector.check() and heap.done == ["froze"]
    heap.alive, heap.now = 199_999, 600.0  # late enough, not doubled
    assert not collector.check() and heap.done[-1] == "froze"
    heap.alive, heap.garbage = 200_000, 5_000  # due, even with nothing new this second
    assert collector.check() and heap.done[-2:] == ["whole", "froze"]
    assert heap.frozen  # what it left is frozen again
    assert collector.whole_collections == 1 and collector.collections == 1
    # the next whole one is measured from this one: what it left (200,000), and when (600 s)
    heap.alive, heap.now = 400_000, 1_199.0
    assert not collector.check() and heap.done[-1] == "froze"
    heap.now = 1_200.0
    assert collector.check() and heap.done[-2:] == ["whole", "froze"]


def test_a_heap_grown_four_times_over_is_walked_whole_at_once() -> None:
    """A leak faster than a house fills up is not left ten minutes."""
    heap = _Heap(alive=100_000)
    collector = _collector(heap, floor=1_000)
    heap.alive, heap.now = 399_999, 1.0
    assert not collector.check() and heap.done == ["froze"]
    heap.alive, heap.garbage = 400_000, 250_000
    assert collector.check() and heap.done[-2:] == ["whole", "froze"]
    heap.alive = 150_000  # what it left
    heap.now = 2.0
    assert not collector.check()


def test_each_collection_is_logged_and_told_to_listeners(
        caplog: pytest.LogCaptureFixture) -> None:
    heap = _Heap(alive=40_000)
    collector = _collector(heap, floor=10)
    heard: list[tuple[float, int, int, bool]] = []
    collector.listeners.append(lambda *args: heard.append(args))
    heap.new, heap.garbage = 10, 7
    with caplog.at_level("INFO", logger="barajamos.gc"):
        assert collector.check()
    (record,) = [r for r in caplog.records if r.name == "barajamos.gc"]
    assert record.getMessage() == "garbage collected"
    assert record.__dict__["unreachable"] == 7 and record.__dict__["blocks"] == 40_000
    assert record.__dict__["whole"] is False and record.__dict__["seconds"] >= 0
    ((seconds, unreachable, blocks, whole),) = heard
    assert abs(seconds - record.__dict__["seconds"]) < 1e-3
    assert (unreachable, blocks, whole) == (7, 40_000, False)


def test_the_house_times_each_collection_by_kind_in_its_metrics() -> None:
    heap = _Heap(alive=10)
    collector = _collector(heap, floor=10)
    metrics = Metrics()
    time_pauses(collector, metrics)
    heap.new = 10
    assert collector.check()
    text = metrics.render()
    assert b'barajamos_gc_seconds_count{kind="young"} 1.0' in text
    assert b'barajamos_gc_seconds_count{kind="whole"} 0.0' in text
    heap.alive, heap.now = 20, 600.0
    assert collector.check()
    assert b'barajamos_gc_seconds_count{kind="whole"} 1.0' in metrics.render()


def test_a_quiet_process_frees_a_burst_of_cyclic_garbage() -> None:
    """In a process of its own (it turns the automatic collector off for good): a few cycles
    made between two checks are frozen, not walked; a burst of them, the floor's worth between
    two checks, is walked and freed by the collector's thread."""
    script = textwrap.dedent("""
        import gc, time, weakref
        from server.loops import quiet_gc

        class Node:
            pass

        collector = quiet_gc(floor=20_000, every=0.2)
        assert not gc.isenabled()
        freed = []

        def cycles(n, name):
            for _ in range(n):
                a, b = Node(), Node()
                a.other, b.other = b, a
                weakref.finalize(a, freed.append, name)

        cycles(100, "few")
        time.sleep(0.6)
        assert not freed and collector.collections == 0, "collected under the floor"
        deadline = time.monotonic() + 20
        while not freed and time.monotonic() < deadline:
            cycles(10_000, "burst")  # 30,000 tracked objects and more, in a few milliseconds
            time.sleep(0.3)
        assert collector.collections >= 1 and not gc.isenabled()
        # (a check may fall inside a burst and freeze the part made before it)
        assert len(freed) >= 5_000 and set(freed) == {"burst"}, (len(freed), set(freed))
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_cycle_that_outlived_a_collection_waits_for_a_whole_one() -> None:
    """With the real collector, in a process of its own: a young collection frees the cycles
    made since the last one, and leaves a cycle frozen by an earlier one to a whole one."""
    script = textwrap.dedent("""
        import gc, weakref
        from server.loops import Collector

        class Node:
            pass

        freed = []

        def cycle(name):
            a, b = Node(), Node()
            a.other, b.other = b, a
            weakref.finalize(a, freed.append, name)
            return a

        gc.disable()
        gc.collect()
        gc.freeze()
        collector = Collector(floor=1_000, whole_every=3600.0)
        old = cycle("old")
        keep = [Node() for _ in range(1_000)]
        assert collector.check() and freed == []  # `old` is alive: frozen with the rest
        del old, keep
        for _ in range(1_000):
            cycle("young")
        assert collector.check() and collector.whole_collections == 0
        assert "young" in freed and "old" not in freed, freed[-3:]
        collector.whole_growth, collector.whole_every = 1, 0.0  # due now
        for _ in range(1_000):
            cycle("young")
        assert collector.check() and collector.whole_collections == 1
        assert "old" in freed
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
