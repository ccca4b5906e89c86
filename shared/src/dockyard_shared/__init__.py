"""Shared helpers for Dockyard MCP servers.

* :mod:`~dockyard_shared.problems` — failures written for the model (no MCP import; logic raises these)
* :mod:`~dockyard_shared.errors` — turning them, and anything unexpected, into MCP error results
* :mod:`~dockyard_shared.annotations` — tool annotation presets and the description convention
* :mod:`~dockyard_shared.budget` — bounding output to a context window, signed cursors
* :mod:`~dockyard_shared.server` — :func:`new_server`, how every server is constructed
* :mod:`~dockyard_shared.runner` — :class:`ServerEntry` and :func:`run_server`, every ``main()``
* :mod:`~dockyard_shared.http` — the Streamable HTTP app (host guard, bearer token, /health)
* :mod:`~dockyard_shared.audit` — the JSON-lines audit log of tool calls
* :mod:`~dockyard_shared.cli` — the ``dockyard`` command
* :mod:`~dockyard_shared.toolsets` — toolsets and the common tool-selection flags
* :mod:`~dockyard_shared.confirm` — the user's confirmation of destructive actions
* :mod:`~dockyard_shared.offload`, :mod:`~dockyard_shared.untrusted`, :mod:`~dockyard_shared.upstream`,
  :mod:`~dockyard_shared.paths` — blocking work, text written by others, upstream HTTP answers, data folders
"""

from typing import TYPE_CHECKING, Any

from .budget import (
    BoundedItems,
    BoundedText,
    bound_items,
    bound_text,
    decode_cursor,
    encode_cursor,
    json_size,
)
from .problems import (
    Conflict,
    ErrorCategory,
    InternalError,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    Problem,
    UpstreamUnavailable,
    close_matches,
    did_you_mean,
)

__all__ = [
    "ADDITIVE",
    "DESTRUCTIVE",
    "OPEN_WORLD",
    "READ_ONLY",
    "BoundedItems",
    "BoundedText",
    "Conflict",
    "ErrorCategory",
    "InternalError",
    "InvalidArgument",
    "LimitExceeded",
    "NotFound",
    "PermissionDenied",
    "Problem",
    "UpstreamUnavailable",
    "bound_items",
    "bound_text",
    "close_matches",
    "decode_cursor",
    "did_you_mean",
    "encode_cursor",
    "json_size",
    "missing_description_sections",
]

if TYPE_CHECKING:
    from .annotations import ADDITIVE, DESTRUCTIVE, OPEN_WORLD, READ_ONLY, missing_description_sections

_FROM_ANNOTATIONS = {"ADDITIVE", "DESTRUCTIVE", "OPEN_WORLD", "READ_ONLY", "missing_description_sections"}


def __getattr__(name: str) -> Any:
    # The annotation presets are MCP SDK objects: importing them on first use keeps the SDK out of a
    # server's entry point (and of `dockyard list`), which only needs the problems.
    if name in _FROM_ANNOTATIONS:
        from . import annotations

        return getattr(annotations, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
