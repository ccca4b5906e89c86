"""Generate the benchmark's tasks: deterministic, the same set for our database and the peer's JSON file.

``generate(count, projects)`` gives plain task records; ``load_into(url, records)`` writes them into a
dockyard-tasks database (created by the server's own migrations) in one transaction, with the rows the
server itself would have written (labels, dependencies, one "created" history entry per task).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import insert, update

from dockyard_tasks.store import TaskStore
from dockyard_tasks.store.engine import WRITE
from dockyard_tasks.store.schema import Activity, Dependency, Feed, Label, Project, Task

STATUSES = ["todo"] * 5 + ["in_progress"] * 2 + ["blocked", "done", "done", "done", "cancelled"]
ASSIGNEES = ["alice", "bob", "carol", "dan", "erin", "frank", "grace", "heidi", "ivan", "judy", None]
LABELS = ["bug", "frontend", "backend", "ops", "docs", "design", "security", "perf"]
WORDS = [
    "fix",
    "add",
    "refactor",
    "migrate",
    "document",
    "review",
    "design",
    "test",
    "deploy",
    "investigate",
    "the",
    "a",
    "login",
    "page",
    "api",
    "cache",
]


@dataclass
class Record:
    key: str
    number: int
    title: str
    description: str
    status: str
    priority: int  # 0 urgent … 3 low
    assignee: str | None
    due: date | None
    labels: list[str]
    blocked_by: int | None  # number of a task of the same project


def project_keys(projects: int) -> list[str]:
    return [f"P{i:02d}" for i in range(1, projects + 1)]


def generate(count: int, projects: int, seed: int = 7) -> list[Record]:
    rng = random.Random(seed)
    keys = project_keys(projects)
    per_project = count // projects
    start = date(2026, 1, 1)
    records = []
    for key in keys:
        for number in range(1, per_project + 1):
            words = rng.sample(WORDS, 5)
            records.append(
                Record(
                    key=key,
                    number=number,
                    title=f"{' '.join(words).capitalize()} #{number}",
                    description=" ".join(rng.choices(WORDS, k=rng.randint(10, 40))),
                    status=rng.choice(STATUSES),
                    priority=rng.choice([0, 1, 1, 2, 2, 2, 3, 3]),
                    assignee=rng.choice(ASSIGNEES),
                    due=start + timedelta(days=rng.randint(0, 365)) if rng.random() < 0.6 else None,
                    labels=sorted(set(rng.sample(LABELS, rng.randint(0, 2)))),
                    blocked_by=number - 1 if number > 1 and number % 10 == 0 else None,
                )
            )
    return records


def load_into(url: str, records: list[Record], projects: int) -> None:
    """Write ``records`` into a fresh dockyard-tasks database at ``url`` (migrated by the store)."""
    store = TaskStore(url)
    moment = datetime(2026, 1, 1)
    keys = project_keys(projects)
    with store.engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
        if connection.dialect.name == "sqlite":
            # One transaction of a million tasks, each touching a dozen indexes and the text search's
            # FTS5 table in no particular order: with SQLite's default 2 MB page cache it spilled to the
            # WAL and read it back, minutes for 100,000 tasks. 2 GB holds it all (this connection only).
            connection.exec_driver_sql("PRAGMA cache_size = -2000000")
        # The text search's FTS5 table (migration 0006) is filled once after the load, not by its insert
        # trigger row by row: FTS5 writes its pending terms out at the end of every statement, so a
        # trigger-fed bulk load made one segment per task (0.5 ms each). The trigger is put back as it was.
        fill_search = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'task_search_insert'"
            if connection.dialect.name == "sqlite"
            else "SELECT NULL"
        ).scalar()
        if fill_search:
            connection.exec_driver_sql("DROP TRIGGER task_search_insert")
        connection.execute(
            insert(Project),
            [
                {
                    "id": i + 1,
                    "key": key,
                    "name": f"Project {key}",
                    "description": "",
                    "next_number": sum(1 for r in records if r.key == key) + 1,
                    "created_at": moment,
                    "created_by": "seed",
                }
                for i, key in enumerate(keys)
            ],
        )
        project_id = {key: i + 1 for i, key in enumerate(keys)}
        task_id = {(r.key, r.number): n + 1 for n, r in enumerate(records)}
        connection.execute(
            insert(Task),
            [
                {
                    "id": task_id[r.key, r.number],
                    "project_id": project_id[r.key],
                    "number": r.number,
                    "title": r.title,
                    "description": r.description,
                    "status": r.status,
                    "priority": r.priority,
                    "assignee": r.assignee,
                    "due_date": r.due,
                    "parent_id": None,
                    "created_at": moment,
                    "updated_at": moment,
                    "created_by": "seed",
                    "version": 1,
                }
                for r in records
            ],
        )
        labels = [
            {"task_id": task_id[r.key, r.number], "label": label} for r in records for label in r.labels
        ]
        if labels:
            connection.execute(insert(Label), labels)
        dependencies = [
            {"task_id": task_id[r.key, r.number], "blocker_id": task_id[r.key, r.blocked_by]}
            for r in records
            if r.blocked_by
        ]
        if dependencies:
            connection.execute(insert(Dependency), dependencies)
        connection.execute(
            insert(Activity),
            [
                {
                    "revision": 1,
                    "at": moment,
                    "actor": "seed",
                    "project_key": r.key,
                    "task_id": task_id[r.key, r.number],
                    "task_number": r.number,
                    "task_version": 1,
                    "action": "created",
                    "new_value": r.title,
                }
                for r in records
            ],
        )
        connection.execute(update(Feed).where(Feed.id == 1).values(revision=1))
        if fill_search:
            connection.exec_driver_sql("INSERT INTO task_search (task_search) VALUES ('rebuild')")
            connection.exec_driver_sql(fill_search)
        if connection.dialect.name == "postgresql":
            # Ids were given explicitly: move each table's sequence past them, as inserts would have.
            for table in ("projects", "tasks", "activity"):
                connection.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                )
    store.close()
