"""Tracked paths that lie behind a symbolic link in the work tree.

With ``a/b`` in the index and the work tree's ``a`` a link, git status and git diff say ``a/b`` was deleted
(git will not look through a link for a tracked path), but ``git grep`` opens ``a/b`` through the link —
wherever it leads. Such folders are found before grep runs (and left out of its pathspec) and again for
every match after (a folder swapped for a link in between), so no content from behind a link is returned.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["LinkedFolders"]


class LinkedFolders:
    """The folders of one work tree that are symbolic links, as tracked paths meet them."""

    def __init__(self, work_tree: str) -> None:
        self.work_tree = work_tree
        self._known: dict[str, bool] = {}  # folder (relative) → is a link itself or lies behind one

    def _linked(self, folder: str) -> bool:
        """Whether ``folder`` (relative, '' for the top) is a link or lies behind one."""
        if not folder:
            return False
        known = self._known.get(folder)
        if known is None:
            parent = folder.rpartition("/")[0]
            known = self._linked(parent) or os.path.islink(os.path.join(self.work_tree, folder))
            self._known[folder] = known
        return known

    def behind_link(self, path: str) -> bool:
        """Whether the tracked ``path`` would be read through a linked folder."""
        return self._linked(path.rpartition("/")[0])

    def topmost(self, tracked: Iterable[str]) -> list[str]:
        """The linked folders that ``tracked`` paths lie behind, outermost only, in order."""
        found: list[str] = []
        last = None
        for path in tracked:
            folder = path.rpartition("/")[0]
            if folder == last:  # git lists paths in order: a folder's files come together
                continue
            last = folder
            if not self._linked(folder):
                continue
            outer = folder
            while self._linked(outer.rpartition("/")[0]):
                outer = outer.rpartition("/")[0]
            if not found or found[-1] != outer:
                found.append(outer)
        return list(dict.fromkeys(found))
