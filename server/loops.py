"""The event loop the house and its bot clients run on.

uvloop (libuv) where it exists: its socket reads and writes, timers and callbacks cost several
times less CPU than the standard loop's, and a live table is mostly that. Elsewhere (Windows) the
standard loop; everything works the same on either, and the tests run on the standard one.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# young collections after 50,000 net allocations instead of 700; older ones as rarely
QUIET_GC_THRESHOLDS = (50_000, 20, 100)


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


def quiet_gc() -> None:
    """Keep the cyclic garbage collector out of the way of live play.

    What is loaded so far (modules, templates, restored tables) is moved out of the collector's
    sight (`gc.freeze`), and collections run far less often: live play allocates and frees
    acyclic objects at a high rate (reference counting frees those), and with the default
    thresholds the collector kept walking every table's state, a few percent of the server's
    CPU and a quarter of a bot client's, in pauses that every table felt at once.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*QUIET_GC_THRESHOLDS)
