"""What the git tools do, as plain functions over a :class:`~.repos.Repository` and a :class:`~.gitcmd.GitRunner`.

Every value a model supplies reaches git as data: revisions are verified (``rev-parse --verify
--end-of-options``) and then passed as commit ids, paths go after ``--`` under literal pathspecs, patterns
follow ``-e``, and author/grep/date filters are ``--opt=value``.
"""

from __future__ import annotations

from ..gitcmd import GitRunner
from ..repos import RepositorySet
from ..settings import Limits, TagSignatures
from .github_remote import github_remote, github_slug
from .history import History
from .integrate import Integration
from .plumbing import Plumbing
from .tags import Tags
from .worktree import Worktree
from .worktrees import Worktrees

__all__ = ["GitOperations", "History", "Plumbing", "Worktree", "github_remote", "github_slug"]


class GitOperations:
    """Every git operation the tools perform, each defined in one module over one shared
    :class:`~.plumbing.Plumbing` (running git on a repository, verifying revisions and paths, reading a
    diff as a bounded patch): ``history`` (log, show, blame, branches, tags, grep: :mod:`.history`) and
    ``worktree`` (the repository list, status, diff and the write tools: :mod:`.worktree`)."""

    def __init__(
        self,
        repositories: RepositorySet,
        runner: GitRunner,
        limits: Limits | None = None,
        signatures: TagSignatures | None = None,
    ) -> None:
        self.plumbing = Plumbing(repositories, runner, limits)
        self.history = History(self.plumbing)
        self.worktree = Worktree(self.plumbing, self.history)
        # Linked worktrees, merge/rebase/cherry-pick/revert, annotated tags (each its own module).
        self.worktrees = Worktrees(self.plumbing)
        self.integration = Integration(self.plumbing)
        self.tags = Tags(self.plumbing, signatures)

    @property
    def runner(self) -> GitRunner:
        return self.plumbing.runner
