"""Waiting in async tests for something another task or process does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(check: Callable[[], object], timeout: float = 30.0) -> None:
    """Return once ``check()`` is true, polling every 10 ms; ``AssertionError`` ("timed out") after ``timeout``
    seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)
