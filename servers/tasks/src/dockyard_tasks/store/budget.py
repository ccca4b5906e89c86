"""Per-actor write budgets (--max-writes-per-minute), shared by every replica through the database.

A token bucket per actor in ``write_budget`` (migration 0008): it holds at most ``per_minute`` tokens and
refills at ``per_minute`` a minute, so an actor may burst up to the limit and then writes at the limit's
pace; unlike a fixed window, no minute boundary lets through twice the limit. One write spends one token;
a refused one spends nothing (a caller retrying after the time it was told gets through).

The row is read and written in one short transaction of its own: under ``SELECT … FOR UPDATE`` on
PostgreSQL, under the write lock ``BEGIN IMMEDIATE`` takes on SQLite; two replicas can therefore never both
spend the last token. Times are the writing process's clock (seconds since the epoch); a replica whose clock
is behind another's never moves ``refilled_at`` backwards, so skew can delay a refill, never add tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Engine, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError

from .engine import WRITE, is_postgres
from .errors import problem_for
from .schema import WriteBudget

__all__ = ["take_write_token"]


def take_write_token(
    engine: Engine,
    actor: str,
    per_minute: int,
    *,
    clock: Callable[[], float] = time.time,
    timeout_s: float | None = None,
) -> float | None:
    """Spend one of ``actor``'s write tokens: None if there was one, else the seconds until there is."""
    table = WriteBudget.__table__
    dialect = postgresql if is_postgres(engine) else sqlite
    rate = per_minute / 60.0  # tokens a second
    try:
        with engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
            now = clock()
            connection.execute(
                dialect.insert(table)
                .values(actor=actor, tokens=float(per_minute), refilled_at=now)
                .on_conflict_do_nothing(index_elements=["actor"])
            )
            tokens, refilled_at = connection.execute(
                select(table.c.tokens, table.c.refilled_at).where(table.c.actor == actor).with_for_update()
            ).one()
            tokens = min(float(per_minute), tokens + max(0.0, now - refilled_at) * rate)
            wait = None if tokens >= 1 else (1 - tokens) / rate
            connection.execute(
                update(table)
                .where(table.c.actor == actor)
                .values(tokens=tokens - 1 if wait is None else tokens, refilled_at=max(now, refilled_at))
            )
    except DBAPIError as error:
        raise problem_for(error, writing=False, timeout_s=timeout_s) from None
    return wait
