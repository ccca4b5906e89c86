"""What the git tools do, as plain functions over a :class:`~.repos.Repository` and a :class:`~.gitcmd.GitRunner`.

Every value a model supplies reaches git as data: revisions are verified (``rev-parse --verify
--end-of-options``) and then passed as commit ids, paths go after ``--`` under literal pathspecs, patterns
follow ``-e``, and author/grep/date filters are ``--opt=value``.
"""

from __future__ import annotations

from .history import github_slug
from .worktree import WorktreeOperations

__all__ = ["GitOperations", "github_slug"]


class GitOperations(WorktreeOperations):
    """Every git operation the tools perform (history in :mod:`.history`, the working tree and writes in
    :mod:`.worktree`, what they share in :mod:`.base`)."""
