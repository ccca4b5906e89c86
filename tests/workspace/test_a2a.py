"""`dockyard a2a`: every server as an A2A agent, driven by the a2a-sdk client over real HTTP (loopback,
port 0). The servers are built through their entry points, as the command builds them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_message, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

from dockyard_shared.a2a.serve import Agent, serving
from dockyard_shared.cli import discover_servers
from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake

TOKEN = "a2a-test-token"


def built(name: str, *flags: str) -> Agent:
    entry = discover_servers()[name]
    return Agent(name, entry.summary, entry.build(entry.parser(with_runner=False).parse_args(list(flags))))


@asynccontextmanager
async def agents(*chosen: Agent, token: str | None = TOKEN, **options: Any) -> AsyncIterator[str]:
    async with serving(chosen, port=0, token=token, **options) as running:
        yield running.base_url


@asynccontextmanager
async def client_for(url: str, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        client = await create_client(url, client_config=ClientConfig(streaming=False, httpx_client=http))
        yield client


def request(data: Any = None, *, text: str | None = None, task_id: str | None = None) -> SendMessageRequest:
    parts = [new_data_part(data)] if data is not None else [new_text_part(text or "")]
    message = new_message(parts, task_id=task_id, role=Role.ROLE_USER)
    return SendMessageRequest(message=message)


async def send(client, sent: SendMessageRequest) -> Task | Message:
    (response,) = [item async for item in client.send_message(sent)]
    return response.task if response.HasField("task") else response.message


def artifact_data(task: Task) -> Any:
    (artifact,) = task.artifacts
    (data,) = get_data_parts(artifact.parts)
    return data


def status_text(task: Task) -> str:
    return "\n".join(get_text_parts(task.status.message.parts))


@pytest.fixture
def tasks_agent(tmp_path) -> Agent:
    return built(
        "tasks",
        "--database-url",
        f"sqlite:///{tmp_path / 'tracker.db'}",
        "--demo",
        "--toolsets",
        "default,manage",
    )


async def test_the_card_lists_every_tool_as_a_skill_with_its_schema_and_declares_the_bearer_scheme(
    tasks_agent,
):
    # The card is public: discovery needs no token.
    async with agents(tasks_agent) as base, httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"{base}/tasks").get_agent_card()
    skills = {skill.id: skill for skill in card.skills}
    assert card.name == "dockyard-tasks"
    assert {"list_tasks", "next_task", "delete_task"} <= set(skills)
    assert '"tool": "delete_task"' in skills["delete_task"].examples[0]
    assert '"task_id"' in skills["delete_task"].description  # the input schema travels with the skill
    assert card.supported_interfaces[0].url == f"{base}/tasks/"
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"


async def test_a_call_without_the_token_is_refused(tasks_agent):
    async with agents(tasks_agent) as base, httpx.AsyncClient() as http:
        answer = await http.post(f"{base}/tasks/", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage"})
        wrong = await http.post(f"{base}/tasks/", json={}, headers={"Authorization": "Bearer not-the-token"})
    assert answer.status_code == 401 and wrong.status_code == 401
    assert "Authorization: Bearer" in answer.json()["error_description"]


async def test_tasks_list_tasks_runs_and_returns_data_and_text(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        task = await send(
            client, request({"tool": "list_tasks", "arguments": {"project": "TASK", "limit": 2}})
        )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, status_text(task)
    data = artifact_data(task)
    assert len(data["tasks"]) == 2  # the integer limit arrived as an integer and was applied
    assert all(item["id"].startswith("TASK-") for item in data["tasks"])


async def test_a_tool_error_is_a_failed_task_with_the_servers_model_facing_text(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        task = await send(client, request({"tool": "get_task", "arguments": {"task_id": "NOPE-404"}}))
        unknown = await send(client, request({"tool": "list_taks", "arguments": {}}))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "NOPE-404" in status_text(task) and "Traceback" not in status_text(task)
    assert unknown.status.state == TaskState.TASK_STATE_FAILED
    assert "Did you mean 'list_tasks'" in status_text(unknown)


async def test_plain_text_is_answered_with_the_skills_and_the_shape_expected(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        answer = await send(client, request(text="show me alice's todo tasks"))
    assert isinstance(answer, Message)
    text = "\n".join(get_text_parts(answer.parts))
    assert "free text is not interpreted" in text
    assert '{"tool": "list_tasks"' in text


async def test_delete_task_asks_for_input_and_the_next_message_confirms_it(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        asked = await send(client, request({"tool": "delete_task", "arguments": {"task_id": "TASK-1"}}))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, status_text(asked)
        assert "Delete task TASK-1" in status_text(asked)
        still = await send(client, request({"tool": "get_task", "arguments": {"task_id": "TASK-1"}}))
        assert still.status.state == TaskState.TASK_STATE_COMPLETED  # nothing deleted before the answer
        done = await send(client, request({"confirm": True}, task_id=asked.id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED, status_text(done)
        assert artifact_data(done)["deleted"] == "TASK-1"
        gone = await send(client, request({"tool": "get_task", "arguments": {"task_id": "TASK-1"}}))
    assert gone.status.state == TaskState.TASK_STATE_FAILED


async def test_a_declined_confirmation_changes_nothing(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        asked = await send(client, request({"tool": "delete_task", "arguments": {"task_id": "TASK-2"}}))
        again = await send(client, request({"tool": "list_tasks", "arguments": {}}, task_id=asked.id))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED  # not an answer: asked again
        assert "not understood" in status_text(again)
        answered = await send(client, request(text="no", task_id=asked.id))
        kept = await send(client, request({"tool": "get_task", "arguments": {"task_id": "TASK-2"}}))
    assert answered.status.state == TaskState.TASK_STATE_FAILED, answered
    assert "declined deleting TASK-2" in status_text(answered)
    assert kept.status.state == TaskState.TASK_STATE_COMPLETED


async def test_cancelling_a_task_waiting_for_confirmation_stops_its_call(tasks_agent):
    async with agents(tasks_agent) as base, client_for(f"{base}/tasks") as client:
        asked = await send(client, request({"tool": "delete_task", "arguments": {"task_id": "TASK-3"}}))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        cancelled = await client.cancel_task(CancelTaskRequest(id=asked.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        after = await client.get_task(GetTaskRequest(id=asked.id))
        assert after.status.state == TaskState.TASK_STATE_CANCELED
        kept = await send(client, request({"tool": "get_task", "arguments": {"task_id": "TASK-3"}}))
    assert kept.status.state == TaskState.TASK_STATE_COMPLETED  # the cancelled delete never ran


@pytest.mark.slow  # SQLite worker processes
async def test_sqlite_demo_query_runs(tmp_path):
    sqlite = built("sqlite", "--demo")
    async with agents(sqlite) as base, client_for(f"{base}/sqlite") as client:
        tables = await send(client, request({"tool": "list_tables", "arguments": {}}))
        rows = await send(client, request({"tool": "query", "arguments": {"sql": "SELECT 6 * 7 AS n"}}))
    assert tables.status.state == TaskState.TASK_STATE_COMPLETED, status_text(tables)
    assert artifact_data(tables)["tables"]
    assert rows.status.state == TaskState.TASK_STATE_COMPLETED, status_text(rows)
    assert artifact_data(rows)["rows"] == [[42.0]] or artifact_data(rows)["rows"] == [{"n": 42.0}]


@pytest.mark.slow  # git processes
async def test_git_log_on_a_temporary_repository(tmp_path):
    from tests.git.helpers import make_repo

    repo = make_repo(tmp_path / "project")
    git = built("git", "--root", str(repo))
    async with agents(git) as base, client_for(f"{base}/git") as client:
        log = await send(client, request({"tool": "git_log", "arguments": {"max_count": 2}}))
        outside = await send(client, request({"tool": "git_status", "arguments": {"repo": "/etc"}}))
    assert log.status.state == TaskState.TASK_STATE_COMPLETED, status_text(log)
    assert "change number 2" in str(artifact_data(log))
    assert outside.status.state == TaskState.TASK_STATE_FAILED  # confinement to the roots still applies


async def test_name_origin_against_the_fake_and_a_running_call_is_cancelled():
    with RunningFake(FakeNationalize()) as running:
        origin = built("name-origin", "--api-url", running.url, "--no-cache", "--tools", "predict_origin")
        async with agents(origin) as base, client_for(f"{base}/name-origin") as client:
            done = await send(client, request({"tool": "predict_origin", "arguments": {"name": "Nakamura"}}))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED, status_text(done)
            assert artifact_data(done)["name"] == "nakamura"

            running.fake.latency = 60.0  # the next answer takes a minute: the call is still running
            slow = request({"tool": "predict_origin", "arguments": {"name": "Okafor"}})
            slow.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
            started = await send(client, slow)
            assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
            cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            after = await client.get_task(GetTaskRequest(id=started.id))
            assert after.status.state == TaskState.TASK_STATE_CANCELED and not after.artifacts


def dockyard(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "dockyard"), *args]


@pytest.mark.slow  # spawns the command
def test_the_command_serves_the_chosen_server_and_says_where(tmp_path):
    import re

    command = dockyard(
        "a2a", "tasks", "--database-url", f"sqlite:///{tmp_path / 't.db'}", "--demo", "--port", "0"
    )
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DOCKYARD_AUTH_TOKEN": TOKEN},
    )  # fmt: skip
    try:
        assert process.stderr is not None
        for line in process.stderr:  # ends when the process does
            found = re.search(r"card at (http://\S+)/\.well-known/agent-card\.json", line)
            if found:
                break
        else:
            pytest.fail(f"no card URL logged; exit {process.wait()}")
        base = found.group(1)
        with httpx.Client() as http:
            card = http.get(f"{base}/.well-known/agent-card.json").json()
            refused = http.post(f"{base}/", json={})
        assert card["name"] == "dockyard-tasks" and refused.status_code == 401
        assert "bearer token required" in line
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["a2a", "nosuch"], "no server named 'nosuch'"),
        (["a2a", "tasks", "--host", "0.0.0.0"], "Refusing to serve on 0.0.0.0"),
        (["a2a", "tasks", "sqlite", "--no-such-flag"], "no chosen server takes '--no-such-flag'"),
    ],
)
def test_the_command_refuses_what_it_cannot_serve(args, says, monkeypatch, capsys):
    from dockyard_shared.cli import main

    monkeypatch.delenv("DOCKYARD_AUTH_TOKEN", raising=False)
    assert main(args) == 2
    assert says in capsys.readouterr().err


async def test_an_unanswered_confirmation_lapses_and_nothing_is_deleted(tasks_agent):
    import asyncio

    async with agents(tasks_agent, answer_timeout=0.5) as base, client_for(f"{base}/tasks") as client:
        asked = await send(client, request({"tool": "delete_task", "arguments": {"task_id": "TASK-4"}}))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        lapsed = asked
        while lapsed.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:  # until the answer time runs out
            await asyncio.sleep(0.05)
            lapsed = await client.get_task(GetTaskRequest(id=asked.id))
        kept = await send(client, request({"tool": "get_task", "arguments": {"task_id": "TASK-4"}}))
    assert lapsed.status.state == TaskState.TASK_STATE_FAILED, lapsed
    assert "nothing was changed" in status_text(lapsed)
    assert kept.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_readme_client_example_runs_as_written(tasks_agent):
    import asyncio

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = readme.split("<!-- a2a-client: run by tests/workspace/test_a2a.py -->\n```python\n", 1)[1]
    example = example.split("```", 1)[0]
    async with agents(tasks_agent) as base:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", example.replace("http://127.0.0.1:8766", base),
            env={**os.environ, "DOCKYARD_AUTH_TOKEN": TOKEN},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0].startswith("TASK_STATE_COMPLETED TASK-")
    assert lines[1].startswith("TASK_STATE_INPUT_REQUIRED Delete task TASK-1")
    assert lines[-1] == "TASK_STATE_COMPLETED TASK-1"  # after the question (two lines)


async def test_progress_streams_as_working_updates_before_the_result():
    from a2a.types import TaskStatusUpdateEvent

    with RunningFake(FakeNationalize()) as running:
        origin = built("name-origin", "--api-url", running.url, "--no-cache")
        async with (
            agents(origin) as base,
            httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        ):
            client = await create_client(f"{base}/name-origin", client_config=ClientConfig(httpx_client=http))
            sent = request({"tool": "batch_predict", "arguments": {"names": ["Nakamura", "Okafor", "Silva"]}})
            events = [response async for response in client.send_message(sent)]
    updates: list[TaskStatusUpdateEvent] = [e.status_update for e in events if e.HasField("status_update")]
    progress = [
        text for u in updates if u.status.state == TaskState.TASK_STATE_WORKING
        for text in get_text_parts(u.status.message.parts) if text.startswith("batch_predict:")
    ]  # fmt: skip
    assert progress, [str(u) for u in updates]
    assert updates[-1].status.state == TaskState.TASK_STATE_COMPLETED
    assert any(e.HasField("artifact_update") for e in events)


async def test_a_switched_off_tool_is_no_skill_and_its_call_says_how_to_switch_it_on(tmp_path):
    read_only = built("tasks", "--database-url", f"sqlite:///{tmp_path / 'ro.db'}", "--demo", "--read-only")
    origin = built("name-origin", "--offline")
    async with agents(read_only, origin) as base, httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"{base}/tasks").get_agent_card()
        other = await A2ACardResolver(http, f"{base}/name-origin").get_agent_card()
        async with client_for(f"{base}/tasks") as client:
            refused = await send(client, request({"tool": "create_task", "arguments": {"title": "x"}}))
    assert "create_task" not in {skill.id for skill in card.skills}
    assert other.name == "dockyard-name-origin"  # several agents, one port
    assert refused.status.state == TaskState.TASK_STATE_FAILED
    assert "switched off" in status_text(refused) and "--read-only" in status_text(refused)


async def test_a_browser_page_cannot_call_a_tokenless_agent(tasks_agent):
    # A page may POST text/plain cross-origin without a preflight; with no token, only Origin tells.
    body = '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}'
    async with agents(tasks_agent, token=None) as base, httpx.AsyncClient() as http:
        from_page = await http.post(
            f"{base}/tasks/",
            content=body,
            headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
        )
        from_agent = await http.post(
            f"{base}/tasks/", content=body, headers={"Content-Type": "application/json"}
        )
    assert from_page.status_code == 403 and "--allowed-origin" in from_page.json()["error_description"]
    assert from_agent.status_code == 200  # a JSON-RPC answer (an error about the empty params), not a refusal
