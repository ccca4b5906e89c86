"""import_project as an MCP task (``--tasks``, io.modelcontextprotocol/tasks), its state shared by replicas.

Two dockyard-tasks processes on one PostgreSQL database share task state through Redis (``--tasks-url``,
the queue derived from the database): a task started on replica A is polled to its result on replica B;
another actor's poll of its id is refused on B; a cancel sent to B rolls the import back wherever it runs.
In process: a small import is answered in place, and a client without the extension gets the plain call in
both protocol eras.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack
from functools import partial

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from fastmcp_tasks import ToolTask, call_tool_task
from mcp.shared.exceptions import MCPError

from dockyard_shared.task_backend import ENCRYPTION_KEY_ENV, deployment_digest
from dockyard_tasks.store import TaskStore
from dockyard_tasks.store.transfer import FORMAT
from tests.harness import HttpServer, Launch, http_server, open_session
from tests.postgres import postgres_schema
from tests.redis import redis_keys_removed, redis_url
from tests.waiting import until as _until

until = partial(_until, timeout=60.0, every=0.05)  # two replica processes on a loaded machine


ALICE, BOB = "alice-token-" + "a" * 24, "bob-token-" + "b" * 24
TERMINAL = {"completed", "failed", "cancelled"}
EXTENSION = "io.modelcontextprotocol/tasks"
TASKS = ("--tasks", "--tasks-url")


def document(key: str, tasks: int, *, extras: int = 1) -> dict:
    """An export_project document of ``tasks`` tasks, each with ``extras`` comments and history entries."""
    at = "2026-01-02T03:04:05"
    return {
        "format": FORMAT,
        "project": {"key": key, "name": "Imported", "created_at": at, "created_by": "ann", "next_number": 1},
        "tasks": [
            {
                "id": f"{key}-{number}",
                "title": f"<b>task</b> {number}",
                "created_at": at,
                "created_by": "ann",
                "updated_at": at,
                "comments": [{"author": "bob", "body": "c" * 80, "created_at": at}] * extras,
                "history": [{"at": at, "actor": "ann", "action": "created"}] * extras,
            }
            for number in range(1, tasks + 1)
        ],
    }


def projects(url: str) -> set[str]:
    store = TaskStore(url)
    try:
        return {project.key for project in store.list_projects().projects}
    finally:
        store.close()


@pytest.fixture(scope="module")
def replicated(tmp_path_factory, log_dir) -> Iterator[tuple[str, tuple[HttpServer, HttpServer]]]:
    """Two replicas on one database and one Redis, started the same way (no --tasks-queue: derived from
    the database); the database URL and the replicas. Started once for this module's tests (slow to start
    on a busy machine), each test importing projects of its own keys."""
    redis = redis_url()
    folder = tmp_path_factory.mktemp("replicas")
    actors = folder / "actors.json"
    actors.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    with postgres_schema() as url:
        launch = Launch(
            "dockyard-tasks",
            ("--database-url", url, "--toolsets", "all", "--actors", str(actors), *TASKS, redis),
            env={ENCRYPTION_KEY_ENV: secrets.token_urlsafe(32), "XDG_DATA_HOME": str(folder)},
        )
        with redis_keys_removed(redis, f"dockyard-tasks.{deployment_digest(url)}"), ExitStack() as stack:
            yield url, tuple(stack.enter_context(http_server(launch, log_dir=log_dir)) for _ in range(2))


def tasks_server(url: str):
    """In process, every toolset on, tasks in memory."""
    from dockyard_shared.toolsets import Exposure
    from dockyard_tasks.server import create_server
    from dockyard_tasks.settings import Settings

    return create_server(
        Settings(database_url=url, actor="ann", exposure=Exposure(toolsets=("all",)), tasks=True)
    )


def client(server: HttpServer, token: str) -> Client:
    return Client(StreamableHttpTransport(server.url(), auth=token), timeout=60)


@pytest.mark.slow
async def test_a_task_started_on_one_replica_is_polled_to_its_result_on_another(replicated):
    postgres_url, (a, b) = replicated
    health = httpx.get(b.url("/health"), headers={"Authorization": f"Bearer {BOB}"}, timeout=10).json()
    task_state = health["checks"]["tasks"]["task state"]  # each replica reports the shared backend
    assert task_state["up"] and not task_state["required"] and "answers" in task_state["detail"], health
    async with client(a, ALICE) as on_a, client(b, ALICE) as alice_on_b, client(b, BOB) as bob_on_b:
        assert EXTENSION in (on_a.server_capabilities.extensions or {})
        started = await call_tool_task(on_a, "import_project", {"document": document("BIG", 600)})
        # Another actor holding the id gets "not found" on B, as for an id that never existed.
        stolen = ToolTask(bob_on_b, "import_project", started.create_result)
        with pytest.raises(MCPError, match="not found"):
            await stolen.status()
        with pytest.raises(MCPError, match="not found"):
            await stolen.cancel()
        polled = ToolTask(alice_on_b, "import_project", started.create_result)
        seen: list[str] = []

        async def finished() -> bool:
            status = await polled.status()
            seen.append(status.status)
            return status.status in TERMINAL

        await until(finished, "the import to finish, polled on B")
        assert seen[-1] == "completed", seen
        result = await polled.result()
    assert result.structured_content == {
        "project": "BIG",
        "tasks": 600,
        "comments": 600,
        "history": 600,
        "dependencies": 0,
    }
    assert "BIG" in projects(postgres_url)
    store = TaskStore(postgres_url)
    try:  # recorded as the actor who started it, whichever replica's worker ran it
        assert store.get_task("BIG-1").history[0].actor == "alice"
    finally:
        store.close()


@pytest.mark.slow
async def test_a_cancel_sent_to_the_other_replica_stops_the_import_and_rolls_it_back(replicated):
    postgres_url, servers = replicated
    async with client(servers[0], ALICE) as on_a, client(servers[1], ALICE) as on_b:
        started = await call_tool_task(
            on_a, "import_project", {"document": document("HUGE", 5_000, extras=2)}
        )
        task_id = started.create_result.task_id
        handles = (started, ToolTask(on_b, "import_project", started.create_result))

        def runs_it(server: HttpServer) -> bool:  # Docket logs "↪" when a worker takes a task (either may)
            return any("↪" in line and f"{task_id}:" in line for line in server.log().splitlines())

        async def running() -> bool:
            return any(runs_it(server) for server in servers)

        async def under_way() -> bool:
            status = await handles[1].status()
            assert status.status == "working", status  # the import must still be running when cancelled
            return bool(status.status_message) and await running()

        await until(under_way, "the import to start and report progress")
        runner = next(i for i, server in enumerate(servers) if runs_it(server))
        other = handles[1 - runner]  # the cancel goes to the replica that is not running the import
        begun = time.monotonic()
        await other.cancel()
        assert (await other.status()).status == "cancelled"
        assert (await handles[runner].status()).status == "cancelled"  # one task, one state, on both

        async def stopped() -> bool:
            return "Cancelling running task" in servers[runner].log()

        await until(stopped, "the running replica to cancel the import")
        # The same key imports at once: the cancelled import's transaction rolled back (had it committed,
        # this would be a conflict; while it is open, PostgreSQL holds this insert until it ends).
        again = await on_a.call_tool("import_project", {"document": document("HUGE", 3)})
        assert again.structured_content["tasks"] == 3
        assert time.monotonic() - begun < 30
    store = TaskStore(postgres_url)
    try:
        assert store.project("HUGE").tasks == 3
    finally:
        store.close()


async def test_a_small_import_is_answered_in_place_even_for_a_client_that_asks_for_a_task(sqlite_url):
    server = tasks_server(sqlite_url)
    async with Client(server) as client:
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "import_project", {"document": document("SMALL", 3)})
        assert "SMALL" in projects(sqlite_url)
        task = await call_tool_task(client, "import_project", {"document": document("LARGE", 500)})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["tasks"] == 500


async def test_without_the_extension_both_eras_get_the_plain_call(sqlite_url, era):
    server = tasks_server(sqlite_url)
    async with open_session(server, era=era) as session:
        outcome = await session.call_ok("import_project", {"document": document("PLAIN", 600)})
    assert outcome.data["tasks"] == 600
    assert "PLAIN" in projects(sqlite_url)


def test_a_shared_backend_without_the_snapshot_key_is_refused_at_start(tmp_path):
    launch = Launch(
        "dockyard-tasks",
        (
            "--database-url",
            f"sqlite:///{tmp_path / 't.db'}",
            "--tasks",
            "--tasks-url",
            "redis://127.0.0.1:1/0",
        ),
        env={"XDG_DATA_HOME": str(tmp_path)},
    )
    refused = launch.run(unset=(ENCRYPTION_KEY_ENV,))
    assert refused.returncode == 2, refused.stderr
    assert ENCRYPTION_KEY_ENV in refused.stderr
    wrong = launch.run("--tasks-url", "postgresql://127.0.0.1/test")
    assert wrong.returncode == 2 and "Redis" in wrong.stderr, wrong.stderr
