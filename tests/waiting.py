"""Waiting for a condition, never for a fixed time: the suite runs on loaded 2-core machines."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["until"]


async def until(
    condition: Callable[[], object | Awaitable[object]], what: str, timeout: float = 30.0, every: float = 0.02
) -> None:
    """Return once ``condition()`` (a function or a coroutine function) is true; fail after ``timeout``
    seconds, naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        met = condition()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(every)
