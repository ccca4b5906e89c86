"""A costly object opened by its first use, not at start-up: ``Opened[T]``.

Why: a server answers ``initialize`` before it needs its database or HTTP client, and opening one (importing
SQLAlchemy or httpx, creating a table, building a TLS context) is most of a start. So the server holds a
handle instead, and whatever needs the object — the warm-up (``dockyard_shared.warmup``) or the first call,
whichever comes first — opens it.

How: ``get()`` opens the object in whichever thread asks first; the others wait for that open and share its
result (a double-checked lock). A failed open is raised to the caller that made it and forgets nothing: the
next ``get()`` tries again, so a cache that could not be opened says why on every call that needs it.
``close()`` (or ``aclose()`` for an object closed by awaiting, such as ``httpx.AsyncClient``) closes the
object if it was opened and forgets it: a later ``get()`` opens a new one. Opening blocks, so call ``get()``
in a worker thread (``run_in_thread``) when the open may touch a disk or a network.

Nothing here is MCP: logic modules hold and use these handles.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Opened"]

T = TypeVar("T")


class Opened(Generic[T]):
    """The object ``opener`` returns, opened once, on first use.

    ``get()`` opens it (thread-safe, retried after a failure); ``if_open()`` gives it only when already
    open (never opens: for a caller that must not wait); ``is_open`` says which; ``close()`` closes it.
    """

    def __init__(self, opener: Callable[[], T]) -> None:
        self._opener = opener
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        """The object, opened now by this caller if no one has yet. An open that fails raises here."""
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._opener()
                    self._value = value
        return value

    def if_open(self) -> T | None:
        """The object if it is open, else None; never opens it."""
        return self._value

    def _forget(self) -> T | None:
        with self._lock:
            value, self._value = self._value, None
        return value

    def close(self) -> None:
        """Close the object if it was opened (calling its ``close()``, when it has one) and forget it."""
        value = self._forget()
        close = getattr(value, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        """As :meth:`close`, awaiting the object's ``aclose()`` (or ``close()``) when it has one."""
        value = self._forget()
        close = getattr(value, "aclose", None) or getattr(value, "close", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result

    def __repr__(self) -> str:
        state = "open" if self.is_open else "not open"
        return f"<Opened {getattr(self._opener, '__qualname__', self._opener)!s}: {state}>"
