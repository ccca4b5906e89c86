"""Malformed JSON-RPC over HTTP and stdio: the right error where the transport gives one, and the server keeps serving."""

from __future__ import annotations

import json
import select
import subprocess

import httpx
import pytest

from tests.harness import http_server
from tests.interop.conftest import launch_for

pytestmark = pytest.mark.slow

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
PING = '{"jsonrpc":"2.0","id":99,"method":"ping"}'


@pytest.fixture
def http(server_name, data_dir, log_dir):
    with http_server(launch_for(server_name, data_dir), log_dir=log_dir) as server:
        session = httpx.post(server.url(), json=INIT, headers=HEADERS).headers["mcp-session-id"]
        yield server, {**HEADERS, "mcp-session-id": session}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ("not json", 400, -32700),
        ('{"jsonrpc":"2.0","id":5,', 400, -32700),
        ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}', 400, -32602),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, None),
        ('{"id":6,"method":"ping"}', 400, None),
        ('{"jsonrpc":"2.0","id":2,"method":"no/such/method"}', 200, -32601),
    ],
)
def test_http_answers_malformed_messages_with_json_rpc_errors_and_keeps_serving(http, body, status, code):
    server, headers = http
    response = httpx.post(server.url(), content=body, headers=headers)
    assert response.status_code == status
    text = response.text
    payload = json.loads(text.split("data: ", 1)[1]) if text.startswith("event:") else response.json()
    assert "error" in payload
    if code is not None:
        assert payload["error"]["code"] == code
    assert "Traceback" not in text
    assert '"id":99' in httpx.post(server.url(), content=PING, headers=headers).text


def test_http_refuses_an_oversize_body_and_keeps_serving(http):
    server, headers = http
    response = httpx.post(server.url(), content="x" * 5_000_000, headers=headers)
    assert response.status_code == 413
    assert '"id":99' in httpx.post(server.url(), content=PING, headers=headers).text


def test_a_client_that_disconnects_mid_call_does_not_take_the_server_down(http):
    server, headers = http
    call = '{"jsonrpc":"2.0","id":7,"method":"tools/list"}'
    with pytest.raises(httpx.TimeoutException):
        httpx.post(server.url(), content=call, headers=headers, timeout=httpx.Timeout(0.001))
    assert '"id":99' in httpx.post(server.url(), content=PING, headers=headers).text


def test_stdio_survives_malformed_lines(server_name, data_dir):
    launch = launch_for(server_name, data_dir)
    process = subprocess.Popen(
        launch.command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=launch.environment(),
        cwd=launch.cwd,
    )

    def send(line: str) -> None:
        process.stdin.write(line + "\n")
        process.stdin.flush()

    def answer(identifier: int, timeout: float = 30) -> dict:
        while True:
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            assert ready, f"no answer to id {identifier}"
            message = json.loads(process.stdout.readline())
            if message.get("id") == identifier:
                return message

    try:
        send(json.dumps(INIT))
        assert "result" in answer(0)
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for garbage in [
            "not json",
            "[1, 2]",
            '{"jsonrpc":"2.0","id":5,',
            '{"id":6}',
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}',
        ]:
            send(garbage)
        send('{"jsonrpc":"2.0","id":2,"method":"no/such/method"}')
        assert answer(2)["error"]["code"] == -32601
        send(PING)
        assert answer(99)["result"] == {}
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
