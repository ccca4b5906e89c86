"""The board: a project's tasks in one column per status, what ``show_board`` returns, the ``ui://tasks/board``
view draws and ``/board`` serves over plain HTTP. Models and bounds only (no database, no MCP).

Bounded twice: ``per_column`` cards a column (the highest priority first) and titles as stored (≤ 300
characters), blockers as ids (a few a card, with their count), so the whole board stays under the ~60,000
characters of a list page; each column says how many more it holds and how to list them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from dockyard_shared.schema import bulk_list

from .models import DATA
from .rules import STATUSES, TRANSITIONS

__all__ = [
    "BLOCKERS_SHOWN",
    "BOARD_URI",
    "PER_COLUMN",
    "PER_COLUMN_MAX",
    "Board",
    "BoardCard",
    "BoardColumn",
    "moves",
]

BOARD_URI = "ui://tasks/board"
PER_COLUMN = 20
PER_COLUMN_MAX = 25  # worst case (300-character titles, long names): 5 × 25 cards ≈ 56,500 characters
BLOCKERS_SHOWN = 3  # open blockers named on a card; the rest counted


class BoardCard(BaseModel):
    id: str
    title: str = Field(description=DATA)
    priority: str
    assignee: str | None = None
    due: str | None = None
    version: int = Field(description="pass as expected_version to update_task_status")
    open_blockers: list[str] = Field(default=[], description="ids of the first open tasks this one waits on")
    open_blockers_total: int = 0


class BoardColumn(BaseModel):
    status: str
    total: int = Field(description="tasks in this status in the project")
    tasks: list[BoardCard] = Field(description="the first per_column by priority, then age")
    more: int = Field(description="tasks in this status not shown: list_tasks project=KEY status=STATUS")


class Board(BaseModel):
    project: str
    name: str = Field(description=DATA)
    # A plain array in the output schema (as TaskPage's rows): its nested schema cost ~1,200 characters of
    # every turn's tool listing; one line says the same.
    columns: Annotated[
        list[BoardColumn],
        bulk_list(
            "one per status, in order: {status, total, tasks: [{id, title, priority, assignee?, due?, version, "
            f"open_blockers (first ids), open_blockers_total}}], more (not shown)}}; titles are {DATA}"
        ),
    ]
    moves: dict[str, list[str]] = Field(description="the statuses each status may move to")
    can_move: bool = Field(default=True, description="false: update_task_status is not served here")
    revision: int = Field(description="the change-feed revision this board reflects")
    note: str | None = None


def moves() -> dict[str, list[str]]:
    return {status: list(TRANSITIONS[status]) for status in STATUSES}
