"""next_task and the text filter read indexes (migration 0006) and answer exactly as before.

The answers are compared with the code they replaced, kept here as the oracle: next_task's sort of every
candidate, and the text filter's ILIKE on every row. The cost is measured in SQLite's own work (virtual
machine steps, counted by a progress handler): it must not grow with the number of tasks.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from sqlalchemy import event, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from dockyard_tasks.models import NextTask, TaskRow
from dockyard_tasks.rules import OPEN, format_task_id, priority_name
from dockyard_tasks.store import TaskDraft, TaskFilter, TaskStore
from dockyard_tasks.store.queries import FAR_FUTURE, find_project
from dockyard_tasks.store.schema import Dependency, Project, Task
from tests.harness import open_session
from tests.tasks.helpers import make_server

PEOPLE = ("ann", "bob", "cy")
STATUSES = ("todo", "todo", "todo", "in_progress", "done", "cancelled", "blocked")
PRIORITIES = ("urgent", "high", "medium", "low")
WORDS = (
    "deploy",
    "cache",
    "Login",
    "50% off",
    "snake_case",
    "back\\slash",
    "Straße",
    "ÉCOLE",
    "école",
    "naïve",
    'say "hi"',
    "emoji 🚀 launch",
    "ab",
)
QUERIES = (
    "deploy",
    "DEPLOY",
    "cache dep",
    "%",
    "50%",
    "_",
    "e_c",
    "snake_case",
    "\\",
    "back\\s",
    "straße",
    "STRASSE",
    "école",
    "ÉCOLE",
    "Éco",
    "naï",
    '"hi"',
    "🚀",
    "🚀 la",
    "a",
    "ab",
    "zz",
    "kubernetes",
    "ab ab",
)


def seed(store: TaskStore, count: int, *, rng: random.Random, blockers: bool = True) -> None:
    store.create_project("WEB", "Web", actor="seed")
    store.create_project("OPS", "Ops", actor="seed")
    made: list[str] = []
    for start in range(0, count, 100):
        drafts = []
        for _ in range(start, min(count, start + 100)):
            key = rng.choice(("WEB", "OPS"))
            # A few tasks of each project wait on an earlier one of it, open or not.
            earlier = [t for t in made[-40:] if t.startswith(key)]
            drafts.append(
                TaskDraft(
                    key,
                    " ".join(rng.choices(WORDS, k=3)),
                    description=" ".join(rng.choices(WORDS, k=rng.randint(0, 6))),
                    status=rng.choice(STATUSES),
                    priority=rng.choice(PRIORITIES),
                    assignee=rng.choice((*PEOPLE, None)),
                    due=None
                    if rng.random() < 0.4
                    else (date(2026, 1, 1) + timedelta(days=rng.randint(0, 20))).isoformat(),
                    blocked_by=(rng.choice(earlier),) if blockers and earlier and rng.random() < 0.3 else (),
                )
            )
        made += [item.id for item in store.create_tasks(drafts, actor="seed").created]


@pytest.fixture(scope="module")
def rng() -> random.Random:
    return random.Random(20261128)


@pytest.fixture
def seeded(database_url: str, rng: random.Random) -> Iterator[TaskStore]:
    store = TaskStore(database_url)
    seed(store, 240, rng=rng)
    yield store
    store.close()


# -- the oracles: the code before migration 0006 ----------------------------------------------------------


def old_next_task(session: Session, *, assignee: str, project: str | None, look_ahead: int = 10) -> NextTask:
    blocker = aliased(Task)
    has_open_blocker = (
        exists()
        .where(Dependency.task_id == Task.id, Dependency.blocker_id == blocker.id, blocker.status.in_(OPEN))
        .correlate(Task)
    )
    base = (
        select(Task.id, Project.key, Task.number, Task.title, Task.status, Task.priority, Task.assignee)
        .add_columns(Task.due_date)
        .join(Project, Project.id == Task.project_id)
        .where(Task.assignee == assignee)
    )
    if project is not None:
        base = base.where(Task.project_id == find_project(session, project).id)
    in_progress = [
        format_task_id(row.key, row.number)
        for row in session.execute(base.where(Task.status == "in_progress").order_by(Task.id).limit(10))
    ]
    order = (Task.priority, func.coalesce(Task.due_date, FAR_FUTURE), Task.id)
    ahead = session.execute(
        base.add_columns(has_open_blocker.label("waiting"))
        .where(Task.status == "todo")
        .order_by(*order)
        .limit(look_ahead)
    ).all()
    skipped = [format_task_id(r.key, r.number) for r in ahead if r.waiting]
    pick = next((r for r in ahead if not r.waiting), None)
    if pick is None and len(ahead) == look_ahead:
        pick = session.execute(base.where(Task.status == "todo", ~has_open_blocker).order_by(*order)).first()
    if pick is None:
        whom = f"{assignee} in {project}" if project else assignee
        reason = f"No todo task assigned to {whom} is free to start"
        reason += f" ({len(skipped)} wait on open blockers)." if skipped else "."
        return NextTask(task=None, reason=reason, in_progress=in_progress, skipped_blocked=skipped)
    row = TaskRow(
        id=format_task_id(pick.key, pick.number),
        title=pick.title,
        status=pick.status,
        priority=priority_name(pick.priority),
        assignee=pick.assignee,
        due=pick.due_date.isoformat() if pick.due_date else None,
    )
    reason = f"{row.id} is the highest-priority todo task of {assignee} with no open blocker (priority {row.priority}"
    reason += f", due {row.due})" if row.due else ", no due date)"
    if skipped:
        reason += f"; skipped {', '.join(skipped)}: waiting on open blockers"
    if in_progress:
        reason += f". Already in progress: {', '.join(in_progress)}"
    return NextTask(task=row, reason=reason + ".", in_progress=in_progress, skipped_blocked=skipped)


def old_matches(store: TaskStore, text: str, *, by_priority: bool = False) -> list[str]:
    """Every task the old filter kept (ILIKE on each row), in the page order."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    order = (Task.priority, Task.id) if by_priority else (Task.id,)
    statement = (
        select(Project.key, Task.number)
        .join(Project, Project.id == Task.project_id)
        .where(or_(Task.title.ilike(pattern, escape="\\"), Task.description.ilike(pattern, escape="\\")))
        .order_by(*order)
    )
    with store.engine.connect() as connection:
        return [format_task_id(key, number) for key, number in connection.execute(statement)]


def every_page(store: TaskStore, query: TaskFilter, *, limit: int) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = store.list_tasks(query, limit=limit, cursor=cursor)
        ids += [task.id for task in page.tasks]
        if not page.has_more:
            return ids
        cursor = page.next_cursor


def old_pick(store: TaskStore, assignee: str, project: str | None) -> NextTask:
    with Session(store.engine) as session:
        return old_next_task(session, assignee=assignee, project=project)


# -- the same answers -----------------------------------------------------------------------------------------


def test_next_task_answers_as_the_sorting_version_did(seeded: TaskStore, rng: random.Random):
    for round_ in range(4):
        for who in (*PEOPLE, "nobody"):
            for project in (None, "WEB", "OPS"):
                assert seeded.next_task(who, project) == old_pick(seeded, who, project), (
                    round_,
                    who,
                    project,
                )
        # Move some tasks on, so the next round finds other blockers open or closed.
        todo = seeded.list_tasks(TaskFilter(statuses=("todo", "in_progress")), limit=200).tasks
        for task in rng.sample(todo, 15):
            seeded.update_task(task.id, _changes(rng), actor="seed", force=True)


def _changes(rng: random.Random):
    from dockyard_tasks.store import TaskChanges

    return TaskChanges(status=rng.choice(("done", "in_progress", "todo", "cancelled")))


def test_next_task_looks_past_ten_waiting_candidates_as_before(database_url: str):
    """All of the first candidates wait on an open blocker: the pick is found further down the index."""
    store = TaskStore(database_url)
    try:
        store.create_project("WEB", "Web", actor="seed")
        gate = store.create_task(TaskDraft("WEB", "gate", assignee="zed"), actor="seed").task.id
        waiting = [
            TaskDraft("WEB", f"waits {i}", priority="urgent", assignee="ann", blocked_by=(gate,))
            for i in range(14)
        ]
        store.create_tasks(waiting, actor="seed")
        free = store.create_task(
            TaskDraft("WEB", "free", priority="low", assignee="ann"), actor="seed"
        ).task.id
        picked = store.next_task("ann")
        assert picked == old_pick(store, "ann", None)
        assert picked.task is not None and picked.task.id == free and len(picked.skipped_blocked) == 10
    finally:
        store.close()


@pytest.mark.parametrize("sort", ["created", "priority"])
def test_the_text_filter_keeps_exactly_the_tasks_it_kept(seeded: TaskStore, sort: str):
    for text in QUERIES:
        expected = old_matches(seeded, text, by_priority=sort == "priority")
        # Small pages: the keyset cursor is read through the search index too.
        got = every_page(seeded, TaskFilter(text=text, sort=sort), limit=7)
        assert got == expected, text
    assert old_matches(seeded, "deploy") and not old_matches(seeded, "kubernetes")  # the queries test both


def test_the_search_index_follows_every_change(database_url: str, rng: random.Random):
    store = TaskStore(database_url)
    try:
        seed(store, 30, rng=rng, blockers=False)
        first = store.list_tasks(TaskFilter(), limit=1).tasks[0].id
        store.update_task(first, _retitled(), actor="a")
        renamed = store.list_tasks(TaskFilter(text="quokka")).tasks
        assert [t.title for t in renamed] == ["a quokka now"]
        store.delete_task(renamed[0].id, actor="a")
        assert store.list_tasks(TaskFilter(text="quokka")).tasks == []
        for text in QUERIES:
            assert every_page(store, TaskFilter(text=text), limit=50) == old_matches(store, text), text
    finally:
        store.close()


def _retitled():
    from dockyard_tasks.store import TaskChanges

    return TaskChanges(title="a quokka now", description="")


# -- through the protocol -------------------------------------------------------------------------------------


async def test_list_tasks_text_and_next_task_through_the_protocol(seeded: TaskStore, database_url: str, era):
    async with open_session(make_server(database_url, actor="ann"), era=era) as session:
        for text in ("deploy", "50%", "_", "\\", "école", "🚀", "ab", "a", "kubernetes"):
            ids: list[str] = []
            arguments: dict = {"text": text, "limit": 200}
            while True:
                page = (await session.call_ok("list_tasks", arguments)).data
                ids += [task["id"] for task in page["tasks"]]
                if not page.get("next_cursor"):
                    break
                arguments = {**arguments, "cursor": page["next_cursor"]}
            assert ids == old_matches(seeded, text), text
        for who in PEOPLE:
            for project in ("", "WEB"):
                got = (await session.call_ok("next_task", {"assignee": who, "project": project})).data
                assert NextTask.model_validate(got) == old_pick(seeded, who, project or None), (who, project)


# -- the cost does not grow with the tracker (SQLite) -------------------------------------------------------


def _steps(store: TaskStore, call) -> int:
    """SQLite virtual machine steps (in hundreds) the call runs, on fresh connections of the store's pool."""
    counted = [0]

    def count() -> int:
        counted[0] += 1
        return 0

    def on_connect(driver_connection, _record) -> None:
        driver_connection.set_progress_handler(count, 100)

    store.engine.dispose()
    event.listen(store.engine, "connect", on_connect)
    try:
        call()
        counted[0] = 0
        call()
        return counted[0]
    finally:
        event.remove(store.engine, "connect", on_connect)
        store.engine.dispose()


@pytest.fixture(scope="module")
def small_and_large(tmp_path_factory) -> Iterator[tuple[TaskStore, TaskStore]]:
    stores = []
    for count in (300, 3_000):
        store = TaskStore(f"sqlite:///{tmp_path_factory.mktemp('scale') / f'{count}.db'}")
        seed(store, count, rng=random.Random(count))
        stores.append(store)
    yield stores[0], stores[1]
    for store in stores:
        store.close()


@pytest.mark.parametrize(
    "name,call",
    [
        ("next_task", lambda store: store.next_task("ann")),
        ("next_task in a project", lambda store: store.next_task("bob", "OPS")),
        ("text matching nothing", lambda store: store.list_tasks(TaskFilter(text="kubernetes"))),
        ("text matching many", lambda store: store.list_tasks(TaskFilter(text="deploy"))),
    ],
)
def test_the_cost_does_not_grow_with_ten_times_the_tasks(small_and_large, name, call):
    small, large = small_and_large
    few, many = _steps(small, lambda: call(small)), _steps(large, lambda: call(large))
    # Measured: 5 → 5 (next_task), 2 → 2 (a text matching nothing). Before migration 0006: 12 → 42 and
    # 33 → 330 (every row read).
    assert many <= 1.5 * few + 3, f"{name}: {few} → {many} hundred steps"
