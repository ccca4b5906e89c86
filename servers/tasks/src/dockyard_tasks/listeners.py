"""Callbacks told of events that have already happened (a committed write, a change another replica made).

The store, the handle that stands for it before it opens (``opening.py``) and the change feed
(``notify.py``) each keep a set of them. This module imports no SQLAlchemy, so the handle can use it
before ``initialize`` is answered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Listeners"]

log = logging.getLogger(__name__)

Event = TypeVar("Event")


class Listeners(Generic[Event]):
    """Each callback is called in turn, from the thread that saw the event; one that fails is logged and
    does not stop the others (the event has happened: there is nothing to undo)."""

    def __init__(self) -> None:
        self._callbacks: dict[object, Callable[[Event], None]] = {}
        self._lock = threading.Lock()

    def add(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Add ``callback``; returns what removes it (the same callback added twice is called twice)."""
        token = object()
        with self._lock:
            self._callbacks[token] = callback
        return lambda: self._remove(token)

    def _remove(self, token: object) -> None:
        with self._lock:
            self._callbacks.pop(token, None)

    def call(self, event: Event) -> None:
        with self._lock:
            callbacks = list(self._callbacks.values())
        for callback in callbacks:
            try:
                callback(event)
            except Exception:
                log.exception("change listener failed")
