"""Open an MCP client session to a Dockyard server, any transport, either protocol era.

Every server's tests connect through here, so each assertion can run against every way a host
reaches a server:

=========  =====================================================  ===========================================
transport  2025-11-25 ("legacy": sessions, initialize)              2026-07-28 ("modern", the default)
=========  =====================================================  ===========================================
memory     ``fastmcp.Client(server, mode="legacy")``               ``fastmcp.Client(server)``
stdio      official ``mcp.ClientSession`` + ``stdio_client``        ``fastmcp.Client(StdioTransport(...))``
http       official ``mcp.ClientSession`` + ``streamable_http``     ``fastmcp.Client(url)``
=========  =====================================================  ===========================================

stdio and HTTP spawn the real console script (``Launch``); HTTP waits for ``/health`` first.
:class:`Session` hides the two client libraries behind one small interface; tool results come back as
:class:`ToolOutcome` whatever the client, and an error result never raises.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import mcp.types as mt
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

Era = Literal["2025-11-25", "2026-07-28"]
LEGACY: Era = "2025-11-25"
MODERN: Era = "2026-07-28"
ERAS: tuple[Era, ...] = (LEGACY, MODERN)
TRANSPORTS = ("memory", "stdio", "http")
# The request that opens a 2025-11-25 session, for tests that speak raw JSON-RPC.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}

REPO_ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# Answers an elicitation: given the message, return the content to accept with, or None to decline.
Elicit = Callable[[str], dict[str, Any] | None]
# The MCP roots a client shares (file:// URIs): a list, or a function read each time the server asks.
Roots = list[str] | Callable[[], list[str]]


@dataclass(frozen=True)
class Launch:
    """How to start a server process: a console script and its arguments."""

    script: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def command(self) -> list[str]:
        executable = VENV_BIN / self.script
        resolved = str(executable) if executable.exists() else shutil.which(self.script) or self.script
        return [resolved, *self.args]

    def environment(self) -> dict[str, str]:
        # The child gets the test's environment (PATH, HOME…) plus the launch's own variables; the
        # fastmcp stdio transport would otherwise pass only a handful of variables.
        return {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", **self.env}

    def run(
        self, *extra: str, unset: tuple[str, ...] = (), timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the server to its exit (a refused start-up, ``--help``) with stdin closed; its output as text.
        ``unset`` names environment variables the child must not inherit."""
        environment = {k: v for k, v in self.environment().items() if k not in unset}
        return subprocess.run(
            [*self.command(), *extra],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
        )


@dataclass(frozen=True)
class ToolOutcome:
    is_error: bool
    text: str
    structured: Any
    content: list[Any]

    @property
    def data(self) -> Any:
        """The structured result (unwrapping FastMCP's ``{"result": ...}`` for non-object returns)."""
        value = self.structured
        if isinstance(value, dict) and set(value) == {"result"}:
            return value["result"]
        if value is None and self.text:
            try:
                return json.loads(self.text)
            except ValueError:
                return self.text
        return value


def text_of(content: list[Any]) -> str:
    """The text blocks of a tool result, joined by newlines."""
    return "\n".join(item.text for item in content if getattr(item, "type", None) == "text")


class Session:
    """One interface over ``fastmcp.Client`` and ``mcp.ClientSession``."""

    def __init__(self, client: Client | ClientSession, *, transport: str, era: Era) -> None:
        self._client = client
        self.transport = transport
        self.era = era

    @property
    def raw(self) -> Client | ClientSession:
        return self._client

    @property
    def _is_sdk(self) -> bool:
        return isinstance(self._client, ClientSession)

    async def list_tools(self) -> list[mt.Tool]:
        if self._is_sdk:
            return list((await self._client.list_tools()).tools)
        return await self._client.list_tools()

    async def tool_names(self) -> set[str]:
        return {tool.name for tool in await self.list_tools()}

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> ToolOutcome:
        if self._is_sdk:
            result = await self._client.call_tool(name, arguments or {}, read_timeout_seconds=timeout)
            return ToolOutcome(
                bool(result.is_error), text_of(result.content), result.structured_content, result.content
            )
        result = await self._client.call_tool(name, arguments or {}, raise_on_error=False, timeout=timeout)
        return ToolOutcome(
            bool(result.is_error), text_of(result.content), result.structured_content, result.content
        )

    async def call_ok(self, name: str, arguments: dict[str, Any] | None = None) -> ToolOutcome:
        """Call a tool that must succeed; a failure shows its error text."""
        outcome = await self.call(name, arguments)
        assert not outcome.is_error, f"{name} failed: {outcome.text}"
        return outcome

    async def call_error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool that must fail with an error result; returns the error text."""
        outcome = await self.call(name, arguments)
        assert outcome.is_error, f"{name} unexpectedly succeeded: {outcome.text[:500]}"
        return outcome.text

    async def list_resources(self) -> list[mt.Resource]:
        if self._is_sdk:
            return list((await self._client.list_resources()).resources)
        return await self._client.list_resources()

    async def list_resource_templates(self) -> list[mt.ResourceTemplate]:
        if self._is_sdk:
            return list((await self._client.list_resource_templates()).resource_templates)
        return await self._client.list_resource_templates()

    async def read_resource(self, uri: str) -> str:
        """The text of a resource (JSON resources come back as their JSON text)."""
        if self._is_sdk:
            contents = (await self._client.read_resource(uri)).contents
        else:
            contents = await self._client.read_resource(uri)
        return "".join(getattr(item, "text", "") for item in contents)

    async def list_prompts(self) -> list[mt.Prompt]:
        if self._is_sdk:
            return list((await self._client.list_prompts()).prompts)
        return await self._client.list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> list[str]:
        """The text of each message of a rendered prompt."""
        result = await self._client.get_prompt(name, arguments or {})
        return [getattr(message.content, "text", "") for message in result.messages]

    async def complete(
        self,
        ref: mt.ResourceTemplateReference | mt.PromptReference,
        name: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> list[str]:
        argument = {"name": name, "value": value}
        if self._is_sdk:
            result = await self._client.complete(ref, argument, context_arguments=context)
            return list(result.completion.values)
        completion = await self._client.complete(ref, argument, context_arguments=context)
        return list(completion.values)

    async def roots_changed(self) -> None:
        """Tell the server the client's roots changed (2025-11-25; the 2026-07-28 era has no such
        notification: its servers ask for the roots with every request)."""
        await self._client.send_roots_list_changed()

    async def ping(self) -> bool:
        """Is the server still answering? The 2026-07-28 era dropped ``ping`` (servers answer
        "Method not found"), so there a tools/list round trip stands in for it."""
        if self._is_sdk:
            await self._client.send_ping()
            return True
        if self.era == LEGACY:
            return await self._client.ping()
        return bool(await self._client.list_tools())


def _fastmcp_elicitation(elicit: Elicit | None):
    if elicit is None:
        return None

    async def handler(message, response_type, params, context):
        from fastmcp.client.elicitation import ElicitResult

        answer = elicit(message)
        if answer is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=answer)

    return handler


def _sdk_elicitation(elicit: Elicit | None):
    if elicit is None:
        return None

    async def callback(context, params):
        answer = elicit(params.message)
        if answer is None:
            return mt.ElicitResult(action="decline")
        return mt.ElicitResult(action="accept", content=answer)

    return callback


def _roots_source(roots: Roots | None) -> Callable[[], list[str]] | None:
    if roots is None:
        return None
    return roots if callable(roots) else lambda: list(roots)


def _fastmcp_roots(roots: Roots | None):
    source = _roots_source(roots)
    return None if source is None else (lambda context: source())


def _sdk_roots(roots: Roots | None):
    source = _roots_source(roots)
    if source is None:
        return None

    async def callback(context):
        return mt.ListRootsResult(roots=[mt.Root(uri=uri) for uri in source()])

    return callback


@asynccontextmanager
async def open_session(
    target: FastMCP | Launch | str,
    *,
    era: Era = MODERN,
    elicit: Elicit | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
    message_handler: Callable[[Any], Awaitable[None]] | None = None,
    roots: Roots | None = None,
) -> AsyncIterator[Session]:
    """A session to ``target``: a FastMCP server (in memory), a Launch (stdio) or an HTTP endpoint URL.

    ``message_handler`` receives the server's notifications (resource updates, list changes…).
    ``roots``: the file:// URIs the client shares as MCP roots (none: the client declares no roots)."""
    async with AsyncExitStack() as stack:
        if isinstance(target, FastMCP):
            transport = "memory"
            mode = "legacy" if era == LEGACY else "auto"
            client = Client(
                target,
                mode=mode,
                elicitation_handler=_fastmcp_elicitation(elicit),
                timeout=timeout,
                message_handler=message_handler,
                roots=_fastmcp_roots(roots),
            )
            await stack.enter_async_context(client)
            yield Session(client, transport=transport, era=era)
            return
        transport = "stdio" if isinstance(target, Launch) else "http"
        if era == MODERN:
            if isinstance(target, Launch):
                command, *args = target.command()
                fm_transport = StdioTransport(command, args, env=target.environment(), cwd=target.cwd)
            else:
                fm_transport = StreamableHttpTransport(target, headers=headers or {})
            client = Client(
                fm_transport,
                elicitation_handler=_fastmcp_elicitation(elicit),
                timeout=timeout,
                message_handler=message_handler,
                roots=_fastmcp_roots(roots),
            )
            await stack.enter_async_context(client)
            yield Session(client, transport=transport, era=era)
            return
        if isinstance(target, Launch):
            command, *args = target.command()
            params = StdioServerParameters(
                command=command, args=args, env=target.environment(), cwd=target.cwd
            )
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            import httpx2

            http_client = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(timeout, read=timeout))
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(target, http_client=http_client)
            )
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                read_timeout_seconds=timeout,
                elicitation_callback=_sdk_elicitation(elicit),
                message_handler=message_handler,
                list_roots_callback=_sdk_roots(roots),
            )
        )
        await session.initialize()
        yield Session(session, transport=transport, era=era)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class HttpServer:
    base_url: str
    process: subprocess.Popen
    log_path: Path

    def url(self, path: str = "/mcp") -> str:
        return self.base_url + path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _limit_open_files(limit: int) -> Callable[[], None]:
    def apply() -> None:  # runs in the child, between fork and exec
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


@contextmanager
def http_server(
    launch: Launch,
    *,
    extra_args: tuple[str, ...] = (),
    log_dir: Path,
    startup_timeout: float = 60,
    open_files_limit: int | None = None,
) -> Iterator[HttpServer]:
    """Run ``launch`` over Streamable HTTP on a free loopback port until the block ends.

    ``open_files_limit`` caps the process's file descriptors (soft and hard ``RLIMIT_NOFILE``), as
    a machine with the common default of 1,024 would.
    """
    port = free_port()
    log_path = log_dir / f"{launch.script}-{port}.log"
    command = [
        *launch.command(),
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra_args,
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=launch.environment(),
            cwd=launch.cwd,
            preexec_fn=None if open_files_limit is None else _limit_open_files(open_files_limit),
        )
    base_url = f"http://127.0.0.1:{port}"
    server = HttpServer(base_url, process, log_path)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"{launch.script} exited with {process.returncode} before serving:\n{server.log()}"
                )
            try:
                if httpx.get(base_url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{launch.script} did not answer /health within {startup_timeout}s:\n{server.log()}"
                )
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
