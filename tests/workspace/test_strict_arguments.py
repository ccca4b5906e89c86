"""A model under OpenAI's strict mode sends every argument: null for each it leaves out, the default for
each that has one. Through the protocol, on every server with nullable arguments, that call answers
exactly as the call that leaves them out (both eras). name-origin has none: its one optional argument,
``offset``, has a real default."""

from __future__ import annotations

import pytest

from dockyard_shared.export import strict_schema
from tests.git.helpers import make_repo
from tests.harness import open_session
from tests.workspace.test_context_budget import SERVERS

# Read-only calls with their required arguments; every other argument is left out, then sent as strict
# mode sends it.
CALLS = {
    "git": [
        ("git_status", {}),
        ("git_log", {}),
        ("git_diff", {}),
        ("git_show", {}),  # the case: a commit without a file (path null, not "")
        ("git_blame", {"path": "README.md"}),
        ("git_branches", {}),
        ("git_tags", {}),
        ("git_grep", {"pattern": "return"}),
    ],
    "sqlite": [
        ("list_tables", {}),
        ("describe_table", {"table": "customers"}),
        ("query", {"sql": "SELECT name FROM customers ORDER BY id LIMIT 3"}),
        ("explain_query", {"sql": "SELECT * FROM customers WHERE id = 1"}),
    ],
    "tasks": [
        ("list_tasks", {}),
        ("changes_since", {}),
    ],
}


def server_flags(name: str, tmp_path) -> list[str]:
    if name == "git":  # blame, tags and grep are off by default (search, tags toolsets)
        return ["--root", str(make_repo(tmp_path / "repo")), "--tools", "git_blame,git_grep,git_tags"]
    if name == "tasks":
        return ["--demo", "--toolsets", "all", "--database-url", f"sqlite:///{tmp_path / 'tasks.db'}"]
    return []


def as_strict_mode_sends(schema: dict, arguments: dict) -> dict:
    """``arguments`` with every other argument present: its default if it has one, else null."""
    strict = strict_schema(schema)
    assert strict["required"] == list(schema["properties"])
    return {
        arg: arguments[arg] if arg in arguments else schema["properties"][arg].get("default")
        for arg in strict["properties"]
    }


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_strict_mode_arguments_answer_as_leaving_them_out(name, era, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    entry = SERVERS[name]
    server = entry.build(entry.parser(with_runner=False).parse_args(server_flags(name, tmp_path)))
    async with open_session(server, era=era) as session:
        schemas = {tool.name: tool.input_schema for tool in await session.list_tools()}
        for tool, arguments in CALLS[name]:
            left_out = await session.call(tool, arguments)
            sent = as_strict_mode_sends(schemas[tool], arguments)
            assert any(value is None for value in sent.values()), f"{tool}: no nullable argument to check"
            strict = await session.call(tool, sent)
            assert not left_out.is_error, f"{tool}: {left_out.text}"
            assert (strict.is_error, strict.data) == (left_out.is_error, left_out.data), tool


async def test_a_strict_mode_update_changes_only_what_it_gives(era, monkeypatch, tmp_path):
    """update_task's nulls mean "keep": strict mode sends title, due, labels… as null with a new priority."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    entry = SERVERS["tasks"]
    server = entry.build(entry.parser(with_runner=False).parse_args(server_flags("tasks", tmp_path)))
    async with open_session(server, era=era) as session:
        schema = {tool.name: tool.input_schema for tool in await session.list_tools()}["update_task"]
        before = (await session.call_ok("get_task", {"task_id": "TASK-1"})).data
        new_priority = "low" if before["priority"] != "low" else "high"
        sent = as_strict_mode_sends(schema, {"task_id": "TASK-1", "priority": new_priority})
        assert sent["title"] is None and sent["labels"] is None and sent["expected_version"] is None
        await session.call_ok("update_task", sent)
        after = (await session.call_ok("get_task", {"task_id": "TASK-1"})).data
    changed = {key for key in before if before[key] != after.get(key)}
    assert (
        changed <= {"priority", "version", "updated_at", "history", "history_total"} and "priority" in changed
    )
