"""The server's clock, injected so tests run deadlines in virtual time.

`now()` is wall-clock seconds since the epoch (deadlines are sent to clients as such);
`call_at(when, callback)` runs `callback` once at or after `when` on the event loop.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...


class SystemClock:
    """Wall-clock time; timers on the loop of its first `call_at` (an app's clock serves one
    loop: asking asyncio for the running loop at every timer is a getpid() system call)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.time()), callback)


class _VirtualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """A clock that moves only when a test calls `advance`.

    Due callbacks run in deadline order; between callbacks the event loop is given a chance to
    run (so the tasks they wake, such as table actors, do their work before time moves on).
    """

    # how long `settle` waits at most for `quiet` (real seconds): a woken task that waits for
    # virtual time itself would otherwise hold the test for ever
    QUIET_LIMIT = 5.0

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._queue: list[tuple[float, int, _VirtualTimer, Callable[[], None]]] = []
        self._seq = itertools.count()
        # optional: whether the tasks the callbacks wake are done (no table actor busy, say).
        # Without it, a woken task slower than `settle`'s rounds (a durable write on a loaded
        # machine) has not yet set its next timer when time moves on past it
        self.quiet: Callable[[], bool] | None = None

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _VirtualTimer()
        heapq.heappush(self._queue, (when, next(self._seq), timer, callback))
        return timer

    @property
    def next_deadline(self) -> float | None:
        while self._queue and self._queue[0][2].cancelled:
            heapq.heappop(self._queue)
        return self._queue[0][0] if self._queue else None

    async def settle(self, rounds: int = 20) -> None:
        """Let woken tasks (and the I/O they start) run."""
        for _ in range(rounds):
            await asyncio.sleep(0.005)
        if self.quiet is not None:
            give_up = time.monotonic() + self.QUIET_LIMIT
            while not self.quiet() and time.monotonic() < give_up:
                await asyncio.sleep(0.005)

    async def advance(self, seconds: float) -> None:
        target = self._now + seconds
        await self.settle()
        while (deadline := self.next_deadline) is not None and deadline <= target:
            when, _, timer, callback = heapq.heappop(self._queue)
            self._now = max(self._now, when)
            if not timer.cancelled:
                callback()
            await self.settle()
        self._now = target
        await self.settle()
