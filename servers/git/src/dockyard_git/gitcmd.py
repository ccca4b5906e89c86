"""The one way this server runs git: hardened, bounded, killable.

Every git process gets:

* an environment with no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  an empty ``HOME``), no prompts, no pager, and ``GIT_DIR``/``GIT_WORK_TREE`` set
  explicitly — so a repository's ``core.worktree`` cannot point git elsewhere;
* ``-c`` overrides that neutralise every command a repository's own config can name: hooks, fsmonitor,
  clean/smudge/process filters, external diff and textconv drivers, merge drivers, pagers, editors,
  ssh/askpass/credential helpers, signing programs, automatic gc;
* a time limit, after which it is killed, and an output budget: stdout is read only up to the budget,
  then the process is killed and the result marked truncated — a 25 MB diff costs what the budget costs.
"""

from __future__ import annotations

import contextvars
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound

__all__ = ["GitOutput", "GitRunner", "running_processes"]

# The git processes started on behalf of the current tool call (the list is shared with the worker
# thread that runs the call), so a cancelled request can kill them instead of waiting for the timeout.
running_processes: contextvars.ContextVar[list[subprocess.Popen] | None] = contextvars.ContextVar(
    "running_processes", default=None
)

_EMPTY_HOME = tempfile.mkdtemp(prefix="dockyard-git-home-")

_FIXED_OVERRIDES = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.fsmonitorHookVersion": "0",
    "core.untrackedCache": "false",
    "core.pager": "cat",
    "core.editor": "false",
    "core.askPass": "",
    "core.sshCommand": "false",
    "core.gitProxy": "",
    "core.alternateRefsCommand": "",
    "core.excludesFile": "/dev/null",
    "core.attributesFile": "/dev/null",
    "sequence.editor": "false",
    "diff.external": "",
    "credential.helper": "",
    "protocol.allow": "never",
    "gpg.program": "false",
    "gpg.ssh.program": "false",
    "gpg.x509.program": "false",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "log.showSignature": "false",
    "merge.verifySignatures": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
    "color.ui": "never",
    "blame.ignoreRevsFile": "",
    "status.submoduleSummary": "false",
    "submodule.recurse": "false",
    "diff.submodule": "short",
}

# Keys of the form <section>.<name>.<key> whose value is a command git may run.
_NAMED_COMMANDS = {
    "filter": ("clean", "smudge", "process"),
    "diff": ("command", "textconv"),
    "merge": ("driver",),
    "pager": (),
}


@dataclass(frozen=True)
class GitOutput:
    text: str
    truncated: bool  # stopped at the output budget; the process was killed
    returncode: int | None
    stderr: str


class GitRunner:
    def __init__(self, *, timeout_s: float = 20.0, git: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.git = git or shutil.which("git") or "git"
        self._overrides_cache: dict[tuple[str, float], list[str]] = {}
        self._lock = threading.Lock()

    # -- configuration ------------------------------------------------------------------------

    def _environment(self, git_dir: Path, work_tree: Path | None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": _EMPTY_HOME,
            "XDG_CONFIG_HOME": _EMPTY_HOME,
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_LITERAL_PATHSPECS": "1",  # a path is a path: no ':(top)', globs or other pathspec magic
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": "false",
            "GIT_SSH_COMMAND": "false",
            "GIT_ASKPASS": "false",
            "SSH_ASKPASS": "false",
            "GIT_DIR": str(git_dir),
        }
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return env

    def _named_overrides(self, git_dir: Path) -> list[str]:
        """``-c`` pairs blanking every filter/diff/merge driver command the repository's config names."""
        config = git_dir / "config"
        try:
            stamp = config.stat().st_mtime
        except OSError:
            return []
        key = (str(config), stamp)
        with self._lock:
            if key in self._overrides_cache:
                return self._overrides_cache[key]
        listing = subprocess.run(
            [self.git, "config", "--file", str(config), "--includes", "--name-only", "--list"],
            capture_output=True,
            text=True,
            timeout=self.timeout_s,
            env=self._environment(git_dir, None),
            stdin=subprocess.DEVNULL,
        )
        pairs: list[str] = []
        for name in listing.stdout.splitlines():
            section, _, rest = name.partition(".")
            subsection, _, leaf = rest.rpartition(".")
            if section == "pager":
                pairs += ["-c", f"{name}=cat"]
            elif section in _NAMED_COMMANDS and subsection and leaf in _NAMED_COMMANDS[section]:
                pairs += ["-c", f"{section}.{subsection}.{leaf}="]
                if section == "filter":
                    pairs += ["-c", f"{section}.{subsection}.required=false"]
        with self._lock:
            self._overrides_cache[key] = pairs
        return pairs

    def command(self, git_dir: Path, args: Sequence[str]) -> list[str]:
        fixed = [item for key, value in _FIXED_OVERRIDES.items() for item in ("-c", f"{key}={value}")]
        return [
            self.git,
            "--no-pager",
            "--no-replace-objects",
            *fixed,
            *self._named_overrides(git_dir),
            *args,
        ]

    # -- running ------------------------------------------------------------------------------

    def run(
        self,
        git_dir: Path,
        work_tree: Path | None,
        args: Sequence[str],
        *,
        max_bytes: int = 4_000_000,
        timeout_s: float | None = None,
        check: bool = True,
        stdin: bytes | None = None,
    ) -> GitOutput:
        """Run git; read at most ``max_bytes`` of stdout, then stop it."""
        timeout = timeout_s or self.timeout_s
        process = subprocess.Popen(
            self.command(git_dir, args),
            cwd=str(work_tree or git_dir),
            env=self._environment(git_dir, work_tree),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        tracked = running_processes.get()
        if tracked is not None:
            tracked.append(process)
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(timeout, stop)
        timer.start()
        stderr_chunks: list[bytes] = []
        reader = threading.Thread(
            target=lambda: stderr_chunks.append(process.stderr.read(65536)), daemon=True
        )
        reader.start()
        try:
            if stdin is not None:
                process.stdin.write(stdin)
                process.stdin.close()
            chunks: list[bytes] = []
            size = 0
            truncated = False
            while True:
                chunk = process.stdout.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    truncated = True
                    process.kill()
                    break
            process.wait()
        finally:
            timer.cancel()
            process.stdout.close()
        reader.join(timeout=1)
        stderr = b"".join(stderr_chunks).decode("utf-8", "replace")
        data = b"".join(chunks)[:max_bytes] if truncated else b"".join(chunks)
        if expired.is_set() and not truncated:
            raise LimitExceeded(
                f"git took longer than {timeout:.0f} s and was stopped.",
                next_step="Narrow the request: a revision range, a path filter or a smaller max_count.",
            )
        if check and not truncated and process.returncode != 0:
            raise _problem_from_stderr(args, stderr)
        return GitOutput(data.decode("utf-8", "replace"), truncated, process.returncode, stderr)


def _problem_from_stderr(args: Sequence[str], stderr: str):
    message = " ".join(line.strip() for line in stderr.strip().splitlines()[-3:]) or "git failed"
    message = re.sub(r"(?i)(https?://)[^@\s/]+@", r"\1", message)  # never echo credentials in URLs
    lowered = message.lower()
    command = args[0] if args else "git"
    if (
        "unknown revision" in lowered
        or "bad revision" in lowered
        or "invalid object name" in lowered
        or "bad object" in lowered
    ):
        return NotFound(
            f"git {command}: {message}", next_step="Check the revision with git_log or git_branches."
        )
    if "does not exist in" in lowered or "exists on disk, but not in" in lowered or "pathspec" in lowered:
        return NotFound(f"git {command}: {message}", next_step="Check the path with git_status or git_grep.")
    if "index.lock" in lowered or "unable to create" in lowered:
        return Conflict(
            f"git {command}: another git process is working in this repository ({message}).",
            retryable=True,
            next_step="Retry in a few seconds.",
        )
    if "not a git repository" in lowered:
        return NotFound(
            f"git {command}: not a git repository.",
            next_step="Call git_repositories to list served repositories.",
        )
    return InvalidArgument(f"git {command} failed: {message}", next_step="Check the arguments and try again.")
