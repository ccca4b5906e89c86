"""The PostgreSQL change notice: its channel and its payload, written by the store and read by the feed.

A write transaction sends ``NOTIFY`` on its schema's channel with a JSON payload naming what changed
(``{"o": origin, "r": revision, "p": projects, "t": tasks, "n": new projects}``); PostgreSQL delivers it
only if the transaction commits. ``origin`` names the store that wrote it, so a process skips its own
notices (its listeners heard the change already, after the commit). A payload is at most 8,000 bytes: a
change touching too many tasks to name (an import) is sent with ``"t": null``, "every task of these
projects". Plain JSON, no SQLAlchemy: the feed parses notices without importing the store.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

__all__ = ["Notice", "channel_for_schema", "payload_parts", "read_payload"]

_PAYLOAD_LIMIT = 7_500  # bytes; PostgreSQL refuses NOTIFY payloads of 8,000 or more


def channel_for_schema(schema: str) -> str:
    """The ``NOTIFY`` channel of the stores in one database schema (so other schemas are not heard)."""
    return "dockyard_tasks_" + uuid.uuid5(uuid.NAMESPACE_URL, schema).hex[:16]


def payload_parts(
    origin: str, projects: Sequence[str], tasks: Sequence[str], new_projects: Sequence[str]
) -> tuple[str, str]:
    """The payload before and after its revision (the store writes the revision between them, in the
    statement that takes it)."""
    head = '{"o":' + json.dumps(origin) + ',"r":'
    named_projects, named_tasks = list(projects), list(tasks)

    def tail() -> str:
        return (
            f',"p":{json.dumps(named_projects)},"t":{json.dumps(named_tasks)},'
            f'"n":{json.dumps(list(new_projects))}}}'
        )

    if len(head.encode()) + 20 + len(tail().encode()) > _PAYLOAD_LIMIT:  # 20: the revision's digits
        named_tasks = None  # type: ignore[assignment]  # too many to name: "every task of these projects"
        named_projects = named_projects[:200]
    return head, tail()


class Notice:
    """A parsed payload: who sent it, the revision, the projects, the tasks (None: every task of those
    projects) and whether a project came into existence."""

    __slots__ = ("new_projects", "origin", "projects", "revision", "tasks")

    def __init__(self, payload: str) -> None:
        """Raises ValueError, KeyError or TypeError for a payload this format does not describe."""
        body = json.loads(payload)
        self.origin = str(body["o"])
        self.revision = int(body["r"])
        self.projects = [str(k) for k in body["p"]]
        tasks = body["t"]
        self.tasks = None if tasks is None else [str(t) for t in tasks]
        self.new_projects = bool(body["n"])


def read_payload(payload: str) -> Notice | None:
    try:
        return Notice(payload)
    except (ValueError, KeyError, TypeError):
        return None
