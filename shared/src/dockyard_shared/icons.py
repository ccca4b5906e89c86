"""The icons a server and its tools show in hosts that display them (MCP ``Icon``, ``data:`` URIs).

Each server ships its own in its package (``icon.png``, 32x32, and ``icon.svg``, drawn by
``shared/icons/make_icons.py``), so they need no network and no hosting: a ``data:`` URI carries the bytes.
The server lists both (the spec has clients that show icons support PNG, and SVG where they can); each
tool carries only the PNG (about 400 bytes encoded), since every ``tools/list`` repeats it per tool.
"""

from __future__ import annotations

import base64
from importlib.resources import files

from mcp.types import Icon

__all__ = ["package_icons", "tool_icons"]

_FILES = (("icon.png", "image/png", ["32x32"]), ("icon.svg", "image/svg+xml", ["any"]))


def package_icons(distribution: str) -> list[Icon]:
    """The icons in ``distribution``'s package (``dockyard-git`` → ``dockyard_git``), PNG first; none when
    it has no icon files or is not an importable package."""
    try:
        folder = files(distribution.replace("-", "_"))
    except (ModuleNotFoundError, TypeError, ValueError):
        return []
    found = []
    for name, mime, sizes in _FILES:
        item = folder / name
        if item.is_file():
            data = base64.b64encode(item.read_bytes()).decode("ascii")
            found.append(Icon(src=f"data:{mime};base64,{data}", mime_type=mime, sizes=sizes))
    return found


def tool_icons(server_icons: list[Icon] | None) -> list[Icon] | None:
    """What each tool of a server with ``server_icons`` carries: the PNG alone, or nothing."""
    png = [icon for icon in server_icons or [] if icon.mime_type == "image/png"]
    return png or None
