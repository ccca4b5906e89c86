"""Configuration of dockyard-git: which folders, what may be done in them, and the limits of every reply."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from dockyard_shared import InvalidArgument, NotFound
from dockyard_shared.task_backend import TaskBackend, add_task_backend_arguments, task_backend_from
from dockyard_shared.toolsets import Exposure, Toolset, exposure_from

__all__ = [
    "MAX_REPLY_CHARS",
    "TOOLSETS",
    "Limits",
    "RemoteSettings",
    "Settings",
    "TagSignatures",
    "add_arguments",
    "settings_from",
]  # and the GitHub reply bounds below

READ = Toolset("read", "status, history, commits, diffs and branches of local repositories", read_only=True)
# Off by default: the everyday job (what changed, what to commit, review) needs none of them, and each
# costs every turn's listing. Hosts search the workspace themselves; blame is occasional line archaeology.
SEARCH = Toolset(
    "search", "grep of tracked files, and blame (who last changed each line)", read_only=True, default=False
)
WRITE = Toolset(
    "write",
    "stage, commit, branch, switch and stash; never discards work (--allow-write)",
    read_only=False,
    default=False,
    flag="--allow-write",
)
GITHUB = Toolset(
    "github",
    "pull requests, issues, review threads, failed CI job logs and line origins of a repository's GitHub "
    "remote (needs a token)",
    read_only=True,
)
REMOTE = Toolset(
    "remote",
    "remotes, fetch; fast-forward pull and push with the write toolset too (--allow-remote)",
    read_only=False,
    default=False,
    flag="--allow-remote",
)
WORKTREES = Toolset(
    "worktrees",
    "list, add, remove and prune linked worktrees inside the roots",
    read_only=False,
    default=False,
)
MERGING = Toolset(
    "merging",
    "merge, rebase, cherry-pick, revert with continue/skip/abort and a conflict report",
    read_only=False,
    default=False,
)
TAGS = Toolset(
    "tags",
    "list, create and delete annotated tags; verify signatures if enabled",
    read_only=False,
    default=False,
)
GITHUB_WRITE = Toolset(
    "github_write",
    "comment on pull requests and issues, reply to and resolve review threads (needs a token)",
    read_only=False,
    default=False,
)
TOOLSETS = (READ, SEARCH, WRITE, GITHUB, REMOTE, GITHUB_WRITE, WORKTREES, MERGING, TAGS)
# Served only when the write toolset is on too: they change local branches or the remote.
REMOTE_WRITES = ("git_pull", "git_push")

# What --remote-protocol may allow (file: only for repositories inside the roots).
REMOTE_PROTOCOLS = ("https", "ssh", "http", "file")
DEFAULT_REMOTE_PROTOCOLS = ("https", "ssh")
DEFAULT_TOKEN_HOSTS = ("github.com",)


# One popular host refuses a tool result over 25,000 tokens (about 100,000 characters at 4 a token): no
# reply at these limits exceeds it. Lists, patches and file content share max_reply_chars of a reply
# (counted as JSON); the rest is room for the fixed fields (the repository's path, notes).
MAX_REPLY_CHARS = 100_000


@dataclass(frozen=True)
class Limits:
    max_reply_chars: int = 80_000  # JSON characters of one reply's lists, patch or file content
    max_log: int = 1_000  # commits per git_log page
    default_log: int = 50
    max_patch_chars: int = 60_000  # a patch in total (JSON characters, as all these sizes)
    max_file_patch_chars: int = 12_000  # one file's part of a patch
    max_patch_files_chars: int = 15_000  # the file list beside a patch
    max_file_chars: int = 60_000  # git_show of a file, per page
    max_blame_lines: int = 500
    default_grep_matches: int = 100
    max_grep_matches: int = 200
    max_list: int = 300  # branches, tags, status entries
    max_subject_chars: int = 500  # a commit subject, branch or tag subject, blame summary
    max_line_chars: int = 1_000  # one line of blamed file text


@dataclass(frozen=True)
class RemoteSettings:
    """How the remote toolset reaches remotes (see remotes/access.py)."""

    protocols: tuple[str, ...] = DEFAULT_REMOTE_PROTOCOLS
    token: str | None = field(default=None, repr=False)  # from $token_env; sent only to token_hosts
    token_env: str | None = None
    token_hosts: tuple[str, ...] = DEFAULT_TOKEN_HOSTS  # host or host:port
    timeout_s: float = 120.0
    max_fetch_bytes: int = 2 * 1024**3  # no file a fetch writes (one pack) may grow past this
    protected_branches: tuple[str, ...] = ()  # names or globs; none: the remote's default branch
    # The operator's environment, read for their credential helpers and ssh settings (None: this process's).
    operator_environment: dict[str, str] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TagSignatures:
    """How tag signatures may be verified (--tag-signatures): nothing by default."""

    formats: tuple[str, ...] = ()  # "gpg" (the operator's gpg and keyring), "ssh" (ssh-keygen)
    gnupg_home: str | None = None  # the operator's $GNUPGHOME at start, else ~/.gnupg
    allowed_signers: str | None = None  # --ssh-allowed-signers


def default_max_git_processes() -> int:
    """One git process per core, and at least two: more only compete for the same cores and add their
    memory. On 2 cores at 32 HTTP clients (bench/load/README.md) 2 slots kept the process tree at 1.1x the
    reference's memory with 1.7x its calls/s; 3 slots gave ~20% more calls/s but 1.4-2.0x the memory."""
    return max(2, os.cpu_count() or 1)


@dataclass(frozen=True)
class Settings:
    roots: tuple[Path, ...]  # empty: serve the client's MCP roots
    exposure: Exposure = field(default_factory=Exposure)
    github_token: str | None = None
    github_token_env: str = "GITHUB_TOKEN"
    github_api_url: str = "https://api.github.com"
    git_timeout_s: float = 20.0
    git_memory_mb: int = 1024  # address space of each git process (RLIMIT_AS)
    git_cpu_s: int | None = None  # CPU time of each git process (RLIMIT_CPU); None: as --git-timeout
    # git processes running at once, server-wide (gitcmd/slots.py); remote commands have a pool of their own.
    max_git_processes: int = field(default_factory=default_max_git_processes)
    max_remote_git_processes: int = 2
    limits: Limits = field(default_factory=Limits)
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    tag_signatures: TagSignatures = field(default_factory=TagSignatures)
    tasks: bool = (
        False  # serve the MCP tasks extension: fetch, pull and push as tasks (dockyard_shared.long_calls)
    )
    task_backend: TaskBackend = field(default_factory=TaskBackend)  # --tasks-url, --tasks-queue


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings the command line asks for, or a problem saying which flag is wrong."""
    # No --root: the folders the client shares as MCP roots are served instead (see roots.py).
    roots = tuple(Path(os.path.expanduser(r)).resolve() for r in args.root)
    for root in roots:
        if not root.is_dir():
            raise NotFound(
                f"The root {root} is not a folder.",
                next_step="Pass --root with an existing repository or folder.",
            )
    if args.git_timeout <= 0:
        raise InvalidArgument("--git-timeout must be positive.")
    if args.git_memory < 32:
        raise InvalidArgument("--git-memory must be at least 32 (MiB): git needs about that much to work.")
    if args.git_cpu is not None and args.git_cpu < 1:
        raise InvalidArgument("--git-cpu must be at least 1 (second).")
    if args.max_git_processes is not None and args.max_git_processes < 1:
        raise InvalidArgument("--max-git-processes must be at least 1.")
    if args.max_remote_git_processes < 1:
        raise InvalidArgument("--max-remote-git-processes must be at least 1.")
    exposure = exposure_from(args)
    if args.allow_write:
        exposure = exposure.enabling(WRITE.name)
    if args.allow_remote:
        exposure = exposure.enabling(REMOTE.name)
    named = [tool for tool in REMOTE_WRITES if tool in exposure.tools]
    if named and not writes_served(exposure):
        raise InvalidArgument(
            f"{named[0]} is served only together with the write toolset.",
            next_step="Add --allow-write (or 'write' to --toolsets).",
        )
    return Settings(
        roots=roots,
        exposure=exposure,
        github_token=os.environ.get(args.github_token_env) or None,
        github_token_env=args.github_token_env,
        github_api_url=args.github_api_url,
        git_timeout_s=args.git_timeout,
        git_memory_mb=args.git_memory,
        git_cpu_s=args.git_cpu,
        max_git_processes=args.max_git_processes or default_max_git_processes(),
        max_remote_git_processes=args.max_remote_git_processes,
        remote=remote_settings_from(args),
        tag_signatures=tag_signatures_from(args),
        tasks=args.tasks,
        task_backend=task_backend_from(args, distribution="dockyard-git"),
    )


def tag_signatures_from(args: argparse.Namespace) -> TagSignatures:
    formats = tuple(dict.fromkeys(args.tag_signatures or ()))
    signers = args.ssh_allowed_signers
    if "ssh" in formats and not signers:
        raise InvalidArgument("--tag-signatures ssh needs --ssh-allowed-signers FILE (whose keys to trust).")
    if signers and not os.path.isfile(signers):
        raise NotFound(f"--ssh-allowed-signers {signers} is not a file.")
    return TagSignatures(
        formats, os.environ.get("GNUPGHOME") or None, os.path.abspath(signers) if signers else None
    )


def writes_served(exposure: Exposure) -> bool:
    """Whether the write toolset is on (git_pull and git_push are served only then)."""
    return not exposure.read_only and WRITE.name in exposure.enabled_toolsets(TOOLSETS)


def remote_settings_from(args: argparse.Namespace) -> RemoteSettings:
    if args.remote_timeout <= 0:
        raise InvalidArgument("--remote-timeout must be positive.")
    if args.max_fetch_bytes < 1_000_000:
        raise InvalidArgument("--max-fetch-bytes must be at least 1000000.")
    token = None
    if args.remote_token_env:
        token = os.environ.get(args.remote_token_env) or None
        if token is None:
            raise InvalidArgument(
                f"--remote-token-env names ${args.remote_token_env}, which is not set.",
                next_step="Set it in the server's environment, or leave out --remote-token-env.",
            )
    for host in args.remote_token_host or ():
        if not re.fullmatch(r"[A-Za-z0-9.-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?", host):
            raise InvalidArgument(f"--remote-token-host {host!r} is not a host or host:port.")
    return RemoteSettings(
        protocols=tuple(dict.fromkeys(args.remote_protocol or DEFAULT_REMOTE_PROTOCOLS)),
        token=token,
        token_env=args.remote_token_env,
        token_hosts=tuple(args.remote_token_host or DEFAULT_TOKEN_HOSTS),
        timeout_s=args.remote_timeout,
        max_fetch_bytes=args.max_fetch_bytes,
        protected_branches=tuple(args.protected_branch or ()),
    )


# Bounds of a GitHub reply (see the github_api package and its fields.py for how they add up).
REPLY_BUDGET = MAX_REPLY_CHARS - 5_000  # a whole reply as JSON; patches and comments take what is left
PER_PAGE = 30  # one GitHub page: list tools, issue comments, first page of checks
FILES_PER_REPLY = 2 * PER_PAGE  # changed files per github_pull_request reply (two GitHub pages)
GITHUB_MAX_LISTED_FILES = 3_000  # GitHub lists at most this many files of a pull request
MAX_TITLE_CHARS = 500  # GitHub itself allows 256
MAX_BODY_CHARS = 20_000  # a pull request's or issue's description
MAX_COMMENT_CHARS = 8_000  # one comment
MAX_COMMENTS_CHARS = 40_000  # all comment bodies on one page, shared fairly
MAX_PATCH_CHARS = 4_000  # one file's patch
MAX_PATCHES_CHARS = 40_000  # all patches in one reply, shared fairly
MAX_CHECKS = 40  # statuses and check runs shown for a pull request
MAX_LABELS_IN_LIST = 10  # per item of github_issues
MAX_LABELS = 30  # on github_issue
MAX_NAME_CHARS = 100  # a login, label, branch or check name (GitHub: logins 39, labels 50)
MAX_PATH_CHARS = 300  # a changed file's path
THREADS_PER_PAGE = 30  # review threads per github_review_threads reply
COMMENTS_PER_THREAD = 10  # comments shown per review thread
MAX_POST_CHARS = 65_536  # a comment the model posts (GitHub refuses longer bodies)
MAX_LOG_DOWNLOAD_BYTES = 64 * 1024**2  # a job log is read (streamed, never held) up to this much
LOG_DOWNLOAD_SECONDS = 60.0  # and for at most this long
MAX_LOG_CHARS = 30_000  # log lines shown in one reply
MAX_LOG_LINE_CHARS = 2_000  # one log line
LOG_HEAD_LINES = 15  # a long step's first lines, shown before its end
MAX_ERROR_LINES = 20  # ##[error] annotations gathered from the whole log
MAX_FAILED_JOBS = 20  # failed jobs listed beside the one shown
MAX_ORIGIN_LINES = 20  # lines github_line_origin traces at once
MAX_ORIGIN_COMMITS = 3  # distinct commits traced
ORIGIN_PULLS = 2  # pull requests per commit
ORIGIN_ISSUES = 3  # linked issues per pull request
MAX_ORIGIN_BODY_CHARS = 2_000  # a pull request's or linked issue's description in that reply


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("repositories")
    group.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="a repository, or a folder whose repositories are served (repeatable; default: the folders "
        "the client shares as MCP roots)",
    )
    group.add_argument(
        "--allow-write",
        action="store_true",
        help="serve the write toolset (add, unstage, commit, branch, checkout, stash): --toolsets default,write",
    )
    group.add_argument(
        "--github-token-env",
        default="GITHUB_TOKEN",
        metavar="NAME",
        help="environment variable holding a GitHub token; the github toolset is served when it is set",
    )
    group.add_argument(
        "--github-api-url",
        default="https://api.github.com",
        metavar="URL",
        help="GitHub (Enterprise) API URL",
    )
    group.add_argument(
        "--git-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="time limit per git process, any wait for a free slot (--max-git-processes) included",
    )
    group.add_argument(
        "--git-memory",
        type=int,
        default=1024,
        metavar="MIB",
        help="address-space limit per git process, in MiB (default 1024)",
    )
    group.add_argument(
        "--git-cpu",
        type=int,
        default=None,
        metavar="SECONDS",
        help="CPU-time limit per git process (default: the --git-timeout)",
    )
    group.add_argument(
        "--max-git-processes",
        type=int,
        default=None,
        metavar="N",
        help="git processes running at once, server-wide; more wait in arrival order within their "
        "--git-timeout (default: the number of cores, at least 2)",
    )
    group.add_argument(
        "--tag-signatures",
        action="append",
        choices=("gpg", "ssh"),
        metavar="FORMAT",
        help="let git_tag_verify check tag signatures with your gpg keyring or ssh-keygen (repeatable; "
        "default: never, the repository's gpg settings stay neutralised)",
    )
    group.add_argument(
        "--ssh-allowed-signers",
        metavar="FILE",
        help="the allowed-signers file ssh signatures are checked against (with --tag-signatures ssh)",
    )
    add_remote_arguments(parser)


def add_remote_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = RemoteSettings()
    group = parser.add_argument_group("remotes (the remote toolset)")
    group.add_argument(
        "--allow-remote",
        action="store_true",
        help="serve the remote toolset (git_remotes, git_fetch; git_pull and git_push with --allow-write too)",
    )
    group.add_argument(
        "--remote-protocol",
        action="append",
        choices=REMOTE_PROTOCOLS,
        metavar="PROTOCOL",
        help="a protocol remotes may use (repeatable; default: https and ssh; 'http' is unencrypted; 'file' "
        "reaches only repositories inside the roots)",
    )
    group.add_argument(
        "--remote-token-env",
        metavar="NAME",
        help="environment variable holding a token for https remotes (sent only to --remote-token-host)",
    )
    group.add_argument(
        "--remote-token-host",
        action="append",
        metavar="HOST[:PORT]",
        help=f"a host the token is sent to (repeatable; default: {', '.join(DEFAULT_TOKEN_HOSTS)})",
    )
    group.add_argument(
        "--remote-timeout",
        type=float,
        default=defaults.timeout_s,
        metavar="SECONDS",
        help="time limit of one fetch, pull or push",
    )
    group.add_argument(
        "--tasks",
        action="store_true",
        help="serve the MCP tasks extension: git_fetch, git_pull and git_push run as tasks a client that "
        "supports it polls and can cancel (2026-07-28 protocol; other clients get plain calls)",
    )
    add_task_backend_arguments(group)
    group.add_argument(
        "--max-remote-git-processes",
        type=int,
        default=2,
        metavar="N",
        help="fetch, pull, push and ls-remote processes running at once, server-wide (a pool apart from "
        "--max-git-processes, so slow remotes never hold up local reads; default 2)",
    )
    group.add_argument(
        "--max-fetch-bytes",
        type=int,
        default=defaults.max_fetch_bytes,
        metavar="BYTES",
        help="largest file (one pack) a fetch may write",
    )
    group.add_argument(
        "--protected-branch",
        action="append",
        metavar="NAME",
        help="a branch (or glob) whose pushes need the user's confirmation (repeatable; default: the "
        "remote's default branch)",
    )
