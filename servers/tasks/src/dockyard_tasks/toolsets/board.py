"""``show_board``, in the read toolset: a project's tasks by status. Hosts that render MCP Apps show it as
the ``ui://tasks/board`` view (its ``_meta.ui``); every other host gets the same board as JSON, complete.

Why a tool of its own rather than the view on ``list_tasks``: list_tasks is a filtered flat page (any
project, text search, blockers of one task…) that a board cannot draw, and its compact rows carry neither
versions nor blockers; the board needs every status of one project at once, each column bounded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.apps import view_meta
from dockyard_shared.offload import run_in_thread
from dockyard_shared.toolsets import ToolRegistrar

from ..board import BOARD_URI, PER_COLUMN, PER_COLUMN_MAX, Board
from .params import ProjectKey

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]


def register(tools: ToolRegistrar, store: TaskStore) -> None:
    @tools.tool(annotations=READ_ONLY, meta=view_meta(BOARD_URI))
    async def show_board(
        project: ProjectKey,
        per_column: Annotated[int, Field(ge=1, le=PER_COLUMN_MAX)] = PER_COLUMN,
    ) -> Board:
        """Show a project's tasks as a board: a column per status, cards with their open blockers.

        Use when: seeing or rearranging a project's work at a glance.
        Not for: search (list_tasks); one task in full (get_task).
        Returns: columns (status, total, tasks with version, more), moves, revision; Apps hosts draw it.
        Limits: per_column cards a column, open ones by priority, closed ones newest first.
        """
        board = await run_in_thread(lambda: store.board(project, per_column))
        # Read at call time: the write toolset registers after this one (tools.installed grows as it does).
        board.can_move = "update_task_status" in tools.installed
        return board
