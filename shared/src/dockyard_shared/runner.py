"""The runner every Dockyard server's ``main()`` calls: one command, stdio or Streamable HTTP.

A server describes itself with a :class:`ServerEntry` (its name, its own flags and a ``build``
function) and exposes it under the ``dockyard.servers`` entry-point group, so the ``dockyard`` command
can find it without importing it by name::

    entry = ServerEntry(name="sqlite", summary="...", add_arguments=add_arguments, build=build)

    def main() -> None:
        raise SystemExit(run_server(entry))

Common flags (``--transport``, ``--host``, ``--port``, ``--path``, ``--log-level``, ``--auth-token``,
``--allowed-host``, ``--allowed-origin``, ``--session-idle-timeout``, ``--session-init-timeout``,
``--max-sessions-per-client``, ``--header-timeout``, ``--body-timeout``, ``--max-connections``,
``--audit-log``) and the tool-selection flags of :mod:`dockyard_shared.toolsets` (``--toolsets``, ``--tools``, ``--exclude-tools``,
``--read-only``, ``--trust-model-confirmation``) are added here so every server accepts the same ones.
Logs go to stderr only: on stdio, stdout is the protocol, and malformed input lines get their JSON-RPC
errors (:mod:`dockyard_shared.stdio`).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .gc_tuning import raise_young_threshold, start_up_without_collections, tune_garbage_collector

__all__ = [
    "ServerEntry",
    "add_runner_arguments",
    "configure_logging",
    "http_options",
    "run_server",
    "serve",
]

log = logging.getLogger("dockyard")

AUTH_TOKEN_ENV = "DOCKYARD_AUTH_TOKEN"


def _quiet_fastmcp() -> None:
    # Before fastmcp is imported: no banner, no PyPI update check (hosts may have no network, and
    # a stdio server must not write anything but protocol messages to stdout).
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
    # FastMCP's session-state store (py-key-value, read on every list request) runs every call through
    # beartype's runtime type checks, instrumented at import: a third of its import time on a client's
    # first tools/list (bench/startup). Its own switch turns the checks off; the store works the same.
    os.environ.setdefault("PY_KEY_VALUE_DISABLE_BEARTYPE", "true")


_quiet_fastmcp()

from .flags import DockyardArgumentParser, StartupRefused, network_argument, positive_argument  # noqa: E402
from .signin import add_sign_in_arguments, protect, sign_in_note, signs_in  # noqa: E402
from .toolsets import Toolset, add_exposure_arguments  # noqa: E402

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from .http import HttpOptions

# This module is imported by every server's entry point, and so by `dockyard list`: it imports neither
# FastMCP nor the MCP SDK (nor anyio, nor the HTTP stack), which `run_server` imports once the garbage
# collector is paused (see `start_up_without_collections`).


@dataclass(frozen=True)
class ServerEntry:
    """How to build one Dockyard server from its command line."""

    name: str
    summary: str
    build: Callable[[argparse.Namespace], FastMCP]
    add_arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    # Arguments a generated host config passes (``dockyard config``); empty means the defaults.
    config_args: Sequence[str] = field(default_factory=tuple)
    # The server's toolsets, for `dockyard list` and for checking --toolsets in `dockyard config`.
    toolsets: Sequence[Toolset] = field(default_factory=tuple)
    # Whether the server these arguments build checks bearer tokens itself (its FastMCP ``auth``, e.g.
    # dockyard-tasks --actors): that satisfies the non-loopback rule of check_exposure as --auth-token does.
    authenticates: Callable[[argparse.Namespace], bool] = lambda args: False
    # The arguments of the server ``dockyard serve all`` builds (read when it builds it: they may name the
    # working directory); none means the defaults.
    serve_all_args: Callable[[], Sequence[str]] = lambda: ()
    # Work the entry point starts as soon as its arguments are parsed, before FastMCP and the MCP SDK are
    # imported (~0.5 s), so that it overlaps them: dockyard-sqlite starts its first worker process here.
    # It must import neither, and must not fail: ``build`` does the work again, and reports, if needed.
    before_imports: Callable[[argparse.Namespace], None] = lambda args: None
    # The database URL the server these arguments build keeps its state in, or None: layers that keep
    # state of their own beside it use it (``dockyard a2a`` keeps its A2A tasks there when it is PostgreSQL,
    # so any replica answers). Must not connect; a URL it cannot read is None (``build`` reports it).
    database: Callable[[argparse.Namespace], str | None] = lambda args: None

    def parser(self, *, with_runner: bool = True) -> argparse.ArgumentParser:
        parser = DockyardArgumentParser(
            prog=f"dockyard-{self.name}",
            description=self.summary,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        self.add_arguments(parser)
        add_exposure_arguments(parser)
        if with_runner:
            add_runner_arguments(parser)
        return parser

    def default_server(self) -> FastMCP:
        """What ``dockyard serve all`` serves: the server built from ``serve_all_args``."""
        return self.build(self.parser(with_runner=False).parse_args(list(self.serve_all_args())))


# The HTTP guard's limits: each a positive number (zero or less would disable the guard, not tighten it).
_HTTP_LIMITS: tuple[tuple[str, Callable[[str], float], float, str, str], ...] = (
    ("--session-idle-timeout", float, 900.0, "SECONDS", "close HTTP sessions idle for this long"),
    (
        "--session-init-timeout",
        float,
        10.0,
        "SECONDS",
        "close an HTTP session that sent nothing after initialize for this long",
    ),
    (
        "--max-sessions-per-client",
        int,
        100,
        "N",
        "open HTTP sessions (2025-11-25 era) one client may hold (every loopback address counts as one client)",
    ),
    (
        "--header-timeout",
        float,
        10.0,
        "SECONDS",
        "close an HTTP connection that has not sent a complete request head for this long",
    ),
    (
        "--body-timeout",
        float,
        30.0,
        "SECONDS",
        "answer 408 and close an HTTP connection whose request body has not all arrived this long after its head",
    ),
    (
        "--max-connections",
        int,
        1000,
        "N",
        "open HTTP connections; one more closes the oldest not being served or still owing its request "
        "(kept a tenth below the file-descriptor limit)",
    ),
)


def add_runner_arguments(parser: argparse.ArgumentParser, *, default_transport: str = "stdio") -> None:
    group = parser.add_argument_group("transport (common to every Dockyard server)")
    group.add_argument("--transport", choices=["stdio", "http"], default=default_transport)
    group.add_argument("--host", default="127.0.0.1", help="HTTP bind address")
    group.add_argument("--port", type=int, default=8765, help="HTTP port (0 picks a free one)")
    group.add_argument("--path", default="/mcp", help="HTTP endpoint path")
    group.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper
    )
    group.add_argument(
        "--auth-token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' over HTTP (default: ${AUTH_TOKEN_ENV}); "
        "prefer the environment variable, a flag shows in the process list",
    )
    group.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="extra Host header value to accept over HTTP (repeatable); "
        "loopback and --host are always accepted",
    )
    group.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="browser Origin to accept over HTTP (repeatable), e.g. http://localhost:6274",
    )
    group.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        type=network_argument,
        metavar="CIDR",
        help="a load balancer's address or network (repeatable): its X-Forwarded-For names the client the "
        "per-client caps count; anyone else's is ignored (default: the TCP peer is the client)",
    )
    for flag, kind, default, unit, help in _HTTP_LIMITS:
        group.add_argument(flag, type=positive_argument(kind), default=default, metavar=unit, help=help)
    group.add_argument(
        "--audit-log",
        default=None,
        metavar="PATH",
        help="append one JSON line per tool call, resource read and prompt render "
        "(time, server, what, redacted arguments, duration, outcome)",
    )
    add_sign_in_arguments(parser)


# The records FastMCP writes, with a traceback, for every failed tool call, resource read and prompt.
_FASTMCP_FAILURES = ("Error calling tool", "Error reading resource", "Error rendering prompt")


class _QuietExpectedFailures(logging.Filter):
    """One line for an expected failure, one traceback for an unexpected one.

    A :class:`~dockyard_shared.problems.Problem` (an unknown table, a refused path) is an outcome the model
    reads, not a fault: it is logged at INFO with its reason and no traceback. For anything else FastMCP's
    own record keeps its ERROR level but loses its traceback, because ProblemMiddleware logs the exception
    the tool raised, once, rather than FastMCP's wrapper around it. A client gone before its request
    body arrived (or closed by the body deadline) is not a fault either: a DEBUG line, as the other
    connections the HTTP guard closes, not the MCP SDK's traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from starlette.requests import ClientDisconnect

        from .errors import find_problem

        if not record.exc_info or record.exc_info[1] is None:
            return True
        if isinstance(record.exc_info[1], ClientDisconnect):
            record.msg, record.args = f"{record.getMessage()}: the client disconnected mid-request", ()
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        problem = find_problem(record.exc_info[1])
        if problem is not None:
            record.msg, record.args = f"{record.getMessage()}: {problem.what}", ()
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        elif record.name.startswith("fastmcp") and record.getMessage().startswith(_FASTMCP_FAILURES):
            record.exc_info = record.exc_text = None
        return True


def configure_logging(level: str) -> None:
    """Everything to stderr, one format, at ``level``."""
    # FastMCP installs its own (rich) handlers when it is imported: import it first, so these replace them.
    import fastmcp  # noqa: F401

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_QuietExpectedFailures())
    for name in ("", "fastmcp", "mcp", "uvicorn", "uvicorn.error", "docket"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = name == ""
    logging.getLogger("uvicorn.access").setLevel(max(logging.WARNING, logging.getLevelName(level)))


def http_options(args: argparse.Namespace) -> HttpOptions:
    from .http import HttpOptions

    return HttpOptions(
        host=args.host,
        port=args.port,
        path="/" + args.path.strip("/"),
        auth_token=args.auth_token or os.environ.get(AUTH_TOKEN_ENV) or None,
        allowed_hosts=tuple(args.allowed_host),
        allowed_origins=tuple(args.allowed_origin),
        session_idle_timeout=args.session_idle_timeout,
        session_init_timeout=args.session_init_timeout,
        max_sessions_per_client=args.max_sessions_per_client,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
        trusted_proxies=tuple(getattr(args, "trusted_proxy", ())),
    )


def check_exposure(options: HttpOptions, *, authenticated: bool = False) -> None:
    """Refuse a non-loopback bind unless callers must present a token: the runner's own
    (--auth-token) or, ``authenticated``, the server's (see :func:`authenticate_themselves`)."""
    from .http import is_loopback

    if not is_loopback(options.host) and not options.auth_token and not authenticated:
        raise StartupRefused(
            f"Refusing to serve on {options.host}: a non-loopback address without a token would let "
            f"anyone on the network call these tools. Set {AUTH_TOKEN_ENV} (or --auth-token) or the "
            "server's own tokens (e.g. dockyard-tasks --actors), or bind to 127.0.0.1."
        )


def authenticate_themselves(servers: Mapping[str, FastMCP]) -> bool:
    """Whether every one of ``servers`` verifies bearer tokens itself (a FastMCP ``auth`` provider)."""
    return bool(servers) and all(server.auth is not None for server in servers.values())


def _attach_audit_log(servers: Mapping[str, FastMCP], path: str | None) -> None:
    if not path:
        return
    from .audit import AuditLog, AuditMiddleware

    sink = AuditLog(path)
    for name, server in servers.items():
        server.add_middleware(AuditMiddleware(sink, server_name=name))


async def serve(
    servers: Mapping[str, FastMCP],
    args: argparse.Namespace,
    *,
    prefixed: bool = False,
) -> None:
    """Serve ``servers`` as ``args`` say (stdio for exactly one server, or HTTP), with the warm-up
    (:mod:`dockyard_shared.warmup`) started once a client's first exchange is over."""
    from .tracing import export_traces
    from .warmup import WarmUpTrigger, start

    export_traces(next(iter(servers)) if len(servers) == 1 else "all")
    _attach_audit_log(servers, getattr(args, "audit_log", None))
    raise_young_threshold()
    trigger = WarmUpTrigger(lambda idle: start(servers.values(), then=tune_garbage_collector, idle=idle))
    for server in servers.values():
        server.add_middleware(trigger)
    if args.transport == "stdio":
        from .stdio import run_stdio

        (server,) = servers.values()
        await run_stdio(server)
        return

    import asyncio

    import uvicorn

    from .http import MAX_REQUEST_HEAD_BYTES, build_http_app
    from .http_connections import (
        ConnectionGuard,
        guarded_protocol,
        quiet_accept_errors,
        raise_open_files_limit,
    )

    options = http_options(args)
    # Bound before anything says "serving": a port in use is a refusal the user can act on, not
    # uvicorn's bare "[Errno 98]" after the log already claimed the server was up.
    listener = listen(options.host, options.port)
    port = listener.getsockname()[1]  # the real one when --port 0 asked for a free one
    # --auth jwt: each server verifies tokens itself (its FastMCP auth), set before its app is built.
    protect(servers, args, host=options.host, port=port, path=options.path, prefixed=prefixed)
    check_exposure(options, authenticated=authenticate_themselves(servers))
    app = build_http_app(servers, options, prefixed=prefixed)
    guard = ConnectionGuard(
        header_timeout=options.header_timeout,
        body_timeout=options.body_timeout,
        max_connections=options.max_connections,
        open_files=raise_open_files_limit(),
    )
    app.state.metrics.count_streams(lambda: guard.open_streams)
    quiet_accept_errors(asyncio.get_running_loop(), guard)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_config=None,
        log_level=args.log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=2,
        # Bounds what a client can make the server hold: oversized bodies are refused by the SDK,
        # idle keep-alive connections are dropped, slow or half-open ones are bounded by the guard.
        timeout_keep_alive=15,
        http=guarded_protocol(guard),
        ws="none",
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
        # X-Forwarded-For from a loopback peer would otherwise name any client address it likes,
        # and --max-sessions-per-client counts sessions per address.
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    where = ", ".join(
        f"http://{options.host}:{port}{'/' + name if prefixed else ''}{options.path}" for name in servers
    )
    log.info(
        "serving %s on %s%s",
        ", ".join(servers),
        where,
        " (bearer token required)" if options.auth_token else sign_in_note(args),
    )
    await server.serve(sockets=[listener])


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (as uvicorn binds one), or :class:`StartupRefused` saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise StartupRefused(
                f"port {port} on {host} is already in use (another server, or another copy of this one). "
                "Pick another port with --port N (--port 0 picks a free one), or stop what holds it."
            ) from None
        raise StartupRefused(
            f"cannot listen on {host}:{port}: {error.strerror or error}. Check --host and --port "
            "(--host 127.0.0.1 for this machine only; --port 0 picks a free port)."
        ) from None
    sock.set_inheritable(True)
    return sock


def run_server(entry: ServerEntry, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, build ``entry``'s server and serve it; the exit status is returned."""
    args = entry.parser().parse_args(argv)
    entry.before_imports(args)
    try:
        with start_up_without_collections():
            configure_logging(args.log_level)
            if args.transport == "http":
                # Before building (a refused start touches nothing); serve() checks the built server.
                check_exposure(http_options(args), authenticated=entry.authenticates(args) or signs_in(args))
            server = entry.build(args)
        import anyio

        anyio.run(serve, {entry.name: server}, args)
    except StartupRefused as refusal:
        print(f"dockyard-{entry.name}: {refusal}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        from .problems import Problem

        if isinstance(error, Problem):
            # A bad flag value found while building (a missing database, a root that is no
            # directory): the user reads this, so the problem text is enough, no traceback.
            print(f"dockyard-{entry.name}: {error.what}", file=sys.stderr)
            if error.next_step:
                print(f"  {error.next_step}", file=sys.stderr)
            return 2
        raise
    return 0
