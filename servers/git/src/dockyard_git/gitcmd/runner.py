"""The one way this server runs git: hardened, bounded, killable.

Every git process gets:

* an environment with no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  an empty ``HOME``), no prompts, no pager, no transport protocol, and ``GIT_DIR``, ``GIT_COMMON_DIR`` and
  ``GIT_WORK_TREE`` set explicitly — so neither a repository's ``core.worktree`` nor a ``commondir`` file
  written after the checks can point git elsewhere;
* the config overrides of its repository's :mod:`.layout`, which neutralise every command any config file
  git could read names; a repository whose layout leads outside the roots is refused. A command that writes
  no file git reads config from (:data:`_SHARED_COMMANDS`) gets only the overrides its repository needs;
* flags that keep it out of submodules (:func:`_without_submodules`): ``--ignore-submodules`` for status
  and diff (on the command line it beats ``submodule.<name>.ignore`` in ``.gitmodules``),
  ``--submodule=short`` for diff, log and show, ``--no-recurse-submodules`` for grep, switch and reset;
* a gatekeeper on the git processes git itself starts: ``GIT_EXEC_PATH`` names a folder whose ``git``
  starts the real one only when ``GIT_DIR`` is still the git directory this runner gave. git starts a
  ``git status`` in a submodule with ``GIT_DIR=.git`` (``git add``, ``git stash`` and ``git switch`` do,
  whatever the config says); that one fails at once, before it reads the submodule's config;
* its own process group, killed as a whole at the time limit, past the output budget or on cancellation;
* an address-space limit (``RLIMIT_AS``) and a CPU-time limit (``RLIMIT_CPU``), set on the process the
  moment it has started (``prlimit``; a ``preexec_fn`` would make every start a full ``fork`` of the server,
  ~30 ms at 150 MB) and inherited by anything it starts. Pack files are mapped in windows that fit the
  limit. Running out of either limit is a :class:`LimitExceeded` naming it;
* a per-repository lock: a command that may rewrite work-tree files (checkout, stash, reset…) runs alone,
  so no other git process starts with overrides computed from config files it is rewriting;
* a slot of the server's bound on concurrent git processes (:mod:`.slots`), waited for in arrival order
  within the time limit; commands that talk to a remote take theirs from a pool of their own;
* a time limit, after which it is killed, and an output budget: stdout is read only up to the budget,
  then the process is killed and the result marked truncated — a 25 MB diff costs what the budget costs.

A command that talks to a remote (fetch, push, ls-remote) is run with a :class:`NetworkAccess`, which adds
to all of the above, never removes: exactly the protocols it lists in ``GIT_ALLOW_PROTOCOL``, config
entries appended after the layout's (a later entry wins), the same treatment as the per-driver keys for
the network keys it names, the operator's environment *under* the runner's, its own time limit (and as
much CPU time), and a limit on the size of any file git writes (``RLIMIT_FSIZE``: one pack cannot exceed
it). Its gatekeeper folder also holds git's https helpers and the credential helpers installed beside git.
What a :class:`NetworkAccess` holds is decided by :mod:`..remotes.access`.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import shlex
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound, PermissionDenied

from .bare import BareCheck
from .config_files import ConfigReader
from .integration import integration_environment
from .layout import EMPTY_HOME, Layout, Layouts, listing_environment
from .locks import SharedExclusive
from .network import NetworkAccess, appended_config, network_environment
from .process import ProcessLimits, run_bounded, running_processes
from .slots import GitSlots

__all__ = ["GitOutput", "GitRunner", "NetworkAccess", "running_processes"]

# Commands that write no work-tree file and no config: they may run side by side in one repository.
_SHARED_COMMANDS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "grep",
        "rev-parse",
        "rev-list",
        "symbolic-ref",
        "cat-file",
        "ls-files",
        "ls-tree",
        "for-each-ref",
        "show-ref",
        "check-ref-format",
        "merge-base",
        "describe",
        "shortlog",
        "name-rev",
        "count-objects",
    }
)

DEFAULT_MEMORY_MB = 1024

_GATEKEEPER_REFUSAL = "dockyard-git: refused to start git in another repository"

_GATEKEEPER = """#!/bin/sh
# dockyard-git: a git started by git runs only in the repository it was started for. git starts one in a
# submodule (GIT_DIR=.git) to see whether it is dirty: that one stops here, before reading any config.
if [ -n "$DOCKYARD_GIT_DIR" ] && [ "$GIT_DIR" = "$DOCKYARD_GIT_DIR" ]; then
    exec {git} "$@"
fi
# git worktree add prepares the new worktree with a git on that worktree's own .git, which it has just written
# (allowed only for that command, for that one path).
if [ -n "$DOCKYARD_GIT_NEW_WORKTREE" ] && [ "$GIT_DIR" = "$DOCKYARD_GIT_NEW_WORKTREE" ]; then
    exec {git} "$@"
fi
echo "{refusal} (GIT_DIR=$GIT_DIR in $PWD): submodules are never looked into" >&2
exit 128
"""


@dataclass(frozen=True)
class GitOutput:
    text: str
    truncated: bool  # stopped at the output budget; the process was killed
    returncode: int | None
    stderr: str


def _default_slots() -> int:
    """As many git processes at once as there are cores, and at least two (see settings.py)."""
    return max(2, os.cpu_count() or 1)


def _without_submodules(args: Sequence[str]) -> list[str]:
    """``args`` with the flags that keep git out of submodules, right after the subcommand.

    status and diff take ``--ignore-submodules=all`` unless the caller chose ``dirty`` (a submodule's
    recorded commit still counts, its files are never looked at); ``none`` or ``untracked`` would start a
    git inside each submodule and are refused.
    """
    command, rest = args[0], list(args[1:])
    flags: list[str] = []
    if command in ("status", "diff"):
        chosen = [a for a in rest if a.startswith("--ignore-submodules")]
        if not chosen:
            flags.append("--ignore-submodules=all")
        elif set(chosen) - {"--ignore-submodules=all", "--ignore-submodules=dirty"}:
            raise ValueError(f"git {command} would look into submodules: {chosen}")
    if command in ("diff", "log", "show"):
        flags.append("--submodule=short")
    if command in ("grep", "switch", "checkout", "reset"):
        flags.append("--no-recurse-submodules")
    if command in ("switch", "checkout"):
        flags.append("--quiet")  # otherwise it lists local changes, asking each submodule whether it is dirty
    return [command, *flags, *rest]


class GitRunner:
    def __init__(
        self,
        *,
        timeout_s: float = 20.0,
        git: str | None = None,
        memory_mb: int = DEFAULT_MEMORY_MB,
        cpu_s: int | None = None,
        slots: GitSlots | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        # Shared by every runner of the server (one per set of roots): the bound is on the whole process.
        self.slots = slots or GitSlots(_default_slots(), 2)
        self.git = git or shutil.which("git") or "git"
        # By default as much CPU time as wall-clock time (grep's threads can spend it faster).
        self.limits = ProcessLimits(memory_mb, cpu_s or max(1, math.ceil(timeout_s)))
        # Pack files are mapped in windows (1 GiB each by default on 64-bit): keep them well inside the limit.
        window_mb = max(1, min(64, memory_mb // 8))
        self._layouts = Layouts(
            git=self.git,
            timeout_s=timeout_s,
            limits=self.limits,
            extra_overrides={
                "core.packedGitWindowSize": f"{window_mb}m",
                "core.packedGitLimit": f"{max(2 * window_mb, memory_mb // 2)}m",
            },
            slots=self.slots.local,
        )
        self.is_bare = BareCheck(
            ConfigReader(git=self.git, timeout_s=timeout_s, limits=self.limits, slots=self.slots.local)
        )
        self._repository_locks: dict[str, SharedExclusive] = {}
        self._lock = threading.Lock()
        self._held = threading.local()  # the git dirs whose lock this thread holds (see holding())
        self._exec_path = self._gatekeeper()
        self._network_exec_path: str | None = None

    def _gatekeeper(self, helpers: Sequence[str] = ()) -> str:
        """A folder for ``GIT_EXEC_PATH`` whose ``git`` is the gatekeeper (module docstring), with links
        to the programs ``helpers`` names (full paths)."""
        real = shutil.which(self.git) or self.git
        folder = tempfile.mkdtemp(prefix="dockyard-git-exec-")
        script = Path(folder) / "git"
        script.write_text(
            _GATEKEEPER.format(git=shlex.quote(os.path.abspath(real)), refusal=_GATEKEEPER_REFUSAL)
        )
        script.chmod(0o500)
        for helper in helpers:
            os.symlink(helper, os.path.join(folder, os.path.basename(helper)))
        weakref.finalize(self, shutil.rmtree, folder, True)
        return folder

    def real_exec_path(self) -> str:
        """Where git's own programs are installed (``git --exec-path``)."""
        finished = run_bounded(
            [self.git, "--exec-path"],
            cwd=EMPTY_HOME,
            env=listing_environment(),
            limits=self.limits,
            timeout_s=self.timeout_s,
            max_bytes=4096,
            slots=self.slots.local,
        )
        return finished.stdout.decode("utf-8", "replace").strip()

    def _network_gatekeeper(self) -> str:
        """The gatekeeper folder for network commands: git finds its https helpers (and the credential
        helpers installed beside it) only in its exec path, so those are linked in; ``git`` itself is
        still the gatekeeper."""
        with self._lock:
            if self._network_exec_path is None:
                real = self.real_exec_path()
                try:
                    names = sorted(os.listdir(real)) if real else []
                except OSError:
                    names = []
                helpers = [
                    os.path.join(real, name)
                    for name in names
                    if name in ("git-remote-http", "git-remote-https") or name.startswith("git-credential-")
                ]
                self._network_exec_path = self._gatekeeper(helpers)
            return self._network_exec_path

    def confine_to(self, roots: Sequence[Path]) -> None:
        """Refuse, from now on, every repository that reads git data from outside ``roots``."""
        self._layouts.confine_to([os.path.realpath(root) for root in roots])

    def refusal(self, git_dir: Path) -> str | None:
        """Why the repository at ``git_dir`` may not be used (for the model to read), or ``None``."""
        return self._layouts.get(str(git_dir)).refusal

    def config_names(self, git_dir: Path) -> frozenset[str]:
        """Every key the repository's config files set (any include, any condition), as git lists them."""
        return self._layouts.get(str(git_dir)).config_names

    @contextmanager
    def holding(self, git_dir: Path) -> Iterator[None]:
        """Hold the repository's lock *shared* across several commands of this thread, so no command of
        this server that may rewrite config or work-tree files runs in between (a remote's URL is checked,
        then used, under the same config). Commands run inside take no lock of their own."""
        held = self._held.__dict__.setdefault("dirs", set())
        key = str(git_dir)
        if key in held:
            yield
            return
        with self._repository_lock(git_dir).shared():
            held.add(key)
            try:
                yield
            finally:
                held.discard(key)

    def _environment(self, git_dir: Path, work_tree: Path | None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": EMPTY_HOME,
            "XDG_CONFIG_HOME": EMPTY_HOME,
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_LITERAL_PATHSPECS": "1",  # a path is a path: no ':(top)', globs or other pathspec magic
            # Only the listed protocols may be used, whatever protocol.<name>.allow says: none is listed.
            "GIT_ALLOW_PROTOCOL": "none",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": "false",
            "GIT_SSH_COMMAND": "false",
            "GIT_ASKPASS": "false",
            "SSH_ASKPASS": "false",
            "GIT_DIR": str(git_dir),
            "GIT_EXEC_PATH": self._exec_path,
            "DOCKYARD_GIT_DIR": str(git_dir),
        }
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return env

    def _layout(self, git_dir: Path) -> Layout:
        return self._layouts.get(str(git_dir))

    def command(self, args: Sequence[str]) -> list[str]:
        return [self.git, "--no-pager", "--no-replace-objects", *args]

    def _repository_lock(self, git_dir: Path) -> SharedExclusive:
        with self._lock:
            return self._repository_locks.setdefault(str(git_dir), SharedExclusive())

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
        magic_pathspecs: bool = False,
        network: NetworkAccess | None = None,
        integrating: bool = False,
        extra_config: tuple[tuple[str, str], ...] = (),
        extra_env: dict[str, str] | None = None,
    ) -> GitOutput:
        """Run git; read at most ``max_bytes`` of stdout, then stop it.

        With ``magic_pathspecs``, every path after ``--`` must spell its magic (``:(literal)a``,
        ``:(exclude,literal)b``); otherwise paths are literal whatever they look like. With ``network``,
        the command may reach a remote as the :class:`NetworkAccess` allows (locked as a shared command,
        with every override). With ``integrating`` (merge, rebase, cherry-pick, revert), the additions of
        :mod:`.integration`: no editor, no merge driver of the repository's. ``extra_config`` entries come
        after every override (the operator's signature verification settings); ``extra_env`` over the rest.
        """
        args = _without_submodules(args)
        if magic_pathspecs:
            paths = args[args.index("--") + 1 :] if "--" in args else []
            if not all(path.startswith(":(") for path in paths):
                raise ValueError("with magic pathspecs, every path must spell its magic")
        read_only = args[0] in _SHARED_COMMANDS
        if str(git_dir) in self._held.__dict__.get("dirs", ()):
            lock = contextlib.nullcontext()
        elif read_only or network is not None:
            lock = self._repository_lock(git_dir).shared()
        else:
            lock = self._repository_lock(git_dir).exclusive()
        with lock:
            layout = self._layout(git_dir)
            if layout.refusal:
                raise PermissionDenied(
                    f"The repository at {git_dir} is not served: {layout.refusal}.",
                    next_step="Use another repository (git_repositories lists them); this one can only be "
                    "used after the user fixes it.",
                )
            overrides = layout.read_environment if read_only and network is None else layout.environment
            env = {**self._environment(git_dir, work_tree), **overrides}
            if magic_pathspecs:
                del env["GIT_LITERAL_PATHSPECS"]
            if integrating:
                env = integration_environment(env, layout.config_names)
            if extra_config:
                env = appended_config(env, extra_config)
            env.update(extra_env or {})
            if network is None:
                return self._run_process(git_dir, work_tree, args, env, max_bytes, timeout_s, check, stdin)
            env = {
                **network_environment(env, layout.config_names, network),
                "GIT_EXEC_PATH": self._network_gatekeeper(),
            }
            timeout = network.timeout_s or timeout_s or self.timeout_s
            limits = replace(
                self.limits,
                cpu_s=max(self.limits.cpu_s, math.ceil(timeout)),
                file_bytes=network.max_file_bytes,
            )
            return self._run_process(
                git_dir, work_tree, args, env, max_bytes, timeout, check, stdin, limits=limits, network=True
            )

    def _run_process(
        self,
        git_dir: Path,
        work_tree: Path | None,
        args: Sequence[str],
        env: dict[str, str],
        max_bytes: int,
        timeout_s: float | None,
        check: bool,
        stdin: bytes | None,
        *,
        limits: ProcessLimits | None = None,
        network: bool = False,
    ) -> GitOutput:
        timeout = timeout_s or self.timeout_s
        limits = limits or self.limits
        try:
            finished = run_bounded(
                self.command(args),
                cwd=str(work_tree or git_dir),
                env=env,
                limits=limits,
                timeout_s=timeout,
                max_bytes=max_bytes,
                stdin=stdin,
                slots=self.slots.network if network else self.slots.local,
            )
        except OSError as error:
            if error.errno == errno.E2BIG:  # the kernel's limit on one argument (128 KiB) or all of them
                raise InvalidArgument(
                    "The arguments are too long to pass to git (a pattern, filter or path list of this size "
                    "exceeds the operating system's limit).",
                    next_step="Use a shorter pattern or filter, or fewer paths per call.",
                ) from None
            raise
        if finished.expired:
            raise LimitExceeded(
                f"git took longer than {timeout:.0f} s and was stopped.",
                next_step="Narrow the request: a revision range, a path filter or a smaller max_count.",
            )
        if finished.out_of_cpu:
            raise LimitExceeded(
                f"git used more than its {limits.cpu_s} s of CPU time and was stopped.",
                next_step="Narrow the request: a simpler pattern, a path filter, a revision range or a "
                "smaller max_count.",
            )
        if finished.out_of_memory:
            raise LimitExceeded(
                f"git ran out of its memory limit ({limits.memory_mb} MiB of address space) and was stopped.",
                next_step="Narrow the request: a simpler pattern, fewer or smaller files (paths), or a "
                "smaller range.",
            )
        if _GATEKEEPER_REFUSAL in finished.stderr:
            raise PermissionDenied(
                f"git {args[0]} tried to start git inside a submodule, which this server never allows "
                "(a submodule's own config could run commands).",
                next_step="Name paths outside the submodules, or ask the user to run this command.",
            )
        if check and not finished.truncated and finished.returncode != 0:
            raise _problem_from_stderr(args, finished.stderr)
        return GitOutput(
            finished.stdout.decode("utf-8", "replace"),
            finished.truncated,
            finished.returncode,
            finished.stderr,
        )


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
        return NotFound(
            f"git {command}: {message}",
            next_step="Check the path: relative to the repository top, as git_status or git_show lists it.",
        )
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
