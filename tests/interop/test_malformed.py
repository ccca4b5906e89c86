"""Malformed JSON-RPC over stdio and HTTP: every bad message gets its JSON-RPC error (or HTTP status),
and the server keeps serving.

stdio is answered by the runner's checked reader (``dockyard_shared.stdio``); HTTP by the SDK's two
transports, chosen by the ``MCP-Protocol-Version`` header: 2025-11-25 (sessions) and 2026-07-28
(sessionless, one request per POST, ``_meta`` envelope plus ``Mcp-Method``/``Mcp-Name`` headers). In the
2025-11-25 era ``dockyard_shared.http`` checks the JSON-RPC envelope before the SDK sees the body.
Only the toy has a slow tool, so the mid-call tests run against it alone; the rest run against every
installed server.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dockyard_shared.stdio import MAX_MESSAGE_BYTES
from tests.harness import LEGACY, MODERN, HttpServer, Launch, http_server
from tests.interop.conftest import SERVERS, launch_for

pytestmark = pytest.mark.slow

# How long to wait for something that should come at once: a hang guard, not a measurement.
PATIENCE = 60

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def ping(request_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})


def slow_call(request_id: int) -> dict[str, Any]:
    """The toy's ``sleep`` for 5 s; it reports progress 0 first, so a reader knows it has started."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"seconds": 5}, "_meta": {"progressToken": "slow"}},
    }


def errors(messages: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(m.get("error", {}).get("code"), m.get("id", "no id")) for m in messages]


# ---------------------------------------------------------------------------------------------- stdio


class StdioServer:
    """A server process spoken to line by line over stdio. A thread reads stdout into a queue, so a
    silent server fails the test instead of hanging it, and every stdout line must be JSON-RPC."""

    def __init__(self, launch: Launch, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        with stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                launch.command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=launch.environment(),
                cwd=launch.cwd,
            )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, text: str, *, newline: bool = True) -> None:
        self.process.stdin.write(text.encode() + (b"\n" if newline else b""))
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any] | None:
        """The next message on stdout; None once stdout is closed."""
        try:
            line = self._lines.get(timeout=PATIENCE)
        except queue.Empty:
            pytest.fail(f"the server wrote nothing for {PATIENCE} s")
        if line is None:
            return None
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", f"not a JSON-RPC message on stdout: {line[:200]!r}"
        return message

    def until(self, request_id: int, *, also: set[Any] = frozenset()) -> tuple[list[dict], dict]:
        """Messages up to the answer to ``request_id`` (and any answers to the ids in ``also``, which
        the server may send after it), and that answer."""
        waiting, others, answer = {request_id, *also}, [], None
        while waiting:
            message = self.receive()
            assert message is not None, f"stdout closed while waiting for {waiting}; got {others}"
            waiting.discard(message.get("id"))
            if message.get("id") == request_id and answer is None:
                answer = message
            else:
                others.append(message)
        return others, answer

    def initialize(self) -> None:
        self.send(json.dumps(INIT))
        assert "result" in self.until(0)[1]
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def close_stdin(self) -> tuple[int, list[dict]]:
        """Close stdin; the exit status and every message written after."""
        self.process.stdin.close()
        returncode = self.process.wait(timeout=PATIENCE)
        rest = []
        while (message := self.receive()) is not None:
            rest.append(message)
        return returncode, rest

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture
def stdio(server_name, data_dir, log_dir) -> Iterator[StdioServer]:
    """An initialized (2025-11-25) stdio session with ``server_name``."""
    server = StdioServer(
        launch_for(server_name, data_dir), log_dir / f"stdio-{server_name}-{uuid.uuid4().hex}.log"
    )
    try:
        server.initialize()
        yield server
    finally:
        server.stop()


# Each line, and the errors it must be answered with as (code, id), in order, and nothing else.
STDIO_LINES = [
    ("not json", [(-32700, None)]),
    ('{"jsonrpc":"2.0","id":5,', [(-32700, None)]),  # truncated
    ("[1, 2]", [(-32600, None)]),
    ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', [(-32600, None)]),  # a batch
    ('"ping"', [(-32600, None)]),
    ('{"id":6}', [(-32600, 6)]),
    ('{"id":6,"method":"ping"}', [(-32600, 6)]),
    ('{"jsonrpc":"1.0","id":7,"method":"ping"}', [(-32600, 7)]),
    ('{"jsonrpc":"2.0","id":"eight"}', [(-32600, "eight")]),
    ('{"jsonrpc":"2.0","id":9,"method":5}', [(-32600, 9)]),
    ('{"jsonrpc":"2.0","method":5}', [(-32600, None)]),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', [(-32600, None)]),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', [(-32600, None)]),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', [(-32600, None)]),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', [(-32600, None)]),
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}', [(-32602, 3)]),
    ('{"jsonrpc":"2.0","id":"s","method":"tools/list","params":[1]}', [(-32602, "s")]),
    ('{"jsonrpc":"2.0","id":2,"method":"no/such/method"}', [(-32601, 2)]),
    # Not answered: notifications (a request without an id is one), a response, a blank line.
    ('{"jsonrpc":"2.0","method":"notifications/no/such"}', []),
    ('{"jsonrpc":"2.0","method":"tools/list"}', []),
    ('{"jsonrpc":"2.0","id":77,"result":{}}', []),
    ("", []),
]


def test_stdio_answers_each_malformed_line_with_its_json_rpc_error_and_keeps_serving(stdio):
    for number, (line, expected) in enumerate(STDIO_LINES):
        stdio.send(line)
        stdio.send(ping(1000 + number))
        others, answer = stdio.until(1000 + number, also={i for _, i in expected if i is not None})
        assert errors(others) == expected, line
        assert answer["result"] == {}, line
    assert stdio.process.poll() is None
    assert "Traceback" not in stdio.stderr()


def test_stdio_refuses_an_oversize_line_and_keeps_serving(stdio):
    pad = "x" * (MAX_MESSAGE_BYTES + 1)
    stdio.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": pad}}))
    stdio.send(ping(99))
    others, answer = stdio.until(99)
    assert errors(others) == [(-32600, None)]  # and the rest of the long line was skipped, not parsed
    assert "too large" in others[0]["error"]["message"]
    assert answer["result"] == {}
    # A large message within the limit is served as usual.
    stdio.send(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "ping", "params": {"pad": "x" * 2**20}}))
    others, answer = stdio.until(100)
    assert others == [] and answer["result"] == {}


def test_stdio_answers_a_message_cut_off_by_eof_and_exits_cleanly(stdio):
    stdio.send('{"jsonrpc":"2.0","id":5,"method":"pi', newline=False)
    returncode, rest = stdio.close_stdin()
    assert returncode == 0
    assert errors(rest) == [(-32700, None)]


@pytest.mark.parametrize("server_name", ["toy"])
def test_closing_stdin_during_a_slow_call_ends_the_server_cleanly(stdio):
    stdio.send(json.dumps(slow_call(4)))
    started = stdio.receive()
    assert started["method"] == "notifications/progress" and started["params"]["progressToken"] == "slow"
    returncode, _ = stdio.close_stdin()  # everything after is still JSON-RPC (receive checks)
    assert returncode == 0
    assert "Traceback" not in stdio.stderr()


# ----------------------------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module", params=["toy", *SERVERS])
def served(request, data_dir, log_dir) -> Iterator[HttpServer]:
    with http_server(launch_for(request.param, data_dir), log_dir=log_dir) as server:
        yield server


class HttpClient:
    """Posts to one server in one protocol era: 2025-11-25 in an initialized session, 2026-07-28
    sessionless with the per-request ``_meta`` envelope and routing headers."""

    def __init__(self, server: HttpServer, era: str) -> None:
        self.url = server.url()
        self.era = era
        self.headers = {**ACCEPT, "MCP-Protocol-Version": era}
        if era == LEGACY:
            session = httpx.post(self.url, json=INIT, headers=self.headers).headers["mcp-session-id"]
            self.headers["Mcp-Session-Id"] = session

    def post(self, body: str | Iterator[bytes], headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.post(
            self.url, content=body, headers={**self.headers, **(headers or {})}, timeout=PATIENCE
        )

    def request(self, message: dict[str, Any]) -> tuple[str, dict[str, str]]:
        """A well-formed request body and headers for ``message`` in this era."""
        if self.era == LEGACY:
            return json.dumps(message), {}
        headers = {"Mcp-Method": message["method"]}
        if not isinstance(message.get("params", {}), dict):
            return json.dumps(message), headers  # sent as it is
        params = dict(message.get("params") or {})
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            **params.get("_meta", {}),
        }
        if message["method"] == "tools/call":
            headers["Mcp-Name"] = params["name"]
        return json.dumps({**message, "params": params}), headers

    def serves(self) -> bool:
        """Does the server still answer? (2026-07-28 dropped ping: a tools/list stands in for it.)"""
        method = "ping" if self.era == LEGACY else "tools/list"
        body, headers = self.request({"jsonrpc": "2.0", "id": 99, "method": method})
        response = self.post(body, headers)
        message = payload(response) if response.status_code == 200 else {}
        return message.get("id") == 99 and "result" in message


@pytest.fixture(params=[LEGACY, MODERN])
def http(request, served) -> HttpClient:
    return HttpClient(served, request.param)


def chunks(body: str, size: int = 2**16) -> Iterator[bytes]:
    """``body`` as an iterator, which httpx sends chunked: no Content-Length announces its size."""
    data = body.encode()
    return iter([data[i : i + size] for i in range(0, len(data), size)])


def payload(response: httpx.Response) -> Any:
    """The one JSON-RPC message in a response, JSON or a single SSE event."""
    text = response.text
    return json.loads(text.split("data: ", 1)[1]) if text.startswith("event:") else response.json()


def answer(response: httpx.Response) -> tuple[int, Any, Any]:
    """(HTTP status, JSON-RPC error code, id) of an answer that must be one error object, not a batch."""
    if not response.content:
        return response.status_code, None, None
    message = payload(response)
    assert isinstance(message, dict), response.text
    return response.status_code, message.get("error", {}).get("code"), message.get("id", "no id")


# A body that is not one JSON-RPC request: its (status, code), and the error's id in each era. The
# 2026-07-28 transport always answers with a null id; in the 2025-11-25 era dockyard_shared.http checks
# the envelope (with dockyard_shared.stdio.envelope_error, as over stdio), which echoes an id it can read.
INVALID_BODIES = [
    ("not json", 400, -32700, None),
    ('{"jsonrpc":"2.0","id":5,', 400, -32700, None),  # truncated
    ("", 400, -32700, None),
    ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600, None),  # a batch
    ("5", 400, -32600, None),
    ('"ping"', 400, -32600, None),
    ('{"id":6,"method":"tools/list"}', 400, -32600, 6),
    ('{"jsonrpc":"1.0","id":7,"method":"tools/list"}', 400, -32600, 7),
    ('{"jsonrpc":"2.0","id":8,"method":5}', 400, -32600, 8),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', 400, -32600, None),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', 400, -32600, None),
    ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', 400, -32600, None),
    ('{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', 400, -32600, None),
]


@pytest.mark.parametrize(("body", "status", "code", "legacy_id"), INVALID_BODIES)
def test_http_answers_an_invalid_body_with_one_json_rpc_error_and_keeps_serving(
    http, body, status, code, legacy_id
):
    response = http.post(body)
    assert answer(response) == (status, code, legacy_id if http.era == LEGACY else None)
    assert response.headers["content-type"].startswith("application/json")
    assert "Traceback" not in response.text and "validation error" not in response.text
    assert http.serves()


# A request with a readable id but a wrong part: (status, code, id) for each era.
WRONG_REQUESTS = [
    (
        {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
        {LEGACY: (200, -32601, 2), MODERN: (404, -32601, 2)},
    ),
    (
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "x"},
        {LEGACY: (400, -32602, 3), MODERN: (400, -32600, None)},
    ),
]


@pytest.mark.parametrize(("message", "expected"), WRONG_REQUESTS)
def test_http_answers_a_wrong_request_with_its_json_rpc_error(http, message, expected):
    response = http.post(*http.request(message))
    assert answer(response) == expected[http.era]
    assert http.serves()


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}},
        {"jsonrpc": "2.0", "method": "tools/list"},  # a request that lost its id is a notification
    ],
)
def test_http_accepts_a_message_without_an_id_with_202_and_no_body(http, message):
    response = http.post(json.dumps(message))
    assert response.status_code == 202
    assert response.content == b""
    assert http.serves()


@pytest.mark.parametrize("served", ["toy"], indirect=True)
def test_http_2025_11_25_accepts_a_client_response_with_202_and_no_body(served):
    # A response is in the server's id numbering: it is not answered, even to an id the server never
    # used. (The 2026-07-28 era has no server-to-client requests and refuses one with 400.)
    http = HttpClient(served, LEGACY)
    response = http.post('{"jsonrpc":"2.0","id":77,"result":{}}')
    assert (response.status_code, response.content) == (202, b"")
    assert http.serves()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_http_refuses_an_oversize_body_with_413_and_keeps_serving(http, chunked):
    body = "x" * (MAX_MESSAGE_BYTES + 1)
    # Chunked, the size is only known once the body has been read past the limit.
    response = http.post(chunks(body) if chunked else body)
    assert response.status_code == 413
    assert http.serves()


def test_http_serves_a_large_chunked_request_within_the_limit(http):
    body, headers = http.request(
        {"jsonrpc": "2.0", "id": 31, "method": "tools/list", "params": {"_meta": {"pad": "x" * 2**20}}}
    )
    response = http.post(chunks(body), headers)
    assert response.status_code == 200
    message = payload(response)
    assert message["id"] == 31 and isinstance(message["result"]["tools"], list)


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize(
    ("params", "headers", "status", "code"),
    [
        ({"_meta": MODERN_META}, {"Mcp-Method": "tools/list"}, 200, None),
        ({"_meta": MODERN_META}, {"Mcp-Method": "resources/list"}, 400, -32020),  # header ≠ body
        ({"_meta": MODERN_META}, {}, 400, -32020),  # Mcp-Method missing
        ({}, {"Mcp-Method": "tools/list"}, 400, -32602),  # no _meta envelope
        (
            {"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
            {"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2099-01-01"},
            400,
            -32022,
        ),
    ],
)
def test_http_checks_the_2026_07_28_envelope_and_headers(served, params, headers, status, code):
    client = HttpClient(served, MODERN)
    body = json.dumps({"jsonrpc": "2.0", "id": 21, "method": "tools/list", "params": params})
    response = client.post(body, headers)
    assert response.status_code == status
    assert "mcp-session-id" not in response.headers  # sessionless
    message = payload(response)
    assert message["id"] == 21
    if code is None:
        assert isinstance(message["result"]["tools"], list)
    else:
        assert message["error"]["code"] == code
    assert client.serves()


@pytest.mark.parametrize("served", ["toy"], indirect=True)
def test_a_client_that_disconnects_mid_call_does_not_take_the_server_down(http):
    body, headers = http.request(slow_call(7))
    received = ""
    with httpx.stream(
        "POST", http.url, content=body, headers={**http.headers, **headers}, timeout=PATIENCE
    ) as response:
        assert response.status_code == 200
        for text in response.iter_text():
            received += text
            if "notifications/progress" in received:
                break  # the call is under way: leaving the block drops the connection
    assert "notifications/progress" in received
    assert '"id":7' not in received  # dropped before the answer
    assert http.serves()
