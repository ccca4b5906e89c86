"""``GET /metrics``: Prometheus text exposition of what an operator graphs and alerts on.

Served over HTTP only, behind the same authentication as the MCP endpoint (see :func:`authorized`):

* ``dockyard_tool_calls_total{server,tool,outcome}``: tool calls, ``outcome`` ``ok``, ``error`` or
  ``cancelled``;
* ``dockyard_tool_errors_total{server,tool,category}``: failed calls by the category of their
  :class:`~dockyard_shared.problems.Problem` (``invalid_argument``, ``not_found``… ``internal`` for the
  unexpected);
* ``dockyard_tool_call_duration_seconds{server,tool}``: a latency histogram per tool;
* ``dockyard_http_sessions_open{server}`` (2025-11-25 sessions) and ``dockyard_http_event_streams_open``
  (long-lived event streams, both eras);
* each gauge a server registered (:func:`dockyard_shared.observe.add_gauge`), e.g. name-origin's
  ``dockyard_upstream_quota_remaining``.

Counted by a FastMCP middleware (:class:`MetricsMiddleware`, the public ``on_call_tool`` hook), the same way
the audit log records calls. The format is written by ``prometheus-client`` (escaping, histogram buckets,
``+Inf``, the content type): imported only here, and this module only when a server serves HTTP, so a stdio
start does not pay for it (tests/workspace/test_startup_imports.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.responses import Response

from .errors import as_problem
from .observe import gauges

__all__ = ["Metrics", "MetricsMiddleware"]

# Seconds: from a cache hit (~1 ms) to a slow upstream or a large query (tens of seconds).
MAX_TOOL_LABELS = 300  # distinct tool names per server labelled by name; the rest are OTHER_TOOLS
OTHER_TOOLS = "(other)"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The registry of one HTTP app: counters fed by :class:`MetricsMiddleware`, gauges read at scrape."""

    def __init__(self, servers: Mapping[str, Any]) -> None:
        self.servers = servers
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "dockyard_tool_calls",
            "Tool calls by outcome (ok, error, cancelled)",
            ["server", "tool", "outcome"],
            registry=self.registry,
        )
        self.errors = Counter(
            "dockyard_tool_errors",
            "Failed tool calls by error category",
            ["server", "tool", "category"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "dockyard_tool_call_duration_seconds",
            "Tool call latency",
            ["server", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._sessions: dict[str, Callable[[], int]] = {}
        self._streams: Callable[[], int] | None = None
        self.registry.register(_Gauges(self))

    def middleware(self, server_name: str) -> MetricsMiddleware:
        return MetricsMiddleware(self, server_name)

    def count_sessions(self, server_name: str, read: Callable[[], int]) -> None:
        self._sessions[server_name] = read

    def count_streams(self, read: Callable[[], int]) -> None:
        self._streams = read

    def exposition(self) -> Response:
        # The classic text format (0.0.4): every Prometheus and compatible scraper reads it, and our names
        # need none of the newer escaping.
        return Response(generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})


class _Gauges(Collector):
    """The figures read at each scrape: open sessions and streams, and every server's own gauges."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Any]:
        return []  # read at scrape time only: their names depend on the servers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sessions = GaugeMetricFamily(
            "dockyard_http_sessions_open", "Open Streamable HTTP sessions (2025-11-25 era)", labels=["server"]
        )
        for name, read in self.metrics._sessions.items():
            sessions.add_metric([name], read())
        yield sessions
        if self.metrics._streams is not None:
            yield GaugeMetricFamily(
                "dockyard_http_event_streams_open",
                "Open long-lived HTTP event streams (subscriptions/listen, GET streams)",
                value=self.metrics._streams(),
            )
        families: dict[str, GaugeMetricFamily] = {}
        for server_name, server in self.metrics.servers.items():
            for gauge in gauges(server):
                try:
                    value = gauge.read()
                except Exception:  # a figure that cannot be read now is left out, not a failed scrape
                    value = None
                if value is None:
                    continue
                family = families.get(gauge.name)
                if family is None:
                    family = families[gauge.name] = GaugeMetricFamily(
                        f"dockyard_{gauge.name}", gauge.help, labels=["server"]
                    )
                family.add_metric([server_name], float(value))
        yield from families.values()


class MetricsMiddleware(Middleware):
    """Count every tool call of one server: outcome, error category, latency."""

    def __init__(self, metrics: Metrics, server_name: str) -> None:
        self.metrics = metrics
        self.server_name = server_name
        self._tools: set[str] = set()

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tool = context.message.name
        started = time.perf_counter()
        outcome, category = "ok", None
        try:
            result = await call_next(context)
        except BaseException as error:
            if isinstance(error, Exception):
                outcome, category = "error", as_problem(error).category.value
            else:
                outcome = "cancelled"
            raise
        else:
            if getattr(result, "is_error", False):
                outcome, category = "error", "internal"
            return result
        finally:
            label = self._label(tool)
            self.metrics.calls.labels(self.server_name, label, outcome).inc()
            if category is not None:
                self.metrics.errors.labels(self.server_name, label, category).inc()
            self.metrics.latency.labels(self.server_name, label).observe(time.perf_counter() - started)

    def _label(self, tool: str) -> str:
        """The tool's name, for the first :data:`MAX_TOOL_LABELS` names seen: a client may send any name
        (an unknown tool is a call too), and every label is a series held in memory for good."""
        if tool in self._tools:
            return tool
        if len(self._tools) < MAX_TOOL_LABELS:
            self._tools.add(tool)
            return tool
        return OTHER_TOOLS
