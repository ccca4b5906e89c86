"""Whether a folder is a bare repository, without opening it as one.

Only a root may name a bare repository (a scan never serves one). The check looks at files, as git's
``is_git_directory`` does (a valid ``HEAD``, ``objects`` and ``refs`` folders, no ``commondir``: a linked
work tree's git directory is not bare), then asks a git that reads one regular file and nothing else —
the repository's own ``config``, includes not followed — for ``core.bare``. No repository is opened, so
no setting in it can run anything; the answer is cached against the config file's stamp.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from pathlib import Path

from .config_files import ConfigReader
from .file_stamps import file_stamp, is_racy

__all__ = ["BareCheck", "looks_like_git_dir"]

_OBJECT_ID = re.compile(rb"(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{40})")


def looks_like_git_dir(path: Path) -> bool:
    """A git directory of its own: a ``HEAD`` naming a ref or a commit, ``objects`` and ``refs``, and no
    ``commondir`` (which would make it a linked work tree's, sharing another's objects)."""
    if os.path.lexists(path / "commondir"):
        return False
    head = path / "HEAD"
    try:
        if head.is_symlink():
            valid = os.readlink(head).startswith("refs/")
        else:
            with open(head, "rb") as file:
                text = file.read(256)
            valid = (text.startswith(b"ref:") and text[4:].lstrip().startswith(b"refs/")) or bool(
                _OBJECT_ID.match(text)
            )
    except (OSError, ValueError):
        return False
    return valid and (path / "objects").is_dir() and (path / "refs").is_dir()


class BareCheck:
    """``check(path)``: whether ``path`` is a bare repository's git directory (module docstring)."""

    def __init__(self, configs: ConfigReader) -> None:
        self.configs = configs  # runs git on the config file alone, bounded
        self._known: dict[str, tuple[tuple, bool]] = {}  # config file → (its stamp, core.bare)
        self._lock = threading.Lock()

    def __call__(self, path: Path) -> bool:
        if not looks_like_git_dir(path):
            return False
        config = str(path / "config")
        stamp = file_stamp(config, True)
        if stamp is None or stamp[0] != stat.S_IFREG:
            return False  # git would read a FIFO or device as config, and wait
        with self._lock:
            known = self._known.get(config)
        if known is not None and known[0] == stamp:
            return known[1]
        started = time.time_ns()
        bare = self._core_bare(config)
        if not is_racy(stamp, started):
            with self._lock:
                self._known[config] = (stamp, bare)
        return bare

    def _core_bare(self, config: str) -> bool:
        try:
            answer = self.configs.git_alone(
                ["config", "--file", config, "--type=bool", "--get", "core.bare"], max_bytes=64
            )
        except OSError:
            return False
        # Unset (1), not a boolean or an unreadable file (128), stopped at a limit: not bare.
        return answer.returncode == 0 and answer.stdout.strip() == b"true"
