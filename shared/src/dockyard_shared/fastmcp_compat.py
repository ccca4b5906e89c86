"""Every use Dockyard makes of an upstream private attribute or undocumented behaviour, in one place.

FastMCP, the MCP SDK and uvicorn may change any of these in a minor release. Each shim below is named,
says the versions it was checked on, the upstream change that would let it go, and the test that fails
when an upgrade breaks it. Nothing outside this module touches a private attribute of those libraries;
an upgrade is checked by running the tests listed here (``uv run pytest tests/shared/test_fastmcp_compat.py``
first: it checks each assumption directly).

Checked on: fastmcp 4.1.4 (4.1.2 before fastmcp-tasks pinned it), mcp 2.3.0 (mcp-types 2.3.0), uvicorn 0.54.0 (pinned to 0.54.x in
``shared/pyproject.toml``), h11 0.16.0.

uvicorn and h11 are imported only by the shim that needs them (HTTP only); ``toolsets``, which
``dockyard list`` reads without importing FastMCP, imports this module where it registers a tool.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fastmcp import Context, FastMCP
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = [
    "FRAMEWORK_IMPORTS",
    "DockyardServer",
    "described",
    "guarded_h11_base",
    "is_modern_protocol",
    "lowlevel_server",
    "session_connection",
    "stdio_server_replaced",
]


# -- 1. Session-state store made on first write ------------------------------------------------------
# Private: ``FastMCP._state_store`` (a property FastMCP reads on every listing and tool lookup).
# Why: its first read built py-key-value's adapter and memory store, whose package installs beartype's
# import hook: ~100 ms of a first ``tools/list`` (bench/startup). Until a first write the store is empty,
# so a read answers the ``default`` the real store would.
# Upstream change that removes it: FastMCP skipping the store when no session visibility rule was set, or
# importing py-key-value without beartype's hook.
# Test: tests/shared/test_session_state.py; tests/shared/test_fastmcp_compat.py (the property exists).


class _StateUntilWritten:
    """FastMCP's session-state store, built only once something is written to it (or anything but
    ``get`` is asked of it); from then on every call goes to the real store."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._store: Any = None

    async def get(self, key: str, *, collection: str | None = None, default: Any = None) -> Any:
        if self._store is None:
            return default
        return await self._store.get(key, collection=collection, default=default)

    def __getattr__(self, name: str) -> Any:
        if self._store is None:
            self._store = self._build()
        return getattr(self._store, name)


class DockyardServer(FastMCP):
    """FastMCP, with its session-state store made on first write (see above)."""

    @property
    def _state_store(self) -> Any:
        state = self.__dict__.get("_dockyard_state")
        if state is None:
            state = self.__dict__["_dockyard_state"] = _StateUntilWritten(
                lambda: FastMCP._state_store.fget(self)  # type: ignore[attr-defined]
            )
        return state


# -- 2. Docstrings not parsed by griffe ---------------------------------------------------------------
# Behaviour relied on: FastMCP parses a tool's or prompt's ``__doc__`` with griffe (three parsers, twice)
# unless ``__doc__`` is empty, and uses an explicit ``description=`` as it is.
# Why: griffe's import and parsing cost 30-40 ms of each server's start (bench/startup); our docstrings
# have no Args/Returns sections for it to find.
# Upstream change that removes it: FastMCP parsing docstrings lazily, or not when ``description`` is given.
# Test: tests/workspace/test_startup_imports.py (griffe is not imported by a start);
# tests/shared/test_fastmcp_compat.py (the description listed is the docstring).

# A line griffe (Google, NumPy, Sphinx) could read as a section: a title ending in ":" alone on its line
# (Args:, Returns:, Note:), a NumPy underline, a Sphinx field (:param x:).
_SECTION_LIKE = re.compile(r"^\s*\w[\w \t-]*:\s*$|^\s*-{3,}\s*$|^\s*:\w+", re.MULTILINE)


def described(fn: Callable[..., Any], options: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` with its docstring moved into ``options["description"]`` when FastMCP would use it as it
    stands (no section-like line), and ``__doc__`` cleared so FastMCP has nothing to parse. A docstring
    that might hold a section is left to FastMCP, which keeps its per-parameter descriptions."""
    if options.get("description") is not None:
        return fn
    doc = inspect.getdoc(fn)
    if doc and not _SECTION_LIKE.search(doc):
        options["description"] = doc
        fn.__doc__ = None
    return fn


# -- 3. FastMCP's stdio transport, given our streams --------------------------------------------------
# Private: the module attribute ``fastmcp.server.mixins.transport.stdio_server``, which
# ``FastMCP.run_stdio_async`` calls with no way to pass streams.
# Why: dockyard_shared.stdio answers malformed lines, bounds a line's size and serves pipes on the event
# loop; the SDK's ``stdio_server(stdin=, stdout=)`` takes the streams, FastMCP does not pass them on.
# Upstream change that removes it: ``run_stdio_async`` accepting streams (or a stdio server factory).
# Test: tests/shared/test_stdio_pipes.py, tests/interop/test_malformed.py (stdio cases);
# tests/shared/test_fastmcp_compat.py (FastMCP still opens the SDK's stdio_server).


@contextmanager
def stdio_server_replaced(replacement: Callable[[], Any]) -> Iterator[None]:
    """Meanwhile, ``FastMCP.run_stdio_async`` opens ``replacement()`` instead of the SDK's
    ``stdio_server()``. Refuses, rather than serving unchecked, when FastMCP no longer opens it."""
    from fastmcp.server.mixins import transport
    from mcp.server import stdio as sdk_stdio

    if transport.stdio_server is not sdk_stdio.stdio_server:
        raise RuntimeError(
            "fastmcp's run_stdio_async no longer opens mcp.server.stdio.stdio_server; "
            "dockyard_shared.fastmcp_compat.stdio_server_replaced needs updating"
        )
    transport.stdio_server = replacement
    try:
        yield
    finally:
        transport.stdio_server = sdk_stdio.stdio_server


# -- 4. Which protocol era a request speaks -----------------------------------------------------------
# Mirrors the private ``Context._is_modern_protocol()`` with public pieces (the request context's
# ``protocol_version``, mcp_types' ``MODERN_PROTOCOL_VERSIONS``), so both always agree.
# Why: elicitation and roots need a different path on 2026-07-28 connections (no back-channel).
# Upstream change that removes it: a public ``Context`` property for the era.
# Test: tests/shared/test_fastmcp_compat.py (agrees with FastMCP's own in both eras); tests/shared/
# test_confirm.py, tests/git/test_roots.py.


def is_modern_protocol(ctx: Context) -> bool:
    """Whether ``ctx``'s request speaks the 2026-07-28 era (no server-initiated requests)."""
    request = ctx.request_context
    return request is not None and request.protocol_version in MODERN_PROTOCOL_VERSIONS


# -- 5. The SDK's low-level server under a FastMCP server ---------------------------------------------
# Private: ``FastMCP._mcp_server``.
# Why: FastMCP 4.1 serves neither ``resources/subscribe`` nor ``subscriptions/listen``; the SDK's
# low-level server takes handlers for both (``add_request_handler``), used by dockyard-tasks. Also its
# public ``cache_hints`` table (per method), where dockyard_shared.server sets ``ttlMs`` on the fixed
# lists only: FastMCP's public ``cache_ttl`` sets one lifetime for every cacheable method, reads included.
# Upstream change that removes it: FastMCP serving resource subscriptions, or a public custom-request hook;
# a per-method ``cache_ttl``.
# Test: tests/tasks/test_listeners.py, tests/tasks/test_resources.py (subscriptions);
# tests/shared/test_list_hints.py (cache hints); tests/shared/test_fastmcp_compat.py (the attribute and
# its add_request_handler).


def lowlevel_server(server: FastMCP) -> Any:
    """The MCP SDK low-level server FastMCP runs ``server`` on (``add_request_handler`` lives there)."""
    return server._mcp_server  # type: ignore[attr-defined]


# -- 6. The connection behind a request's session -----------------------------------------------------
# Private: ``mcp.server.session.ServerSession._connection``.
# Why: the SDK builds a new ``ServerSession`` per request; a resource subscription belongs to the
# client's connection, which the session wraps with no public accessor.
# Upstream change that removes it: a public ``ServerSession.connection`` (or a stable session identity).
# Test: tests/tasks/test_resources.py (2025-11-25 subscriptions); tests/shared/test_fastmcp_compat.py.


def session_connection(ctx: Any) -> Any:
    """The connection a request's session belongs to (one object for every request on it)."""
    connection = getattr(ctx.session, "_connection", None)
    if connection is None or not hasattr(connection, "send_resource_updated"):
        raise RuntimeError(
            "mcp.server.session.ServerSession changed: update fastmcp_compat.session_connection"
        )
    return connection


# -- 7. What the HTTP connection guard reads of uvicorn's h11 protocol --------------------------------
# Undocumented: ``uvicorn.protocols.http.h11_impl.H11Protocol``'s attributes ``cycle`` (the request being
# served: ``more_body``, ``response_started``, ``response_complete``, ``disconnected``,
# ``message_event``), ``conn`` (its h11 connection), ``transport``, ``loop``, ``client``, its
# ``on_response_complete`` hook and its private ``_should_upgrade``; ``STATUS_PHRASES``.
# Why: uvicorn has no request-head or request-body deadline and no connection cap that closes the
# oldest idle connection (dockyard_shared.http_connections says what each bound is for).
# Upstream change that removes it: uvicorn deadlines for the request head and body, and a cap on
# connections that sheds idle ones first. uvicorn is pinned to the minor version checked (0.54).
# Test: tests/shared/test_http_hardening.py; tests/shared/test_fastmcp_compat.py (the attributes).


@functools.cache
def guarded_h11_base() -> type:
    """uvicorn's ``H11Protocol``, with what the connection guard reads of it as named methods.

    A subclass overrides :meth:`after_event`, called after data arrives and after a response is
    complete; an Upgrade header is served as plain HTTP (no route speaks WebSocket, and an upgraded
    socket would leave the guard)."""
    import h11
    from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

    class GuardedH11Base(H11Protocol):
        def after_event(self) -> None:
            """Called after each ``data_received`` and each completed response."""

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self.after_event()

        def before_response_complete(self) -> None:
            """Called when a response completes, before uvicorn moves on to a pipelined request."""

        def on_response_complete(self) -> None:
            self.before_response_complete()
            super().on_response_complete()
            self.after_event()

        def _should_upgrade(self) -> bool:
            return False

        def peer(self) -> Any:
            return self.client

        def call_later(self, delay: float, callback: Callable[[], None]) -> Any:
            return self.loop.call_later(delay, callback)

        def closing(self) -> bool:
            return self.transport.is_closing()

        def close(self) -> None:
            self.transport.close()

        def current_request(self) -> object:
            """The request being served (its identity: pipelining starts others), or None."""
            return self.cycle

        def serving(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def request_scope(self) -> dict[str, Any]:
            """The ASGI scope of the request being served (call only while there is one)."""
            return self.cycle.scope

        def response_started(self) -> bool:
            return self.cycle is not None and self.cycle.response_started

        def receiving_body(self) -> bool:
            """Serving a request whose body has not all arrived."""
            return self.serving() and self.cycle.more_body and self.conn.their_state is h11.SEND_BODY

        def waiting_for_client(self) -> bool:
            """Not serving, and the client has sent no request yet, or owes the rest of a head (or of a
            body the app answered without reading)."""
            if self.serving():
                return False
            if self.cycle is None or self.conn.their_state is not h11.IDLE:
                return True
            return bool(self.conn.trailing_data[0])

        def answer_and_close(
            self, status: int, text: bytes, *, content_type: bytes = b"text/plain; charset=utf-8"
        ) -> None:
            """Answer the request being received with ``status`` in place of the app, and close: the
            app then reads a disconnect, and whatever it sends is dropped."""
            cycle = self.cycle
            cycle.response_started = cycle.response_complete = cycle.disconnected = True
            headers = [(b"content-type", content_type), (b"connection", b"close")]
            try:
                head = h11.Response(status_code=status, headers=headers, reason=STATUS_PHRASES[status])
                self.transport.write(self.conn.send(head))
                self.transport.write(self.conn.send(h11.Data(data=text)))
                self.transport.write(self.conn.send(h11.EndOfMessage()))
            except h11.LocalProtocolError:  # h11 would not send it now: closing says enough
                pass
            cycle.message_event.set()
            self.transport.close()

    return GuardedH11Base


# -- 8. What FastMCP imports on a first tools/call ----------------------------------------------------
# Behaviour relied on: FastMCP imports its Prefab payload helpers lazily, on the first ``tools/call``;
# the warm-up imports them once the server is idle (dockyard_shared.warmup). A module that no longer
# exists only makes that warm-up step fail, at debug level.
# Upstream change that removes it: none needed; drop the name when FastMCP stops importing it lazily.
# Test: tests/shared/test_fastmcp_compat.py (the module exists).
FRAMEWORK_IMPORTS = ("fastmcp.server.providers.prefab_payload",)
