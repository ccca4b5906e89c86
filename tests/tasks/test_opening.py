"""The store opens after ``initialize`` on a SQLite file at the newest revision, at start otherwise
(dockyard_tasks.opening); tests/workspace/test_startup_imports.py checks what a start imports."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing

import pytest
from sqlalchemy.engine import make_url

from dockyard_shared import InvalidArgument
from dockyard_tasks.demo import seed_demo
from dockyard_tasks.opening import LazyStore, open_store, ready_sqlite_file, simple_sqlite_path
from dockyard_tasks.settings import Settings
from dockyard_tasks.store import TaskStore
from dockyard_tasks.store.engine import normalise_url
from tests.harness import open_session
from tests.tasks.helpers import make_server, tasks_launch


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///tasks.db",
        "sqlite:////tmp/x y/tasks.db",
        "sqlite:////tmp/a+b~c_d-e.db",
        "sqlite:///~/tasks.db",
        "sqlite:////tmp/a%20b.db",
        "sqlite:////tmp/a#b.db",
        "sqlite:////tmp/é.db",
        "sqlite:////tmp/a.db?mode=ro",
        "sqlite+pysqlite:////tmp/a.db",
        "sqlite:///:memory:",
        "sqlite://",
        "postgresql://u@h/db",
    ],
)
def test_a_plain_sqlite_url_is_read_as_sqlalchemy_reads_it_and_any_other_is_left_to_sqlalchemy(url):
    path = simple_sqlite_path(url)
    if path is not None:
        assert normalise_url(url) == url and make_url(url).database == path


def test_only_a_database_at_the_newest_revision_is_ready(tmp_path):
    path = tmp_path / "tasks.db"
    assert not ready_sqlite_file(str(path)) and not path.exists()  # never creates the file
    store = TaskStore(f"sqlite:///{path}")
    assert ready_sqlite_file(str(path)) and not ready_sqlite_file(str(path), project="TASK")
    seed_demo(store)
    store.close()
    assert ready_sqlite_file(str(path), project="TASK")
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = '0099'")
    assert not ready_sqlite_file(str(path))
    path.write_bytes(b"not a database" * 100)
    assert not ready_sqlite_file(str(path))


def test_a_database_this_process_cannot_write_is_opened_at_start(tmp_path, monkeypatch):
    path = tmp_path / "tasks.db"
    TaskStore(f"sqlite:///{path}").close()
    # root may write anything
    monkeypatch.setattr("dockyard_tasks.migrations.ready.os.access", lambda *_: False)
    assert not ready_sqlite_file(str(path))


def test_a_database_at_the_newest_revision_is_opened_on_first_use(sqlite_url):
    TaskStore(sqlite_url).close()
    store = open_store(Settings(database_url=sqlite_url))
    assert isinstance(store, LazyStore) and not store.is_open
    assert store.list_projects().projects == []
    assert store.is_open
    store.close()


def test_a_new_database_is_opened_at_start(sqlite_url):
    store = open_store(Settings(database_url=sqlite_url, demo=True))
    assert isinstance(store, TaskStore)
    assert [p.key for p in store.list_projects().projects] == ["TASK"]
    store.close()


def test_the_demo_is_seeded_at_start_when_missing_and_only_then(sqlite_url):
    TaskStore(sqlite_url).close()  # at the newest revision, without the sample project
    first = open_store(Settings(database_url=sqlite_url, demo=True))
    assert isinstance(first, TaskStore)
    first.close()
    second = open_store(Settings(database_url=sqlite_url, demo=True))
    assert isinstance(second, LazyStore)
    assert [p.tasks for p in second.list_projects().projects] == [9]
    second.close()


def test_threads_asking_together_open_the_store_once():
    opened = []

    def opener():
        time.sleep(0.05)
        opened.append(object())
        return FakeStore()

    lazy = LazyStore(opener)
    results = []
    threads = [threading.Thread(target=lambda: results.append(lazy.answer())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 1 and results == [42] * 8


def test_a_failed_open_is_reported_to_the_caller_and_tried_again_by_the_next():
    attempts = []

    def opener():
        attempts.append(1)
        if len(attempts) == 1:
            raise InvalidArgument("the database is gone")
        return FakeStore()

    lazy = LazyStore(opener)
    with pytest.raises(InvalidArgument, match="gone"):
        lazy.answer()
    assert lazy.answer() == 42 and len(attempts) == 2


def test_listeners_subscribed_before_the_open_hear_the_stores_changes():
    fake = FakeStore()
    lazy = LazyStore(lambda: fake)
    heard = []
    lazy.subscribe(heard.append)
    assert fake.listeners == []  # subscribing does not open the store
    lazy.answer()
    fake.listeners[0]("a change")
    assert heard == ["a change"]


class FakeStore:
    def __init__(self) -> None:
        self.listeners = []

    def subscribe(self, listener):
        self.listeners.append(listener)
        return lambda: None

    def answer(self) -> int:
        return 42


async def test_tools_and_resources_work_on_a_store_opened_late(sqlite_url, era):
    store = TaskStore(sqlite_url)
    seed_demo(store)
    store.close()
    async with open_session(make_server(sqlite_url, demo=True), era=era) as session:
        await session.call_ok("create_task", {"project": "TASK", "title": "Zebra crossing"})
        page = (await session.call_ok("list_tasks", {"project": "TASK", "text": "Zebra"})).data
        assert [t["title"] for t in page["tasks"]] == ["Zebra crossing"]
        summary = json.loads(await session.read_resource("project://tasks/summary"))
        assert summary["total"] == 10


@pytest.mark.slow
def test_a_file_that_is_not_a_database_stops_start_up_clearly(tmp_path):
    path = tmp_path / "tasks.db"
    path.write_bytes(b"not a database" * 100)
    result = tasks_launch(f"sqlite:///{path}").run()
    assert result.returncode == 2 and "Cannot open the task database" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
