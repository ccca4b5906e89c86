"""The warm-up after ``initialize`` runs every read path once (each compiles its statements on its first run
in a process) and changes nothing."""

from __future__ import annotations

from dockyard_tasks.demo import seed_demo
from dockyard_tasks.server import warm_up
from dockyard_tasks.store import TaskFilter, TaskStore


def _fingerprint(store: TaskStore) -> tuple:
    page = store.list_tasks(TaskFilter(), limit=200, full=True)
    return store.revision(), store.summary().model_dump(), page.model_dump()


def test_the_warm_up_reads_every_path_of_an_empty_store_and_writes_nothing(store: TaskStore):
    before = _fingerprint(store)
    # One step each: list_projects, list_tasks, the summary, next_task; then changes_since.
    assert sum(1 for _ in warm_up(store, "ann")) == 4
    assert _fingerprint(store) == before


def test_the_warm_up_also_reads_a_task_and_a_project_when_there_are_some(store: TaskStore):
    seed_demo(store)
    before = _fingerprint(store)
    # and get_task, and the first project's summary
    assert sum(1 for _ in warm_up(store, "ann")) == 6
    assert _fingerprint(store) == before
