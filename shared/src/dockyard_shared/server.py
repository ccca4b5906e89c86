"""How every Dockyard server is constructed, so they all behave alike on the wire."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastmcp import FastMCP

from .errors import ProblemMiddleware
from .schema import ListedSchemas

__all__ = ["ArgumentCompleter", "DockyardServer", "complete_arguments", "new_server"]

# (argument name, the value typed so far, the arguments already given) -> candidate values.
ArgumentCompleter = Callable[[str, str, Mapping[str, str]], Awaitable[list[str]]]


class _StateUntilWritten:
    """FastMCP's session-state store, made only once something is written to it.

    Why: FastMCP reads this store on every listing and every tool lookup (for per-session visibility
    rules, which no Dockyard server sets), so the first ``tools/list`` built it: py-key-value's adapter
    and memory store, whose package installs beartype's import hook (``beartype_this_package``) even with
    its checks off, so each of its modules is compiled from source on import. That was ~100 ms of a
    ~130 ms first ``tools/list``, against 2 ms for the reference server (bench/startup). Until a first
    write the store is empty, so a read answers what the real store would: the ``default``. Everything
    else (a write, a session object's calls) builds the real store and goes to it from then on.
    """

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
    """FastMCP, with its session-state store made on first write (:class:`_StateUntilWritten`)."""

    @property
    def _state_store(self) -> Any:
        state = self.__dict__.get("_dockyard_state")
        if state is None:
            state = self.__dict__["_dockyard_state"] = _StateUntilWritten(
                lambda: FastMCP._state_store.fget(self)
            )
        return state


def new_server(
    name: str, *, instructions: str, distribution: str | None = None, lifespan: Any = None
) -> FastMCP:
    """A FastMCP server with Dockyard's error handling.

    ``lifespan`` (a ``fastmcp.server.lifespan.lifespan`` function) holds what lives as long as the server:
    an HTTP client, a connection pool.

    ``mask_error_details`` is on: an unexpected exception's text (which may hold paths or secrets)
    never reaches the client; :class:`ProblemMiddleware` words expected failures for the model;
    :class:`ListedSchemas` lists output schemas in the form clients validate fastest, with their
    references inlined (FastMCP's own dereferencing pass is off: ``dereference_schemas=False``).
    """
    try:
        server_version = version(distribution or name)
    except PackageNotFoundError:
        server_version = "0.0.0"
    server = DockyardServer(
        name,
        instructions=instructions,
        version=server_version,
        mask_error_details=True,
        lifespan=lifespan,
        dereference_schemas=False,  # ListedSchemas inlines references, without importing jsonref
    )
    server.add_middleware(ProblemMiddleware())
    server.add_middleware(ListedSchemas())
    return server


def complete_arguments(server: FastMCP, complete: ArgumentCompleter) -> None:
    """Answer ``completion/complete`` for every prompt argument and resource-template parameter by name.

    Every Dockyard server completes by the argument's name alone (a ``database`` is a database alias
    wherever it appears), so ``complete`` sees plain strings, not the protocol's reference objects;
    FastMCP sends at most 100 values and says when there were more.
    """

    async def answer(reference: Any, argument: Any, context: Any) -> list[str]:
        given = (context.arguments or {}) if context is not None else {}
        return await complete(argument.name, argument.value, given)

    server.add_completion_handler(answer)
