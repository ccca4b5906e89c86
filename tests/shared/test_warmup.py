"""The warm-up: work deferred until the first exchange is over, then done in the background."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from pathlib import Path

import httpx

from dockyard_shared import warmup
from dockyard_shared.server import new_server
from tests.harness import INITIALIZE, Launch, http_server, open_session

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def wait_for(path: Path, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_over_stdio_the_warm_up_waits_until_the_request_after_initialize_is_answered(toy_launch, tmp_path):
    marker = tmp_path / "warmed"
    launch = Launch(toy_launch.script, (*toy_launch.args, "--warm-up-file", str(marker)), cwd=toy_launch.cwd)
    process = subprocess.Popen(
        launch.command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=launch.environment(),
        cwd=launch.cwd,
    )

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    try:
        send(INITIALIZE)
        assert "result" in json.loads(process.stdout.readline())
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listing = json.loads(process.stdout.readline())
        assert listing["id"] == 2 and listing["result"]["tools"]
        assert wait_for(marker), "the warm-up did not run after tools/list was answered"
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def test_over_http_a_lone_initialize_starts_the_warm_up_after_a_while(toy_launch, tmp_path, log_dir):
    marker = tmp_path / "warmed"
    with http_server(toy_launch, extra_args=("--warm-up-file", str(marker)), log_dir=log_dir) as server:
        assert httpx.get(server.url("/health")).status_code == 200
        assert not marker.exists()  # a health probe is not a client
        response = httpx.post(server.url(), json=INITIALIZE, headers=MCP_HEADERS)
        assert response.status_code == 200
        assert wait_for(marker), "the warm-up did not run after initialize over HTTP"


async def test_the_trigger_fires_once_after_the_first_request_that_follows_initialize(toy):
    fired: list[str] = []
    toy.add_middleware(warmup.WarmUpTrigger(lambda idle: fired.append("warm-up")))
    async with open_session(toy, era="2025-11-25") as session:
        await session.list_tools()
        await session.call_ok("add", {"a": 1, "b": 2})
        deadline = time.monotonic() + 30
        while not fired and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    assert fired == ["warm-up"]


def test_a_failing_step_does_not_stop_the_next_ones_and_each_step_runs_once():
    server = new_server("warm", instructions="test")
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("no network here")

    warmup.after_initialize(server, broken)
    warmup.after_initialize(server, lambda: ran.append("second"))
    warmup.start([server], then=lambda: ran.append("then")).join(timeout=60)
    assert ran == ["second", "then"]
    warmup.start([server]).join(timeout=60)
    assert ran == ["second", "then"]


def test_importing_makes_a_step_that_imports_the_modules_named():
    step = warmup.importing("json", "email.mime.text")
    step()
    import sys

    assert "email.mime.text" in sys.modules


def test_each_step_waits_until_no_request_is_in_flight():
    server = new_server("warm", instructions="test")
    ran = threading.Event()
    warmup.after_initialize(server, ran.set)
    idle = threading.Event()  # a request is in flight
    thread = warmup.start([server], idle=idle)
    assert not ran.wait(0.3)
    idle.set()  # the server went quiet
    thread.join(timeout=60)
    assert ran.is_set()


def test_a_generator_step_waits_until_no_request_is_in_flight_between_its_items():
    server = new_server("warm", instructions="test")
    done: list[int] = []
    idle = threading.Event()
    idle.set()
    first_unit = threading.Event()

    def units():
        for unit in range(3):
            done.append(unit)
            if unit == 0:
                idle.clear()  # a request arrived while the first unit ran
                first_unit.set()
            yield

    warmup.after_initialize(server, units)
    thread = warmup.start([server], idle=idle)
    assert first_unit.wait(60)
    time.sleep(0.3)
    assert done == [0]
    idle.set()  # the request was answered
    thread.join(timeout=60)
    assert done == [0, 1, 2]
