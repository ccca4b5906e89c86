"""The task counts the summary and list_projects read (task_counts, kept by triggers on tasks): after
every kind of write, and under writers racing in opposite directions, they equal a count of the rows."""

from __future__ import annotations

import threading

from sqlalchemy import text

from dockyard_shared import Conflict
from dockyard_tasks.store import StoreLimits, TaskChanges, TaskDraft, TaskStore
from tests.tasks.test_transfer import build_project, whole_export

COUNTED_ROWS = text(
    "SELECT project_id, status, COALESCE(assignee, ''), COUNT(*) FROM tasks "
    "GROUP BY project_id, status, COALESCE(assignee, '')"
)
KEPT = text("SELECT project_id, status, assignee, tasks FROM task_counts WHERE tasks <> 0")
COUNTED_DUE = text(
    "SELECT status, due_date, COUNT(*) FROM tasks WHERE due_date IS NOT NULL GROUP BY status, due_date"
)
OVERDUE = text(
    "SELECT COUNT(*) FROM tasks WHERE status IN ('todo', 'in_progress', 'blocked') AND due_date < :today"
)
KEPT_DUE = text("SELECT status, due_date, tasks FROM task_due_counts WHERE tasks <> 0")


def assert_counts_exact(store: TaskStore) -> None:
    with store.engine.connect() as connection:
        counted = {tuple(row[:3]): row[3] for row in connection.execute(COUNTED_ROWS)}
        kept = {tuple(row[:3]): row[3] for row in connection.execute(KEPT)}
        counted_due = {tuple(row[:2]): row[2] for row in connection.execute(COUNTED_DUE)}
        kept_due = {tuple(row[:2]): row[2] for row in connection.execute(KEPT_DUE)}
    assert kept == counted
    assert kept_due == counted_due


def test_the_kept_counts_equal_a_count_of_the_tasks_after_every_kind_of_write(store):
    build_project(store)  # batches, a parent, blockers, a status change, comments, a deletion
    assert_counts_exact(store)
    store.update_task("WEB-1", TaskChanges(assignee="cy", status="blocked"), actor="ann")
    store.update_task("WEB-2", TaskChanges(assignee=""), actor="ann")
    store.update_task("WEB-3", TaskChanges(title="renamed", due="2026-01-01"), actor="ann")
    store.update_task("WEB-2", TaskChanges(due="2026-02-01"), actor="ann")
    store.update_task("WEB-2", TaskChanges(due="2026-03-01"), actor="ann")  # a date moved
    store.update_task("WEB-3", TaskChanges(due=""), actor="ann")  # a date cleared
    store.update_task("WEB-3", TaskChanges(due="2026-02-01"), actor="ann")
    store.set_status("OPS-1", "cancelled", actor="ann")
    assert_counts_exact(store)
    store.import_project(whole_export(store, "WEB"), actor="ann", key="COPY")
    store.delete_task("WEB-1", actor="ann")  # detaches a subtask: its parent changes, not its count
    assert_counts_exact(store)
    summary, projects = store.summary(), {p.key: p for p in store.list_projects().projects}
    with store.engine.connect() as connection:
        overdue = connection.scalar(OVERDUE, {"today": store.clock().date()})
    assert summary.overdue == overdue > 0
    assert summary.total == sum(p.tasks for p in projects.values()) == 6
    assert summary.by_assignee == {"": 5, "cy": 1}
    assert (projects["WEB"].tasks, projects["WEB"].open) == (2, 2)
    assert (projects["OPS"].tasks, projects["OPS"].open) == (1, 0)
    assert store.project("COPY").tasks == 3


def test_kept_counts_stay_exact_while_writers_move_tasks_in_opposite_directions(database_url):
    """Each writer flips the same tasks between in_progress and blocked, starting from opposite ends, so
    two transactions often move a count row each way at once (the case that could deadlock)."""
    store = TaskStore(database_url, pool_size=10)
    store.create_project("WEB", "Web", actor="ann")
    ids = [
        item.id
        for item in store.create_tasks(
            [TaskDraft(project="WEB", title=f"t{i}", status="in_progress", assignee="bob") for i in range(6)],
            actor="ann",
        ).created
    ]
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        order = ids if n % 2 else list(reversed(ids))
        try:
            for round_ in range(4):
                for task_id in order:
                    status = ("blocked", "in_progress")[(round_ + n) % 2]
                    try:
                        store.set_status(task_id, status, actor=f"w{n}")
                    except Conflict as conflict:
                        assert conflict.retryable, conflict
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert_counts_exact(store)
    by_status = store.summary().by_status
    assert by_status["in_progress"] + by_status["blocked"] == 6
    store.close()


def test_a_summary_shows_the_largest_groups_and_says_what_it_left_out(database_url):
    store = TaskStore(database_url, limits=StoreLimits(summary_groups=2))
    for key, assignees in (("AAA", ["ann", "bob", "bob"]), ("BBB", ["cy", "bob"]), ("CCC", ["cy"])):
        store.create_project(key, key, actor="ann")
        store.create_tasks([TaskDraft(project=key, title="t", assignee=a) for a in assignees], actor="ann")
    summary = store.summary()
    assert summary.total == 6
    assert summary.by_assignee == {"bob": 3, "cy": 2}
    assert summary.by_project == {"AAA": {"total": 3, "todo": 3}, "BBB": {"total": 2, "todo": 2}}
    assert summary.note == (
        "by_assignee shows the 2 assignees with the most tasks; by_project shows the first 2 projects by key."
    )
    assert store.summary("BBB").by_assignee == {"bob": 1, "cy": 1}
    store.close()
