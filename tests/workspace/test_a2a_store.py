"""`dockyard a2a` keeps a server's A2A tasks in the server's own PostgreSQL database: two replicas of the
command on one database answer for each other's tasks (tasks/get through the a2a-sdk client, over HTTP)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts, new_data_part, new_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState

from dockyard_shared.a2a.store import table_name
from dockyard_shared.cli import discover_servers
from tests.postgres import libpq_url, postgres_schema

pytestmark = pytest.mark.slow  # spawns two command processes and needs PostgreSQL

TOKEN = "a2a-store-test-token"


@contextmanager
def replica(database_url: str) -> Iterator[str]:
    """`dockyard a2a tasks` on ``database_url`` (port 0), until the block ends: its agent's base URL."""
    command = [
        str(Path(sys.executable).parent / "dockyard"),
        "a2a", "tasks", "--database-url", database_url, "--demo", "--port", "0",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DOCKYARD_AUTH_TOKEN": TOKEN},
    )  # fmt: skip
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # ends when the process does
            seen.append(line)
            found = re.search(r"card at (http://\S+)/\.well-known/agent-card\.json", line)
            if found:
                break
        else:
            pytest.fail(f"no card URL logged; exit {process.wait()}: {''.join(seen)[-2000:]}")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


async def get_client(http: httpx.AsyncClient, url: str):
    return await create_client(url, client_config=ClientConfig(streaming=False, httpx_client=http))


async def test_a_task_run_through_one_replica_is_fetched_with_its_artifact_from_the_other():
    with postgres_schema("a2a_") as url, replica(url) as first, replica(url) as second:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            one, other = await get_client(http, first), await get_client(http, second)
            message = new_message(
                [new_data_part({"tool": "list_tasks", "arguments": {"project": "TASK", "limit": 2}})],
                role=Role.ROLE_USER,
            )
            (response,) = [item async for item in one.send_message(SendMessageRequest(message=message))]
            ran = response.task
            assert ran.status.state == TaskState.TASK_STATE_COMPLETED
            fetched = await other.get_task(GetTaskRequest(id=ran.id))
        assert first != second
        assert fetched.id == ran.id and fetched.status.state == TaskState.TASK_STATE_COMPLETED
        (artifact,) = fetched.artifacts
        (data,) = get_data_parts(artifact.parts)
        assert [item["id"] for item in data["tasks"]] == [
            item["id"] for item in get_data_parts(ran.artifacts[0].parts)[0]["tasks"]
        ]
        assert len(data["tasks"]) == 2
        with psycopg.connect(libpq_url(url)) as connection:
            (count,) = connection.execute(f"SELECT count(*) FROM {table_name('tasks')}").fetchone()
        assert count == 1  # in the server's database, in a table of its own


def test_each_server_names_its_database_to_the_a2a_layer_and_sqlite_keeps_tasks_in_memory(tmp_path):
    servers = discover_servers()
    tasks, origin = servers["tasks"], servers["name-origin"]

    def parsed(entry, *flags):
        return entry.parser(with_runner=False).parse_args(list(flags))

    assert tasks.database(parsed(tasks, "--database-url", "postgresql://u@h/db")) == "postgresql://u@h/db"
    assert origin.database(parsed(origin, "--cache-url", "postgresql://u@h/db")) == "postgresql://u@h/db"
    assert origin.database(parsed(origin, "--no-cache")) is None
    assert servers["git"].database(parsed(servers["git"])) is None
    assert table_name("name-origin") == "a2a_tasks_name_origin"


async def test_a_sqlite_database_keeps_a2a_tasks_in_memory(tmp_path):
    from contextlib import AsyncExitStack

    from a2a.server.tasks import InMemoryTaskStore

    from dockyard_shared.a2a.store import task_store

    async with AsyncExitStack() as stack:
        store = await task_store("tasks", f"sqlite:///{tmp_path / 't.db'}", stack)
    assert isinstance(store, InMemoryTaskStore)
    assert not (tmp_path / "t.db").exists()


async def test_two_agents_on_one_database_keep_their_tasks_apart(tmp_path):
    from a2a.utils.errors import TaskNotFoundError

    from dockyard_shared.a2a.serve import Agent, serving

    def agent(name: str, url: str, *flags: str) -> Agent:
        entry = discover_servers()[name]
        args = entry.parser(with_runner=False).parse_args(list(flags))
        return Agent(name, entry.summary, entry.build(args), entry.database(args))

    with postgres_schema("a2a_") as url:
        chosen = (
            agent("tasks", url, "--database-url", url, "--demo"),
            agent("name-origin", url, "--cache-url", url, "--offline"),
        )
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            serving(chosen, port=0, token=TOKEN) as running,
            httpx.AsyncClient(headers=headers, timeout=60) as http,
        ):
            tasks = await get_client(http, f"{running.base_url}/tasks")
            origin = await get_client(http, f"{running.base_url}/name-origin")
            message = new_message(
                [new_data_part({"tool": "list_projects", "arguments": {}})], role=Role.ROLE_USER
            )
            (response,) = [item async for item in tasks.send_message(SendMessageRequest(message=message))]
            assert (await tasks.get_task(GetTaskRequest(id=response.task.id))).id == response.task.id
            with pytest.raises(TaskNotFoundError):
                await origin.get_task(GetTaskRequest(id=response.task.id))
        with psycopg.connect(libpq_url(url)) as connection:
            tables = {
                row[0]
                for row in connection.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'a2a%'")
            }
        assert {"a2a_tasks_tasks", "a2a_tasks_name_origin"} <= tables
