"""The protocol side of :mod:`dockyard_shared.problems`: turn failures into MCP error results.

Logic modules raise :class:`~dockyard_shared.problems.Problem`; :class:`ProblemMiddleware`, installed
on every Dockyard server by :func:`dockyard_shared.server.new_server`, rewrites whatever a tool, resource
or prompt raised into an error the model can act on:

* a ``Problem`` keeps its own four-part message;
* an argument that failed schema validation becomes ``invalid_argument`` with pydantic's reason;
* anything else is our bug: the traceback goes to the server log (stderr), the model gets an
  ``internal`` error that leaks no exception text, path or secret.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from fastmcp.exceptions import (
    DisabledError,
    FastMCPError,
    NotFoundError,
    PromptError,
    ResourceError,
    ToolError,
)
from fastmcp.exceptions import ValidationError as FastMCPValidationError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError as PydanticValidationError

from .problems import InternalError, InvalidArgument, LimitExceeded, Problem

__all__ = [
    "ProblemMiddleware",
    "as_problem",
    "find_problem",
    "problem_from_os_error",
    "scrub_paths",
    "tool_error",
    "worded_failures",
]

log = logging.getLogger("dockyard")

# Absolute POSIX paths (at least two segments) and Windows drive paths.
_PATH = re.compile(r"(?<![\w.])(?:/[^\s/'\"`:()\[\]{},;]+){2,}/?|[A-Za-z]:\\[^\s'\"`()\[\]{},;]+")


def scrub_paths(text: str, allowed_roots: Iterable[str | Path] = ()) -> str:
    """Replace host paths in ``text`` with ``<path>``, except those inside ``allowed_roots``.

    A model may see paths it is allowed to work with; it should not learn the layout of the
    rest of the host (home directories, virtual environments, site-packages).
    """
    roots = [str(Path(r)) for r in allowed_roots]

    def replace(match: re.Match[str]) -> str:
        path = match.group(0)
        if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
            return path
        return "<path>"

    return _PATH.sub(replace, text)


def problem_from_os_error(error: OSError, *, what: str, allowed_roots: Iterable[str | Path] = ()) -> Problem:
    """Word an operating-system error (missing file, permission, disk full) for the model."""
    from .problems import Conflict, NotFound, PermissionDenied

    reason = scrub_paths(error.strerror or str(error), allowed_roots)
    if isinstance(error, FileNotFoundError):
        return NotFound(f"{what}: {reason}.", next_step="Check the path; list what exists first.")
    if isinstance(error, PermissionError):
        return PermissionDenied(
            f"{what}: the operating system refused access ({reason}).",
            next_step="Use a file the server process can read, or ask the user to fix its permissions.",
        )
    if isinstance(error, (IsADirectoryError, NotADirectoryError, FileExistsError)):
        return Conflict(f"{what}: {reason}.", next_step="Check the path names the right kind of thing.")
    return Conflict(
        f"{what}: {reason}.",
        retryable=True,
        next_step="Retry once; if it fails again, tell the user the host reported this error.",
    )


_MAX_FIELD_CHARS = 200  # of one field name or message in a validation error


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…[{len(text) - limit:,} more characters]"


def _validation_reason(error: BaseException) -> str:
    cause = error.__cause__ if isinstance(error.__cause__, PydanticValidationError) else error
    if isinstance(cause, PydanticValidationError):
        parts = []
        for item in cause.errors(include_url=False):
            where = ".".join(str(p) for p in item.get("loc", ()) if p != "call") or "arguments"
            # A field name is the caller's text too: a 100,000-character key must not come back whole.
            parts.append(f"{_clip(where, _MAX_FIELD_CHARS)}: {_clip(str(item.get('msg')), _MAX_FIELD_CHARS)}")
        return "; ".join(parts[:5]) or "the arguments do not match the input schema"
    # Drop pydantic's documentation links; keep the first lines.
    text = "\n".join(line for line in str(error).splitlines() if "errors.pydantic.dev" not in line)
    return text[:500]


def _cause_chain(error: BaseException) -> list[BaseException]:
    """``error`` and what caused it, outermost first (FastMCP wraps what a tool raises); a cycle ends it."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__
    return chain


def find_problem(error: BaseException) -> Problem | None:
    """The :class:`Problem` behind ``error``, if any."""
    return next((cause for cause in _cause_chain(error) if isinstance(cause, Problem)), None)


def as_problem(error: BaseException) -> Problem:
    """The :class:`Problem` a raised exception stands for; unknown exceptions become internal errors."""
    problem = find_problem(error)
    if problem is not None:
        return problem
    if isinstance(error, (FastMCPValidationError, PydanticValidationError)):
        return InvalidArgument(
            f"The arguments do not match the input schema ({_validation_reason(error)}).",
            next_step="Fix the named arguments to match the tool's input schema and call again.",
        )
    if isinstance(error, UnicodeEncodeError) or isinstance(error.__cause__, UnicodeEncodeError):
        # A lone surrogate ("\ud800") is valid in JSON and in a Python str, but no file name, SQL text or
        # command line can carry it.
        return InvalidArgument(
            "A text argument holds an unpaired surrogate (an invalid Unicode character such as \\ud800).",
            next_step="Remove or replace the invalid character and call again.",
        )
    if isinstance(error, TimeoutError) or isinstance(error.__cause__, TimeoutError):
        return LimitExceeded(
            "The request took longer than the server's time limit and was stopped.",
            next_step="Ask for less (a narrower filter or a smaller limit) and call again.",
        )
    return InternalError(
        "The server failed unexpectedly while handling this request; the details are in its log.",
        next_step="Try a simpler or different request; if it keeps failing, tell the user.",
    )


def tool_error(error: BaseException) -> ToolError:
    """A ``ToolError`` carrying the model-facing text of ``error``."""
    return ToolError(as_problem(error).for_model())


def _passes_through(error: BaseException) -> bool:
    """FastMCP's and the SDK's own protocol errors (unknown tool or resource, missing client
    capability, a deliberate ToolError) already say the right thing on the wire."""
    if find_problem(error) is not None or isinstance(error, FastMCPValidationError):
        return False
    if isinstance(error, (MCPError, NotFoundError, DisabledError)):
        return True
    return isinstance(error, FastMCPError) and error.__cause__ is None


def _rewrite(error: Exception, kind: str, name: str, error_type: type[FastMCPError]) -> FastMCPError:
    problem = as_problem(error)
    if isinstance(problem, InternalError) and find_problem(error) is None:
        # The operator's copy of what the client never sees: the exception the code raised, not the
        # error FastMCP wrapped it in.
        log.error("unexpected failure in %s %r", kind, name, exc_info=_cause_chain(error)[-1])
    return error_type(problem.for_model())


def _has_unpaired_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_unpaired_surrogate(k) or _has_unpaired_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_unpaired_surrogate(v) for v in value)
    return False


def worded_failures(fn: Callable[..., Awaitable[Any]], name: str) -> Callable[..., Awaitable[Any]]:
    """The async tool function ``fn`` raising its failures worded for the model, as
    :class:`ProblemMiddleware` words them. For a tool that may run as an MCP task (``--tasks``): the task's
    worker calls the function without the middleware chain, and would otherwise hide every failure behind
    "Error calling tool". In a plain call the middleware lets the already worded error through."""

    @functools.wraps(fn)
    async def worded(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except Exception as error:
            if _passes_through(error):
                raise
            raise _rewrite(error, "tool", name, ToolError) from None

    return worded


class ProblemMiddleware(Middleware):
    """Rewrite failures of tools, resources and prompts into model-facing errors."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        # JSON and Python strings may hold an unpaired surrogate ("\ud800"); no file name, SQL text,
        # command line or reply can. Refused here, once for every tool, before it reaches any of them
        # (git would otherwise take it as a raw byte and create a branch no reply could name).
        if _has_unpaired_surrogate(context.message.arguments or {}):
            raise ToolError(
                InvalidArgument(
                    "A text argument holds an unpaired surrogate (an invalid Unicode character such as "
                    "\\ud800).",
                    next_step="Remove or replace the invalid character and call again.",
                ).for_model()
            )
        try:
            return await call_next(context)
        except Exception as error:
            if _passes_through(error):
                raise
            raise _rewrite(error, "tool", context.message.name, ToolError) from None

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except Exception as error:
            if _passes_through(error):
                raise
            raise _rewrite(error, "resource", str(context.message.uri), ResourceError) from None

    async def on_get_prompt(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except Exception as error:
            if _passes_through(error):
                raise
            raise _rewrite(error, "prompt", context.message.name, PromptError) from None
