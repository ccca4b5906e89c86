"""Small wording helpers for replies a model reads: counts with their noun in the right number."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 name``, ``2 names``, ``1,000 commits``; ``many`` for a noun whose plural is not noun + s."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"
