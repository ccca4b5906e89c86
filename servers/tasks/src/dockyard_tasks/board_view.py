"""The MCP Apps view of dockyard-tasks (``ui://tasks/board``, shown by ``show_board``) and the same board as
the ``/board`` web page of its HTTP transport (board_web.py). One HTML file, package data in ``views/``."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from fastmcp import FastMCP

from dockyard_shared.apps import add_view, load_view

from .board import BOARD_URI
from .board_web import BoardPage
from .settings import READ_SCOPE, WRITE_SCOPE, Settings

if TYPE_CHECKING:
    from .store import TaskStore

__all__ = ["register"]


def register(server: FastMCP, store: TaskStore, settings: Settings, served: Collection[str]) -> None:
    if "show_board" not in served:
        return  # no tool opens the view, and /board would show what the read toolset is off to hide
    html = load_view("dockyard_tasks", "views/board.html")
    add_view(
        server,
        BOARD_URI,
        html,
        name="Task board",
        description="A project's tasks in columns by status; moves a card with update_task_status.",
    )
    BoardPage(
        server,
        store,
        html,
        served=served,
        signed_in=settings.signed_in,
        scopes=(READ_SCOPE, WRITE_SCOPE),
        writes_per_minute=settings.max_writes_per_minute or 0,
    ).add_routes()
