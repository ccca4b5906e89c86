"""The databases a server serves, found by alias (the twin of git's ``RepositorySet``), and their
statements run off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dockyard_shared import InvalidArgument, NotFound, did_you_mean
from dockyard_shared.offload import run_in_thread

from .database import Budget, Database
from .settings import Settings

__all__ = ["DatabaseSet"]

T = TypeVar("T")


class DatabaseSet:
    """Every database of ``settings``, opened and checked readable at start-up."""

    def __init__(self, settings: Settings) -> None:
        self.limits = settings.limits
        self.databases: dict[str, Database] = {}
        for spec in settings.databases:
            database = Database(
                spec, writable=settings.allow_write, create=settings.create, limits=settings.limits
            )
            database.check_readable()
            self.databases[spec.alias] = database

    @property
    def aliases(self) -> list[str]:
        return list(self.databases)

    def resolve(self, name: str | None) -> Database:
        """The database called ``name``; optional when exactly one is served."""
        if not name:
            if len(self.databases) == 1:
                return next(iter(self.databases.values()))
            raise InvalidArgument(
                f"Several databases are served ({', '.join(self.databases)}); say which one.",
                next_step="Pass database=<one of those names>.",
            )
        if name in self.databases:
            return self.databases[name]
        raise NotFound(
            f"No database is served under the name {name!r}.",
            next_step=did_you_mean(name, self.databases, kind="database"),
        )

    async def run(self, work: Callable[[Budget], T]) -> T:
        """Run ``work`` in a worker thread under a fresh budget.

        The event loop keeps serving other requests meanwhile. If the request is cancelled, the budget
        is marked so SQLite's progress handler interrupts the statement within a few thousand VM steps,
        and the worker thread is released.
        """
        budget = Budget(self.limits.timeout_ms)
        return await run_in_thread(lambda: work(budget), on_cancel=budget.cancelled.set)
