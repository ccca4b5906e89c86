"""Where a server keeps its own files by default (a generated sample database, a cache, a task store).

One place per user and server, following each platform's convention, so two servers never share a
file by accident and a default database survives upgrades. ``XDG_DATA_HOME`` wins everywhere: tests and
sandboxed hosts point it at a folder of their own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["user_data_dir"]


def user_data_dir(server: str) -> Path:
    """``<platform data dir>/dockyard/<server>``; not created here (the caller creates what it writes)."""
    base = os.environ.get("XDG_DATA_HOME")
    if not base:
        home = Path.home()
        if sys.platform == "darwin":
            base = str(home / "Library" / "Application Support")
        elif sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        else:
            base = str(home / ".local" / "share")
    return Path(base) / "dockyard" / server
