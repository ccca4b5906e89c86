"""What the git tools do, as plain functions over a :class:`~.repos.Repository` and a :class:`~.gitcmd.GitRunner`.

Every value a model supplies reaches git as data: revisions are verified (``rev-parse --verify
--end-of-options``) and then passed as commit ids, paths go after ``--`` under literal pathspecs, patterns
follow ``-e``, and author/grep/date filters are ``--opt=value``.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ..gitcmd import GitRunner
from ..repos import RepositorySet
from ..settings import Limits, TagSignatures
from .github_remote import github_remote, github_slug
from .history import History
from .plumbing import Plumbing
from .worktree import Worktree

if TYPE_CHECKING:
    from .integrate import Integration
    from .tags import Tags
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
        self._signatures = signatures

    # The toolsets off by default (worktrees, merging, tags): imported on first use, as their models take
    # time to build that a start-up without them need not pay.

    @cached_property
    def worktrees(self) -> Worktrees:
        from .worktrees import Worktrees

        return Worktrees(self.plumbing)

    @cached_property
    def integration(self) -> Integration:
        from .integrate import Integration

        return Integration(self.plumbing)

    @cached_property
    def tags(self) -> Tags:
        from .tags import Tags

        return Tags(self.plumbing, self._signatures)

    @property
    def runner(self) -> GitRunner:
        return self.plumbing.runner
