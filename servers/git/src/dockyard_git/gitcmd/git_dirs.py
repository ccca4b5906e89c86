"""The git directories and object stores one git directory leads to, read from the files git reads them
from (``commondir``, ``info/alternates``, ``modules/``, ``worktrees/``) as git reads them.

Where each of them leads is checked by :class:`.layout.Layouts`.
"""

from __future__ import annotations

import codecs
import os
import re
import stat

from .file_stamps import LISTING

__all__ = [
    "NotRegular",
    "fan_out_folders",
    "other_git_dirs",
    "read_alternates",
    "read_common_dir",
    "read_regular",
]

# Submodule git directories under modules/ (nested ones included) and linked worktrees under worktrees/.
_MAX_OTHER_GIT_DIRS = 1_000
_MAX_MODULES_DEPTH = 16  # folders between modules/ and a git directory (a submodule's name may hold '/')
_FAN_OUT = re.compile(r"[0-9a-f]{2}")


def fan_out_folders(objects: str) -> list[str]:
    """The loose-object folders (``objects/ab``) that are real folders; linked ones are refused apart."""
    try:
        with os.scandir(objects) as entries:
            return sorted(
                entry.path
                for entry in entries
                if _FAN_OUT.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _unquote_c(text: bytes) -> bytes:
    """A C-quoted alternates line (``"…"``), as git reads it."""
    inner = text[1:]
    if inner.endswith(b'"'):
        inner = inner[:-1]
    return codecs.escape_decode(inner)[0]


class NotRegular(Exception):
    """A FIFO, device or folder where git expects a file: reading it could block or mean anything."""


def read_regular(path: str, limit: int = 1_000_000) -> bytes:
    """The start of the regular file ``path`` (OSError when it is absent or unreadable)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the server
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotRegular(path)
        return os.read(descriptor, limit)
    finally:
        os.close(descriptor)


def read_common_dir(git_dir: str, commondir: str) -> tuple[str, str | None]:
    """The common directory git uses for ``git_dir``: the ``commondir`` file, read as git reads it."""
    if not os.path.lexists(commondir):
        return git_dir, None
    try:
        data = read_regular(commondir).rstrip(b"\r\n")
    except NotRegular:
        return git_dir, f"its commondir file {commondir} is not a regular file"
    except OSError:
        return git_dir, f"its commondir file {commondir} cannot be read"
    if not data:
        return git_dir, f"its commondir file {commondir} is empty"
    target = os.fsdecode(data)
    if not target.startswith("/"):
        target = f"{git_dir}/{target}"
    return os.path.realpath(target), None


def read_alternates(objects: str, listing: str) -> list[str]:
    """The object stores an ``info/alternates`` file names (relative ones against ``objects``)."""
    try:
        data = read_regular(listing)
    except OSError:
        return []
    base = os.path.realpath(objects)
    stores = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.startswith(b'"'):
            try:
                line = _unquote_c(line)
            except ValueError:
                pass  # git, too, takes a line it cannot unquote as it is
        entry = os.fsdecode(line)
        stores.append(entry if entry.startswith("/") else f"{base}/{entry}")
    return stores


def other_git_dirs(common_dir: str, watched: list) -> tuple[list[str], list[str], list[str]]:
    """The git directories of submodules (``modules/**``, nested ones too) and of linked worktrees
    (``worktrees/*``) that commands run in this repository can read, and problems found on the way.

    The walk never follows a symlink: a linked folder among them is returned as it is, so where it leads
    is checked like any git directory's.
    """
    modules: list[str] = []
    worktrees: list[str] = []
    pending = [(f"{common_dir}/modules", 0), (f"{common_dir}/worktrees", -1)]
    visited = 0
    while pending:
        folder, depth = pending.pop()
        watched.append((folder, LISTING))
        visited += 1
        if visited > _MAX_OTHER_GIT_DIRS * 4 or len(modules) + len(worktrees) > _MAX_OTHER_GIT_DIRS:
            return (
                modules,
                worktrees,
                [f"it holds more than {_MAX_OTHER_GIT_DIRS} submodule or worktree git directories"],
            )
        try:
            with os.scandir(folder) as entries:
                children = sorted((entry.path, entry.is_symlink()) for entry in entries if entry.is_dir())
        except OSError:
            continue
        for child, linked in children:
            if depth < 0:
                worktrees.append(child)  # every worktrees/<id> is a git directory
            elif linked or os.path.lexists(f"{child}/HEAD"):
                modules.append(child)
                if not linked:
                    pending.append((f"{child}/modules", 0))  # nested submodules
            elif depth < _MAX_MODULES_DEPTH:
                pending.append((child, depth + 1))  # part of a submodule name holding '/'
    return modules, worktrees, []
