"""Database failures, worded for the model: what happened, whether anything was saved, whether a retry helps.

The database's own reason decides the wording, never a guess from the call: a read-only database or a
full disk is not a conflict, and a read that fails is not a refused change. SQLite is told apart by its
result code (``sqlite3.Error.sqlite_errorcode``), PostgreSQL by its SQLSTATE.

=====================================  ====================  =================================================
what the database said                 category              retry
=====================================  ====================  =================================================
a write's constraint, serialization   conflict              yes (another change raced this one)
a write waiting past SQLite's timeout  conflict              yes
a read busy or serialization-failed    upstream_unavailable  yes (a read never conflicts: nothing to refuse)
read-only (SQLite 8, PG 25006)         upstream_unavailable  once the operator made it writable
no privilege (PG 42501)                upstream_unavailable  once the operator granted it
full (SQLite 13, PG 53100)             upstream_unavailable  once the operator freed space
timed out (PG 57014, 55P03)            limit_exceeded        yes; nothing was saved
unreachable (PG 08…, 57P0x)            upstream_unavailable  yes
connection lost while committing       upstream_unavailable  read first: it may have been saved
damaged (SQLite 11/26, PG XX…, 22…)    upstream_unavailable  no
anything else                          upstream_unavailable  no; the reason is logged
=====================================  ====================  =================================================
"""

from __future__ import annotations

import logging
import sqlite3

from sqlalchemy.exc import DBAPIError, IntegrityError

from dockyard_shared import Conflict, LimitExceeded, Problem, UpstreamUnavailable

__all__ = ["problem_for"]

log = logging.getLogger(__name__)

_REASON_CHARS = 300  # of the database's own message quoted back


def _reason(error: DBAPIError) -> str:
    """The database's message, first line, bounded (it may quote a value, never a traceback)."""
    text = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else type(error.orig).__name__
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS] + "…"


def _sqlite_code(error: DBAPIError) -> int | None:
    code = getattr(error.orig, "sqlite_errorcode", None) if isinstance(error.orig, sqlite3.Error) else None
    return None if code is None else code & 0xFF  # the primary code of an extended one


def problem_for(
    error: DBAPIError, *, writing: bool, committing: bool = False, timeout_s: float | None = None
) -> Problem:
    """``error`` as the model should read it. ``writing``: the call was a write (so say whether it was
    saved); ``committing``: the error came while committing, so whether it was saved is not known;
    ``timeout_s``: the statement time limit in force, to name it."""
    state = getattr(error.orig, "sqlstate", None) or ""
    sqlite_code = _sqlite_code(error)
    reason = _reason(error)
    saved = "nothing of this call was saved" if writing else "nothing was changed"

    if committing and (error.connection_invalidated or state.startswith("08")):
        return UpstreamUnavailable(
            f"The connection to the task database was lost while this change was being committed "
            f"({reason}); it may or may not have been saved.",
            next_step="Read the task (get_task or changes_since) to see whether the change is there before "
            "retrying it.",
        )
    if state == "42501":
        return UpstreamUnavailable(
            f"The task database refuses this {'write' if writing else 'read'}: the server's database role "
            f"lacks the privilege ({reason}); {saved}.",
            next_step="Tell the user: the operator must grant the server's role its privileges on the tasks "
            "schema. A retry may succeed once that is fixed.",
        )
    if sqlite_code == sqlite3.SQLITE_READONLY or state == "25006":
        return UpstreamUnavailable(
            f"The task database refuses writes: it is read-only ({reason}); {saved}.",
            next_step="Tell the user: the operator must make the database writable (file permissions, a "
            "read-only mount or setting). A retry may succeed once that is fixed; reads still work.",
        )
    if sqlite_code == sqlite3.SQLITE_FULL or state == "53100":
        return UpstreamUnavailable(
            f"The task database is full: its disk (or size limit) has no room left ({reason}); {saved}.",
            next_step="Tell the user: the operator must free space for the database. A retry may succeed "
            "once there is room; reads still work.",
        )
    if state in ("57014", "55P03"):
        limit = f"the server's limit of {timeout_s:g} s" if timeout_s else "the server's time limit"
        what = (
            f"The task database waited longer than {limit} for a lock another transaction holds"
            if state == "55P03"
            else f"A statement of this call ran longer than {limit} (waiting for a lock another transaction "
            "holds, or on a slow database server)"
        )
        return LimitExceeded(
            f"{what}, and the database stopped it ({reason}); {saved}.",
            next_step="Retry in a moment; if it keeps happening, the operator should look for a long "
            "transaction or an overloaded database server.",
            retryable=True,
        )
    if writing and (isinstance(error, IntegrityError) or state in ("40001", "40P01")):
        return Conflict(
            f"Another change to the same tasks was being made at the same moment; {saved}.",
            next_step="Retry the call; read the task again first if you passed expected_version.",
            retryable=True,
        )
    if not writing and (
        sqlite_code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or state in ("40001", "40P01")
    ):
        return UpstreamUnavailable(
            f"The task database was busy with other work for longer than its wait limit ({reason}); {saved}.",
            next_step="Retry in a moment.",
            retryable=True,
        )
    if sqlite_code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or state in ("40001", "40P01"):
        return Conflict(
            f"The task database was busy with other work for longer than its wait limit ({reason}); {saved}.",
            next_step="Retry in a moment.",
            retryable=True,
        )
    if (
        error.connection_invalidated
        or state.startswith("08")
        or state in ("57P01", "57P02", "57P03", "53300")
    ):
        return UpstreamUnavailable(
            f"The task database cannot be reached ({reason}); {saved}.",
            next_step="Retry in a moment; if it persists, the operator should check the database server.",
        )
    if sqlite_code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or state.startswith(("XX", "22")):
        log.error("database error: %s", error)
        return UpstreamUnavailable(
            f"The task database holds data it cannot read: the file or a stored value is damaged ({reason}); "
            f"{saved}.",
            next_step="Tell the user: the operator should check the database (SQLite: PRAGMA integrity_check). "
            "Retrying will not help until it is repaired.",
            retryable=False,
        )
    log.error("database error: %s", error)
    return UpstreamUnavailable(
        f"The task database failed this {'write' if writing else 'read'} ({reason}); {saved}.",
        next_step="Retrying will not help until the cause is fixed; tell the user, whose operator will find "
        "the details in the server's log.",
        retryable=False,
    )
