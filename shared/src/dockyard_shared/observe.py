"""What a server tells its operator about itself: health checks and gauges, registered while it is built.

A server's ``create_server`` says which dependencies it has and how to probe them, and which figures an
operator may want to graph; the HTTP face (:mod:`dockyard_shared.health` for ``GET /health``,
:mod:`dockyard_shared.metrics` for ``GET /metrics``) reads them. Nothing here imports FastMCP or the HTTP
stack, so registering costs a server's start nothing::

    from dockyard_shared.observe import add_gauge, add_health_check

    add_health_check(server, "database", lambda: f"revision {store.revision()}")
    add_gauge(server, "upstream_quota_remaining", "Names nationalize.io said are left", lambda: quota.remaining)

A probe is a plain function, run in a worker thread with a time limit (or a coroutine function, awaited with
one): it returns a short detail when the dependency is up and raises when it is down (the exception's text is
the detail). A required dependency down makes ``/health`` answer 503; an optional one (``required=False``:
the server still serves without it, e.g. an upstream it can answer from cache without) only marks it
``degraded``. A gauge's ``read`` returns a number, or None when there is nothing to report yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

__all__ = ["Gauge", "HealthCheck", "add_gauge", "add_health_check", "gauges", "health_checks"]


@dataclass(frozen=True)
class HealthCheck:
    name: str
    probe: Callable[[], str | None] | Callable[[], Awaitable[str | None]]
    required: bool = True


@dataclass(frozen=True)
class Gauge:
    name: str  # a Prometheus metric name without the ``dockyard_`` prefix
    help: str
    read: Callable[[], float | None]


_checks: WeakKeyDictionary[Any, list[HealthCheck]] = WeakKeyDictionary()
_gauges: WeakKeyDictionary[Any, list[Gauge]] = WeakKeyDictionary()


def add_health_check(
    server: Any,
    name: str,
    probe: Callable[[], str | None] | Callable[[], Awaitable[str | None]],
    *,
    required: bool = True,
) -> None:
    """Report ``name`` in ``server``'s ``/health`` (see the module docstring)."""
    _checks.setdefault(server, []).append(HealthCheck(name, probe, required))


def add_gauge(server: Any, name: str, help: str, read: Callable[[], float | None]) -> None:
    """Expose ``dockyard_<name>{server="..."}`` in ``/metrics``, read at each scrape."""
    _gauges.setdefault(server, []).append(Gauge(name, help, read))


def health_checks(server: Any) -> list[HealthCheck]:
    return list(_checks.get(server, ()))


def gauges(server: Any) -> list[Gauge]:
    return list(_gauges.get(server, ()))
