"""batch_predict as an MCP task (io.modelcontextprotocol/tasks, ``--tasks``), through a client that speaks it.

The fake nationalize.io stalls every answer until the test lets it go: a 1,000-name batch is then a call a
host would cut, and comes back as a task the client polls; cancelling it stops the requests upstream.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp_tasks import ToolTask, call_tool_task
from mcp.shared.exceptions import MCPError

from tests.harness import LEGACY, open_session
from tests.name_origin.fake_nationalize import API_KEY
from tests.name_origin.helpers import launch, make_server, sqlite_url
from tests.waiting import until

NAMES = [f"given{i} family{i}" for i in range(1_000)]
TERMINAL = {"completed", "failed", "cancelled"}


def tasks_server(nationalize, tmp_path, **options):
    # Patient timeouts: a stalled answer is waited for, not retried (retries would blur what a cancel stops).
    options = {"read_timeout": 60.0, "request_deadline": 90.0, **options}
    return make_server(
        nationalize.url, cache_url=sqlite_url(tmp_path), api_key=API_KEY, tasks=True, **options
    )


async def test_a_large_batch_runs_as_a_task_the_client_polls_while_upstream_stalls(nationalize, tmp_path):
    fake = nationalize.fake
    fake.stall = threading.Event()
    server = tasks_server(nationalize, tmp_path)
    async with Client(server) as client:
        extensions = client.server_capabilities.extensions or {}
        assert "io.modelcontextprotocol/tasks" in extensions
        task = await call_tool_task(client, "batch_predict", {"names": NAMES})  # back while upstream stalls
        await until(lambda: fake.request_count >= 1, "the first upstream request")
        seen = await task.status()
        assert seen.status == "working"
        assert seen.poll_interval_ms == 1_000
        assert seen.status_message == "0 of 1000 names answered from the cache"  # progress, as it polls
        fake.stall.set()
        statuses = [seen.status]
        while seen.status not in TERMINAL:
            seen = await task.status()
            statuses.append(seen.status)
            await asyncio.sleep(0.05)
        assert seen.status == "completed", seen
        result = await task.result()
    data = result.structured_content
    assert data is not None
    shown = data["results"]  # a reply fits a context window: the rest is one cache-only call away
    assert data.get("next_offset", 1_000) == len(shown) > 0
    assert [result["name"] for result in shown] == NAMES[: len(shown)]
    assert "statuses" not in data or set(data["statuses"]) <= {"ok", "unknown"}, data
    assert {result.get("status", "ok") for result in shown} <= {"ok", "unknown"}
    assert fake.request_count >= 100  # 1,000 names at nationalize's 10 a request


async def test_cached_names_need_no_task_the_same_client_gets_the_answer_in_place(nationalize, tmp_path):
    server = tasks_server(nationalize, tmp_path)
    async with Client(server) as client:
        first = await call_tool_task(client, "batch_predict", {"names": NAMES[:3]})  # not cached: a task
        assert len((await first.result()).structured_content["results"]) == 3
        asked = nationalize.fake.request_count
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "batch_predict", {"names": NAMES[:3]})
        again = await client.call_tool("batch_predict", {"names": NAMES[:3]})
    assert nationalize.fake.request_count == asked  # all three from the cache, answered in place
    assert [r["name"] for r in again.structured_content["results"]] == NAMES[:3]


async def test_cancelling_the_task_stops_spending_quota(nationalize, tmp_path):
    fake = nationalize.fake
    fake.stall = threading.Event()
    server = tasks_server(nationalize, tmp_path)
    async with Client(server) as client:
        task = await call_tool_task(client, "batch_predict", {"names": NAMES})
        await until(lambda: fake.request_count >= 1, "the first upstream request")
        await task.cancel()
        assert (await task.status()).status == "cancelled"
        # The batch's requests in flight are dropped: every held answer sees its client hang up.
        await until(lambda: fake.waiting == 0 and fake.abandoned >= 1, "the cancelled requests to hang up")
        asked = fake.request_count
        fake.stall.set()
        # A later call asks upstream once more: had the batch kept going, its requests would be counted too.
        await client.call_tool("predict_origin", {"name": "zz-after-cancel"})
        await until(lambda: fake.request_count >= asked + 1, "the later call's request")
        assert fake.request_count == asked + 1
        assert (await task.status()).status == "cancelled"
    assert asked < 100  # stopped well short of the whole batch


async def test_a_task_id_the_server_did_not_mint_for_this_caller_is_refused(nationalize, tmp_path):
    nationalize.fake.stall = threading.Event()
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    one, other = tasks_server(nationalize, tmp_path / "a"), tasks_server(nationalize, tmp_path / "b")
    async with Client(one) as first, Client(other) as second:
        task = await call_tool_task(first, "batch_predict", {"names": NAMES[:50]})
        created = task.create_result
        forged = created.model_copy(update={"task_id": "x" + created.task_id[1:]})
        for client, handle in ((second, created), (first, forged)):
            with pytest.raises(MCPError, match="not found"):  # tasks/get of an id this server never gave
                await ToolTask(client, "batch_predict", handle).status()
            with pytest.raises(MCPError, match="not found"):
                await ToolTask(client, "batch_predict", handle).cancel()
        assert (await task.status()).status == "working"  # the real one is untouched
        nationalize.fake.stall.set()
        assert (await task.wait()).status == "completed"


async def test_without_the_extension_both_eras_get_the_plain_call(nationalize, tmp_path, era):
    server = tasks_server(nationalize, tmp_path)
    async with open_session(server, era=era) as session:
        outcome = await session.call_ok("batch_predict", {"names": NAMES[:200]})
    assert len(outcome.data["results"]) == 200
    if era == LEGACY:
        assert nationalize.fake.request_count >= 20


async def test_a_failure_inside_the_task_reaches_the_model_in_the_same_words_as_a_plain_call(
    nationalize, tmp_path
):
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path), api_key="nat_wrong", tasks=True)
    async with Client(server) as client:
        task = await call_tool_task(client, "batch_predict", {"names": NAMES[:30]}, raise_on_error=False)
        failed = await task.result()
    async with open_session(server, era=LEGACY) as session:
        plain = await session.call_error("batch_predict", {"names": NAMES[:30]})
    assert failed.is_error
    (text,) = [block.text for block in failed.content]
    assert text == plain
    assert "Next step:" in text and "Error calling tool" not in text


async def test_the_console_script_with_tasks_serves_them_over_stdio(nationalize, tmp_path):
    fake = nationalize.fake
    fake.stall = threading.Event()
    async with open_session(launch(nationalize.url, tmp_path, "--tasks", key=API_KEY)) as session:
        client = session.raw
        assert "io.modelcontextprotocol/tasks" in (client.server_capabilities.extensions or {})
        task = await call_tool_task(client, "batch_predict", {"names": NAMES[:100]})
        await until(lambda: fake.request_count >= 1, "the first upstream request")
        assert (await task.status()).status == "working"
        fake.stall.set()
        assert (await task.wait(timeout=60)).status == "completed"
    assert fake.request_count >= 10
