"""Opening the store at start-up, without making ``initialize`` wait for SQLAlchemy when nothing needs it.

Why: the store (``store/``: SQLAlchemy, its ORM and our queries) is the costliest import of a start (~230 ms
of traced import time, bench/startup), and answering ``initialize`` or ``tools/list`` needs none of it.

How: a SQLite file already at the newest schema revision (every start but a database's first) is checked
with the standard ``sqlite3`` module, read-only (``migrations/ready.py``): its ``alembic_version`` against
the head the shipped migration files name, its triggers and views against the migrations' own, and with
``--demo`` one query for the sample project. The server then serves a
:class:`LazyStore`, and the store itself is opened by the warm-up (``dockyard_shared.warmup``) or by the
first call that needs it, whichever comes first. Everything else opens the store at start, as before, so
that its errors stop the server with the reason: a new or older database (to migrate), a revision this
version does not know, a file that is not a database, PostgreSQL, a URL only SQLAlchemy parses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from dockyard_shared.opened import Opened

from .claim import claim_sqlite_file
from .demo import DEMO_KEY, seed_demo
from .listeners import Listeners
from .migrations.ready import ready_sqlite_file, simple_sqlite_path

if TYPE_CHECKING:
    from .settings import Settings
    from .store import ChangeEvent, TaskStore

__all__ = ["LazyStore", "open_store", "ready_sqlite_file", "simple_sqlite_path"]


def open_store(settings: Settings) -> TaskStore:
    """The store ``settings`` name, with the sample project under ``--demo`` (see the module docstring)."""
    path = simple_sqlite_path(settings.database_url)
    file = path if path is not None else _other_sqlite_path(settings.database_url)
    if file is not None:  # one server process per file (claim.py); read-only, before anything opens it
        claim_sqlite_file(file, allow_shared=settings.allow_shared_file)
    if path is not None and ready_sqlite_file(path, project=DEMO_KEY if settings.demo else None):
        # The handle answers for the store (it forwards every attribute): typed as what it stands for.
        return cast("TaskStore", LazyStore(lambda: _task_store(settings)))
    store = _task_store(settings)
    if file is not None:
        try:
            claim_sqlite_file(file, allow_shared=settings.allow_shared_file)  # a file the open created
        except Exception:
            store.close()
            raise
    if settings.demo:
        seed_demo(store)
    return store


def _other_sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL that is not a plain one (SQLAlchemy parses it); None for PostgreSQL."""
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url

    return make_url(url).database or None


def _task_store(settings: Settings) -> TaskStore:
    from .store import TaskStore

    return TaskStore(
        settings.database_url, limits=settings.limits, statement_timeout_s=settings.statement_timeout_s
    )


class LazyStore:
    """Stands for a :class:`~dockyard_tasks.store.TaskStore` not opened yet.

    Reading any attribute the handle does not define opens the store, in whichever thread reads first
    (the others wait for it), and returns the store's own; a failed open is raised to that reader and
    tried again by the next. So read them in a worker thread, as the tools do (``run_in_thread(lambda:
    store.list_tasks(...))``): opening takes a few hundred milliseconds the event loop must not wait for.
    Subscribing does not open it: listeners hear the store's changes once it is open (there are none
    before). Only SQLite files are opened late, hence ``postgres``.
    """

    postgres = False

    def __init__(self, opener: Callable[[], TaskStore]) -> None:
        self._listeners: Listeners[ChangeEvent] = Listeners()
        self._store: Opened[TaskStore] = Opened(lambda: self._subscribed(opener()))

    def _subscribed(self, store: TaskStore) -> TaskStore:
        store.subscribe(self._listeners.call)
        return store

    @property
    def is_open(self) -> bool:
        return self._store.is_open

    def opened(self) -> TaskStore:
        return self._store.get()

    def __getattr__(self, name: str) -> Any:
        # Only called for what the handle itself lacks: the store's public methods and attributes.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.opened(), name)

    def subscribe(self, listener: Callable[[ChangeEvent], None]) -> Callable[[], None]:
        """As :meth:`TaskStore.subscribe`, without opening the store."""
        return self._listeners.add(listener)

    def close(self) -> None:
        self._store.close()
