"""What the remote tools return."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RemoteInfo(BaseModel):
    name: str
    fetch_url: str | None = Field(description="credentials removed")
    push_urls: list[str] = Field(description="credentials removed")
    default_branch: str | None = Field(description="the remote's HEAD as of the last fetch")
    refused: str | None = Field(default=None, description="why the remote tools will not contact it")


class BranchTracking(BaseModel):
    branch: str
    upstream: str | None = Field(description="remote/branch it tracks")
    ahead: int | None = Field(description="commits only here, as of the last fetch")
    behind: int | None = Field(description="commits only on the remote, as of the last fetch")
    gone: bool = Field(default=False, description="the upstream branch no longer exists on the remote")


class RemotesResult(BaseModel):
    repository: str
    remotes: list[RemoteInfo]
    branches: list[BranchTracking]
    last_fetch: str | None = Field(description="when anything was last fetched (FETCH_HEAD), ISO 8601 UTC")
    truncated: bool = False
    note: str | None = None


class MovedRef(BaseModel):
    ref: str = Field(description="remote/branch")
    change: Literal["new", "updated", "forced", "deleted"]
    old: str | None
    new: str | None
    commits: int | None = Field(description="commits added (old..new); null when deleted or forced")


class FetchResult(BaseModel):
    repository: str
    remote: str
    url: str
    moved: list[MovedRef]
    new_commits: int = Field(description="commits fetched that no ref had before")
    new_commits_capped: bool = Field(default=False, description="true: at least new_commits")
    truncated: bool = False
    note: str | None = None


class CommitLine(BaseModel):
    sha: str
    subject: str


class PullResult(BaseModel):
    repository: str
    branch: str
    upstream: str = Field(description="remote/branch pulled from")
    outcome: Literal["fast-forwarded", "up to date", "ahead"]
    old: str | None
    new: str | None
    commits: list[CommitLine] = Field(description="the commits brought in, newest first (at most 20)")
    commit_count: int
    fetch: FetchResult


class PushResult(BaseModel):
    repository: str
    remote: str
    url: str
    branch: str
    remote_branch: str
    outcome: Literal["new branch", "fast-forward", "forced with lease", "up to date"]
    old: str | None = Field(description="the remote branch before, as the remote reported it")
    new: str
    tags: list[str] = []
    upstream_set: bool = False
    message: str
