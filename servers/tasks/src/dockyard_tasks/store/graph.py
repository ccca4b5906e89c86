"""Cycles: in a batch's new edges, along parents, and along "is blocked by" edges in the database.

A change that could close a cycle locks the feed row (:func:`lock_graph`) before it looks for one, so
two such changes in different transactions cannot each miss the other's new edge.
"""

from __future__ import annotations

from sqlalchemy import Connection, Select, literal, select

from .schema import Dependency, Feed, Task

__all__ = ["find_cycle", "lock_graph", "parent_loop", "waits_on"]


def lock_graph(session: Connection) -> None:
    """Serialise changes that could close a cycle (see the module docstring)."""
    session.execute(select(Feed.id).where(Feed.id == 1).with_for_update())


def find_cycle(edges: dict[int, list[int]]) -> list[int] | None:
    """A cycle in ``edges`` (node → nodes it points at), as the list of nodes around it.

    Iterative (a depth-first search with an explicit stack): a chain of thousands of tasks must not
    exhaust Python's recursion limit."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in list(edges):
        if start in state:
            continue
        path = [start]
        state[start] = 1
        stack = [iter(edges.get(start, ()))]
        while stack:
            successor = next(stack[-1], None)
            if successor is None:
                stack.pop()
                state[path.pop()] = 2
            elif state.get(successor) == 1:
                return [*path[path.index(successor) :], successor]
            elif successor not in state:
                state[successor] = 1
                path.append(successor)
                stack.append(iter(edges.get(successor, ())))
    return None


_ANCESTORS_AT_ONCE = 1_000  # ancestors read per statement while walking up a parent chain


def _ancestors_from(start: int) -> Select:
    """``start`` and up to ``_ANCESTORS_AT_ONCE - 1`` of its ancestors, nearest first (the depth cap
    also ends the walk should a loop ever be stored)."""
    up = (
        select(Task.id, Task.parent_id, literal(1).label("depth"))
        .where(Task.id == start)
        .cte("up", recursive=True)
    )
    up = up.union_all(
        select(Task.id, Task.parent_id, (up.c.depth + 1).label("depth"))
        .join(up, Task.id == up.c.parent_id)
        .where(up.c.depth < _ANCESTORS_AT_ONCE)
    )
    return select(up.c.id, up.c.parent_id).order_by(up.c.depth)


def parent_loop(session: Connection, task: Task, parent: Task) -> list[int] | None:
    """The chain parent → … → task if making ``parent`` the parent of ``task`` would close a loop.

    Walks the whole chain, however long (an ancestor given up on would let a loop through), a
    thousand ancestors a statement."""
    if parent.id == task.id:
        return [parent.id, task.id]
    chain = [parent.id]
    seen = {parent.id}
    current = parent.parent_id
    while current is not None:
        rows = session.execute(_ancestors_from(current)).all()
        if not rows:
            return None  # a dangling parent id: the chain ends there
        for node, next_parent in rows:
            if node in seen:  # a loop already stored (never written by this server): refuse
                return [*chain, node]
            chain.append(node)
            seen.add(node)
            if node == task.id:
                return chain
            current = next_parent
    return None


def waits_on(session: Connection, start: int, target: int) -> list[int] | None:
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
