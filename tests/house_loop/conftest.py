"""Tests here run on the event loop `barajamos serve` runs on (`server.loops.new_event_loop`:
uvloop), where the rest of the suite runs on the standard one. What a closed connection leaves
behind, for one, is the loop's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from server.loops import new_event_loop


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> (
        dict[str, Callable[[], asyncio.AbstractEventLoop]]):
    return {"house_loop": new_event_loop}
