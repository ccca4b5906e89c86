"""The change feed of one server process: which resources changed, from this process or any replica.

No MCP here: :class:`ChangeFeed` turns committed :class:`~dockyard_tasks.store.ChangeEvent` values into
:class:`ResourceChange` values (URIs updated, whether the resource list changed) and hands them to its
listeners; ``server.py`` adapts those to ``notifications/resources/updated`` and ``list_changed``.

* This process's own writes arrive from the store after commit.
* On PostgreSQL every write also sends ``NOTIFY`` inside its transaction (delivered only if it commits),
  and a listener thread here ``LISTEN``s, so a change made through any replica reaches this one's
  subscribers. A notice from this process itself is recognised by its origin and skipped.
* On SQLite there is one process by design (the file's writer), so the first path is all there is.

A ``NOTIFY`` payload is at most 8,000 bytes: a change touching too many tasks to name (an import) is sent
as "every task of these projects", and subscribers of any of them are told.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .listeners import Listeners

if TYPE_CHECKING:  # SQLAlchemy only on PostgreSQL, where the store opens at start anyway
    from .store import ChangeEvent, TaskStore

__all__ = [
    "SUMMARY_URI",
    "ChangeFeed",
    "ResourceChange",
    "channel_for_schema",
    "project_uri",
    "task_project",
    "task_uri",
]

log = logging.getLogger(__name__)

SUMMARY_URI = "project://tasks/summary"
_PAYLOAD_LIMIT = 7_500  # bytes; PostgreSQL refuses NOTIFY payloads of 8,000 or more


def project_uri(key: str) -> str:
    return f"project://{key}"


def task_uri(task_id: str) -> str:
    return f"task://{task_id}"


def task_project(uri: str) -> str | None:
    """The project key of a ``task://KEY-N`` URI (None for any other URI)."""
    if not uri.startswith("task://"):
        return None
    return uri[len("task://") :].rpartition("-")[0]


def channel_for_schema(schema: str) -> str:
    """The ``NOTIFY`` channel of the stores in one database schema (so other schemas are not heard)."""
    return "dockyard_tasks_" + uuid.uuid5(uuid.NAMESPACE_URL, schema).hex[:16]


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


def _payload_parts(origin: str, event: ChangeEvent) -> tuple[str, str]:
    """The notice's JSON before and after its revision (the store writes the revision between them, in
    the statement that takes it)."""
    head = '{"o":' + json.dumps(origin) + ',"r":'
    projects, tasks = list(event.projects), list(event.tasks)

    def tail() -> str:
        return f',"p":{json.dumps(projects)},"t":{json.dumps(tasks)},"n":{json.dumps(list(event.new_projects))}}}'

    if len(head.encode()) + 20 + len(tail().encode()) > _PAYLOAD_LIMIT:  # 20: the revision's digits
        tasks = None  # too many to name: "every task of these projects"
        projects = projects[:200]
    return head, tail()


def _change_from_payload(payload: str) -> tuple[str, ResourceChange] | None:
    try:
        body = json.loads(payload)
        projects = [str(k) for k in body["p"]]
        tasks = body["t"]
        uris = {SUMMARY_URI, *(project_uri(k) for k in projects)}
        if tasks is not None:
            uris |= {task_uri(str(t)) for t in tasks}
        change = ResourceChange(
            revision=int(body["r"]),
            uris=frozenset(uris),
            all_tasks_of=frozenset(projects) if tasks is None else frozenset(),
            list_changed=bool(body["n"]),
        )
        return str(body["o"]), change
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring a malformed change notice")
        return None


class ChangeFeed:
    """Fan committed changes out to this process's listeners (see the module docstring)."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.origin = uuid.uuid4().hex
        self._listeners: Listeners[ResourceChange] = Listeners()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._channel: str | None = None
        store.subscribe(lambda event: self._listeners.call(change_of(event)))
        if store.postgres:
            self._channel = self._channel_name()
            store.announce = self._announcement

    # -- listeners ---------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ResourceChange], None]) -> Callable[[], None]:
        """``listener(change)`` is called from whichever thread saw the change; it must not block."""
        return self._listeners.add(listener)

    # -- PostgreSQL ---------------------------------------------------------------------------------

    def _channel_name(self) -> str:
        """One channel per database schema, so stores in different schemas do not hear each other."""
        from sqlalchemy import text

        with self.store.engine.connect() as connection:
            schema = connection.execute(text("SELECT current_schema()")).scalar() or "public"
        return channel_for_schema(schema)

    def _announcement(self, event: ChangeEvent) -> tuple[str, str, str]:
        return (self._channel or "", *_payload_parts(self.origin, event))

    def start(self) -> None:
        """Start hearing other replicas (PostgreSQL only; a no-op on SQLite)."""
        if self._channel is None or self._thread is not None:
            return
        self._stop.clear()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._listen, args=(ready,), name="tasks-listen", daemon=True)
        self._thread.start()
        ready.wait(timeout=10)

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
                    ready.set()
                    if lost_at is not None:
                        self._caught_up(time.monotonic() - lost_at)
                        lost_at = None
                    while not self._stop.is_set():
                        for notice in connection.notifies(timeout=0.5):
                            found = _change_from_payload(notice.payload)
                            if found and found[0] != self.origin:
                                self._listeners.call(found[1])
            except psycopg.Error as error:
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
