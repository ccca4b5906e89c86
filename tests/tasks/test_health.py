"""dockyard-tasks in ``/health``: its database and, on PostgreSQL, the LISTEN connection that hears other
replicas. The database is made to refuse connections after start (``ALLOW_CONNECTIONS false`` and every
backend cut), as an outage would: both checks go down (503), and come back once it accepts them again."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import anyio
import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from dockyard_shared.health import Health
from tests.harness import MODERN, http_server, open_session
from tests.postgres import libpq_url, postgres_base_url, postgres_unavailable
from tests.tasks.helpers import Inbox, make_server, tasks_launch

LISTEN = "change notices (LISTEN)"


@pytest.fixture
def own_database() -> Iterator[tuple[str, str]]:
    """(URL, name) of a PostgreSQL database of this test's own, dropped afterwards."""
    base = postgres_base_url()
    if base is None:
        pytest.skip(postgres_unavailable() or "no PostgreSQL")
    name = "obs_" + uuid.uuid4().hex[:12]
    with psycopg.connect(libpq_url(base), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False), name
    finally:
        with psycopg.connect(libpq_url(base), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def set_reachable(name: str, reachable: bool) -> None:
    with psycopg.connect(libpq_url(postgres_base_url()), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(reachable).lower()}')
        if not reachable:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )


async def report_until(health: Health, wanted, timeout: float = 30) -> tuple[int, dict]:
    with anyio.fail_after(timeout):
        while True:
            status, body = await health.report()
            if wanted(status, body["checks"]["tasks"]):
                return status, body
            await anyio.sleep(0.1)


async def test_database_and_listen_connection_down_then_up_again(own_database, era):
    url, name = own_database
    server = make_server(url, demo=True)
    health = Health({"tasks": server})
    inbox = Inbox()
    async with (
        open_session(server, era=era, message_handler=inbox.handle) as session,
        inbox.subscribed(session, ["project://tasks/summary"]),  # starts the LISTEN connection
    ):
        status, body = await report_until(health, lambda status, checks: checks[LISTEN]["up"])
        assert status == 200 and body["status"] == "ok"
        checks = body["checks"]["tasks"]
        assert checks["database"]["up"] and "revision" in checks["database"]["detail"]
        assert checks[LISTEN]["detail"] == "listening"

        set_reachable(name, False)
        status, body = await report_until(
            health, lambda status, checks: not checks[LISTEN]["up"] and not checks["database"]["up"]
        )
        assert status == 503 and body["status"] == "down"
        assert "LISTEN connection is down" in body["checks"]["tasks"][LISTEN]["detail"]

        set_reachable(name, True)
        status, body = await report_until(
            health, lambda status, checks: all(c["up"] for c in checks.values())
        )
        assert status == 200 and body["status"] == "ok"
        await session.call_ok("list_projects")  # and it serves again


def test_on_sqlite_there_is_no_listen_check(tmp_path):
    server = make_server(f"sqlite:///{tmp_path / 'tasks.db'}")
    status, body = anyio.run(Health({"tasks": server}).report)
    assert status == 200
    assert set(body["checks"]["tasks"]) == {"database"}


async def test_metrics_and_health_details_need_an_actor_token_when_the_server_checks_its_own(
    tmp_path, log_dir
):
    actors = tmp_path / "actors.json"
    actors.write_text(json.dumps({"alice-token-0123456789": "alice"}))
    launch = tasks_launch(f"sqlite:///{tmp_path / 'tasks.db'}", "--demo", "--actors", str(actors))
    alice = {"Authorization": "Bearer alice-token-0123456789"}
    with http_server(launch, log_dir=log_dir) as server:
        async with open_session(server.url(), era=MODERN, headers=alice) as session:
            await session.call_ok("list_projects")
        assert httpx.get(server.url("/metrics")).status_code == 401
        assert httpx.get(server.url("/metrics"), headers={"Authorization": "Bearer wrong"}).status_code == 401
        scraped = httpx.get(server.url("/metrics"), headers=alice)
        assert scraped.status_code == 200
        assert (
            'dockyard_tool_calls_total{outcome="ok",server="tasks",tool="list_projects"} 1.0' in scraped.text
        )
        anonymous = httpx.get(server.url("/health")).json()
        assert anonymous["checks"]["tasks"]["database"] == {"up": True, "required": True}
        detailed = httpx.get(server.url("/health"), headers=alice).json()
        assert "detail" in detailed["checks"]["tasks"]["database"]
