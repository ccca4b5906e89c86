"""Each upstream assumption dockyard_shared.fastmcp_compat rests on, checked directly: run this first after
upgrading FastMCP, the MCP SDK or uvicorn. (The behaviour each shim serves is tested through the protocol
by the tests its entry names.)"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect

import griffe
import mcp.server.stdio as sdk_stdio
import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.mixins import transport

from dockyard_shared import fastmcp_compat as compat
from dockyard_shared.annotations import READ_ONLY
from dockyard_shared.server import FIXED_LISTS, new_server
from dockyard_shared.toolsets import Exposure, Toolset, install, prompt
from tests.harness import LEGACY, MODERN, open_session


def test_fastmcp_reads_session_state_through_the_property_dockyard_overrides():
    assert isinstance(inspect.getattr_static(FastMCP, "_state_store"), property)
    server = new_server("compat", instructions="test")
    assert isinstance(server._state_store, compat._StateUntilWritten)


async def test_a_plain_docstring_is_listed_as_it_is_and_griffe_parses_nothing(monkeypatch):
    parsed: list[str] = []
    original = griffe.Docstring.parse

    def counting(self, *args, **kwargs):  # observed, not changed
        parsed.append(self.value)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(griffe.Docstring, "parse", counting)
    server = new_server("compat", instructions="test")
    toolset = Toolset("plain", "plain tools", read_only=True)

    def register(registrar):
        @registrar.tool(annotations=READ_ONLY)
        def echo(word: str) -> str:
            """Echo a word.

            Use when: testing.
            """
            return word

    @prompt(server)
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello {name}"

    install(server, Exposure(), {toolset: register})
    async with open_session(server, era=LEGACY) as session:
        (tool,) = await session.list_tools()
    assert tool.description == "Echo a word.\n\nUse when: testing."
    assert parsed == [], "FastMCP parsed a docstring given as the description"
    assert (await server.get_prompt("greet")).description == "Greet someone by name."


async def test_fastmcp_opens_the_sdks_stdio_server_which_the_runner_replaces():
    assert transport.stdio_server is sdk_stdio.stdio_server
    sentinel = object()
    with compat.stdio_server_replaced(sentinel):  # type: ignore[arg-type]
        assert transport.stdio_server is sentinel
    assert transport.stdio_server is sdk_stdio.stdio_server


@pytest.mark.parametrize("era", [LEGACY, MODERN])
async def test_the_era_check_agrees_with_fastmcps_own(era):
    server = new_server("compat", instructions="test")

    @server.tool
    def eras(ctx: Context) -> list[bool]:
        """Which era, by both checks."""
        return [compat.is_modern_protocol(ctx), ctx._is_modern_protocol()]

    async with open_session(server, era=era) as session:
        result = await session.call_ok("eras", {})
    assert result.data == [era == MODERN] * 2


def test_the_sdks_lowlevel_server_takes_request_handlers():
    lowlevel = compat.lowlevel_server(new_server("compat", instructions="test"))
    assert callable(lowlevel.add_request_handler)
    # The per-method cache hints new_server sets are read from this table when a result is sent.
    assert set(lowlevel.cache_hints) == set(FIXED_LISTS)


async def test_every_request_of_a_session_reaches_one_connection():
    server = new_server("compat", instructions="test")
    seen: list[object] = []

    @server.tool
    def where(ctx: Context) -> str:
        """The request's connection."""
        seen.append(compat.session_connection(ctx))
        return "ok"

    for _ in range(2):
        async with open_session(server, era=LEGACY) as session:
            await session.call_ok("where", {})
            await session.call_ok("where", {})
    assert seen[0] is seen[1] and seen[2] is seen[3] and seen[0] is not seen[2]


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 9) if name in ("peername", "sockname") else default

    def write(self, data) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def test_what_the_connection_guard_reads_of_uvicorns_h11_protocol():
    import uvicorn
    from uvicorn.server import ServerState

    async def app(scope, receive, send):
        if scope["type"] == "http":
            await receive()  # the body's first part; the test answers in the app's place

    config = uvicorn.Config(app, log_config=None, lifespan="off")
    config.load()
    events: list[str] = []

    class Probe(compat.guarded_h11_base()):
        def after_event(self) -> None:
            events.append("event")

    protocol = Probe(config=config, server_state=ServerState(), app_state={})
    transport = _Transport()
    protocol.connection_made(transport)
    assert protocol.waiting_for_client() and not protocol.serving()
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    assert events == ["event"]
    assert protocol.serving() and protocol.receiving_body() and not protocol.response_started()
    assert protocol.current_request() is not None and not protocol.waiting_for_client()
    assert protocol.peer() == ("127.0.0.1", 9)
    protocol.answer_and_close(408, b"late")
    assert transport.written.startswith(b"HTTP/1.1 408 ") and transport.closed
    assert not protocol.serving() and protocol.response_started()
    assert protocol._should_upgrade() is False
    protocol.connection_lost(None)
    await asyncio.sleep(0)  # let the app's task see the disconnect


def test_the_modules_fastmcp_imports_on_a_first_call_exist():
    for module in compat.FRAMEWORK_IMPORTS:
        assert importlib.util.find_spec(module) is not None, module
