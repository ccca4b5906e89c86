"""One server process per SQLite file: a second one is refused at start, unless told to share it.

Why: two processes serving one SQLite file both work — SQLite serialises their writes — but each tells
only its own subscribers about its changes, so one process's subscribers never hear the other's writes
(3,929 of 3,929 missed in a run). Replicas need PostgreSQL, whose ``NOTIFY`` reaches every replica.

How: the serving process holds an exclusive ``flock`` on the database file itself, without writing
anything (no lock file beside it). ``flock`` locks are apart from the POSIX byte-range locks SQLite
takes, so they never meet. The descriptor is kept open for the life of the process and never closed:
closing any descriptor of a file drops every POSIX lock the process holds on it — SQLite's included.
Where ``fcntl`` does not exist (Windows), nothing is checked.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from dockyard_shared import Conflict

__all__ = ["claim_sqlite_file"]

log = logging.getLogger(__name__)

_held: dict[str, bool] = {}  # resolved path → whether this process holds its lock (else shares it)
_held_lock = threading.Lock()
_descriptors: list[int] = []  # every descriptor opened here, never closed (see the module docstring)


def claim_sqlite_file(path: str, *, allow_shared: bool) -> None:
    """Hold the SQLite file at ``path`` for this process; Conflict if another process holds it, unless
    ``allow_shared`` (then a warning). A file that does not exist yet is claimed once it does (call again
    after the store created it). Several servers of one process (tests, ``dockyard serve all``) share
    the process's claim."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock
        return
    file = Path(path)  # as SQLite opens it: "~" is not expanded
    try:
        key = str(file.resolve(strict=True))
    except OSError:
        return  # not created yet, or unreadable: the store's open reports it
    with _held_lock:
        if key in _held:
            return
        try:
            descriptor = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _held[key] = True
        except OSError:
            if not allow_shared:
                _descriptors.append(descriptor)
                raise Conflict(
                    f"The SQLite file {key} is already served by another dockyard-tasks process. Both would "
                    "work, but each process's subscribers would never hear the other's changes.",
                    next_step="Stop the other server, or connect every client to one server (over HTTP); "
                    "replicas need PostgreSQL. --allow-shared-file serves the file anyway.",
                ) from None
            _held[key] = False
            log.warning(
                "%s is also served by another dockyard-tasks process (--allow-shared-file): this process's "
                "subscribers will not hear that process's changes, nor its subscribers this one's",
                key,
            )
        _descriptors.append(descriptor)
