"""The sample project ``--demo`` adds: TASK (ids TASK-1, TASK-2…; the seed server's TASK-001 reads as
TASK-1), with a little of everything."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from .drafts import TaskDraft

if TYPE_CHECKING:
    from .store import TaskStore

__all__ = ["DEMO_KEY", "seed_demo"]

DEMO_KEY = "TASK"


def seed_demo(store: TaskStore) -> bool:
    """Add the sample project unless it is there already; True when it was added."""
    if DEMO_KEY in store.project_keys(DEMO_KEY):
        return False
    today = store.clock().date()

    def due(days: int) -> str:
        return (today + timedelta(days=days)).isoformat()

    store.create_project(
        DEMO_KEY, "Website relaunch", "A sample project (dockyard-tasks --demo).", actor="demo"
    )
    drafts = [
        TaskDraft(
            DEMO_KEY,
            "Relaunch the website",
            "The parent of the relaunch work.",
            "in_progress",
            "high",
            "alice",
        ),
        TaskDraft(
            DEMO_KEY, "Write the new landing page copy", "", "done", "high", "bob", ["content"], due(-5), "@0"
        ),
        TaskDraft(
            DEMO_KEY, "Design the landing page", "", "in_progress", "high", "carol", ["design"], due(2), "@0"
        ),
        TaskDraft(
            DEMO_KEY,
            "Build the landing page",
            "",
            "todo",
            "high",
            "alice",
            ["frontend"],
            due(6),
            "@0",
            ["@2"],
        ),
        TaskDraft(
            DEMO_KEY,
            "Set up analytics",
            "Page views and sign-ups.",
            "todo",
            "medium",
            "bob",
            ["analytics"],
            due(-1),
        ),
        TaskDraft(DEMO_KEY, "Migrate the blog", "", "blocked", "medium", "alice", ["content"], due(10), "@0"),
        TaskDraft(DEMO_KEY, "Fix broken links on /pricing", "", "todo", "urgent", "carol", ["bug"], due(1)),
        TaskDraft(
            DEMO_KEY, "Load-test the new site", "", "todo", "low", None, ["ops"], due(14), "@0", ["@3"]
        ),
        TaskDraft(DEMO_KEY, "Old newsletter template", "", "cancelled", "low", "bob"),
    ]
    store.create_tasks(drafts, actor="demo")
    store.add_comment("TASK-3", "First mock-ups are in the shared folder.", actor="carol")
    store.add_comment("TASK-6", "Waiting for the blog export from the old host.", actor="alice")
    return True
