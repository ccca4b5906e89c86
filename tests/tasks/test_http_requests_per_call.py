"""A tool call over HTTP costs one request: no client re-lists the tools before each call.

Both client libraries list the tools on a call to a tool they have not seen listed, to validate its
structured content against the output schema. A tool missing from the listing (a second page of it, a tool
hidden from ``tools/list`` yet callable) would make *every* call to it a ``tools/list`` first — on the
tasks server, with its long listing, the suspected cause of the 32-client tails (issue 31). Counted here on
the wire, as the HTTP requests the client POSTs, in both eras.
"""

from __future__ import annotations

import json
from collections import Counter

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.harness import ERAS, MODERN, http_server
from tests.tasks.helpers import tasks_launch

pytestmark = pytest.mark.slow

CALLS = [("list_tasks", {"project": "TASK"}), ("get_task", {"task_id": "TASK-3"}), ("next_task", {})]
ROUNDS = 5


class Posted:
    """The JSON-RPC methods a client sent."""

    def __init__(self) -> None:
        self.methods: Counter[str] = Counter()

    async def hook(self, request: httpx2.Request) -> None:
        if request.method == "POST":
            body = json.loads(request.content)
            for message in body if isinstance(body, list) else [body]:
                if "method" in message:
                    self.methods[message["method"]] += 1

    def client(self, headers=None, timeout=None, auth=None, **more) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, event_hooks={"request": [self.hook]}, **more
        )


@pytest.mark.parametrize("era", ERAS)
async def test_repeated_calls_list_the_tools_at_most_once(sqlite_url, log_dir, era):
    posted = Posted()
    with http_server(tasks_launch(sqlite_url, "--demo", "--actor", "alice"), log_dir=log_dir) as server:
        if era == MODERN:
            transport = StreamableHttpTransport(server.url(), httpx_client_factory=posted.client)
            async with Client(transport, timeout=60) as client:
                for _ in range(ROUNDS):
                    for name, arguments in CALLS:
                        result = await client.call_tool(name, arguments, raise_on_error=False)
                        assert not result.is_error, result.content
        else:
            async with (
                posted.client(timeout=httpx2.Timeout(60)) as http,
                streamable_http_client(server.url(), http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for _ in range(ROUNDS):
                    for name, arguments in CALLS:
                        result = await session.call_tool(name, arguments)
                        assert not result.is_error, result.content
    assert posted.methods["tools/call"] == ROUNDS * len(CALLS)
    # The first call of a tool not yet seen lists them all, once; then never again.
    assert posted.methods["tools/list"] == 1, posted.methods
