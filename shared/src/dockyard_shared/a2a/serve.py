"""``dockyard a2a [NAME …] [server flags] [--host H --port N --auth-token T]``: serve servers as A2A agents.

Each server is built through its :class:`~dockyard_shared.runner.ServerEntry` (the entry-point machinery
``dockyard serve`` uses), kept open with one in-process MCP session for the life of the process (its
lifespan: worker processes, connection pools), and mounted at ``/NAME/``: Agent Card at
``/NAME/.well-known/agent-card.json``, A2A JSON-RPC at ``/NAME/``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from ..flags import DockyardArgumentParser
from ..problems import Problem
from ..runner import AUTH_TOKEN_ENV, ServerEntry, StartupRefused, configure_logging, listen
from .executor import ANSWER_TIMEOUT, ToolCallExecutor
from .store import task_store

if TYPE_CHECKING:
    from a2a.server.tasks import TaskStore
    from fastmcp import FastMCP
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Agent", "build_app", "run_a2a", "serving"]

log = logging.getLogger("dockyard.a2a")

DEFAULT_PORT = 8766


@dataclass(frozen=True)
class Agent:
    """One server to serve as an agent: its name, one-line summary and built FastMCP server."""

    name: str
    summary: str
    server: FastMCP
    # The server's database (ServerEntry.database): its A2A tasks are kept there when it is PostgreSQL.
    database: str | None = None


def _version(name: str) -> str:
    try:
        return version(f"dockyard-{name}")
    except PackageNotFoundError:
        return "0"


class OriginCheck:
    """Refuse (403) a request a browser sent from a page not among ``allowed`` origins.

    A web page can POST a ``text/plain`` body to a loopback port without a preflight; with no token that
    would let any site the user visits call these tools. Requests with no ``Origin`` (agents, curl) pass.
    """

    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = {origin.rstrip("/").lower() for origin in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            origin = dict(scope.get("headers") or []).get(b"origin")
            if origin is not None and origin.decode("latin-1").rstrip("/").lower() not in self.allowed:
                from starlette.responses import JSONResponse

                refusal = JSONResponse(
                    {
                        "error": "origin_not_allowed",
                        "error_description": "Requests from browser pages are refused unless the server "
                        "was started with --allowed-origin naming the page's origin.",
                    },
                    status_code=403,
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_app(
    agents: Mapping[str, tuple[Agent, list]],
    base_url: str,
    *,
    token: str | None,
    hosts: Sequence[str],
    origins: Sequence[str] = (),
    answer_timeout: float = ANSWER_TIMEOUT,
    stores: Mapping[str, TaskStore] | None = None,
) -> Starlette:
    """The ASGI app: per agent, a public card and a JSON-RPC endpoint behind the bearer token; its tasks in
    ``stores[name]`` (default: in memory)."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.routing import Mount

    from ..http import BearerTokenMiddleware
    from .card import agent_card

    mounts = []
    for name, (agent, tools) in agents.items():
        card = agent_card(
            name, agent.summary, _version(name), f"{base_url}/{name}/", tools, bearer=token is not None
        )
        handler = DefaultRequestHandler(
            agent_executor=ToolCallExecutor(name, agent.server, tools, answer_timeout=answer_timeout),
            task_store=(stores or {}).get(name) or InMemoryTaskStore(),
            agent_card=card,
        )
        rpc = Starlette(routes=create_jsonrpc_routes(handler, "/"))
        guarded = BearerTokenMiddleware(rpc, token) if token else rpc
        routes = [*create_agent_card_routes(card), Mount("/", app=guarded)]
        mounts.append(Mount(f"/{name}", app=Starlette(routes=routes)))
    return Starlette(
        routes=mounts,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts)),
            Middleware(OriginCheck, allowed=list(origins)),
        ],
    )


@dataclass(frozen=True)
class Running:
    base_url: str
    task: asyncio.Task[None]


@asynccontextmanager
async def serving(
    agents: Sequence[Agent],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    log_level: str = "warning",
    answer_timeout: float = ANSWER_TIMEOUT,
) -> AsyncIterator[Running]:
    """Serve ``agents`` until the block ends (or the server stops: ``Running.task``)."""
    import uvicorn
    from fastmcp import Client

    from ..http import MAX_REQUEST_HEAD_BYTES, is_loopback
    from ..http_connections import (
        ConnectionGuard,
        guarded_protocol,
        quiet_accept_errors,
        raise_open_files_limit,
    )

    if not is_loopback(host) and not token:
        raise StartupRefused(
            f"Refusing to serve on {host}: a non-loopback address without a token would let anyone on the "
            f"network call these tools. Set {AUTH_TOKEN_ENV} (or --auth-token), or bind to 127.0.0.1."
        )
    async with AsyncExitStack() as stack:
        listed, stores = {}, {}
        for agent in agents:
            # Held open while serving: the server's lifespan runs once, not once per call.
            keeper = await stack.enter_async_context(Client(agent.server))
            listed[agent.name] = (agent, await keeper.list_tools())
            stores[agent.name] = await task_store(agent.name, agent.database, stack)
        listener = listen(host, port)
        bound = listener.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        base_url = f"http://{shown}:{bound}"
        hosts = ["127.0.0.1", "localhost", "[::1]", host, *allowed_hosts]
        app = build_app(
            listed,
            base_url,
            token=token,
            hosts=hosts,
            origins=allowed_origins,
            answer_timeout=answer_timeout,
            stores=stores,
        )
        # The same connection bounds as the MCP HTTP servers (runner defaults): request-head and body
        # deadlines, a connection cap.
        guard = ConnectionGuard(
            header_timeout=10.0, body_timeout=30.0, max_connections=1000, open_files=raise_open_files_limit()
        )
        quiet_accept_errors(asyncio.get_running_loop(), guard)
        config = uvicorn.Config(
            app,
            http=guarded_protocol(guard),
            log_config=None,
            log_level=log_level.lower(),
            lifespan="off",
            timeout_keep_alive=15,
            timeout_graceful_shutdown=2,
            ws="none",
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
            proxy_headers=False,
        )
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[listener]), name="dockyard a2a")
        while not server.started and not task.done():
            await asyncio.sleep(0.01)  # uvicorn sets `started` without an event to wait on
        if task.done():
            task.result()
        try:
            yield Running(base_url, task)
        finally:
            server.should_exit = True
            await task


def _parser(prog: str, entry: ServerEntry | None) -> argparse.ArgumentParser:
    parser = entry.parser(with_runner=False) if entry else DockyardArgumentParser()
    parser.prog = prog
    parser.description = "Serve Dockyard servers as A2A agents over HTTP, each at /NAME/ (its Agent Card at /NAME/.well-known/agent-card.json)."
    group = parser.add_argument_group("A2A (HTTP)")
    group.add_argument("--host", default="127.0.0.1", help="HTTP bind address")
    group.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP port (0 picks a free one)")
    group.add_argument(
        "--auth-token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' on the A2A endpoints (default: ${AUTH_TOKEN_ENV})",
    )
    group.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="extra Host header value to accept",
    )
    group.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="browser Origin to accept (repeatable); a request from any other page is refused",
    )
    group.add_argument(
        "--answer-timeout",
        type=float,
        default=ANSWER_TIMEOUT,
        metavar="SECONDS",
        help="how long a task in input-required waits for the caller's answer before the question counts "
        "as cancelled (the tool then changes nothing)",
    )
    group.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper
    )
    return parser


def _built(entries: Mapping[str, ServerEntry], argv: Sequence[str]) -> tuple[list[Agent], argparse.Namespace]:
    """Each chosen server built from the flags it knows (all on their `serve all` defaults if none given).

    Every refusal (a flag no chosen server takes, a public address without a token) comes before any
    server is built, so a refused start touches nothing."""
    from ..http import is_loopback

    prog = f"dockyard a2a {' '.join(entries)}"
    common = _parser(prog, None).parse_known_args(list(argv))[0]
    parsed, leftovers = [], None
    for entry in entries.values():
        parser = _parser(prog, entry)
        if len(entries) == 1:
            args, unknown = parser.parse_args(list(argv)), []
        else:
            args, unknown = parser.parse_known_args(list(argv))
        leftovers = set(unknown) if leftovers is None else leftovers & set(unknown)
        if entry.authenticates(args):
            raise StartupRefused(
                f"dockyard-{entry.name} checks its own bearer tokens (e.g. --actors); dockyard a2a does not map "
                "A2A callers to them yet. Serve it without them and protect the agents with --auth-token."
            )
        parsed.append((entry, args))
    if leftovers:
        raise StartupRefused(
            f"no chosen server takes {sorted(leftovers)[0]!r}; see dockyard a2a NAME --help."
        )
    common.token = common.auth_token or os.environ.get(AUTH_TOKEN_ENV) or None
    if not is_loopback(common.host) and not common.token:
        raise StartupRefused(
            f"Refusing to serve on {common.host}: a non-loopback address without a token would let anyone "
            f"on the network call these tools. Set {AUTH_TOKEN_ENV} (or --auth-token), or bind to 127.0.0.1."
        )
    given = _has_server_flags(argv)
    agents = [
        Agent(entry.name, entry.summary, entry.build(args), entry.database(args))
        if given
        else Agent(entry.name, entry.summary, entry.default_server())
        for entry, args in parsed
    ]
    return agents, common


def _has_server_flags(argv: Sequence[str]) -> bool:
    ours = {
        "--host",
        "--port",
        "--auth-token",
        "--allowed-host",
        "--allowed-origin",
        "--answer-timeout",
        "--log-level",
    }
    return any(a.startswith("-") and a.split("=")[0] not in ours for a in argv)


def run_a2a(servers: Mapping[str, ServerEntry], argv: Sequence[str]) -> int:
    """``dockyard a2a`` after the names: the exit status."""
    names = []
    rest = list(argv)
    while rest and not rest[0].startswith("-"):
        names.append(rest.pop(0))
    unknown = [name for name in names if name not in servers]
    if unknown:
        print(
            f"dockyard: no server named {unknown[0]!r}; installed: {', '.join(servers) or 'none'}.",
            file=sys.stderr,
        )
        return 2
    chosen = {name: servers[name] for name in (names or servers)}
    if not chosen:
        print("dockyard: no Dockyard server is installed.", file=sys.stderr)
        return 2
    try:
        agents, args = _built(chosen, rest)
        configure_logging(args.log_level)
        asyncio.run(_serve_forever(agents, args, args.token))
    except (StartupRefused, Problem) as refusal:
        print(f"dockyard: {getattr(refusal, 'what', refusal)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve_forever(agents: Sequence[Agent], args: argparse.Namespace, token: str | None) -> None:
    async with serving(
        agents,
        host=args.host,
        port=args.port,
        token=token,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        answer_timeout=args.answer_timeout,
        log_level=args.log_level,
    ) as running:
        for agent in agents:
            log.info(
                "A2A agent dockyard-%s: card at %s/%s/.well-known/agent-card.json%s",
                agent.name,
                running.base_url,
                agent.name,
                " (bearer token required for calls)" if token else "",
            )
        await running.task
