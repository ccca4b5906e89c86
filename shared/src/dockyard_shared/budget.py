"""Output budgets: keep every reply inside a model's context window, and say how to get the rest.

Pure logic (no MCP import). Two shapes of output are bounded here:

* text (a diff, a file, a log) — :func:`bound_text` cuts at a character budget, preferring a line
  boundary, and reports the offset to continue from;
* items (rows, commits, matches) — :func:`bound_items` takes from an iterator until a count or a
  character budget is reached, *without* consuming more than one item past the budget, so a caller
  streaming from a database cursor never materialises the whole result.

Continuation tokens are opaque to the model but tamper-evident (:func:`encode_cursor`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .problems import InvalidArgument

__all__ = [
    "BoundedItems",
    "BoundedText",
    "bound_items",
    "bound_text",
    "decode_cursor",
    "encode_cursor",
    "json_size",
]

T = TypeVar("T")

# A per-process key: cursors are only meaningful to the server process that issued them, and a
# model cannot forge one that makes us read something it could not have asked for directly.
_CURSOR_KEY = os.urandom(16)


@dataclass(frozen=True)
class BoundedText:
    text: str
    truncated: bool
    total_chars: int
    next_offset: int | None
    note: str | None = None


def bound_text(
    text: str,
    max_chars: int,
    *,
    offset: int = 0,
    how_to_continue: Callable[[int], str] | None = None,
) -> BoundedText:
    """Return ``text[offset:]`` cut to ``max_chars``, at a line end when one is near.

    ``how_to_continue(next_offset)`` words the instruction in the note, e.g.
    ``lambda n: f"call git_show again with offset={n}"``.
    """
    if max_chars <= 0:
        raise InvalidArgument("max_chars must be positive.", next_step="Pass a positive max_chars.")
    total = len(text)
    if offset < 0 or offset > total:
        raise InvalidArgument(
            f"offset {offset} is outside the text (length {total}).",
            next_step=f"Use an offset between 0 and {total}.",
        )
    rest = text[offset:]
    if len(rest) <= max_chars:
        return BoundedText(rest, False, total, None)
    cut = rest.rfind("\n", 0, max_chars)
    # A line boundary is only worth it if it does not throw away most of the budget.
    end = cut + 1 if cut >= max_chars // 2 else max_chars
    next_offset = offset + end
    instruction = how_to_continue(next_offset) if how_to_continue else f"call again with offset={next_offset}"
    note = (
        f"Output truncated: showed characters {offset}–{next_offset} of {total}. "
        f"To see more, {instruction}, or narrow the request."
    )
    return BoundedText(rest[:end], True, total, next_offset, note)


@dataclass
class BoundedItems(Generic[T]):
    items: list[T] = field(default_factory=list)
    truncated: bool = False
    # Why we stopped: "max_items" or "max_chars"; None when everything fitted.
    stopped_by: str | None = None
    chars: int = 0


def json_size(value: Any) -> int:
    """Characters ``value`` takes as compact JSON: the unit of every character budget here."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def bound_items(
    items: Iterable[T],
    *,
    max_items: int,
    max_chars: int | None = None,
    size_of: Callable[[T], int] = json_size,
) -> BoundedItems[T]:
    """Take items until ``max_items`` or ``max_chars`` would be exceeded.

    ``truncated`` is exact: it is True only if at least one more item exists. At least one item is
    always returned when any exists, even if it alone exceeds ``max_chars``, so paging always
    makes progress.
    """
    result: BoundedItems[T] = BoundedItems()
    iterator: Iterator[T] = iter(items)
    for item in iterator:
        if len(result.items) >= max_items:
            result.truncated, result.stopped_by = True, "max_items"
            break
        size = size_of(item)
        if max_chars is not None and result.items and result.chars + size > max_chars:
            result.truncated, result.stopped_by = True, "max_chars"
            break
        result.items.append(item)
        result.chars += size
    return result


def encode_cursor(state: dict[str, Any]) -> str:
    """An opaque, signed continuation token for ``state`` (JSON-serialisable)."""
    payload = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(_CURSOR_KEY, payload, hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(mac + payload).decode().rstrip("=")


def decode_cursor(cursor: str, *, tool: str) -> dict[str, Any]:
    """Decode a token from :func:`encode_cursor`; a tampered, foreign or stale token is refused."""
    stale = InvalidArgument(
        "The cursor is not valid: it was altered, belongs to another call, or the server restarted since.",
        next_step=f"Call {tool} again without a cursor to start from the first page.",
    )
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, TypeError):
        raise stale from None
    mac, payload = raw[:12], raw[12:]
    if len(mac) < 12 or not hmac.compare_digest(
        mac, hmac.new(_CURSOR_KEY, payload, hashlib.sha256).digest()[:12]
    ):
        raise stale
    try:
        state = json.loads(payload)
    except ValueError:
        raise stale from None
    if not isinstance(state, dict):
        raise stale
    return state
