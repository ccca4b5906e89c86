"""Work a server defers until it has answered ``initialize``: what its first requests would otherwise pay.

Why: a host shows a server as ready, and starts an agent's turn, once ``initialize`` is answered; a
library the first message does not need (SQLAlchemy, PyGithub, httpx) only delays that answer.
Such imports are made where the code first needs them, and a server names them here too, so they are
usually done by the time the model calls a tool (bench/startup measures both: spawn → ``initialize``, and
each tool's first call against its warm median).

How: ``create_server`` registers blocking callables with :func:`after_initialize` (importing a module,
opening a connection pool). The runner installs a :class:`WarmUpTrigger`, which calls :func:`start` once
the first exchange is over — shortly after the first request that follows ``initialize`` has been
answered (hosts send ``tools/list`` at once, so the warm-up does not compete with it), or a second after
``initialize`` when nothing follows — and lets each step run only while no request is in flight; over
stdio and HTTP alike. One daemon thread then runs, in order:
the imports FastMCP makes on a first tools/call (:data:`FRAMEWORK_IMPORTS`), every registered
callable, and the garbage-collector tuning the runner used to do before serving (a full collection costs ~70 ms on a freshly
started server). A failure is logged at debug level and dropped: whatever needed it is done again, and
reported, on first use.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from weakref import WeakKeyDictionary

from fastmcp.server.middleware import Middleware, MiddlewareContext

# What FastMCP imports lazily on a first tools/call (its session-state store and jsonref are not imported
# at all: fastmcp_compat.DockyardServer makes the store on first write, schema.py inlines references).
from .fastmcp_compat import FRAMEWORK_IMPORTS

__all__ = [
    "FRAMEWORK_IMPORTS",
    "WarmUpTrigger",
    "after_initialize",
    "importing",
    "start",
]

log = logging.getLogger("dockyard.warmup")


_pending: WeakKeyDictionary[Any, list[Callable[[], object]]] = WeakKeyDictionary()


def after_initialize(server: Any, work: Callable[[], object]) -> None:
    """Run ``work`` (blocking, thread-safe) once ``server`` has answered its first client.

    ``work`` may be a generator function: the warm-up then runs it one item at a time, waiting between
    items until no request is in flight, so a step made of many small units (a table each) yields to a
    request that arrives meanwhile instead of holding it up until the last unit."""
    _pending.setdefault(server, []).append(work)


def importing(*modules: str) -> Callable[[], None]:
    """A warm-up step that imports ``modules``: ``after_initialize(server, importing("sqlalchemy"))``."""

    def import_all() -> None:
        for module in modules:
            importlib.import_module(module)

    import_all.__qualname__ = f"importing{modules!r}"
    return import_all


def start(
    servers: Iterable[Any],
    *,
    then: Callable[[], None] | None = None,
    idle: threading.Event | None = None,
) -> threading.Thread:
    """Start the warm-up of ``servers`` in a daemon thread (each registered step runs once; ``then`` runs
    last). With ``idle``, each step first waits until it is set: no request in flight."""
    steps = [importing(*FRAMEWORK_IMPORTS)]
    for server in servers:
        steps += _pending.pop(server, [])
    if then is not None:
        steps.append(then)
    thread = threading.Thread(target=_run, args=(steps, idle), name="dockyard-warm-up", daemon=True)
    thread.start()
    return thread


def _run(steps: list[Callable[[], object]], idle: threading.Event | None) -> None:
    for step in steps:
        if idle is not None:
            idle.wait()
        try:
            result = step()
            if inspect.isgenerator(result):
                for _ in result:
                    if idle is not None:
                        idle.wait()
        except Exception as error:  # first use does it again, and reports it
            log.debug("warm-up step %s failed: %s", getattr(step, "__qualname__", step), error)
    log.debug("warm-up done")


class WarmUpTrigger(Middleware):
    """Starts the warm-up, and paces it so that it runs while the server is idle.

    It begins once the first exchange is over: :data:`QUIET` seconds after the first request that follows
    ``initialize`` has been answered (hosts list their tools at once), or :data:`AFTER_INITIALIZE` seconds
    after ``initialize`` when nothing follows. ``begin`` receives :attr:`idle`, set while no request has been
    in flight for :data:`QUIET` seconds, and each warm-up step waits for it: a tool call sent straight after
    the listing runs before the warm-up, not behind imports and a garbage collection it does not need. One
    trigger may serve several servers (``dockyard serve all``): the first exchange on any of them starts
    the warm-up of all.
    """

    QUIET = 0.1
    AFTER_INITIALIZE = 1.0

    def __init__(self, begin: Callable[[threading.Event], object]) -> None:
        self._begin = begin
        self.idle = threading.Event()
        self._in_flight = 0
        self._fired = False
        self._check: asyncio.TimerHandle | None = None

    async def on_request(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self._in_flight += 1
        self.idle.clear()
        try:
            return await call_next(context)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                if self._check is not None:
                    self._check.cancel()
                first = context.method == "initialize" and not self._fired
                delay = self.AFTER_INITIALIZE if first else self.QUIET
                self._check = asyncio.get_running_loop().call_later(delay, self._quiet)

    def _quiet(self) -> None:
        if self._in_flight:
            return
        self.idle.set()
        if not self._fired:
            self._fired = True
            self._begin(self.idle)
