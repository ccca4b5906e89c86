"""OpenTelemetry trace export, when the operator configures an OTLP endpoint.

FastMCP already makes a span for every tool call, resource read and prompt (``fastmcp.telemetry``, through
the OpenTelemetry API alone): without an SDK they go nowhere. When ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, :func:`export_traces` installs the SDK's tracer provider with
a batching OTLP/HTTP exporter, so those spans reach the operator's collector. The exporter reads the
standard ``OTEL_EXPORTER_OTLP_*`` variables itself (headers, timeout, protocol details); the service name is
``dockyard-<server>`` unless ``OTEL_SERVICE_NAME`` says otherwise.

The SDK is an optional dependency (``pip install 'dockyard-shared[otel]'``): without it a configured endpoint
is reported once on stderr and the server runs untraced. Nothing is imported when no endpoint is set.
"""

from __future__ import annotations

import logging
import os

__all__ = ["ENDPOINT_VARIABLES", "export_traces"]

log = logging.getLogger("dockyard")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def export_traces(service: str) -> bool:
    """Export FastMCP's spans over OTLP/HTTP if an endpoint is configured; whether it now does."""
    endpoint = next((os.environ[name] for name in ENDPOINT_VARIABLES if os.environ.get(name)), None)
    if endpoint is None:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTLP endpoint %s is configured but the OpenTelemetry SDK is not installed: traces are not "
            "exported. Install it with: pip install 'dockyard-shared[otel]'",
            endpoint,
        )
        return False
    name = os.environ.get("OTEL_SERVICE_NAME") or f"dockyard-{service}"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # flushed by the SDK at exit
    trace.set_tracer_provider(provider)
    log.info("exporting traces over OTLP/HTTP to %s as %s", endpoint, name)
    return True
