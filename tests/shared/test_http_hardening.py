"""Hostile HTTP clients before and after authentication: slow request heads, piles of half-open
connections, and sessions opened only to be held. A real server process each, on loopback."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
import pytest

from tests.harness import ERAS, INITIALIZE, LEGACY, HttpServer, Launch, http_server, open_session

pytestmark = pytest.mark.slow

TOKEN = "hardening-token"
HALF_OPEN = 1_100  # more than the 1,024 file descriptors a default-configured process may hold
JSON_AND_SSE = {"Accept": "application/json, text/event-stream"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _allow_open_files(count: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= count:
        return
    if hard != resource.RLIM_INFINITY and hard < count:
        pytest.skip(f"this test holds {count} sockets; the file-descriptor hard limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))


@contextmanager
def half_open_sockets(server: HttpServer, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that each send part of a request head and then nothing more."""
    host, port = server.base_url.removeprefix("http://").split(":")
    partial = f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n".encode()
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=10))
            sock.sendall(partial)
            sockets.append(sock)
        yield sockets


def closed_by_server(sock: socket.socket, *, trickle: bytes = b"", within: float) -> bool:
    """Does the server close ``sock`` while we keep sending ``trickle`` a byte at a time?"""
    return answer_before_close(sock, trickle=trickle, within=within) is not None


def answer_before_close(sock: socket.socket, *, trickle: bytes = b"", within: float) -> bytes | None:
    """What the server sent before closing ``sock`` while we sent ``trickle`` a byte at a time (and
    nothing more once it answered); None if it kept the connection open for ``within`` seconds."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + within
    sent = 0
    answer = b""
    while time.monotonic() < deadline:
        try:
            if sent < len(trickle) and not answer:
                sock.sendall(trickle[sent : sent + 1])
                sent += 1
            received = sock.recv(4096)
            if received == b"":
                return answer
            answer += received
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return answer
    return None


def slow_body_request(server: HttpServer, *, length: int) -> bytes:
    """The complete head of a valid MCP POST announcing a body of ``length`` bytes."""
    host = server.base_url.removeprefix("http://")
    return (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


async def test_half_open_connections_keep_neither_health_nor_an_authenticated_client_waiting(
    toy_launch, log_dir
):
    _allow_open_files(HALF_OPEN + 200)
    launch = Launch(
        toy_launch.script, toy_launch.args, env={"DOCKYARD_AUTH_TOKEN": TOKEN}, cwd=toy_launch.cwd
    )
    with (
        http_server(launch, log_dir=log_dir, open_files_limit=1024) as server,
        half_open_sockets(server, HALF_OPEN),
    ):
        assert httpx.get(server.url("/health"), timeout=15).status_code == 200
        for era in ERAS:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with open_session(server.url(), era=era, headers=headers, timeout=15) as session:
                assert (await session.call_ok("add", {"a": 1, "b": 2})).data == 3
        log = server.log()
    assert "Traceback" not in log, log[-3000:]
    # The operator hears about it once, not once per connection.
    assert len([line for line in log.splitlines() if "connection limit" in line]) == 1, log[-3000:]


def test_a_request_head_not_finished_within_the_header_timeout_is_closed(toy_launch, log_dir):
    with http_server(toy_launch, extra_args=("--header-timeout", "1"), log_dir=log_dir) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as silent:
            assert closed_by_server(silent, within=15)
        with socket.create_connection((host, int(port))) as slow:
            # A slowloris: the head keeps growing, a byte at a time, and never ends.
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert closed_by_server(slow, trickle=b"X-Slow: " + b"a" * 200, within=15)
        # A client that finishes its head is served as before, on a connection kept alive.
        with httpx.Client() as client:
            assert client.get(server.url("/health")).status_code == 200
            assert client.get(server.url("/health")).status_code == 200


def test_a_request_body_not_finished_within_the_body_timeout_is_answered_408_and_closed(toy_launch, log_dir):
    with http_server(toy_launch, extra_args=("--body-timeout", "1"), log_dir=log_dir) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        body = json.dumps(INITIALIZE).encode()
        with socket.create_connection((host, int(port))) as slow:
            # The head is complete (and would pass a token check); the body comes a byte at a time.
            slow.sendall(slow_body_request(server, length=len(body)))
            answer = answer_before_close(slow, trickle=body, within=20)
        assert answer is not None, "a request body trickled for 20 s and the connection stayed open"
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        # A body sent at once is served as before.
        assert httpx.post(server.url(), json=INITIALIZE, headers=JSON_AND_SSE).status_code == 200
        log = server.log()
    assert "Traceback" not in log, log[-3000:]


def test_connections_owing_a_request_body_are_shed_to_let_a_new_client_in(toy_launch, log_dir):
    args = ("--max-connections", "3")
    with http_server(toy_launch, extra_args=args, log_dir=log_dir) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with ExitStack() as stack:
            for _ in range(3):
                slow = stack.enter_context(socket.create_connection((host, int(port)), timeout=10))
                slow.sendall(slow_body_request(server, length=1000) + b"{")
            time.sleep(0.5)  # let the server read every head and hand it to the app
            # Before the body deadline (30 s by default), a new client still gets in.
            assert httpx.get(server.url("/health"), timeout=10).status_code == 200
        log = server.log()
    assert "Traceback" not in log, log[-3000:]


def _open_session(client: httpx.Client, server: HttpServer, *, use: bool) -> str:
    response = client.post(server.url(), json=INITIALIZE, headers=JSON_AND_SSE)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    if use:
        notified = client.post(server.url(), json=INITIALIZED, headers=_in_session(session_id))
        assert notified.status_code == 202, notified.text
    return session_id


def _in_session(session_id: str) -> dict[str, str]:
    return {**JSON_AND_SSE, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}


def _alive(client: httpx.Client, server: HttpServer, session_id: str) -> bool:
    status = client.post(server.url(), json=LIST_TOOLS, headers=_in_session(session_id)).status_code
    assert status in (200, 404), status
    return status == 200


def test_a_session_that_only_sent_initialize_is_closed_after_the_init_timeout(toy_launch, log_dir):
    args = ("--session-init-timeout", "1")
    with http_server(toy_launch, extra_args=args, log_dir=log_dir) as server, httpx.Client() as client:
        used = _open_session(client, server, use=True)
        never_used = _open_session(client, server, use=False)
        deadline = time.monotonic() + 20
        while f"session {never_used[:8]}" not in server.log():
            assert time.monotonic() < deadline, "the never-used session was not closed"
            time.sleep(0.2)
        assert not _alive(client, server, never_used)
        assert _alive(client, server, used)  # opened before it, so past the same deadline


def test_sessions_are_capped_per_client_address_and_a_refusal_says_why(toy_launch, log_dir):
    args = ("--max-sessions-per-client", "3")
    with http_server(toy_launch, extra_args=args, log_dir=log_dir) as server, httpx.Client() as client:
        # At the cap, a new session pushes out the oldest one that never sent a further request...
        unused = [_open_session(client, server, use=False) for _ in range(3)]
        newest = _open_session(client, server, use=True)
        assert not _alive(client, server, unused[0])
        assert _alive(client, server, unused[1]) and _alive(client, server, unused[2])  # used now
        # ...but never a session in use: with three in use, the next one is refused.
        refused = client.post(server.url(), json=INITIALIZE, headers=JSON_AND_SSE)
        assert refused.status_code == 429, refused.text
        message = refused.json()["error"]["message"]
        assert "3 sessions" in message and "--max-sessions-per-client" in message
        # Closing one makes room.
        assert client.delete(server.url(), headers=_in_session(newest)).status_code == 200
        assert _open_session(client, server, use=True)


async def test_a_flood_of_unused_sessions_does_not_lock_out_a_2025_11_25_client(toy_launch, log_dir):
    args = ("--max-sessions-per-client", "5")
    with http_server(toy_launch, extra_args=args, log_dir=log_dir) as server:
        with httpx.Client() as client:
            for _ in range(40):
                _open_session(client, server, use=False)
        async with open_session(server.url(), era=LEGACY, timeout=15) as session:
            assert (await session.call_ok("add", {"a": 2, "b": 2})).data == 4
