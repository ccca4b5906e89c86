"""Workstreams, moves and checklists (migration 0007), on SQLite and PostgreSQL, and the upgrade to them."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import text

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound
from dockyard_tasks.drafts import IssueDraft
from dockyard_tasks.store import TaskChanges, TaskDraft, TaskFilter, TaskStore, moves
from dockyard_tasks.store.engine import make_engine
from dockyard_tasks.store.migrate import migrate_to


def ids(page) -> list[str]:
    return [t.id for t in page.tasks]


def build(store: TaskStore) -> None:
    store.create_project("WEB", "Website", actor="ann")
    store.create_project("API", "Api", actor="ann")
    store.create_tasks([TaskDraft(project="API", title="existing")], actor="ann")  # API-1
    store.create_tasks(
        [
            TaskDraft(project="WEB", title="epic", assignee="bob", workstream="Backend"),  # WEB-1
            TaskDraft(project="WEB", title="child", parent="@0", assignee="bob"),  # WEB-2
            TaskDraft(project="WEB", title="grandchild", parent="@1", blocked_by=["@3"]),  # WEB-3
            TaskDraft(project="WEB", title="stays", assignee="bob", priority="high"),  # WEB-4
            TaskDraft(project="WEB", title="waits", blocked_by=["@2", "API-1"]),  # WEB-5
        ],
        actor="ann",
    )


def test_workstreams_filter_list_tasks_and_next_task(store):
    build(store)
    assert store.get_task("WEB-1").workstream == "backend"  # lowercased, like a label
    assert ids(store.list_tasks(TaskFilter(workstream="backend"))) == ["WEB-1"]
    assert store.next_task("bob", workstream="backend").task.id == "WEB-1"
    assert store.next_task("bob").task.id == "WEB-4"  # high priority, no workstream filter
    none = store.next_task("bob", workstream="docs")
    assert none.task is None and "on workstream docs" in none.reason
    with pytest.raises(InvalidArgument, match="Workstream 'a,b' is not allowed"):
        store.next_task("bob", workstream="a,b")
    changed = store.update_task("WEB-4", TaskChanges(workstream="docs"), actor="ann")
    assert changed.changed == ["workstream"] and changed.task.workstream == "docs"
    cleared = store.update_task("WEB-4", TaskChanges(workstream=""), actor="ann")
    assert cleared.task.workstream is None


def test_a_move_to_another_project_renumbers_the_subtree_and_keeps_every_link(store):
    build(store)
    store.add_comment("WEB-2", "keep me", actor="ann")
    store.update_checklist("WEB-2", "criteria", actor="ann", items=["works"])
    result = store.move_tasks(["web-1", "WEB-2"], actor="cy", project="API", workstream="core")
    assert result.moved == [
        {"from": "WEB-1", "to": "API-2"},
        {"from": "WEB-2", "to": "API-3"},
        {"from": "WEB-3", "to": "API-4"},
    ]
    with pytest.raises(NotFound, match="Task WEB-1 was moved: it is API-2 now"):
        store.get_task("WEB-1")
    child = store.get_task("API-3")
    assert child.parent.id == "API-2" and [s.id for s in child.subtasks] == ["API-4"]
    assert child.workstream == "core" and child.comments[0].body == "keep me"
    assert [c.text for c in child.criteria] == ["works"]
    moved = [h for h in child.history if h.action == "moved"]
    assert [(h.actor, h.field, h.old, h.new) for h in moved] == [("cy", "id", "WEB-2", "API-3")]
    assert child.history[0].action == "created"  # the history from before the move follows
    # Dependencies across the new boundary stay: WEB-4 (left behind) still blocks API-4, which blocks WEB-5.
    assert store.get_task("API-4").open_blockers == ["WEB-4"]
    assert store.get_task("WEB-5").open_blockers == ["API-1", "API-4"]
    assert store.project("API").tasks == 4 and store.project("WEB").tasks == 2  # counts follow (triggers)
    created = store.create_tasks([TaskDraft(project="API", title="next")], actor="ann")
    assert created.created[0].id == "API-5"  # the target's numbers moved on
    feed = [c for c in store.changes_since(None).changes if c.action == "moved"]
    assert {(c.project, c.old, c.new) for c in feed} == {
        ("API", "WEB-1", "API-2"),
        ("API", "WEB-2", "API-3"),
        ("API", "WEB-3", "API-4"),
    }


def test_subscribers_hear_a_moved_task_leave_one_project_and_arrive_in_the_other(store):
    build(store)
    events = []
    store.subscribe(events.append)
    store.move_tasks(["WEB-3"], actor="ann", project="API")
    (event,) = events
    assert set(event.tasks) == {"WEB-3", "API-2"} and set(event.projects) == {"WEB", "API"}
    assert event.deleted == ("WEB-3",) and event.created == ("API-2",) and event.resources_changed


def test_a_move_between_workstreams_keeps_ids_and_a_repeat_changes_nothing(store):
    build(store)
    first = store.move_tasks(["WEB-2"], actor="ann", workstream="ui")
    assert first.moved == [{"from": "WEB-2", "to": "WEB-2"}, {"from": "WEB-3", "to": "WEB-3"}]
    assert store.get_task("WEB-3").workstream == "ui" and store.get_task("WEB-3").version == 2
    again = store.move_tasks(["WEB-2", "WEB-3", "WEB-2"], actor="ann", workstream="UI")
    assert again.count == 0 and "already there" in again.note
    same = store.move_tasks(["WEB-4"], actor="ann", project="WEB")
    assert same.count == 0


def test_hostile_moves_are_refused_whole(store, monkeypatch):
    build(store)
    with pytest.raises(NotFound, match="WEB-99 does not exist"):
        store.move_tasks(["WEB-1", "WEB-99"], actor="ann", project="API")
    with pytest.raises(NotFound, match="Project NOPE does not exist"):
        store.move_tasks(["WEB-1"], actor="ann", project="NOPE")
    with pytest.raises(InvalidArgument, match="task id"):
        store.move_tasks(["'; DROP TABLE tasks; --"], actor="ann", project="API")
    with pytest.raises(InvalidArgument, match="give project, workstream or both"):
        store.move_tasks(["WEB-1"], actor="ann")
    with pytest.raises(InvalidArgument, match="at most 50"):
        store.move_tasks([f"WEB-{n}" for n in range(1, 52)], actor="ann", project="API")
    monkeypatch.setattr(moves, "MAX_MOVED", 2)
    with pytest.raises(LimitExceeded, match="more than 2 tasks"):
        store.move_tasks(["WEB-1"], actor="ann", project="API")
    assert store.get_task("WEB-1").version == 1 and store.project("API").tasks == 1  # nothing moved
    # A parent loop cannot be made by a move: the tree and the graph are kept as they are.
    with pytest.raises(Conflict, match="loop"):
        store.update_task("WEB-1", TaskChanges(parent="WEB-3"), actor="ann")


def test_checklists_gate_done_and_record_who_ticked_when(store):
    build(store)
    set_ = store.update_checklist("WEB-4", "criteria", actor="ann", items=["tests pass", " docs  updated "])
    assert [(i.n, i.text, i.done) for i in set_.items] == [
        (1, "tests pass", False),
        (2, "docs updated", False),
    ]
    assert set_.unchecked == 2 and set_.version == 2
    store.update_checklist("WEB-4", "plan", actor="ann", items=["write tests", "write code"])
    pick = store.next_task("bob")
    assert pick.task.id == "WEB-4" and pick.unchecked_criteria == ["tests pass", "docs updated"]
    assert pick.next_step == "write tests" and "unchecked criteria" in pick.reason
    with pytest.raises(Conflict, match=r"unchecked acceptance criteria: #1 'tests pass'; #2 'docs updated'"):
        store.set_status("WEB-4", "done", actor="bob")
    ticked = store.update_checklist("WEB-4", "criteria", actor="bob", check=[1])
    assert ticked.items[0].done_by == "bob" and ticked.items[0].done_at and ticked.unchecked == 1
    # Replacing the list keeps the tick of an unchanged item, drops it from a reworded one.
    again = store.update_checklist("WEB-4", "criteria", actor="ann", items=["docs updated", "tests pass"])
    assert [(i.text, i.done, i.done_by) for i in again.items] == [
        ("docs updated", False, None),
        ("tests pass", True, "bob"),
    ]
    same = store.update_checklist("WEB-4", "criteria", actor="ann", check=[2])
    assert not same.changed and same.version == again.version
    store.update_checklist("WEB-4", "criteria", actor="bob", check=[1])
    assert store.set_status("WEB-4", "done", actor="bob").task.status == "done"
    detail = store.get_task("WEB-4")
    assert [c.done for c in detail.criteria] == [True, True] and len(detail.plan) == 2
    assert any(h.field == "criteria" and h.new and "[x] tests pass" in h.new for h in detail.history)
    # force closes despite unchecked criteria (stated by the caller)
    store.update_checklist("WEB-1", "criteria", actor="ann", items=["x"])
    assert store.set_status("WEB-1", "done", actor="ann", force=True).task.status == "done"


def test_hostile_checklists_are_refused(store):
    build(store)
    with pytest.raises(InvalidArgument, match="at most 50"):
        store.update_checklist("WEB-1", "criteria", actor="ann", items=["x"] * 100_000)
    with pytest.raises(InvalidArgument, match="at most 300"):
        store.update_checklist("WEB-1", "plan", actor="ann", items=["y" * 301])
    with pytest.raises(InvalidArgument, match="item 2 is empty"):
        store.update_checklist("WEB-1", "plan", actor="ann", items=["a", "  "])
    with pytest.raises(InvalidArgument, match="its criteria list is empty"):
        store.update_checklist("WEB-1", "criteria", actor="ann", check=[1])
    store.update_checklist("WEB-1", "criteria", actor="ann", items=["a"])
    with pytest.raises(InvalidArgument, match="numbered 1–1"):
        store.update_checklist("WEB-1", "criteria", actor="ann", check=[0])
    with pytest.raises(InvalidArgument, match="both in check and uncheck"):
        store.update_checklist("WEB-1", "criteria", actor="ann", check=[1], uncheck=[1])
    with pytest.raises(InvalidArgument, match="none of criteria, plan"):
        store.update_checklist("WEB-1", "notes", actor="ann", items=["a"])
    with pytest.raises(NotFound):
        store.update_checklist("WEB-77", "plan", actor="ann", items=["a"])
    assert store.get_task("WEB-1").version == 2  # only the one valid call changed it


def whole_export(store: TaskStore, key: str) -> dict:
    page = store.export_project(key)
    document = page.model_dump(exclude={"next_cursor", "note"})
    while page.next_cursor:
        page = store.export_project(key, page.next_cursor)
        document["tasks"] += page.model_dump()["tasks"]
    return document


def test_the_new_fields_round_trip_through_export_and_import(database_url, tmp_path):
    source = TaskStore(database_url)
    build(source)
    source.update_checklist("WEB-2", "criteria", actor="ann", items=["a", "b"], check=[2])
    source.update_checklist("WEB-2", "plan", actor="ann", items=["step"])
    issue = IssueDraft("https://github.com/acme/widgets/issues/7", 7, "From GitHub", "body", ("bug",), False)
    source.upsert_issues("WEB", [issue], actor="ann")  # WEB-6, linked back
    exported = whole_export(source, "WEB")
    by_id = {t["id"]: t for t in exported["tasks"]}
    assert by_id["WEB-1"]["workstream"] == "backend" and by_id["WEB-6"]["source_url"] == issue.url
    assert [(c["text"], c["done_by"]) for c in by_id["WEB-2"]["criteria"]] == [("a", None), ("b", "ann")]
    target = TaskStore(f"sqlite:///{tmp_path / 'other.db'}")
    target.create_project("API", "Api", actor="zed")
    target.create_tasks([TaskDraft(project="API", title="existing")], actor="zed")
    target.import_project(json.loads(json.dumps(exported)), actor="importer")
    assert whole_export(target, "WEB") == exported
    # The link back stays unique: the same issue imported again into the copy updates, never duplicates.
    ((_, task, action),) = target.upsert_issues("API", [issue], actor="x")
    assert (task, action) == ("WEB-6", "unchanged")
    # A copy inside one database would make one issue two tasks: refused, naming the holder.
    with pytest.raises(Conflict, match="already the source of WEB-6"):
        source.import_project(exported, actor="ann", key="COPY")
    twice = json.loads(json.dumps(exported))
    twice["tasks"][0]["source_url"] = issue.url
    twice["tasks"][5]["source_url"] = issue.url
    third = TaskStore(f"sqlite:///{tmp_path / 'third.db'}")
    with pytest.raises(InvalidArgument, match=r"tasks\[5\].source_url is also tasks\[0\].source_url"):
        third.import_project(twice, actor="ann", key="TWO")
    third.close()
    # An export from before 0007 (none of the new keys) still imports.
    for task in exported["tasks"]:
        for key in ("workstream", "source_url", "criteria", "plan"):
            task.pop(key, None)
    source.import_project(exported, actor="ann", key="OLD")
    assert source.get_task("OLD-2").criteria == [] and source.get_task("OLD-1").workstream is None
    source.close()
    target.close()


def test_a_tracker_at_0006_upgrades_keeping_its_tasks(database_url):
    engine = make_engine(database_url)
    migrate_to(engine, "0006")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO projects (id, key, name, description, next_number, created_at, created_by) "
                "VALUES (1, 'OLD', 'Old', '', 2, '2026-01-02 03:04:05', 'ann')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO tasks (id, project_id, number, title, description, status, priority, "
                "assignee, created_at, updated_at, created_by, version) VALUES (1, 1, 1, 'old', '', 'todo', 2, "
                "'bob', '2026-01-02 03:04:05', '2026-01-02 03:04:05', 'ann', 1)"
            )
        )
    engine.dispose()
    store = TaskStore(database_url)  # start-up upgrades to 0007
    try:
        old = store.get_task("OLD-1")
        assert (old.title, old.workstream, old.criteria, old.source_url) == ("old", None, [], None)
        store.update_checklist("OLD-1", "criteria", actor="ann", items=["a"])
        store.move_tasks(["OLD-1"], actor="ann", workstream="w")
        assert store.next_task("bob", workstream="w").unchecked_criteria == ["a"]
    finally:
        store.close()


def test_concurrent_moves_into_one_project_take_distinct_numbers(database_url):
    stores = [TaskStore(database_url) for _ in range(4)]
    stores[0].create_project("WEB", "Website", actor="ann")
    stores[0].create_project("API", "Api", actor="ann")
    stores[0].create_tasks([TaskDraft(project="WEB", title=f"t{n}") for n in range(8)], actor="ann")
    results, errors = [], []

    def move(store: TaskStore, ids: list[str]) -> None:
        try:
            results.append(store.move_tasks(ids, actor="ann", project="API"))
        except Exception as error:  # a retryable conflict is an answer too, but none is expected here
            errors.append(error)

    threads = [
        threading.Thread(target=move, args=(s, [f"WEB-{2 * i + 1}", f"WEB-{2 * i + 2}"]))
        for i, s in enumerate(stores)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    landed = sorted(int(m["to"].split("-")[1]) for r in results for m in r.moved)
    assert landed == list(range(1, 9))
    assert stores[0].project("API").tasks == 8 and stores[0].project("WEB").tasks == 0
    for store in stores:
        store.close()
