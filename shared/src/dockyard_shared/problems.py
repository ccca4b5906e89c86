"""Failures written for the model that reads them.

This module has no MCP import on purpose: a server's logic modules raise these, and the
protocol layer (:mod:`dockyard_shared.errors`) turns them into ``ToolError`` results.

Hierarchy::

    Problem                      base; never raised directly
    ├── InvalidArgument          the call's arguments are wrong; retrying unchanged cannot help
    ├── NotFound                 a named thing (table, file, revision…) does not exist
    ├── PermissionDenied         the server's policy refuses the request (confinement, read-only…)
    ├── Conflict                 the current state forbids it (dirty tree, locked database…)
    ├── LimitExceeded            a time, size or count limit stopped the work
    ├── UpstreamUnavailable      an external service failed or refused; often transient
    └── InternalError            a bug or an unexpected failure of ours

Every message has the same four parts so a model can act on it without guessing:
what failed, its category, whether retrying can help, and the next step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from difflib import get_close_matches
from enum import StrEnum

__all__ = [
    "Conflict",
    "ErrorCategory",
    "InternalError",
    "InvalidArgument",
    "LimitExceeded",
    "NotFound",
    "PermissionDenied",
    "Problem",
    "UpstreamUnavailable",
    "close_matches",
    "did_you_mean",
]


class ErrorCategory(StrEnum):
    INVALID_ARGUMENT = "invalid_argument"
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    CONFLICT = "conflict"
    LIMIT_EXCEEDED = "limit_exceeded"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    INTERNAL = "internal"


# Of one part of an error (what failed, the next step): a problem that quotes a 100,000-character argument
# back must still fit the host's result budget.
MAX_PART_CHARS = 4_000


def _bounded(text: str) -> str:
    if len(text) <= MAX_PART_CHARS:
        return text
    return f"{text[:MAX_PART_CHARS]}…[{len(text) - MAX_PART_CHARS:,} more characters not shown]"


class Problem(Exception):
    """A failure the model should read: what happened, whether to retry, what to do next.

    ``retryable`` answers "can the *same* call succeed later?"; a subclass sets the usual
    answer and a raiser may override it (a locked database is a conflict that clears).
    """

    category: ErrorCategory = ErrorCategory.INTERNAL
    retryable: bool = False
    # What the model reads when the raiser gave no next step of its own: every error says what to do next.
    default_next_step = (
        "Retrying the same call is unlikely to help; tell the user (the server's log has the details)."
    )

    def __init__(self, what: str, *, next_step: str | None = None, retryable: bool | None = None) -> None:
        self.what = what.strip()
        self.next_step = next_step.strip() if next_step else None
        if retryable is not None:
            self.retryable = retryable
        super().__init__(self.what)

    def for_model(self) -> str:
        """The full text sent to the model; each part bounded, since it often quotes the caller's input."""
        lines = [f"Error ({self.category.value}): {_bounded(self.what)}"]
        if self.retryable:
            lines.append("Retry: may succeed if retried later; the cause is expected to be temporary.")
        else:
            lines.append("Retry: will not help unless the call or the state changes.")
        lines.append(f"Next step: {_bounded(self.next_step or self.default_next_step)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.for_model()


class InvalidArgument(Problem):
    """An argument is malformed, out of range or not allowed in this form."""

    category = ErrorCategory.INVALID_ARGUMENT
    default_next_step = "Correct the argument as described above and call again."


class NotFound(Problem):
    """Something the call names does not exist."""

    category = ErrorCategory.NOT_FOUND
    default_next_step = "Check the name or path against what this server lists, then call again."


class PermissionDenied(Problem):
    """The server's safety policy refuses the request (not an operating-system error)."""

    category = ErrorCategory.PERMISSION_DENIED
    default_next_step = "This server's configuration refuses it: do it another way, or tell the user what would have to change."


class Conflict(Problem):
    """The current state of the resource forbids the operation."""

    category = ErrorCategory.CONFLICT
    default_next_step = "Change the state described above (or wait for it to change), then call again."


class LimitExceeded(Problem):
    """A time, size or count limit stopped the work before it finished."""

    category = ErrorCategory.LIMIT_EXCEEDED
    default_next_step = "Ask for less (a narrower filter, fewer items or a smaller range), then call again."


class UpstreamUnavailable(Problem):
    """An external service failed, timed out or throttled us."""

    category = ErrorCategory.UPSTREAM_UNAVAILABLE
    retryable = True
    default_next_step = "Retry later; if it keeps failing, tell the user the service is unavailable."


class InternalError(Problem):
    """Our own failure; details go to the server log, never to the model."""

    category = ErrorCategory.INTERNAL


def close_matches(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Candidates that look like ``name`` (case-insensitive), best first."""
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    hits = get_close_matches(name.lower(), list(lowered), n=limit, cutoff=0.6)
    exact_prefix = [c for c in pool if c.lower().startswith(name.lower()) and c.lower() not in hits]
    ordered = [lowered[h] for h in hits] + exact_prefix
    return ordered[:limit]


def did_you_mean(name: str, candidates: Sequence[str] | Iterable[str], *, kind: str = "name") -> str:
    """A short sentence suggesting close matches, or listing a few valid values."""
    pool = sorted(set(candidates))
    matches = close_matches(name, pool)
    if matches:
        return "Did you mean " + " or ".join(repr(m) for m in matches) + "?"
    if not pool:
        return f"There is no valid {kind} at all."
    shown = ", ".join(repr(c) for c in pool[:10])
    more = f" and {len(pool) - 10} more" if len(pool) > 10 else ""
    return f"Valid {kind}s: {shown}{more}."
