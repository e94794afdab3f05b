"""The event loop the house and its bot clients run on.

uvloop (libuv) where it exists: its socket reads and writes, timers and callbacks cost several
times less CPU than the standard loop's, and a live table is mostly that. Elsewhere (Windows) the
standard loop; everything works the same on either, and the tests run on the standard one.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("barajamos.gc")

# net new tracked objects since the last check (a second) that make the next check collect,
# and at least this share of the allocated memory blocks (a busier house grows faster: at
# 2,000 paced tables the absolute floor walked a second's growth a few times a minute, 100-250
# ms each, while the house was busiest)
COLLECT_FLOOR = 10_000
FLOOR_SHARE = 0.01
# a whole collection (the frozen objects too) once the allocated memory blocks have grown this
# many times over since the last whole one, and never sooner than this many seconds after it;
# or, however soon, once they have grown WHOLE_AT_ONCE times over
WHOLE_GROWTH = 2
WHOLE_SECONDS = 600.0
WHOLE_AT_ONCE = 4
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
    (a cache miss for each reference they hold). A walk of all of them took 250-460 ms at 500 to
    1,000 busy tables, which every table in play felt at once; even a walk of only the objects
    made since the last one took 40-60 ms at 500 paced tables after three seconds of play
    (40,000 objects: new states, events, coroutines in flight, replacing old ones).

    Live play makes no cyclic garbage (reference counting frees all of it; see
    `TableActor.call`), nor do refused requests and closed sockets. So at each check (every
    second, from a thread) what the last second made and still holds is frozen (`gc.freeze`,
    which walks nothing): out of every later collection's sight, still freed by reference
    counting as it dies. Only a second in which the tracked objects grew by `floor` or more (a
    house seating players, or a burst of garbage) is collected first: a walk of that second's
    objects alone (12-17 ms for 20,000-30,000 while 500 tables sat down; 36-80 ms in the first
    seconds of play at 500-1,000 tables). A house in steady play never pauses for it. The
    floor grows with the house: `floor_share` of its allocated memory blocks when that is more
    (a house of 2,000 busy tables grows by more than 10,000 objects in many a second, all of
    them live, and walking them paused it most when it was busiest).

    What is frozen is never freed by a collection: a cycle among objects that outlived a check
    would be kept. As a bound on what such a leak can hold, a whole collection (the frozen
    objects too) runs once the interpreter's allocated memory blocks have grown `whole_growth`
    times over since the last whole one, and never sooner than `whole_every` seconds after it;
    or once they have grown `whole_at_once` times over, however soon (a leak faster than a
    house fills up). A house that fills up pauses for a whole walk a few times on the way (about
    a microsecond per object: 0.35-0.4 s at 500 tables), a steady one never. Each collection
    logs what it found unreachable, which would show such a leak.

    What is alive is measured in allocated memory blocks (`sys.getallocatedblocks`, a few per
    live object), never by listing the objects: this runs in a thread of its own, and
    `gc.get_objects()` there hands out references to objects another thread is still building
    (a tuple being resized then fails, `SystemError: bad argument to internal function`: seen
    once in a test run).

    `count` (net new tracked objects since the last freeze), `collect`, `freeze`, `unfreeze`,
    `alive` and `clock` are injected for tests; each `listeners` entry is called with a
    collection's seconds, unreachable objects, alive blocks and whether it was whole.
    """

    def __init__(self, floor: int = COLLECT_FLOOR, whole_growth: int = WHOLE_GROWTH,
                 whole_every: float = WHOLE_SECONDS, whole_at_once: float = WHOLE_AT_ONCE,
                 floor_share: float = FLOOR_SHARE,
                 count: Callable[[], int] = lambda: gc.get_count()[0],
                 collect: Callable[[], int] = gc.collect,
                 freeze: Callable[[], None] = gc.freeze,
                 unfreeze: Callable[[], None] = gc.unfreeze,
                 alive: Callable[[], int] = sys.getallocatedblocks,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.floor = floor
        self.floor_share = floor_share
        self.whole_growth = whole_growth
        self.whole_every = whole_every
        self.whole_at_once = whole_at_once
        self.collections = 0
        self.whole_collections = 0
        self.listeners: list[Callable[[float, int, int, bool], None]] = []
        self._count, self._collect, self._alive, self._clock = count, collect, alive, clock
        self._freeze, self._unfreeze = freeze, unfreeze
        # the last whole collection: what it left alive, and when
        self._whole_alive = alive()
        self._whole_at = clock()

    def check(self) -> bool:
        """Collect what is new if it grew by `floor` (everything if a whole collection is
        due), then freeze what is left; whether it collected."""
        new = self._count()
        now = self._clock()
        blocks = self._alive()
        grown = blocks / max(1, self._whole_alive)  # since the last whole collection
        whole = grown >= self.whole_at_once or (
            grown >= self.whole_growth and now - self._whole_at >= self.whole_every)
        if not whole and new < max(self.floor, blocks * self.floor_share):
            self._freeze()
            return False
        started = time.perf_counter()
        if whole:
            self._unfreeze()
        unreachable = self._collect()
        self._freeze()
        seconds = time.perf_counter() - started
        alive = self._alive()
        self.collections += 1
        if whole:
            self.whole_collections += 1
            self._whole_alive, self._whole_at = alive, now
        log.info("garbage collected", extra={"seconds": round(seconds, 4), "new": new,
                                             "unreachable": unreachable, "blocks": alive,
                                             "whole": whole})
        for listener in self.listeners:
            listener(seconds, unreachable, alive, whole)
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


def quiet_gc(floor: int = COLLECT_FLOOR, every: float = CHECK_SECONDS,
             whole: bool = True) -> Collector:
    """Keep the cyclic garbage collector out of the way of live play.

    What is loaded so far (modules, templates, restored tables) is collected once and moved out
    of the collector's sight (`gc.freeze`), and the automatic collections are replaced by a
    `Collector` that a thread of this process consults every `every` seconds (a thread: the bot
    clients and the relay benchmark call this outside any event loop). Calling it again starts
    afresh. `floor` is the `Collector`'s; with `whole` false it never walks what it froze (a
    process that lives minutes: the load benchmark's clients).
    """
    global _collector
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    gc.disable()
    collector = (Collector(floor) if whole
                 else Collector(floor, whole_every=math.inf, whole_at_once=math.inf))
    with _collector_lock:
        _collector = collector
    threading.Thread(target=_watch, args=(collector, every), name="barajamos-gc",
                     daemon=True).start()
    return collector
