"""dockyard_shared.long_calls over authenticated HTTP: a task belongs to the actor that started it.

Two actors (bearer tokens of a FastMCP token verifier, as dockyard-tasks --actors gives them) call the same
server; the one that did not start a task cannot see or cancel it, while its owner can."""

from __future__ import annotations

import asyncio

import pytest
import uvicorn
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp_tasks import ToolTask, call_tool_task
from mcp.shared.exceptions import MCPError

from dockyard_shared.long_calls import LongCalls, task_config
from tests.waiting import until

TOKENS = {
    "alice-token-" + "a" * 20: {"client_id": "alice", "scopes": []},
    "bob-token-" + "b" * 20: {"client_id": "bob", "scopes": []},
}
ALICE, BOB = list(TOKENS)


@pytest.fixture
async def served():
    release = asyncio.Event()
    server = FastMCP("scoped", auth=StaticTokenVerifier(tokens=TOKENS))
    server.add_extension(LongCalls("scoped"))

    @server.tool(task=task_config())
    async def slow() -> str:
        await release.wait()
        return "done"

    uv = uvicorn.Server(uvicorn.Config(server.http_app(), host="127.0.0.1", port=0, log_level="warning"))
    serving = asyncio.create_task(uv.serve())
    await until(lambda: uv.started, "the server to listen")
    port = uv.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp", release
    finally:
        release.set()
        uv.should_exit = True
        await serving


def client(url: str, token: str) -> Client:
    return Client(StreamableHttpTransport(url, auth=token))


async def test_a_task_id_from_another_actor_is_refused_and_its_owner_keeps_it(served):
    url, release = served
    async with client(url, ALICE) as alice, client(url, BOB) as bob:
        task = await call_tool_task(alice, "slow")
        stolen = ToolTask(bob, "slow", task.create_result)
        with pytest.raises(MCPError, match="not found"):
            await stolen.status()
        with pytest.raises(MCPError, match="not found"):
            await stolen.cancel()
        assert (await task.status()).status == "working"  # bob's cancel did nothing
        release.set()
        assert (await task.wait(timeout=30)).status == "completed"
        assert (await task.result()).content[0].text == "done"
