"""GitRunner's process handling: time limit, output budget, a flood on stderr, cancellation.

A stand-in `git` (a shell script that replaces itself with the behaviour under test) makes each case
deterministic without a huge repository; the repository layout checks still run on a real git dir.
"""

from __future__ import annotations

import contextvars
import subprocess
import threading
from pathlib import Path

import pytest

from dockyard_git.gitcmd import GitRunner, running_processes
from dockyard_shared import LimitExceeded


@pytest.fixture
def git_dir(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo / ".git"


def fake_git(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-git"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_a_git_process_past_its_time_limit_is_stopped_with_a_limit_error(tmp_path, git_dir):
    runner = GitRunner(
        timeout_s=0.3, git=fake_git(tmp_path, 'case "$*" in *config*) exit 0;; esac; exec sleep 30')
    )
    with pytest.raises(LimitExceeded, match="longer than"):
        runner.run(git_dir, git_dir.parent, ["log"])


def test_output_past_the_budget_is_cut_and_marked(tmp_path, git_dir):
    runner = GitRunner(git=fake_git(tmp_path, 'case "$*" in *config*) exit 0;; esac; exec yes line'))
    output = runner.run(git_dir, git_dir.parent, ["log"], max_bytes=100_000)
    assert output.truncated
    assert len(output.text) == 100_000


def test_a_flood_on_stderr_neither_blocks_git_nor_fills_memory(tmp_path, git_dir):
    # 1 MB on stderr before any stdout: with stderr left unread, git would block on a full pipe.
    body = 'case "$*" in *config*) exit 0;; esac; head -c 1000000 /dev/zero | tr "\\0" x >&2; echo done'
    output = GitRunner(timeout_s=20, git=fake_git(tmp_path, body)).run(git_dir, git_dir.parent, ["log"])
    assert output.text == "done\n"
    assert output.returncode == 0
    assert 0 < len(output.stderr) <= 65_536


def test_killing_the_tracked_processes_ends_a_running_call(tmp_path, git_dir):
    runner = GitRunner(
        timeout_s=60, git=fake_git(tmp_path, 'case "$*" in *config*) exit 0;; esac; exec sleep 60')
    )
    processes: list = []
    token = running_processes.set(processes)
    try:
        result: dict = {}

        def call() -> None:
            try:
                result["output"] = runner.run(git_dir, git_dir.parent, ["log"], check=False)
            except Exception as error:  # pragma: no cover - reported by the assertion below
                result["error"] = error

        # As anyio's worker threads do, the thread runs in a copy of this context, which holds the list.
        worker = threading.Thread(target=contextvars.copy_context().run, args=(call,))
        worker.start()
        # Reading the repository's config starts short git processes first; wait for the log itself.
        while worker.is_alive() and not any("log" in process.args for process in processes):
            worker.join(0.01)
        for process in processes:
            process.kill()  # what run_cancellable does when the request is cancelled
        worker.join(10)
        assert not worker.is_alive()
        assert "error" not in result, result.get("error")
        assert result["output"].returncode != 0
    finally:
        running_processes.reset(token)


def overrides_seen(runner: GitRunner, git_dir: Path, command: str) -> dict[str, str]:
    """The config overrides a git ``command`` gets from the runner (the fake git prints its environment)."""
    output = runner.run(git_dir, git_dir.parent, [command])
    environment = dict(line.split("=", 1) for line in output.text.splitlines() if "=" in line)
    return {
        environment[f"GIT_CONFIG_KEY_{index}"]: environment[f"GIT_CONFIG_VALUE_{index}"]
        for index in range(int(environment["GIT_CONFIG_COUNT"]))
    }


def test_a_read_only_command_gets_only_the_overrides_its_repository_config_calls_for(tmp_path, git_dir):
    # The real git lists the config files; every other command prints the environment it was given.
    runner = GitRunner(git=fake_git(tmp_path, 'case "$*" in *config*) exec git "$@";; esac; exec env'))
    lean = overrides_seen(runner, git_dir, "status")
    # Pack windows sized for the memory limit (1 GiB by default) come with every command.
    assert lean == {
        "core.hooksPath": "/dev/null",
        "core.fsmonitor": "false",
        "core.packedGitWindowSize": "64m",
        "core.packedGitLimit": "512m",
    }
    # A command that may rewrite config (and start git processes that re-read it) gets every override.
    full = overrides_seen(runner, git_dir, "commit")
    assert {"core.hooksPath", "core.pager", "diff.external", "gpg.program", "log.showSignature"} <= set(full)

    # Keys the repository's config sets, in whatever case it spells them, are neutralised for reads too.
    with (git_dir / "config").open("a") as config:
        config.write(
            '[LOG]\n\tShowSignature = true\n[Diff]\n\tEXTERNAL = /bin/evil\n[filter "x"]\n\tclean = evil\n'
        )
    lean = overrides_seen(runner, git_dir, "log")
    assert lean["log.showSignature"] == "false"
    assert lean["diff.external"] == ""
    assert lean["filter.x.clean"] == ""
    assert "core.pager" not in lean
