"""The server-wide bound on concurrent git processes (--max-git-processes), seen from outside.

The server runs a fake ``git`` first on its PATH: a shell script that writes a line to a log when it
starts and when it ends (with its arguments), holds on a moment so processes that run at once overlap,
optionally waits while a "block" file exists, and then runs the real git. The log is the git processes'
own account of when they ran: the most lines "open" at once is how many ran at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from dockyard_git.gitcmd.slots import GitBusy, ProcessSlots
from dockyard_shared import LimitExceeded
from tests.git.helpers import make_repo
from tests.git.remote_setup import make_remotes
from tests.harness import ERAS, LEGACY, Launch, http_server, open_session

pytestmark = pytest.mark.slow

PATIENCE_S = 120  # how long any condition may take on a loaded machine before the test gives up

FAKE_GIT = """#!/bin/sh
echo "start $$ $*" >> {log}
sleep 0.05
case " $* " in *" {blocked} "*) while [ -e {block} ]; do sleep 0.05; done;; esac
{real} "$@"
code=$?
echo "end $$" >> {log}
exit $code
"""


class FakeGit:
    def __init__(self, folder: Path, blocked: str = "no-such-command") -> None:
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.log = folder / "git.log"
        self.log.touch()
        self.block = folder / "block"
        script = self.bin / "git"
        script.write_text(
            FAKE_GIT.format(log=self.log, blocked=blocked, block=self.block, real=shutil.which("git"))
        )
        script.chmod(0o755)

    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.bin}:{os.environ['PATH']}"}

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def most_at_once(self) -> int:
        running = most = 0
        for line in self.lines():
            running += 1 if line.startswith("start ") else -1
            most = max(most, running)
        return most

    def started(self, command: str) -> int:
        """How many git processes ran ``command`` (the subcommand word)."""
        return sum(1 for line in self.lines() if line.startswith("start ") and f" {command} " in f"{line} ")


async def until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "roots" / "project")


@pytest.mark.parametrize("era", ERAS)
async def test_with_one_slot_many_concurrent_http_clients_all_succeed_one_git_at_a_time(
    tmp_path, repo, log_dir, era
):
    fake = FakeGit(tmp_path)
    launch = Launch("dockyard-git", ("--root", str(repo), "--max-git-processes", "1"), env=fake.env())
    with http_server(launch, log_dir=log_dir) as server:

        async def client() -> list:
            async with open_session(server.url(), era=era, timeout=PATIENCE_S) as session:
                return [
                    await session.call("git_status"),
                    await session.call("git_log", {"max_count": 2}),
                    await session.call("git_status"),
                ]

        outcomes = [o for batch in await asyncio.gather(*(client() for _ in range(8))) for o in batch]
    assert [o.text for o in outcomes if o.is_error] == []
    assert all(o.data["branch"] == "main" for o in outcomes[0::3])
    assert fake.started("status") == 16 and fake.started("log") == 8
    assert fake.most_at_once() == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_cancelled_while_it_waits_for_a_slot_leaves_the_queue_and_frees_nothing_twice(
    tmp_path, repo, log_dir, era
):
    fake = FakeGit(tmp_path, blocked="log")
    fake.block.touch()
    launch = Launch(
        "dockyard-git",
        ("--root", str(repo), "--max-git-processes", "1", "--git-timeout", "60", "--log-level", "DEBUG"),
        env=fake.env(),
    )
    with http_server(launch, log_dir=log_dir) as server:
        async with open_session(server.url(), era=era, timeout=PATIENCE_S) as session:
            await session.call_ok("git_status")  # the repository's layout is read: only git log is left
            holder = asyncio.create_task(session.call("git_log", {"max_count": 1}))
            await until(lambda: fake.started("log") == 1, "git log to hold the only slot")
            waiter = asyncio.create_task(session.call("git_status"))
            await until(lambda: "waiting for a git slot" in server.log(), "git_status to queue for a slot")
            waiter.cancel()  # the client sends notifications/cancelled
            await until(lambda: "a cancelled call left the queue" in server.log(), "the waiter to leave")
            holder.cancel()  # its git log is killed, and its slot freed
            after = await session.call("git_status")
    assert not after.is_error, after.text
    assert after.data["branch"] == "main"
    # The cancelled git_status never started a git; the one after it did (and the first call's one).
    assert fake.started("status") == 2, fake.lines()
    assert fake.most_at_once() == 1


async def test_a_slow_fetch_holds_no_slot_local_reads_need(tmp_path, log_dir):
    remotes = make_remotes(tmp_path)
    fake = FakeGit(tmp_path, blocked="fetch")
    fake.block.touch()
    launch = Launch(
        "dockyard-git",
        (
            "--root",
            str(remotes.root),
            "--allow-remote",
            "--remote-protocol",
            "file",
            "--max-git-processes",
            "1",
            "--max-remote-git-processes",
            "1",
        ),
        env=fake.env(),
    )
    with http_server(launch, log_dir=log_dir) as server:
        async with open_session(server.url(), era=LEGACY, timeout=PATIENCE_S) as session:
            fetch = asyncio.create_task(session.call("git_fetch", {"repo_path": "work"}))
            await until(lambda: fake.started("fetch") == 1, "git fetch to start")
            reads = [await session.call("git_status", {"repo_path": "work"}) for _ in range(3)]
            still_fetching = not fetch.done()
            fake.block.unlink()
            fetched = await fetch
    assert still_fetching
    assert [r.is_error for r in reads] == [False] * 3 and reads[0].data["branch"] == "main"
    assert not fetched.is_error, fetched.text


# -- the queue itself (plain logic: fairness and the busy answer need exact timing) ----------------------


def test_waiters_get_slots_in_the_order_they_arrived():
    slots = ProcessSlots(1, flag="--max-git-processes")
    order: list[int] = []
    deadline = time.monotonic() + PATIENCE_S
    with slots.held(deadline):
        threads = []
        for index in range(5):

            def wait(index: int = index) -> None:
                with slots.held(deadline):
                    order.append(index)

            thread = threading.Thread(target=wait)
            thread.start()
            threads.append(thread)
            while slots.waiting < index + 1:  # this one is queued before the next arrives
                time.sleep(0.001)
    for thread in threads:
        thread.join(PATIENCE_S)
    assert order == [0, 1, 2, 3, 4]
    assert slots.busy == 0 and slots.waiting == 0 and slots.peak == 1


def test_a_wait_past_the_deadline_says_the_server_was_busy_and_that_a_retry_helps():
    slots = ProcessSlots(2, flag="--max-git-processes")
    with (
        slots.held(time.monotonic() + 1),
        slots.held(time.monotonic() + 1),
        pytest.raises(LimitExceeded) as caught,
        slots.held(time.monotonic() + 0.05),
    ):
        pass
    text = caught.value.for_model()
    # Its own kind, so a push or fetch that never started is not reported as one that may have run.
    assert isinstance(caught.value, GitBusy)
    assert "the server was busy" in text and "--max-git-processes 2" in text and caught.value.retryable
    assert slots.busy == 0 and slots.waiting == 0
