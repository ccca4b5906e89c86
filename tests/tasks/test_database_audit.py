"""A database dockyard-tasks refuses is left exactly as it was, and a database at the newest revision that
holds code the migrations did not create (a planted trigger, a view, a rule) is refused at start.

The refusals are checked as hosts see them: the console script exits 2 with the reason on stderr."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from dockyard_shared import Conflict
from dockyard_tasks.store import TaskDraft, TaskStore
from tests.postgres import libpq_url
from tests.tasks.helpers import make_server, tasks_launch

pytestmark = pytest.mark.slow


def snapshot(path: Path) -> tuple[bytes, int, list[str]]:
    """The file's bytes, its modification time and what its folder lists."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(path.parent))


def seeded_file(path: Path) -> str:
    url = f"sqlite:///{path}"
    store = TaskStore(url)
    store.create_project("WEB", "Web", actor="setup")
    store.create_task(TaskDraft("WEB", "first"), actor="setup")
    store.close()
    return url


def execute(path: Path, *statements: str) -> None:
    with closing(sqlite3.connect(path)) as connection:
        for statement in statements:
            connection.execute(statement)
        connection.commit()


def assert_refused_and_untouched(url: str, path: Path, *expected: str) -> str:
    before = snapshot(path)
    result = tasks_launch(url).run()
    assert result.returncode == 2, result.stderr
    assert "left untouched" in result.stderr and "Traceback" not in result.stderr and result.stdout == ""
    for text in expected:
        assert text in result.stderr, result.stderr
    with pytest.raises(Conflict):
        make_server(url)  # in process too: refused before anything opens it
    assert snapshot(path) == before  # same bytes, same mtime, no -wal/-shm beside it
    return result.stderr


# -- refused files are left untouched ------------------------------------------------------------------


def test_a_database_of_a_newer_release_is_refused_without_a_byte_changed(tmp_path):
    path = tmp_path / "tasks.db"
    url = seeded_file(path)
    execute(path, "UPDATE alembic_version SET version_num = '0099'", "PRAGMA journal_mode=DELETE")
    assert_refused_and_untouched(url, path, "schema revision '0099'", "Upgrade dockyard-tasks")


def test_a_database_of_a_newer_release_in_wal_mode_is_refused_without_a_byte_changed(tmp_path):
    path = tmp_path / "tasks.db"
    url = seeded_file(path)  # left in WAL mode, as the store leaves every file
    execute(path, "UPDATE alembic_version SET version_num = '0099'")
    assert sorted(os.listdir(tmp_path)) == ["tasks.db"]
    assert_refused_and_untouched(url, path, "schema revision '0099'")


def test_a_database_holding_other_tables_is_refused_without_a_byte_changed(tmp_path):
    path = tmp_path / "accounts.db"
    execute(
        path,
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER)",
        "INSERT INTO invoices VALUES (1, 5)",
    )
    assert_refused_and_untouched(f"sqlite:///{path}", path, "not a dockyard-tasks schema (invoices)")


# -- code planted in a database at the newest revision -------------------------------------------------


PLANTED = {
    "an unknown trigger": (
        [
            "CREATE TRIGGER audit_comments AFTER INSERT ON comments BEGIN UPDATE tasks SET title = 'pwned'; END"
        ],
        "trigger audit_comments",
    ),
    "a known trigger replaced": (
        [
            "DROP TRIGGER task_counts_insert",
            "CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN UPDATE tasks SET title = 'pwned'; END",
        ],
        "trigger task_counts_insert",
    ),
    "a view": (["CREATE VIEW open_tasks AS SELECT * FROM tasks WHERE status = 'todo'"], "view open_tasks"),
}


@pytest.mark.parametrize("case", PLANTED)
def test_a_sqlite_file_holding_code_of_its_own_is_refused_at_start(tmp_path, case):
    path = tmp_path / "tasks.db"
    url = seeded_file(path)
    statements, named = PLANTED[case]
    execute(path, *statements, "PRAGMA journal_mode=DELETE")
    stderr = assert_refused_and_untouched(url, path, named, "code dockyard-tasks did not create")
    assert "DROP TRIGGER" in stderr


def test_the_migrations_own_triggers_are_recognised(database_url, tmp_path):
    """The digests in migrations/audit.py are those of what the migrations build, on either database
    (on PostgreSQL the store's open checks them: it would refuse the database it just migrated)."""
    from dockyard_tasks.migrations.audit import SQLITE_OBJECTS, read_sqlite_file, unexpected_objects

    TaskStore(database_url).close()
    TaskStore(database_url).close()  # opened again at the newest revision: judged, and served
    if database_url.startswith("sqlite"):
        path = Path(database_url.removeprefix("sqlite:///"))
        found = read_sqlite_file(path)
        assert found is not None and found.unexpected == []
        with closing(sqlite3.connect(path)) as connection:
            assert len(connection.execute(SQLITE_OBJECTS).fetchall()) == 9  # 0004, 0005, 0006: three each
            assert unexpected_objects("sqlite", connection.execute(SQLITE_OBJECTS)) == []


@pytest.mark.parametrize(
    "statement,named",
    [
        (
            "CREATE FUNCTION rewrite() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN UPDATE tasks SET title = 'pwned'; RETURN NULL; END $$; "
            "CREATE TRIGGER on_comment AFTER INSERT ON comments FOR EACH ROW EXECUTE FUNCTION rewrite()",
            "trigger on_comment",
        ),
        ("CREATE VIEW open_tasks AS SELECT * FROM tasks", "view open_tasks"),
        ("CREATE RULE hide AS ON INSERT TO comments DO INSTEAD NOTHING", "rule hide"),
    ],
)
def test_a_postgresql_database_holding_code_of_its_own_is_refused_at_start(postgres_url, statement, named):
    TaskStore(postgres_url).close()
    with psycopg.connect(libpq_url(postgres_url), autocommit=True) as connection:
        connection.execute(statement)  # in the test's schema (the URL's search_path)
    result = tasks_launch(postgres_url).run()
    assert result.returncode == 2 and named in result.stderr and "left untouched" in result.stderr, (
        result.stderr
    )
    assert "Traceback" not in result.stderr
