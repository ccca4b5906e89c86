"""OpenTelemetry export: with OTEL_EXPORTER_OTLP_ENDPOINT set, FastMCP's span for a tool call reaches an
OTLP/HTTP receiver (a loopback one here, decoding the protobuf the collector protocol defines)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.harness import http_server, open_session

pytestmark = pytest.mark.slow


class Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest]

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/v1/traces" and self.headers.get("content-type") == "application/x-protobuf":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()


def spans(received: list[ExportTraceServiceRequest]) -> list[tuple[str, str]]:
    """(service name, span name) of every span received."""
    found = []
    for request in received:
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                found += [(attributes.get("service.name", ""), span.name) for span in scope_spans.spans]
    return found


async def test_a_tool_call_span_is_exported_to_the_configured_otlp_endpoint(
    sqlite_launch, people, log_dir, era
):
    received: list[ExportTraceServiceRequest] = []
    handler = type("Handler", (Receiver,), {"received": received})
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        launch = sqlite_launch("--db", f"people={people}")
        launch.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.server_address[1]}"
        launch.env["OTEL_BSP_SCHEDULE_DELAY"] = "100"  # ms between batches: the test waits for one
        with http_server(launch, log_dir=log_dir) as server:
            async with open_session(server.url(), era=era) as session:
                await session.call_ok("list_tables")
            deadline = time.monotonic() + 30
            while not any("list_tables" in name for _, name in spans(received)):
                assert time.monotonic() < deadline, f"no list_tables span; got {spans(received)}"
                time.sleep(0.05)
        assert ("dockyard-sqlite", next(n for _, n in spans(received) if "list_tables" in n)) in spans(
            received
        )
    finally:
        receiver.shutdown()
        receiver.server_close()
