"""delete_task raced against update_task on PostgreSQL, through two server processes: every task version
is written by one change only (a delete bumps its subtasks' and waiting tasks' versions under their locks)."""

from __future__ import annotations

from collections import defaultdict

import anyio

from tests.harness import open_session
from tests.tasks.helpers import tasks_launch

ROUNDS = 20
SUBTASKS = 3


async def _all_changes(session) -> list[dict]:
    changes, cursor = [], None
    while True:
        page = (
            await session.call_ok("changes_since", {"limit": 200, **({"cursor": cursor} if cursor else {})})
        ).data
        changes += page["changes"]
        cursor = page["next_cursor"]
        if not page["has_more"]:
            return changes


async def test_a_delete_and_updates_of_the_tasks_it_changes_never_share_a_version(postgres_url, era):
    flags = ("--trust-model-confirmation",)
    async with (
        open_session(tasks_launch(postgres_url, "--actor", "deleter", *flags), era=era) as deleter,
        open_session(tasks_launch(postgres_url, "--actor", "editor", *flags), era=era) as editor,
    ):
        await deleter.call_ok("create_project", {"key": "RACE", "name": "Race"})
        for round_ in range(ROUNDS):
            batch = [{"project": "RACE", "title": f"doomed {round_}"}]
            batch += [{"project": "RACE", "title": f"sub {i}", "parent": "@0"} for i in range(SUBTASKS)]
            batch += [{"project": "RACE", "title": "waits", "blocked_by": ["@0"]}]
            ids = [
                item["id"]
                for item in (await deleter.call_ok("create_tasks", {"tasks": batch})).data["created"]
            ]
            doomed, others = ids[0], ids[1:]

            async def delete(task_id: str) -> None:
                await deleter.call_ok("delete_task", {"task_id": task_id, "confirm": True})

            async def edit(task_id: str) -> None:
                for _attempt in range(5):
                    outcome = await editor.call(
                        "update_task", {"task_id": task_id, "title": f"edited {task_id}"}
                    )
                    if not outcome.is_error:
                        return
                    # A retryable conflict (a deadlock PostgreSQL broke) is allowed; a lost update is not.
                    assert "Retry: may succeed" in outcome.text, outcome.text
                raise AssertionError(f"{task_id}: still conflicting after 5 attempts")

            async with anyio.create_task_group() as group:
                group.start_soon(delete, doomed)
                for task_id in others:
                    group.start_soon(edit, task_id)
        changes = await _all_changes(editor)
    revisions: dict[tuple[str, int], set[int]] = defaultdict(set)
    for change in changes:
        if change.get("task") and change.get("version") is not None and change["action"] != "deleted":
            revisions[change["task"], change["version"]].add(change["revision"])
    shared = {key: found for key, found in revisions.items() if len(found) > 1}
    assert not shared, f"versions written by two changes: {sorted(shared.items())[:10]}"
    # Each task outside the deleted ones was changed by the delete and by the edit: version 3.
    assert sum(1 for (_, version) in revisions if version == 3) == ROUNDS * (SUBTASKS + 1)
