"""dockyard-tasks as hosts run it: the console script over stdio and Streamable HTTP, in both eras,
alone and as two replicas sharing one PostgreSQL database."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import text

from dockyard_shared.runner import authenticate_themselves, check_exposure, http_options
from dockyard_tasks.__main__ import entry as tasks_entry
from dockyard_tasks.actors import ActorTokens
from dockyard_tasks.demo import seed_demo
from dockyard_tasks.store import TaskStore
from dockyard_tasks.store.engine import make_engine
from dockyard_tasks.store.migrate import migrate_to
from tests.harness import ERAS, LEGACY, MODERN, Launch, http_server, open_session
from tests.tasks.helpers import Inbox, tasks_launch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_serves_the_tracker_and_records_the_actor(sqlite_url, tmp_path, era):
    launch = tasks_launch(sqlite_url, "--demo", "--actor", "dana", data_dir=tmp_path / "xdg")
    async with open_session(launch, era=era) as session:
        todo = (await session.call_ok("list_tasks", {"status": "todo", "assignee": "alice"})).data
        assert [t["id"] for t in todo["tasks"]] == ["TASK-4"]
        await session.call_ok("update_task_status", {"task_id": "TASK-5", "new_status": "in_progress"})
        history = (await session.call_ok("get_task", {"task_id": "TASK-5"})).data["history"]
        assert history[-1]["actor"] == "dana" and history[-1]["new"] == "in_progress"
        summary = json.loads(await session.read_resource("project://tasks/summary"))
        assert summary["by_status"]["in_progress"] == 3


async def test_stdio_read_only_serves_only_reads(sqlite_url):
    async with open_session(tasks_launch(sqlite_url, "--demo", "--read-only"), era=LEGACY) as session:
        names = await session.tool_names()
    assert "get_task" in names and not {"create_task", "update_task_status", "delete_task"} & names


async def test_the_default_database_lives_in_the_user_data_directory(tmp_path):
    launch = Launch("dockyard-tasks", ("--toolsets", "all"), env={"XDG_DATA_HOME": str(tmp_path)})
    async with open_session(launch) as session:
        await session.call_ok("create_project", {"key": "HOME", "name": "Home"})
    assert (tmp_path / "dockyard" / "tasks" / "tasks.db").is_file()


def test_a_database_from_a_newer_release_stops_start_up_clearly(sqlite_url):
    engine = make_engine(sqlite_url)
    migrate_to(engine, "head")
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    result = tasks_launch(sqlite_url).run()
    assert result.returncode == 2
    assert "schema revision '0099'" in result.stderr and "Upgrade dockyard-tasks" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


async def test_an_older_database_is_upgraded_in_place_when_the_server_starts(sqlite_url):
    engine = make_engine(sqlite_url)
    migrate_to(engine, "0001")
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO projects VALUES (1, 'OLD', 'Old', '', 2, '2025-01-01 00:00:00', 'ann');")
        )
        connection.execute(
            text(
                "INSERT INTO tasks (id, project_id, number, title, description, status, priority, created_at,"
                " updated_at, created_by, version) VALUES (1, 1, 1, 'kept', '', 'todo', 2,"
                " '2025-01-01 00:00:00', '2025-01-01 00:00:00', 'ann', 1)"
            )
        )
    engine.dispose()
    async with open_session(tasks_launch(sqlite_url)) as session:
        assert (await session.call_ok("get_task", {"task_id": "OLD-1"})).data["title"] == "kept"
        await session.call_ok("update_task_status", {"task_id": "OLD-1", "new_status": "done"})


def test_a_bad_database_url_stops_start_up_clearly():
    result = tasks_launch("mysql://db/tasks").run()
    assert result.returncode == 2 and "not supported" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture
def actors_file(tmp_path):
    path = tmp_path / "actors.json"
    path.write_text(json.dumps({"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}))
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_each_token_acts_as_its_own_actor(sqlite_url, actors_file, log_dir, era):
    launch = tasks_launch(sqlite_url, "--demo", "--actors", str(actors_file))
    with http_server(launch, log_dir=log_dir) as server:
        for token, actor in (("alice-token-0123456789", "alice"), ("bob-token-0123456789ab", "bob")):
            headers = {"Authorization": f"Bearer {token}"}
            async with open_session(server.url(), era=era, headers=headers) as session:
                await session.call_ok("add_comment", {"task_id": "TASK-1", "body": f"from {actor}"})
                mine = (await session.call_ok("next_task")).data
                assert mine["in_progress"] == (["TASK-1"] if actor == "alice" else [])
        async with open_session(server.url(), era=era, headers=headers) as session:
            comments = (await session.call_ok("get_task", {"task_id": "TASK-1"})).data["comments"]
        assert [(c["author"], c["body"]) for c in comments] == [("alice", "from alice"), ("bob", "from bob")]
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        refused = httpx.post(server.url(), json=ping, headers={"Authorization": "Bearer wrong", **accept})
        assert refused.status_code == 401
        assert httpx.get(server.url("/health")).status_code == 200


def test_a_lan_bind_is_allowed_with_actor_tokens_and_refused_without_any_token(sqlite_url, actors_file):
    # The allowed side is checked without binding (helpers bind 127.0.0.1 only): the pre-build check
    # the runner makes from the flags, and the check serve() makes from the server actually built.
    lan = ("--transport", "http", "--host", "192.168.1.20", "--port", "8765", "--database-url", sqlite_url)
    args = tasks_entry.parser().parse_args([*lan, "--actors", str(actors_file)])
    check_exposure(http_options(args), authenticated=tasks_entry.authenticates(args))
    server = tasks_entry.build(args)
    assert isinstance(server.auth, ActorTokens) and authenticate_themselves({"tasks": server})
    check_exposure(http_options(args), authenticated=authenticate_themselves({"tasks": server}))

    plain = tasks_entry.parser().parse_args(list(lan))
    assert not tasks_entry.authenticates(plain)
    assert not authenticate_themselves({"tasks": tasks_entry.build(plain)})
    launch = tasks_launch(sqlite_url)
    refused = launch.run(
        "--transport", "http", "--host", "0.0.0.0", "--port", "8765", unset=("DOCKYARD_AUTH_TOKEN",)
    )
    assert refused.returncode == 2 and "Refusing to serve on 0.0.0.0" in refused.stderr
    assert "--actors" in refused.stderr and refused.stdout == ""


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("start", ["first", "later"])
async def test_subscribers_over_stdio_hear_changes(sqlite_url, era, start):
    if start == "later":
        # A file at the newest revision: the store opens after initialize (opening.py), not before.
        store = TaskStore(sqlite_url)
        seed_demo(store)
        store.close()
    inbox = Inbox()
    async with (
        open_session(tasks_launch(sqlite_url, "--demo"), era=era, message_handler=inbox.handle) as session,
        inbox.subscribed(session, ["task://TASK-2", "project://tasks/summary"]),
    ):
        await session.call_ok("update_task", {"task_id": "TASK-2", "title": "Copy, final"})
        await inbox.wait_for("task://TASK-2", "project://tasks/summary")


@pytest.mark.parametrize("era", ERAS)
async def test_a_change_through_one_replica_reaches_subscribers_of_the_other(postgres_url, log_dir, era):
    TaskStore(postgres_url).close()  # migrate once, before both replicas start
    first = tasks_launch(postgres_url, "--demo")
    second = tasks_launch(postgres_url)
    with http_server(first, log_dir=log_dir) as one, http_server(second, log_dir=log_dir) as two:
        inbox = Inbox()
        async with (
            open_session(one.url(), era=era, message_handler=inbox.handle) as watcher,
            open_session(two.url(), era=MODERN) as writer,
        ):
            async with inbox.subscribed(
                watcher, ["task://TASK-4", "project://TASK", "project://tasks/summary"]
            ):
                await writer.call_ok("update_task", {"task_id": "TASK-4", "priority": "urgent"})
                await inbox.wait_for("task://TASK-4", "project://TASK", "project://tasks/summary")
                await writer.call_ok("create_project", {"key": "OTHER", "name": "Elsewhere"})
                await inbox.wait_for(list_changed=1)
            assert "project://OTHER" in {str(r.uri) for r in await watcher.list_resources()}
