"""What the tools take and return: pydantic models, so every result has an output schema (the GitHub
toolset's are in :mod:`.github_api.models`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from dockyard_shared.schema import bulk_list


class RepositoryInfo(BaseModel):
    path: str
    name: str
    bare: bool
    branch: str | None = Field(description="current branch; null when HEAD is detached")
    dirty: bool = Field(description="uncommitted changes to tracked files, or untracked files")


class RepositoryList(BaseModel):
    repositories: list[RepositoryInfo]
    truncated: bool = False
    note: str | None = None


class FileChange(BaseModel):
    path: str
    status: str = Field(
        description="git's one-letter status: M modified, A added, D deleted, R renamed, T type change"
    )
    original_path: str | None = None
    submodule: bool | None = Field(
        None,
        description="true for a submodule: the commit recorded for it changed (its files are not looked at)",
    )


class StatusResult(BaseModel):
    repository: str
    branch: str | None
    head: str | None = Field(description="commit id of HEAD; null in an empty repository")
    upstream: str | None
    ahead: int | None
    behind: int | None
    staged: list[FileChange]
    unstaged: list[FileChange]
    untracked: list[str]
    conflicted: list[str]
    truncated: bool = False
    note: str | None = None


class Commit(BaseModel):
    sha: str
    author: str
    date: str
    subject: str
    parents: list[str]


CommitType = Literal[
    "feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert"
]
"""The conventional-commit types git_commit accepts and the commit_message prompt offers."""

CommitField = Literal["sha", "date", "author", "email", "subject", "parents"]
COMMIT_FIELDS: tuple[CommitField, ...] = ("sha", "date", "author", "email", "subject", "parents")
DEFAULT_LOG_FIELDS: tuple[CommitField, ...] = ("sha", "date", "author", "subject")


class LogEntry(BaseModel):
    """One commit of a log: sha always, the other fields when asked for."""

    sha: str
    date: str | None = None
    author: str | None = None
    email: str | None = None
    subject: str | None = None
    parents: list[str] | None = None


class LogResult(BaseModel):
    commits: Annotated[
        list[LogEntry],
        bulk_list(
            "commits, newest first: {sha, and the fields asked for: date, author, email, subject, parents}"
        ),
    ]
    next_skip: int | None = Field(None, description="present when more commits match: pass it as skip")
    note: str | None = None


class DiffFileStat(BaseModel):
    path: str
    status: str | None = None
    additions: int | None = Field(
        default=None, description="null for binary files, and for files whose patch was not read in full"
    )
    deletions: int | None = None


class DiffResult(BaseModel):
    mode: Literal["patch", "stat", "name_only"]
    files: list[DiffFileStat]
    patch: str | None = Field(
        default=None, description="the unified diff (patch mode), cut per file and in total"
    )
    truncated: bool
    note: str | None = None


class ShowResult(BaseModel):
    kind: Literal["commit", "file"] = Field("commit", description="left out for a commit")
    commit: Commit | None = None
    files: list[DiffFileStat] = Field(
        default_factory=list, description="status and line counts, listed when the patch is cut"
    )
    patch: str | None = None
    path: str | None = Field(default=None, description="the file, from the repository top (kind=file)")
    revision_sha: str | None = Field(default=None, description="the commit it was read at (kind=file)")
    content: str | None = Field(default=None, description="file content (kind=file)")
    size: int | None = Field(default=None, description="file size in bytes (kind=file)")
    binary: bool = False
    truncated: bool = False
    next_offset: int | None = None
    note: str | None = None


class BlameLine(BaseModel):
    line: int
    sha: str
    author: str
    date: str
    summary: str
    text: str


class BlameResult(BaseModel):
    path: str
    lines: Annotated[
        list[BlameLine], bulk_list("one entry per line: {line, sha, author, date, summary, text}")
    ]
    truncated: bool = False
    note: str | None = None


class Branch(BaseModel):
    name: str
    kind: Literal["local", "remote"]
    sha: str
    current: bool
    upstream: str | None = None
    subject: str


class BranchList(BaseModel):
    branches: list[Branch]
    truncated: bool = False
    note: str | None = None


class Tag(BaseModel):
    name: str
    sha: str = Field(description="the commit the tag points to")
    date: str | None
    subject: str


class TagList(BaseModel):
    tags: list[Tag]
    truncated: bool = False
    note: str | None = None


class GrepMatch(BaseModel):
    path: str
    line: int
    text: str


class GrepResult(BaseModel):
    matches: list[GrepMatch]
    truncated: bool = False
    note: str | None = None


class WriteResult(BaseModel):
    repository: str
    message: str
    status: StatusResult | None = None
    commit: Commit | None = None
    stashes: list[str] | None = None
