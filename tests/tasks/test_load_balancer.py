"""Three dockyard-tasks replicas on PostgreSQL behind HAProxy, configured by deploy/haproxy/haproxy.cfg (the
file itself, its addresses from the environment), with clients of both protocol eras; one replica is
killed mid-run. Nothing written is lost (every increment is a compare-and-set on one counter), the
sessions the killed replica held are told why they ended and a new session works, and
subscribers on the other replicas keep hearing changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from dockyard_tasks.drafts import TaskChanges
from dockyard_tasks.store import TaskStore
from tests.harness import LEGACY, MODERN, REPO_ROOT, Session, free_port, http_server, open_session
from tests.tasks.helpers import Inbox, tasks_launch

pytestmark = pytest.mark.slow

CONFIG = REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg"
REPLICAS = ("tasks1", "tasks2", "tasks3")  # the server names in CONFIG
KILL_AFTER = 12  # increments made before the replica is killed
DONE = 40  # increments made in all


@contextmanager
def haproxy(replicas: list[str], log_dir: Path) -> Iterator[str]:
    """HAProxy running CONFIG in front of ``replicas`` (host:port each); its base URL."""
    binary = shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
    )
    if binary is None:
        pytest.skip("HAProxy is not installed (Debian/Ubuntu: apt-get install haproxy); .ci/run installs it")
    port = free_port()
    env = {
        **os.environ,
        "DOCKYARD_LB_BIND": f"127.0.0.1:{port}",
        **{f"DOCKYARD_TASKS_{i}": address for i, address in enumerate(replicas, start=1)},
    }
    checked = subprocess.run([binary, "-c", "-f", str(CONFIG)], env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with (log_dir / "haproxy.log").open("wb") as log:
        process = subprocess.Popen(
            [binary, "-db", "-f", str(CONFIG)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        seen: set[str] = set()
        while seen != set(REPLICAS):  # every replica up and reachable through it
            assert process.poll() is None, (log_dir / "haproxy.log").read_text()
            assert time.monotonic() < deadline, f"only {seen} answered through HAProxy"
            try:
                response = httpx.get(url + "/health", timeout=2)
                if response.status_code == 200:
                    seen.add(response.headers["x-dockyard-replica"])
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@asynccontextmanager
async def legacy_session(url: str, inbox: Inbox | None = None) -> AsyncIterator[tuple[Session, str, str]]:
    """A 2025-11-25 session through the balancer, the replica that holds it (HAProxy says which) and its id."""
    import httpx2

    answers: list[tuple[str, str]] = []

    async def note(response) -> None:
        answers.append(
            (response.headers.get("x-dockyard-replica", ""), response.headers.get("mcp-session-id", ""))
        )

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=30), event_hooks={"response": [note]})
        )
        read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        raw = await stack.enter_async_context(
            ClientSession(
                read, write, read_timeout_seconds=30, message_handler=inbox.handle if inbox else None
            )
        )
        await raw.initialize()
        yield Session(raw, transport="http", era=LEGACY), *answers[0]


def leaves(error: BaseException) -> str:
    """The messages of an exception and, for a group, of every exception in it."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(leaves(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"


class Run:
    def __init__(self, counter: str) -> None:
        self.counter = counter
        self.done = 0  # increments that succeeded
        self.uncertain = 0  # update calls whose answer was lost: each may or may not have been saved
        self.conflicts = 0
        self.killed = anyio.Event()
        self.reopened: list[str] = []  # replicas of the sessions opened after one ended

    async def increment(self, session: Session) -> None:
        """One compare-and-set: read the counter and its version, write counter+1 at that version."""
        task = (await session.call_ok("get_task", {"task_id": self.counter})).data
        try:
            outcome = await session.call(
                "update_task",
                {
                    "task_id": self.counter,
                    "title": str(int(task["title"]) + 1),
                    "expected_version": task["version"],
                },
            )
        except Exception:
            self.uncertain += 1
            raise
        if outcome.is_error:
            assert "Error (conflict)" in outcome.text, outcome.text
            self.conflicts += 1
        else:
            self.done += 1


async def test_replicas_behind_haproxy_lose_nothing_when_one_is_killed(postgres_url, log_dir):
    # update_task (the compare-and-set below) is in the manage toolset, off by default.
    flags = ("--trusted-proxy", "127.0.0.1/32", "--toolsets", "all")
    with ExitStack() as stack:
        replicas = [
            stack.enter_context(http_server(tasks_launch(postgres_url, *flags, "--demo"), log_dir=log_dir))
        ]
        replicas += [
            stack.enter_context(http_server(tasks_launch(postgres_url, *flags), log_dir=log_dir))
            for _ in range(2)
        ]
        by_name = dict(zip(REPLICAS, replicas, strict=True))
        base = stack.enter_context(haproxy([r.base_url.removeprefix("http://") for r in replicas], log_dir))
        url = base + "/mcp"
        async with AsyncExitStack() as sessions:
            first = await sessions.enter_async_context(open_session(url, era=MODERN))
            created = (await first.call_ok("create_task", {"project": "TASK", "title": "0"})).data
            run = Run(created["id"])
            counter_uri = f"task://{run.counter}"

            # A 2025-11-25 subscriber on each replica (round robin spreads them; affinity keeps them). Each
            # in a task of its own: the killed replica's ends with its stream.
            subscribers: dict[str, Inbox] = {}
            stop = anyio.Event()
            ended: list[str] = []

            async def subscriber(task_status=anyio.TASK_STATUS_IGNORED) -> None:
                inbox = Inbox()
                try:
                    async with legacy_session(url, inbox) as (session, replica, _):
                        if replica in subscribers:
                            task_status.started(False)
                            return
                        async with inbox.subscribed(session, [counter_uri]):
                            subscribers[replica] = inbox
                            task_status.started(True)
                            await stop.wait()
                except Exception as error:
                    assert run.killed.is_set(), f"failed before any replica was killed: {leaves(error)}"
                    ended.append(leaves(error))

            async def legacy_worker(task_status=anyio.TASK_STATUS_IGNORED) -> None:
                started = lost = False
                # A worker whose session was lost opens a new one even when the others finished the run
                # meanwhile: that the new session works is what is checked.
                while run.done < DONE or lost:
                    try:
                        async with legacy_session(url) as (session, replica, session_id):
                            if not started:
                                task_status.started((replica, session_id))
                                started = True
                            else:
                                run.reopened.append(replica)
                                await session.call_ok("get_task", {"task_id": run.counter})
                                lost = False
                            while run.done < DONE:
                                await run.increment(session)
                    except Exception as error:  # the session went with its replica
                        assert run.killed.is_set(), f"failed before any replica was killed: {leaves(error)}"
                        ended.append(leaves(error))
                        lost = True
                        await anyio.sleep(0.05)

            async def modern_worker() -> None:
                while run.done < DONE:
                    try:
                        async with open_session(url, era=MODERN) as session:
                            while run.done < DONE:
                                await run.increment(session)
                    except Exception as error:  # its request in flight on the killed replica: a new client
                        assert run.killed.is_set(), f"failed before any replica was killed: {leaves(error)}"
                        ended.append(leaves(error))
                        await anyio.sleep(0.05)  # a client that fails at once must not starve the others

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    await group.start(subscriber)
                    if len(subscribers) == len(REPLICAS):
                        break
                assert set(subscribers) == set(REPLICAS)
                async with anyio.create_task_group() as workers:
                    victim_name, victim_session = await workers.start(legacy_worker)
                    await workers.start(legacy_worker)
                    for _ in range(3):
                        workers.start_soon(modern_worker)
                    with anyio.fail_after(120):
                        while run.done < KILL_AFTER:
                            await anyio.sleep(0.05)
                    victim = by_name[victim_name]
                    victim.process.kill()
                    victim.process.wait()
                    for inbox in subscribers.values():
                        inbox.updated.clear()
                    run.killed.set()
                    workers.cancel_scope.deadline = anyio.current_time() + 60
                if workers.cancel_scope.cancelled_caught:
                    logs = "\n".join(p.read_text()[-3000:] for p in sorted(log_dir.iterdir()))
                    raise AssertionError(f"workers stuck at {run.done} of {DONE}; ended: {ended}\n{logs}")
                # The killed replica's session, asked for through the balancer, is answered with why it is gone.
                async with httpx.AsyncClient(timeout=20) as client:
                    gone = await client.post(
                        url,
                        json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                        headers={
                            "Accept": "application/json, text/event-stream",
                            "Mcp-Session-Id": victim_session,
                            "Mcp-Protocol-Version": LEGACY,
                        },
                    )
                assert gone.status_code == 404, gone.text
                message = gone.json()["error"]["message"]
                assert message.startswith("Session not found") and "has stopped" in message, message
                assert "initialize again" in message
                # Its worker's session ended, and the new session it opened worked (on another replica).
                assert run.reopened and victim_name not in run.reopened, (run.reopened, ended)
                survivors = {name: inbox for name, inbox in subscribers.items() if name != victim_name}

                # No lost update: the counter went up once per successful compare-and-set (plus each update
                # whose answer was lost with the replica), and each of its versions is one increment.
                final = (await first.call_ok("get_task", {"task_id": run.counter})).data
                assert run.done <= int(final["title"]) <= run.done + run.uncertain, (final, run.__dict__)
                assert final["version"] == int(final["title"]) + 1

                # Subscribers on the surviving replicas heard the writes made after the kill…
                for inbox in survivors.values():
                    await inbox.wait_for(counter_uri)
                    inbox.updated.clear()
                # …and still hear a write made by a process outside the balancer (through NOTIFY).
                other = TaskStore(postgres_url)
                try:
                    other.update_task(run.counter, TaskChanges(priority="urgent"), actor="outsider")
                finally:
                    other.close()
                for inbox in survivors.values():
                    await inbox.wait_for(counter_uri)
                stop.set()
        # Both eras' requests were spread over the replicas (the HAProxy log names the server of each).
        log = (log_dir / "haproxy.log").read_text()
        assert {name for name in REPLICAS if f"tasks/{name} " in log} == set(REPLICAS), log[-2000:]
