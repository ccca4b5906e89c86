"""Every reply under the size a host accepts, counted in JSON characters, as a reply travels.

A text's length is not its size on the wire: quotes, backslashes and newlines take two characters as JSON,
a control character six. Lists and texts are therefore cut by their JSON size, so a hostile file name or
line cannot turn a bounded reply into an unbounded one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from dockyard_shared.budget import bound_items, json_size

__all__ = ["fit", "json_chars", "take"]

T = TypeVar("T")


def json_chars(text: str) -> int:
    """Characters ``text`` takes inside a JSON string."""
    return json_size(text) - 2


def _item_size(item: Any) -> int:
    value = item.model_dump(mode="json", exclude_none=True) if isinstance(item, BaseModel) else item
    return json_size(value) + 1  # and the comma that separates it from the next


def take(items: Iterable[T], *, max_items: int, max_chars: int) -> tuple[list[T], bool, int]:
    """The first items that fit ``max_items`` and ``max_chars`` (at least one when there is any);
    whether more exist; the characters taken."""
    bounded = bound_items(items, max_items=max_items, max_chars=max_chars, size_of=_item_size)
    return bounded.items, bounded.truncated, bounded.chars


def fit(text: str, max_chars: int) -> str:
    """The longest prefix of ``text`` that takes at most ``max_chars`` characters as JSON."""
    keep = min(len(text), max_chars)
    size = json_chars(text[:keep])
    while size > max_chars:  # each step keeps a smaller prefix, in proportion to the excess
        keep = keep * max_chars // size
        size = json_chars(text[:keep])
    return text[:keep]
