"""How a statement run in a worker fails: SQLite's own exception classes, rebuilt from the worker's
reply, and the few failures that are the worker's, not the statement's."""

from __future__ import annotations

import sqlite3

from dockyard_shared import LimitExceeded

__all__ = ["OutOfMemory", "StatementStopped", "WorkerDied", "rebuilt", "workers_busy"]


class StatementStopped(sqlite3.OperationalError):
    """The worker running the statement was killed: past its deadline, or the request was cancelled."""

    def __init__(self) -> None:
        super().__init__("interrupted")


class WorkerDied(sqlite3.OperationalError):
    """The worker ended by itself while running the statement (most likely out of memory)."""

    def __init__(self) -> None:
        super().__init__("out of memory (the worker process running the statement ended)")


class OutOfMemory(sqlite3.OperationalError):
    """The statement needed more memory than a worker may use."""


def workers_busy(size: int, waited_ms: int) -> LimitExceeded:
    """Every worker is running another call's statement: retryable, never the statement's fault."""
    return LimitExceeded(
        f"The server is busy: all {size} of its SQLite worker processes are running other calls' "
        f"statements, and none became free within {waited_ms} ms. Nothing is wrong with this statement.",
        next_step="Retry the same call in a few seconds.",
        retryable=True,
    )


_ERROR_CLASSES: dict[str, type[Exception]] = {
    name: getattr(sqlite3, name)
    for name in (
        "Warning",
        "Error",
        "InterfaceError",
        "DatabaseError",
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    )
}


def rebuilt(kind: str, text: str) -> sqlite3.Error:
    """The worker's exception, as the same class (``MemoryError`` as :class:`OutOfMemory`)."""
    if kind == "MemoryError":
        return OutOfMemory("out of memory")
    if kind == "OverflowError":
        return sqlite3.DataError(text)
    return _ERROR_CLASSES.get(kind, sqlite3.ProgrammingError)(text)  # type: ignore[return-value]
