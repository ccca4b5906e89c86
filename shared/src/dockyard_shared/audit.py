"""An audit trail of what a client made a server do: one JSON line per tool call, resource read and
prompt render, so an operator can see what a model did and read.

Each line: ``time`` (UTC, ISO 8601), ``server``, ``kind`` (``tool``, ``resource`` or ``prompt``), then
``tool`` and ``arguments``, ``resource`` (the URI), or ``prompt`` and ``arguments`` (secrets redacted,
long values cut), then ``duration_ms`` and ``outcome`` (``ok``, ``error`` with the error's category, or
``cancelled``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .errors import as_problem

__all__ = ["AuditLog", "AuditMiddleware", "redact"]

_SECRET_KEY = re.compile(r"token|secret|passw|api[_-]?key|authorization|credential|cookie", re.IGNORECASE)
# Values that look like credentials whatever their key: GitHub tokens, bearer headers, URL userinfo.
_SECRET_VALUE = re.compile(
    r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|Bearer\s+\S+)|(?<=://)[^/@\s:]+:[^/@\s]+(?=@)"
)
MAX_VALUE_CHARS = 500


def redact(value: Any, key: str = "") -> Any:
    """A copy of ``value`` safe to write to a log."""
    if key and _SECRET_KEY.search(key):
        return "[redacted]"
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        cleaned = _SECRET_VALUE.sub("[redacted]", value)
        if len(cleaned) > MAX_VALUE_CHARS:
            return cleaned[:MAX_VALUE_CHARS] + f"…[{len(cleaned) - MAX_VALUE_CHARS} more chars]"
        return cleaned
    return value


def _category(error: Exception) -> str:
    # FastMCP's own "unknown tool / resource / prompt" is the client's mistake, not an internal failure.
    if isinstance(error, NotFoundError):
        return "not_found"
    return as_problem(error).category.value


class AuditLog:
    """Appends JSON lines to a file; safe to share between servers and threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)


class AuditMiddleware(Middleware):
    def __init__(self, sink: AuditLog, *, server_name: str) -> None:
        self.sink = sink
        self.server_name = server_name

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        message = context.message
        subject = {"tool": message.name, "arguments": redact(message.arguments or {})}
        return await self._audited("tool", subject, context, call_next)

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        subject = {"resource": redact(str(context.message.uri))}
        return await self._audited("resource", subject, context, call_next)

    async def on_get_prompt(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        message = context.message
        subject = {"prompt": message.name, "arguments": redact(message.arguments or {})}
        return await self._audited("prompt", subject, context, call_next)

    async def _audited(
        self, kind: str, subject: dict[str, Any], context: MiddlewareContext[Any], call_next: Any
    ) -> Any:
        started = time.perf_counter()
        record: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "server": self.server_name,
            "kind": kind,
            **subject,
        }
        try:
            result = await call_next(context)
        except BaseException as error:
            if isinstance(error, Exception):
                record["outcome"] = "error"
                record["error_category"] = _category(error)
            else:
                record["outcome"] = "cancelled"
            raise
        else:
            record["outcome"] = "error" if getattr(result, "is_error", False) else "ok"
            return result
        finally:
            record["duration_ms"] = round((time.perf_counter() - started) * 1000, 2)
            self.sink.write(record)
