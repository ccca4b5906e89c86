"""The runner as a host meets it: a real process over stdio and over Streamable HTTP, both eras."""

from __future__ import annotations

import json
import subprocess
import time

import httpx
import pytest

from tests.harness import ERAS, INITIALIZE, Launch, free_port, http_server, open_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy_http(toy_launch, log_dir):
    with http_server(toy_launch, log_dir=log_dir) as server:
        yield server


@pytest.fixture(scope="module")
def toy_http_with_token(toy_launch, log_dir):
    launch = Launch(
        toy_launch.script, toy_launch.args, env={"DOCKYARD_AUTH_TOKEN": "s3cret-token"}, cwd=toy_launch.cwd
    )
    with http_server(launch, log_dir=log_dir) as server:
        yield server


@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_session_lists_and_calls_tools_with_server_flags_applied(toy_launch, era):
    launch = Launch(toy_launch.script, (*toy_launch.args, "--offset", "10"), cwd=toy_launch.cwd)
    async with open_session(launch, era=era) as session:
        assert {"add", "word", "crash", "sleep"} <= await session.tool_names()
        assert (await session.call_ok("add", {"a": 1, "b": 2})).data == 13
        assert (await session.call_error("word", {"name": "-x"})).startswith("Error (invalid_argument)")


@pytest.mark.parametrize("era", ERAS)
async def test_an_http_session_lists_and_calls_tools(toy_http, era):
    async with open_session(toy_http.url(), era=era) as session:
        assert (await session.call_ok("add", {"a": 2, "b": 3})).data == 5
        assert await session.ping()


def test_stdout_carries_nothing_but_protocol_messages(toy_launch):
    process = subprocess.run(
        [*toy_launch.command(), "--log-level", "DEBUG"],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=toy_launch.environment(),
        cwd=toy_launch.cwd,
    )
    lines = [line for line in process.stdout.splitlines() if line.strip()]
    assert lines, process.stderr
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "toy"
    assert "DEBUG" in process.stderr  # the logs went somewhere: stderr


def test_stderr_logs_an_expected_failure_in_one_line_and_an_unexpected_one_with_its_traceback(toy_launch):
    def call(number: int, tool: str, arguments: dict) -> str:
        request = {"name": tool, "arguments": arguments}
        return json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": request})

    messages = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2, "word", {"name": "zeta"}),
        call(3, "crash", {}),
    ]
    process = subprocess.Popen(
        toy_launch.command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=toy_launch.environment(),
        cwd=toy_launch.cwd,
    )
    replies: dict = {}
    try:
        process.stdin.write("\n".join(messages) + "\n")
        process.stdin.flush()
        while not {2, 3} <= set(replies):  # stdin stays open until both calls are answered
            reply = json.loads(process.stdout.readline())
            replies[reply.get("id")] = reply
        process.stdin.close()
        stderr = process.stderr.read()
    finally:
        process.kill()
        process.wait(10)
    assert replies[2]["result"]["isError"] and replies[3]["result"]["isError"], replies
    # The refusal is the model's business: one line, no traceback. The crash is the operator's: its
    # traceback (with the detail the client never sees) is in the log.
    assert "Error calling tool 'word'" in stderr
    assert stderr.count("Traceback") == 1, stderr
    assert "RuntimeError: secret detail" in stderr.split("Traceback", 1)[1]


def test_health_answers_without_a_session(toy_http):
    response = httpx.get(toy_http.url("/health"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "servers": ["toy"], "checks": {"toy": {}}}  # a toy has none


def test_a_foreign_host_header_is_refused_as_dns_rebinding(toy_http):
    response = httpx.post(toy_http.url(), json=INITIALIZE, headers={"Host": "evil.example"})
    assert response.status_code == 421


def test_a_foreign_browser_origin_is_refused(toy_http):
    headers = {"Origin": "http://evil.example", "Accept": "application/json, text/event-stream"}
    response = httpx.post(toy_http.url(), json=INITIALIZE, headers=headers)
    assert response.status_code == 403


def test_a_loopback_request_is_served(toy_http):
    headers = {"Accept": "application/json, text/event-stream", "Origin": "http://localhost:6274"}
    response = httpx.post(toy_http.url(), json=INITIALIZE, headers=headers)
    assert response.status_code == 200


def test_without_the_bearer_token_the_endpoint_answers_401_but_health_stays_open(toy_http_with_token):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
        response = httpx.post(toy_http_with_token.url(), json=INITIALIZE, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "s3cret-token" not in response.text
    assert httpx.get(toy_http_with_token.url("/health")).status_code == 200


@pytest.mark.parametrize("era", ERAS)
async def test_with_the_bearer_token_a_session_works(toy_http_with_token, era):
    headers = {"Authorization": "Bearer s3cret-token"}
    async with open_session(toy_http_with_token.url(), era=era, headers=headers) as session:
        assert (await session.call_ok("add", {"a": 1, "b": 1})).data == 2


def test_a_non_loopback_bind_without_a_token_refuses_to_start(toy_launch):
    process = toy_launch.run(
        "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port()), unset=("DOCKYARD_AUTH_TOKEN",)
    )
    assert process.returncode == 2
    assert "Refusing to serve on 0.0.0.0" in process.stderr and "DOCKYARD_AUTH_TOKEN" in process.stderr
    assert process.stdout == ""


def test_help_lists_the_common_and_the_server_flags(toy_launch):
    process = toy_launch.run("--help")
    assert process.returncode == 0
    for flag in ("--transport", "--host", "--port", "--path", "--log-level", "--auth-token", "--offset"):
        assert flag in process.stdout


def test_an_idle_http_session_expires(toy_launch, log_dir):
    headers = {"Accept": "application/json, text/event-stream"}
    with http_server(toy_launch, extra_args=("--session-idle-timeout", "1"), log_dir=log_dir) as server:
        session_id = httpx.post(server.url(), json=INITIALIZE, headers=headers).headers["mcp-session-id"]
        in_session = {**headers, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert httpx.post(server.url(), json=listing, headers=in_session).status_code == 200
        # Every request restarts the idle clock, so each probe follows a silence longer than the
        # timeout; a few rounds allow for the reaper's own schedule.
        for _ in range(10):
            time.sleep(2.5)
            if httpx.post(server.url(), json=listing, headers=in_session).status_code == 404:
                break
        else:
            pytest.fail("the idle session was never closed")


@pytest.mark.parametrize(
    "flag",
    [
        "--session-idle-timeout",
        "--session-init-timeout",
        "--max-sessions-per-client",
        "--header-timeout",
        "--body-timeout",
        "--max-connections",
    ],
)
@pytest.mark.parametrize("value", ["0", "-1", "inf", "many"])
def test_every_http_limit_must_be_a_positive_number(flag, value, capsys):
    import argparse

    from dockyard_shared.runner import add_runner_arguments

    parser = argparse.ArgumentParser(prog="dockyard-toy")
    add_runner_arguments(parser)
    assert getattr(parser.parse_args([flag, "7"]), flag[2:].replace("-", "_")) == 7
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([flag, value])
    assert exited.value.code == 2
    assert flag in capsys.readouterr().err
