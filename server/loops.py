"""The event loop the house and its bot clients run on.

uvloop (libuv) where it exists: its socket reads and writes, timers and callbacks cost several
times less CPU than the standard loop's, and a live table is mostly that. Elsewhere (Windows) the
standard loop; everything works the same on either, and the tests run on the standard one.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("barajamos.gc")

# net new tracked objects before the first collection, and never fewer between two
COLLECT_FLOOR = 100_000
CHECK_SECONDS = 1.0


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is installed wherever it builds
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on `new_event_loop()`."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)


class Collector:
    """Decides when the cyclic garbage collector runs, in place of its automatic thresholds.

    A collection stops the whole process for as long as it walks the objects it looks at: about
    a microsecond each on a loaded house, whose objects are spread over hundreds of megabytes
    (a cache miss each). CPython's automatic young collections come after 700 (or, as this
    module set before, 50,000) net new objects; on a house they walked tens of thousands of
    live objects (table states, sockets) each time: 80-150 ms pauses every 10-15 s at 1,000
    paced tables while the house grew, which every table in play felt at once.
    Live play makes no cyclic garbage (reference counting frees all of it; see
    `TableActor.call`), so a full collection is needed only once the tracked objects have grown
    by `budget` since the last one. A collection that finds the growth was garbage (half of it
    or more) sets the next budget to a quarter of what it left alive (CPython's own rule for its
    oldest generation); one that finds live objects (a house filling up) doubles the budget, up
    to what it left alive: a house that grows to N objects pauses about log2(N / floor) times on
    the way, and garbage never outgrows the live objects.

    What a collection leaves alive is measured in the interpreter's allocated memory blocks
    (`sys.getallocatedblocks`, a few per live object), never by listing the objects: this runs in
    a thread of its own, and `gc.get_objects()` there hands out references to objects another
    thread is still building (a tuple being resized then fails, `SystemError: bad argument to
    internal function`: seen once in a test run).

    `count` (net new tracked objects), `collect` and `alive` are injected for tests; each
    `listeners` entry is called with a collection's seconds, unreachable objects and alive
    blocks.
    """

    def __init__(self, floor: int = COLLECT_FLOOR,
                 count: Callable[[], int] = lambda: gc.get_count()[0],
                 collect: Callable[[], int] = gc.collect,
                 alive: Callable[[], int] = sys.getallocatedblocks) -> None:
        self.floor = floor
        self.budget = floor
        self.collections = 0
        self.listeners: list[Callable[[float, int, int], None]] = []
        self._count, self._collect, self._alive = count, collect, alive

    def check(self) -> bool:
        """Collect if the budget is spent; whether it did."""
        grown = self._count()
        if grown < self.budget:
            return False
        started = time.perf_counter()
        unreachable = self._collect()
        seconds = time.perf_counter() - started
        alive = self._alive()
        if 2 * unreachable >= grown:
            self.budget = max(self.floor, alive // 4)
        else:
            self.budget = max(self.floor, min(2 * self.budget, alive))
        self.collections += 1
        log.info("garbage collected", extra={"seconds": round(seconds, 4),
                                             "unreachable": unreachable, "blocks": alive,
                                             "next_after": self.budget})
        for listener in self.listeners:
            listener(seconds, unreachable, alive)
        return True


_collector: Collector | None = None
_collector_lock = threading.Lock()


def _watch(collector: Collector, every: float) -> None:
    while True:
        time.sleep(every)
        with _collector_lock:
            if _collector is not collector:
                return
            collector.check()


def quiet_gc(floor: int = COLLECT_FLOOR, every: float = CHECK_SECONDS) -> Collector:
    """Keep the cyclic garbage collector out of the way of live play.

    What is loaded so far (modules, templates, restored tables) is moved out of the collector's
    sight (`gc.freeze`), and the automatic collections are replaced by a `Collector` that a
    thread of this process consults every `every` seconds (a thread: the bot clients and the
    relay benchmark call this outside any event loop). Calling it again starts afresh.
    """
    global _collector
    gc.collect()
    gc.freeze()
    gc.disable()
    collector = Collector(floor)
    with _collector_lock:
        _collector = collector
    threading.Thread(target=_watch, args=(collector, every), name="barajamos-gc",
                     daemon=True).start()
    return collector
