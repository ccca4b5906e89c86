"""What an operator sees over real HTTP: ``/metrics`` (Prometheus text, behind the bearer token) counting the
tool calls just made, and ``/health`` naming each served database, 503 once one is gone."""

from __future__ import annotations

import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import LEGACY, http_server, open_session

pytestmark = pytest.mark.slow

TOKEN = "observability-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels: str) -> float | None:
    return scraped.get((name, frozenset(labels.items())))


async def test_metrics_count_calls_errors_latency_and_sessions_behind_the_token(
    sqlite_launch, people, log_dir, era
):
    launch = sqlite_launch("--db", f"people={people}")
    launch.env["DOCKYARD_AUTH_TOKEN"] = TOKEN
    with http_server(launch, log_dir=log_dir) as server:
        async with open_session(server.url(), era=era, headers=AUTH) as session:
            await session.call_ok("list_tables")
            await session.call_ok("list_tables")
            await session.call_error("describe_table", {"table": "no_such_table"})
            during = httpx.get(server.url("/metrics"), headers=AUTH)

        anonymous = httpx.get(server.url("/metrics"))
        wrong = httpx.get(server.url("/metrics"), headers={"Authorization": "Bearer wrong"})
        assert anonymous.status_code == wrong.status_code == 401

        assert during.status_code == 200
        assert during.headers["content-type"].startswith("text/plain; version=0.0.4")
        scraped = samples(during.text)
        calls = "dockyard_tool_calls_total"
        assert value(scraped, calls, server="sqlite", tool="list_tables", outcome="ok") == 2
        assert value(scraped, calls, server="sqlite", tool="describe_table", outcome="error") == 1
        errors = "dockyard_tool_errors_total"
        assert value(scraped, errors, server="sqlite", tool="describe_table", category="not_found") == 1
        buckets = "dockyard_tool_call_duration_seconds_bucket"
        assert value(scraped, buckets, server="sqlite", tool="list_tables", le="+Inf") == 2
        assert value(scraped, buckets, server="sqlite", tool="list_tables", le="60.0") == 2
        assert (
            value(scraped, "dockyard_tool_call_duration_seconds_count", server="sqlite", tool="list_tables")
            == 2
        )
        # A 2025-11-25 client holds a session while it is connected; a 2026-07-28 one holds none.
        open_sessions = value(scraped, "dockyard_http_sessions_open", server="sqlite")
        assert open_sessions == (1 if era == LEGACY else 0)
        assert value(scraped, "dockyard_http_event_streams_open") is not None


def test_health_names_each_database_and_answers_503_once_one_is_gone(sqlite_launch, people, shop, log_dir):
    launch = sqlite_launch("--db", f"people={people}", "--db", f"shop={shop}")
    launch.env["DOCKYARD_AUTH_TOKEN"] = TOKEN
    with http_server(launch, log_dir=log_dir) as server:
        healthy = httpx.get(server.url("/health"), headers=AUTH)
        assert healthy.status_code == 200
        body = healthy.json()
        assert body["status"] == "ok" and body["servers"] == ["sqlite"]
        assert set(body["checks"]["sqlite"]) == {"database people", "database shop"}
        assert str(people) in body["checks"]["sqlite"]["database people"]["detail"]

        people.unlink()
        deadline = time.monotonic() + 15  # an answer is reused for a second: wait for a new round
        while (down := httpx.get(server.url("/health"), headers=AUTH)).status_code == 200:
            assert time.monotonic() < deadline, down.json()
            time.sleep(0.05)
        assert down.status_code == 503
        body = down.json()
        assert body["status"] == "down"
        people_check = body["checks"]["sqlite"]["database people"]
        assert people_check["up"] is False and people_check["required"] is True
        assert str(people.name) in people_check["detail"]
        assert body["checks"]["sqlite"]["database shop"]["up"] is True

        # Open without the token (a supervisor's probe), but without the details.
        anonymous = httpx.get(server.url("/health"))
        assert anonymous.status_code == 503
        assert anonymous.json()["checks"]["sqlite"]["database people"] == {"up": False, "required": True}
        assert str(people) not in anonymous.text
