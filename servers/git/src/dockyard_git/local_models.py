"""What the worktree, merging and tag tools return (the other local tools' models are in :mod:`.models`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .models import Commit

__all__ = [
    "ConflictFile",
    "ConflictHunk",
    "IntegrationResult",
    "TagResult",
    "TagVerification",
    "WorktreeInfo",
    "WorktreeList",
    "WorktreeResult",
]


class ConflictHunk(BaseModel):
    line: int = Field(description="line of the <<<<<<< marker in the working-tree file")
    ours: str
    theirs: str
    base: str | None = Field(None, description="the common ancestor's text, when the markers carry it")
    cut: bool = Field(False, description="a side was cut; read the file for the rest")


class ConflictFile(BaseModel):
    path: str
    kind: str = Field(description="both modified, both added, deleted by us, deleted by them, …")
    hunks: list[ConflictHunk] = []
    hunks_total: int = 0
    note: str | None = None


class IntegrationResult(BaseModel):
    repository: str
    operation: Literal["merge", "rebase", "cherry-pick", "revert"]
    state: Literal["done", "up to date", "conflicts", "stopped", "aborted"]
    message: str
    next_step: str
    head: str | None = None
    commits: list[Commit] = Field([], description="commits the branch gained, newest first (up to 20)")
    conflicts: list[ConflictFile] = []
    conflicts_total: int = 0
    truncated: bool = Field(False, description="the conflict report was cut; the note says where")
    note: str | None = None


class WorktreeInfo(BaseModel):
    path: str
    head: str | None = None
    branch: str | None = Field(None, description="null when detached")
    main: bool = Field(False, description="the repository's main working tree")
    bare: bool = False
    locked: bool = False
    prunable: bool = Field(False, description="its folder is gone; git_worktree_prune removes the record")
    served: bool = Field(description="inside the roots and usable as repo_path")


class WorktreeList(BaseModel):
    repository: str
    worktrees: list[WorktreeInfo]
    truncated: bool = False
    note: str | None = None


class WorktreeResult(BaseModel):
    repository: str
    message: str
    worktree: WorktreeInfo | None = None
    pruned: list[str] = []
    next_step: str | None = None


class TagResult(BaseModel):
    repository: str
    message: str
    tag: str
    commit: str | None = None


class TagVerification(BaseModel):
    repository: str
    tag: str
    valid: bool
    format: str | None = Field(None, description="gpg or ssh, as the signature says")
    details: str = Field(description="the verifier's report, fenced as untrusted data")
