"""Run git work off the event loop, and kill its processes when the request is cancelled."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

import anyio

from .gitcmd import running_processes

__all__ = ["run_cancellable"]

T = TypeVar("T")


async def run_cancellable(work: Callable[[], T]) -> T:
    processes: list = []
    token = running_processes.set(processes)
    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        for process in processes:
            with contextlib.suppress(OSError):
                process.kill()
        raise
    finally:
        running_processes.reset(token)
