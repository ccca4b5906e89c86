"""The change feed of one server process: which resources changed, from this process or any replica.

No MCP here: :class:`ChangeFeed` turns committed :class:`~dockyard_tasks.store.ChangeEvent` values into
:class:`ResourceChange` values (URIs updated, whether the resource list changed) and hands them to its
listeners; ``server.py`` adapts those to ``notifications/resources/updated`` and ``list_changed``.

* This process's own writes arrive from the store after commit.
* On PostgreSQL the store also sends ``NOTIFY`` inside each write transaction (``notices.py``; delivered
  only if it commits), and a listener thread here ``LISTEN``s, so a change made through any replica
  reaches this one's subscribers. A notice from this process's own store is recognised by its origin and
  skipped. A notice too large to name every task says "every task of these projects", and subscribers of
  any of them are told.
* On SQLite there is one process by design (the file's writer), so the first path is all there is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .listeners import Listeners
from .notices import channel_for_schema, read_payload

if TYPE_CHECKING:  # SQLAlchemy only on PostgreSQL, where the store opens at start anyway
    from .store import ChangeEvent, TaskStore

__all__ = [
    "SUMMARY_URI",
    "ChangeFeed",
    "ResourceChange",
    "channel_for_schema",  # re-exported: where the tests and tools looked for it
    "project_uri",
    "task_project",
    "task_uri",
]

log = logging.getLogger(__name__)

SUMMARY_URI = "project://tasks/summary"


def project_uri(key: str) -> str:
    return f"project://{key}"


def task_uri(task_id: str) -> str:
    return f"task://{task_id}"


def task_project(uri: str) -> str | None:
    """The project key of a ``task://KEY-N`` URI (None for any other URI)."""
    if not uri.startswith("task://"):
        return None
    return uri[len("task://") :].rpartition("-")[0]


@dataclass(frozen=True)
class ResourceChange:
    """What subscribers must hear about one committed change."""

    revision: int
    uris: frozenset[str]  # updated resources: the summary, projects, tasks
    all_tasks_of: frozenset[str] = frozenset()  # project keys whose every task may have changed
    list_changed: bool = False  # a listed resource (a project) came into existence
    # Anything may have changed: notices from other replicas were lost (the LISTEN connection dropped).
    everything: bool = False

    def touches(self, uri: str) -> bool:
        if self.everything or uri in self.uris:
            return True
        return bool(self.all_tasks_of) and task_project(uri) in self.all_tasks_of


def change_of(event: ChangeEvent) -> ResourceChange:
    uris = {SUMMARY_URI, *(project_uri(k) for k in event.projects), *(task_uri(t) for t in event.tasks)}
    return ResourceChange(
        revision=event.revision, uris=frozenset(uris), list_changed=bool(event.new_projects)
    )


def _change_from_payload(payload: str) -> tuple[str, ResourceChange] | None:
    notice = read_payload(payload)
    if notice is None:
        log.warning("ignoring a malformed change notice")
        return None
    uris = {SUMMARY_URI, *(project_uri(k) for k in notice.projects)}
    if notice.tasks is not None:
        uris |= {task_uri(t) for t in notice.tasks}
    change = ResourceChange(
        revision=notice.revision,
        uris=frozenset(uris),
        all_tasks_of=frozenset(notice.projects) if notice.tasks is None else frozenset(),
        list_changed=notice.new_projects,
    )
    return notice.origin, change


class ChangeFeed:
    """Fan committed changes out to this process's listeners (see the module docstring)."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self._listeners: Listeners[ResourceChange] = Listeners()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Whether the LISTEN connection is up now (``/health``); None on SQLite, where there is none.
        self.listening: bool | None = None if not store.postgres else False
        # PostgreSQL: the channel the store notifies on (its writes send the notices; this only listens).
        self._channel: str | None = store.channel if store.postgres else None
        store.subscribe(lambda event: self._listeners.call(change_of(event)))

    # -- listeners ---------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ResourceChange], None]) -> Callable[[], None]:
        """``listener(change)`` is called from whichever thread saw the change; it must not block."""
        return self._listeners.add(listener)

    # -- PostgreSQL ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start hearing other replicas (PostgreSQL only; a no-op on SQLite)."""
        if self._channel is None or self._thread is not None:
            return
        self._stop.clear()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, args=(ready,), name="tasks-listen", daemon=True)
        self._thread.start()
        ready.wait(timeout=10)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _listen(self, ready: threading.Event) -> None:
        import psycopg  # PostgreSQL only: a SQLite tracker never imports the driver
        from sqlalchemy.engine import make_url

        url = make_url(self.store.engine.url).set(drivername="postgresql")
        dsn = url.render_as_string(hide_password=False)
        # Since when this process has had no LISTEN connection (a first connection that fails counts:
        # subscribers exist as soon as the feed starts).
        lost_at: float | None = None
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    dsn, autocommit=True, connect_timeout=10, application_name="dockyard-tasks change feed"
                ) as connection:
                    connection.execute(f'LISTEN "{self._channel}"')
                    self.listening = True
                    ready.set()
                    if lost_at is not None:
                        self._caught_up(time.monotonic() - lost_at)
                        lost_at = None
                    while not self._stop.is_set():
                        for notice in connection.notifies(timeout=0.5):
                            found = _change_from_payload(notice.payload)
                            if found and found[0] != self.store.origin:
                                self._listeners.call(found[1])
            except psycopg.Error as error:
                self.listening = False
                ready.set()
                if lost_at is None:
                    lost_at = time.monotonic()
                log.warning("lost the change-notice connection (%s); reconnecting", error)
                self._stop.wait(1.0)

    def _caught_up(self, gap: float) -> None:
        """LISTEN again after a gap: notices other replicas sent meanwhile are gone for good (PostgreSQL
        keeps none for a session that was not listening), so every subscriber is told that whatever it
        watches may have changed, and catches up with ``changes_since``."""
        log.warning(
            "change-notice connection restored after %.1f s without it; changes other replicas made "
            "meanwhile were not announced: telling every subscriber to catch up (resources updated, "
            "list changed)",
            gap,
        )
        self._listeners.call(
            ResourceChange(revision=0, uris=frozenset({SUMMARY_URI}), list_changed=True, everything=True)
        )
