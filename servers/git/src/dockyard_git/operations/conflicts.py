"""The bounded conflict report of a merge, rebase, cherry-pick or revert that stopped: which files, what
kind of conflict, and each hunk's sides as the conflict markers in the working-tree file show them.

Files are read from the working tree only through the repository's path confinement (a conflicted path that
is a link leading out of the repository is named, never read), at most :data:`_MAX_FILE_BYTES` each. Every
cut is marked: a side cut at :data:`_MAX_SIDE_CHARS`, hunks past :data:`_MAX_HUNKS` per file, files past
:data:`_MAX_FILES` or past the report's JSON budget.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from dockyard_shared import Problem

from ..bounds import fit, json_chars
from ..local_models import ConflictFile, ConflictHunk
from ..repos import Repository
from .plumbing import Plumbing, clip

__all__ = ["ConflictReport", "conflict_report", "has_markers", "unmerged"]

_MAX_FILES = 30
_MAX_HUNKS = 10
_MAX_SIDE_CHARS = 2_000
_MAX_REPORT_CHARS = 40_000
_MAX_FILE_BYTES = 2_000_000

_KINDS = {
    frozenset({1, 2, 3}): "both modified",
    frozenset({2, 3}): "both added",
    frozenset({1, 2}): "deleted by them",
    frozenset({1, 3}): "deleted by us",
    frozenset({2}): "added by us",
    frozenset({3}): "added by them",
    frozenset({1}): "both deleted",
}
_START = re.compile(r"^<{7,}(?: |$)")
_BASE = re.compile(r"^\|{7,}(?: |$)")
_SEPARATOR = re.compile(r"^={7,}$")
_END = re.compile(r"^>{7,}(?: |$)")


@dataclass(frozen=True)
class ConflictReport:
    files: list[ConflictFile]
    total: int
    truncated: bool
    note: str | None


def unmerged(plumbing: Plumbing, repo: Repository) -> dict[str, tuple[set[int], bool]]:
    """Each unmerged path: the index stages it has, and whether it is a submodule."""
    output = plumbing.git(repo, "ls-files", "-u", "-z", max_bytes=16_000_000)
    paths: dict[str, tuple[set[int], bool]] = {}
    for record in output.text.split("\x00"):
        info, _, path = record.partition("\t")
        parts = info.split()
        if len(parts) != 3 or not path:
            continue
        stages, _ = paths.setdefault(path, (set(), False))
        stages.add(int(parts[2]))
        if parts[0] == "160000":
            paths[path] = (stages, True)
    return paths


def _read(plumbing: Plumbing, repo: Repository, path: str) -> tuple[str | None, str | None]:
    """The working-tree text of ``path`` (or None) and why it was not read."""
    try:
        relative = plumbing.repositories.relative_path(repo, path)
    except Problem:
        return None, "not read: the path leads outside the repository"
    full = os.path.join(str(repo.work_tree), relative)
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, "not in the working tree (or a link)"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        data = os.read(fd, _MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if b"\x00" in data[:8000]:
        return None, "binary: no conflict markers; pick a side in the working tree"
    text = data[:_MAX_FILE_BYTES].decode("utf-8", "replace")
    return text, ("only the first 2 MB read" if len(data) > _MAX_FILE_BYTES else None)


def has_markers(text: str) -> bool:
    lines = text.splitlines()
    return any(_START.match(line) for line in lines) and any(_END.match(line) for line in lines)


def _side(lines: list[str]) -> tuple[str, bool]:
    text = "\n".join(lines)
    kept = fit(text, _MAX_SIDE_CHARS)
    return kept, kept != text


def _hunks(text: str) -> list[ConflictHunk]:
    hunks: list[ConflictHunk] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if not _START.match(lines[index]):
            index += 1
            continue
        start = index + 1
        sides: dict[str, list[str]] = {"ours": [], "base": [], "theirs": []}
        part, has_base, index = "ours", False, index + 1
        while index < len(lines) and not _END.match(lines[index]):
            line = lines[index]
            if _BASE.match(line) and part == "ours":
                part, has_base = "base", True
            elif _SEPARATOR.match(line) and part in ("ours", "base"):
                part = "theirs"
            else:
                sides[part].append(line)
            index += 1
        ours, cut_ours = _side(sides["ours"])
        theirs, cut_theirs = _side(sides["theirs"])
        base, cut_base = _side(sides["base"]) if has_base else (None, False)
        hunks.append(
            ConflictHunk(
                line=start, ours=ours, theirs=theirs, base=base, cut=cut_ours or cut_theirs or cut_base
            )
        )
        index += 1
    return hunks


def conflict_report(plumbing: Plumbing, repo: Repository) -> ConflictReport:
    paths = unmerged(plumbing, repo)
    files: list[ConflictFile] = []
    spent = 0
    cut_files = False
    for path, (stages, submodule) in sorted(paths.items()):
        if len(files) >= _MAX_FILES or spent >= _MAX_REPORT_CHARS:
            cut_files = True
            break
        entry = ConflictFile(path=clip(path, 500), kind=_KINDS.get(frozenset(stages), "unmerged"))
        if submodule:
            entry.note = "a submodule: pick its commit yourself (never looked into here)"
        elif 2 in stages and 3 in stages:
            text, why = _read(plumbing, repo, path)
            if text is not None:
                found = _hunks(text)
                entry.hunks_total = len(found)
                for hunk in found[:_MAX_HUNKS]:
                    size = json_chars(hunk.ours) + json_chars(hunk.theirs) + json_chars(hunk.base or "")
                    if entry.hunks and spent + size > _MAX_REPORT_CHARS:
                        break
                    entry.hunks.append(hunk)
                    spent += size
                if len(entry.hunks) < entry.hunks_total:
                    why = f"{entry.hunks_total - len(entry.hunks)} more hunks not shown; read the file"
                elif not found:
                    why = why or "no conflict markers left: continue stages it"
            entry.note = why
        else:
            entry.note = "keep the file (edit it) or delete it, then continue"
        files.append(entry)
    note = None
    if cut_files:
        note = (
            f"{len(files)} of {len(paths)} conflicted files reported; git_status lists all, git_diff or "
            "git_show the rest."
        )
    return ConflictReport(
        files, len(paths), cut_files or any(f.hunks_total > len(f.hunks) for f in files), note
    )
