"""Blocking work (a SQLite statement, a git process, a SQLAlchemy session) run off the event loop.

The event loop keeps serving other requests meanwhile. When the request is cancelled (the client sent
``notifications/cancelled``, or its connection closed), ``on_cancel`` runs on the event loop — interrupt
the statement, kill the child process — and the worker thread is abandoned rather than waited for, so a
cancelled call never holds up the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

__all__ = ["run_in_thread"]

T = TypeVar("T")


async def run_in_thread(work: Callable[[], T], *, on_cancel: Callable[[], None] | None = None) -> T:
    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if on_cancel is not None:
            on_cancel()
        raise
