"""Cycles: in a batch's new edges, along parents, and along "is blocked by" edges in the database.

A change that could close a cycle locks the feed row (:func:`lock_graph`) before it looks for one, so
two such changes in different transactions cannot each miss the other's new edge.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from .schema import Dependency, Feed, Task

__all__ = ["find_cycle", "lock_graph", "parent_loop", "waits_on"]


def lock_graph(session: Session) -> None:
    """Serialise changes that could close a cycle (see the module docstring)."""
    session.execute(select(Feed.id).where(Feed.id == 1).with_for_update())


def find_cycle(edges: dict[int, list[int]]) -> list[int] | None:
    """A cycle in ``edges`` (node → nodes it points at), as the list of nodes around it."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done

    def visit(node: int, path: list[int]) -> list[int] | None:
        state[node] = 1
        path.append(node)
        for successor in edges.get(node, ()):
            if state.get(successor) == 1:
                return [*path[path.index(successor) :], successor]
            if successor not in state and (found := visit(successor, path)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in list(edges):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def parent_loop(session: Session, task: Task, parent: Task) -> list[int] | None:
    """The chain parent → … → task if making ``parent`` the parent of ``task`` would close a loop."""
    chain = [parent.id]
    current = parent.parent_id
    while current is not None and len(chain) < 10_000:
        chain.append(current)
        if current == task.id:
            return chain
        current = session.scalar(select(Task.parent_id).where(Task.id == current))
    return [parent.id, task.id] if parent.id == task.id else None


def waits_on(session: Session, start: int, target: int) -> list[int] | None:
    """The path start → … → target following "is blocked by" edges, if there is one."""
    came_from: dict[int, int | None] = {start: None}
    frontier = [start]
    while frontier and target not in came_from:
        rows = session.execute(
            select(Dependency.task_id, Dependency.blocker_id).where(Dependency.task_id.in_(frontier))
        ).all()
        frontier = []
        for waiting, blocker in rows:
            if blocker not in came_from:
                came_from[blocker] = waiting
                frontier.append(blocker)
    if target not in came_from:
        return None
    path, node = [], target
    while node is not None:
        path.append(node)
        node = came_from[node]
    return list(reversed(path))
