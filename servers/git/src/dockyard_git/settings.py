"""Configuration of dockyard-git: which folders, what may be done in them, and the limits of every reply."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from dockyard_shared import InvalidArgument, NotFound
from dockyard_shared.toolsets import Exposure, Toolset, exposure_from

__all__ = ["TOOLSETS", "Limits", "Settings", "settings_from"]  # and the GitHub reply bounds below

READ = Toolset(
    "read", "status, history, diffs, blame, branches, tags and grep of local repositories", read_only=True
)
WRITE = Toolset(
    "write",
    "stage, commit, branch, switch and stash; never discards work (--allow-write)",
    read_only=False,
    default=False,
)
GITHUB = Toolset(
    "github", "pull requests and issues of a repository's GitHub remote (needs a token)", read_only=True
)
TOOLSETS = (READ, WRITE, GITHUB)


@dataclass(frozen=True)
class Limits:
    max_log: int = 1_000  # commits per git_log page
    default_log: int = 50
    max_patch_chars: int = 60_000  # a patch in total
    max_file_patch_chars: int = 12_000  # one file's part of a patch
    max_file_chars: int = 60_000  # git_show of a file, per page
    max_blame_lines: int = 500
    default_grep_matches: int = 100
    max_grep_matches: int = 200
    max_list: int = 300  # branches, tags, status entries
    max_subject_chars: int = 500  # a commit subject, branch or tag subject, blame summary
    max_line_chars: int = 1_000  # one line of blamed file text


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
    limits: Limits = field(default_factory=Limits)


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
    exposure = exposure_from(args)
    return Settings(
        roots=roots,
        exposure=exposure.enabling(WRITE.name) if args.allow_write else exposure,
        github_token=os.environ.get(args.github_token_env) or None,
        github_token_env=args.github_token_env,
        github_api_url=args.github_api_url,
        git_timeout_s=args.git_timeout,
        git_memory_mb=args.git_memory,
        git_cpu_s=args.git_cpu,
    )


# Bounds of a GitHub reply (see github_api.py for how they add up).
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
MAX_PATH_CHARS = 300  # a changed file's path
