"""Schema migrations at start-up: an older database upgrades in place, a newer or foreign one is refused."""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from dockyard_shared import Conflict
from dockyard_tasks.store import TaskChanges, TaskStore
from dockyard_tasks.store.engine import make_engine
from dockyard_tasks.store.migrate import head_revision, migrate_to, newest_revision
from dockyard_tasks.store.schema import UNMAPPED, Base


def test_the_migrations_build_exactly_the_schema_the_code_uses(database_url):
    engine = make_engine(database_url)
    migrate_to(engine, "head")
    with engine.connect() as connection:
        # Migration 0006's FTS5 table, trigram and expression indexes are not ORM metadata (schema.UNMAPPED).
        context = MigrationContext.configure(
            connection, opts={"include_name": lambda name, kind, parents: name not in UNMAPPED}
        )
        assert compare_metadata(context, Base.metadata) == []
        assert MigrationContext.configure(connection).get_current_revision() == head_revision()
    engine.dispose()


def test_a_database_of_the_first_release_upgrades_in_place_keeping_everything(database_url):
    engine = make_engine(database_url)
    migrate_to(engine, "0001")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO projects (id, key, name, description, next_number, created_at, created_by) "
                "VALUES (1, 'OLD', 'Old project', '', 3, '2025-01-02 03:04:05', 'ann')"
            )
        )
        for number in (1, 2):
            connection.execute(
                text(
                    "INSERT INTO tasks (id, project_id, number, title, description, status, priority, "
                    "created_at, updated_at, created_by, version) VALUES "
                    "(:n, 1, :n, :title, '', 'todo', 2, '2025-01-02 03:04:05', '2025-01-02 03:04:05', 'ann', 1)"
                ),
                {"n": number, "title": f"old task {number}"},
            )
            connection.execute(
                text(
                    "INSERT INTO activity (at, actor, project_key, task_id, task_number, task_version, action, "
                    "new_value) VALUES ('2025-01-02 03:04:05', 'ann', 'OLD', :n, :n, 1, 'created', :title)"
                ),
                {"n": number, "title": f"old task {number}"},
            )
    with engine.connect() as connection:
        assert "feed" not in inspect(connection).get_table_names()
    engine.dispose()

    store = TaskStore(database_url)  # start-up upgrades
    assert [store.get_task(t).title for t in ("OLD-1", "OLD-2")] == ["old task 1", "old task 2"]
    assert store.summary().by_project == {"OLD": {"total": 2, "todo": 2}}  # counts filled in (0004)
    old_changes = store.changes_since(None).changes
    assert [(c.task, c.action, c.revision) for c in old_changes] == [
        ("OLD-1", "created", 1),
        ("OLD-2", "created", 2),
    ]
    store.update_task("OLD-1", TaskChanges(title="renamed"), actor="bob")
    (new,) = store.changes_since(f"{old_changes[-1].revision}").changes
    assert new.revision == 3 and new.old == "old task 1"
    store.close()


def test_the_newest_revision_read_from_the_files_is_alembics_head():
    """A start at the newest revision is recognised without Alembic, from the migration files' own lines."""
    assert newest_revision() == head_revision() != ""


def test_a_database_from_a_newer_release_is_refused_and_left_alone(database_url):
    engine = make_engine(database_url)
    migrate_to(engine, "head")
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(Conflict, match=r"schema revision '0099'.*newer dockyard-tasks") as refused:
        TaskStore(database_url)
    assert "Upgrade dockyard-tasks" in refused.value.next_step
    engine = make_engine(database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0099"
    engine.dispose()


def test_a_database_holding_other_tables_is_refused(database_url):
    engine = make_engine(database_url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(Conflict, match="not a dockyard-tasks schema \\(invoices\\)"):
        TaskStore(database_url)


def test_replicas_starting_together_migrate_once(database_url):
    errors: list[BaseException] = []

    def start() -> None:
        try:
            TaskStore(database_url).close()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = TaskStore(database_url)
    assert store.revision() == 0
    store.close()
