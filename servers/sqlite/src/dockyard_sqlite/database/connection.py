"""How every statement of this server reaches SQLite: a leased worker process, under a budget.

The statements run in worker processes (:mod:`..workers`), never in the server's own: there one
compile or one function call could outlive every time limit and gigabytes of memory. :func:`checkout`
leases one for a call as a :class:`RemoteConnection` (the few parts of ``sqlite3.Connection`` the
catalog, paging and write code use) and turns SQLite's errors into problems. Each worker connection
carries the authorizer (:mod:`..safety`) and SQLite's own limits (:data:`..workers.protocol.LIMITS`:
one value at most :data:`MAX_VALUE_BYTES`, LIKE patterns at most :data:`MAX_LIKE_PATTERN_BYTES`, no
attached database).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dockyard_shared import InvalidArgument, Problem

from ..settings import SERVER_RESERVE_MB, Limits
from ..workers.connection import RemoteConnection, lease_connection
from ..workers.limits import Budget, DatabaseTarget, WorkerLimits
from ..workers.pool import WorkerPool
from ..workers.protocol import MAX_LIKE_PATTERN_BYTES, MAX_VALUE_BYTES

__all__ = [
    "MAX_LIKE_PATTERN_BYTES",
    "MAX_VALUE_BYTES",
    "Budget",
    "Params",
    "bind",
    "checkout",
    "one_statement",
    "quote_identifier",
    "quote_literal",
    "worker_limits",
]

Params = dict[str, Any] | list[Any] | None


def worker_limits(limits: Limits) -> WorkerLimits:
    """How many workers, and the memory of each, for a server with ``limits``."""
    return WorkerLimits.within(limits.memory_mb, size=limits.workers, reserve_mb=SERVER_RESERVE_MB)


@contextmanager
def checkout(
    pool: WorkerPool,
    target: DatabaseTarget,
    *,
    budget: Budget,
    problem: Callable[[BaseException, RemoteConnection], Problem],
) -> Iterator[RemoteConnection]:
    """A connection to ``target`` in a worker of its own, under ``budget``: SQLite errors become
    ``problem(...)``. Waiting for a free worker is bounded (a retryable "busy" problem past it), and the
    worker is put back clean — no cursor, log or transaction of this call survives into the next."""
    with lease_connection(pool, target, budget) as connection:
        try:
            yield connection
            connection.flush()  # a statement whose reply nobody read (a COMMIT) still reports its error
        except sqlite3.Error as error:
            raise problem(error, connection) from None


def bind(params: Params) -> Sequence[Any] | dict[str, Any]:
    if params is None:
        return ()
    if isinstance(params, dict):
        return {str(k).lstrip(":@$"): v for k, v in params.items()}
    return list(params)


def one_statement(sql: str) -> str:
    text = sql.strip()
    if not text:
        raise InvalidArgument("The SQL is empty.", next_step="Pass one SQL statement.")
    # A trailing semicolon is fine; anything after it is a second statement, which sqlite3 refuses
    # itself ("one statement at a time") when the statement runs.
    return text


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
