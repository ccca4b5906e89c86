"""Stat stamps: what changes when a file or folder changes, and when a stamp is too fresh to trust.

A :class:`.layout.Layout` is cached against the stamps of every path it was computed from.
"""

from __future__ import annotations

import os
import stat

__all__ = ["LISTING", "RACY_NS", "file_stamp", "is_racy"]

# A file changed less than this before its stat was taken may change again without its stat changing
# (file system timestamps are coarse): such a signature is not cached.
RACY_NS = 100_000_000

# file_stamp's mode for a folder whose list of entries matters (objects, objects/pack): its times change
# when an entry is added, removed or renamed, not when a file inside is rewritten.
LISTING = "listing"


def file_stamp(path: str, follow: bool | str) -> tuple | None:
    """What changes when a file changes: type, identity, size and times; ``None`` when it is absent.

    A directory's own content changes all the time (objects, refs), so only its identity counts, unless
    it is stamped as a :data:`LISTING`. An entry read with ``follow=False`` is only checked for being a
    symlink, so a plain file or folder stamps as its type alone (HEAD and the index are rewritten all the
    time; that must not discard the cache).
    """
    try:
        st = os.stat(path, follow_symlinks=bool(follow))
    except (OSError, ValueError):
        return None
    kind = stat.S_IFMT(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        if follow == LISTING:
            return (kind, st.st_dev, st.st_ino, 0, st.st_mtime_ns, st.st_ctime_ns)
        return (kind, st.st_dev, st.st_ino) if follow else (kind,)
    if not follow and not stat.S_ISLNK(st.st_mode):
        return (kind,)
    return (kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def is_racy(stamp: tuple | None, since_ns: int) -> bool:
    return stamp is not None and len(stamp) > 3 and max(stamp[4], stamp[5]) >= since_ns - RACY_NS
