"""An import_project that says how far it got and stops when asked, leaving nothing behind.

The import is one transaction run in a worker thread (store.import_project). The thread passes checkpoints
(:class:`ImportSteps`, called by ``store/importing.py`` every 100 tasks); each reports progress and
raises :class:`ImportCancelled` once the call was cancelled, which rolls the transaction back. After the
last checkpoint (``commit``) a cancel is too late: the import is saved, and the log says so. A cancelled
call waits (shielded, at most :data:`STOP_WAIT` seconds) for the thread to reach its next checkpoint, so
when a cancel is acknowledged the database is already as before.

Plain logic (anyio, no FastMCP): the tool passes ``ctx.report_progress`` as ``report``; as an MCP task
(``--tasks``, long_imports.py) that progress is the task's status message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import anyio.from_thread

__all__ = ["LARGE_IMPORT", "ImportCancelled", "ImportSteps", "is_large_import", "run_import"]

T = TypeVar("T")
Report = Callable[[float, float, str], Awaitable[None]]

#: Task entries from which an import runs as an MCP task (for a client that declared the extension):
#: about the size at which a busy server's import takes seconds. Smaller ones are answered in place.
LARGE_IMPORT = 500
#: How long a cancelled call waits for its thread to reach a checkpoint and roll back.
STOP_WAIT = 30.0

logger = logging.getLogger("dockyard_tasks.import")


class ImportCancelled(Exception):
    """Raised at a checkpoint of a cancelled import: its transaction rolls back."""


class ImportSteps:
    """Shared by the event loop (which may :meth:`stop`) and the import's worker thread (which calls it)."""

    def __init__(self, report: Callable[[int, int, str], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._committing = False
        self._report = report

    def __call__(self, done: int, total: int, what: str) -> None:
        """A checkpoint: ``done`` of ``total`` steps, ``what`` in words."""
        with self._lock:
            if self._stopped:
                raise ImportCancelled
        if self._report is not None:
            self._report(done, total, what)

    def commit(self) -> None:
        """The last checkpoint: from here the transaction commits whatever happens."""
        with self._lock:
            if self._stopped:
                raise ImportCancelled
            self._committing = True

    def stop(self) -> bool:
        """Ask the import to stop; False when it is already committing (too late: it will be saved)."""
        with self._lock:
            self._stopped = True
            return not self._committing


def is_large_import(arguments: Mapping[str, Any]) -> bool:
    """Whether import_project's ``document`` is large enough to run as a task (its task entries)."""
    document = arguments.get("document")
    tasks = document.get("tasks") if isinstance(document, dict) else None
    return isinstance(tasks, list) and len(tasks) >= LARGE_IMPORT


async def run_import(work: Callable[[ImportSteps], T], report: Report | None = None) -> T:
    """``work(steps)`` in a worker thread, its checkpoints reported through ``report``; cancelled, it stops
    the work at its next checkpoint and waits for the rollback before the cancellation goes on."""

    def progress(done: int, total: int, what: str) -> None:
        if report is None:
            return
        try:
            anyio.from_thread.run(report, done, total, what)
        except Exception:  # progress is a courtesy: a failed report never fails the import
            logger.debug("import progress not reported", exc_info=True)

    steps = ImportSteps(progress)
    finished = threading.Event()

    def body() -> T:
        try:
            return work(steps)
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(body, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if not steps.stop():
            logger.warning("import_project was cancelled while committing: the import is saved")
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(finished.wait, STOP_WAIT)
        raise
