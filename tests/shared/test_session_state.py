"""FastMCP's session state still works on a Dockyard server, whose state store is made on its first write
(dockyard_shared.server): reads before it answer as an empty store would, and writes land in the real one."""

from __future__ import annotations

import sys

import pytest
from fastmcp import Context, FastMCP

from dockyard_shared.server import new_server
from tests.harness import ERAS, open_session


def state_server(plain: bool = False):
    server = FastMCP("state-probe") if plain else new_server("state-probe", instructions="probe")

    @server.tool
    async def recall(ctx: Context) -> str:
        """Read the remembered value."""
        return repr(await ctx.get_state("value"))

    @server.tool
    async def remember(value: str, ctx: Context) -> str:
        """Remember a value for this session."""
        await ctx.set_state("value", value)
        return "ok"

    @server.tool
    async def hide_recall(ctx: Context) -> str:
        """Hide recall for this session."""
        await ctx.disable_components(names={"recall"})
        return "hidden"

    return server


async def observe(server, era) -> list:
    seen = []
    async with open_session(server, era=era) as session:
        seen.append(sorted(tool.name for tool in await session.list_tools()))
        seen.append((await session.call_ok("recall", {})).data)
        await session.call_ok("remember", {"value": "kept"})
        seen.append((await session.call_ok("recall", {})).data)
        # A session visibility rule is written to the same store, and listing then reads it.
        await session.call_ok("hide_recall", {})
        seen.append(sorted(tool.name for tool in await session.list_tools()))
    return seen


@pytest.mark.parametrize("era", ERAS)
async def test_session_state_behaves_as_on_a_plain_fastmcp_server(era):
    ours, plain = await observe(state_server(), era), await observe(state_server(plain=True), era)
    assert ours == plain
    if era == "2025-11-25":  # a session to keep state in (2026-07-28 has none: each request stands alone)
        assert ours[1:] == ["None", "'kept'", ["hide_recall", "remember"]]


async def test_listing_and_calling_without_state_does_not_make_the_store():
    server = state_server()
    async with open_session(server) as session:
        await session.list_tools()
        assert (await session.call_ok("recall", {})).data == "None"
    assert server.__dict__["_dockyard_state"]._store is None
    if "key_value" not in sys.modules:  # another test in this process may have made one
        assert "key_value.aio.stores.memory" not in sys.modules
