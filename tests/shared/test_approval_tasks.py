"""The approval card on a second server, over HTTP with signed-in actors: dockyard-tasks' delete_task waits
for the card; the approval belongs to the actor who was asked, and covers the task as the person saw it."""

from __future__ import annotations

import json

import pytest

from tests.harness import LEGACY, MODERN, http_server, open_session
from tests.shared.approval_sessions import views_session
from tests.tasks.helpers import tasks_launch

pytestmark = pytest.mark.slow  # spawns the server over HTTP

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# One server for the module (a spawn costs seconds); each test and era works on tasks of its own.
TASKS = {LEGACY: ("TASK-1", "TASK-2"), MODERN: ("TASK-3", "TASK-4")}


@pytest.fixture(scope="module")
def tracker(tmp_path_factory, log_dir):
    folder = tmp_path_factory.mktemp("approval-tasks")
    actors = folder / "actors.json"
    actors.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    launch = tasks_launch(f"sqlite:///{folder / 'tracker.db'}", "--demo", "--actors", str(actors))
    with http_server(launch, log_dir=log_dir) as server:
        yield server.url()


async def pending_delete(session, task_id: str) -> dict:
    outcome = await session.call("delete_task", {"task_id": task_id})
    assert outcome.is_error and "nothing has been done yet" in outcome.text, outcome.text
    return outcome.structured["approval"]


async def test_delete_task_waits_for_the_card_and_only_the_asked_actor_can_approve(tracker, era):
    task_id = TASKS[era][0]
    async with views_session(tracker, era=era, headers=bearer(ALICE)) as alice:
        approval = await pending_delete(alice, task_id)
        await alice.call_ok("get_task", {"task_id": task_id})  # not deleted yet
        async with views_session(tracker, era=era, headers=bearer(BOB)) as bob:
            foreign = await bob.call(
                "resolve_approval", {"approval_id": approval["id"], "decision": "approve"}
            )
        await alice.call_ok("get_task", {"task_id": task_id})
        done = await alice.call("resolve_approval", {"approval_id": approval["id"], "decision": "approve"})
        gone = await alice.call_error("get_task", {"task_id": task_id})
    assert approval["action"].startswith(f"Delete task {task_id} (")
    assert foreign.is_error and foreign.text.startswith("Error (not_found): No approval awaits")
    assert not done.is_error and done.structured["deleted"] == task_id, done.text
    assert "not_found" in gone


async def test_an_approval_does_not_cover_a_task_changed_since(tracker, era):
    task_id = TASKS[era][1]
    async with views_session(tracker, era=era, headers=bearer(ALICE)) as alice:
        approval = await pending_delete(alice, task_id)
        async with open_session(tracker, era=era, headers=bearer(BOB)) as bob:
            task = (await bob.call_ok("get_task", {"task_id": task_id})).data
            await bob.call_ok(
                "update_task",
                {"task_id": task_id, "title": "Something else now", "expected_version": task["version"]},
            )
        refused = await alice.call("resolve_approval", {"approval_id": approval["id"], "decision": "approve"})
        still = (await alice.call_ok("get_task", {"task_id": task_id})).data
    assert refused.is_error and "changed since the user approved it" in refused.text
    assert still["title"] == "Something else now"
