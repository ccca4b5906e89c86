"""Checks on the values nationalize.io sends besides its predictions: quota headers, and the key echoed back.

Every header is hostile until read: a quota figure is believed only as a plain non-negative integer of at
most nine digits, and a reset time only as a number of seconds (what nationalize documents: its
``X-Rate-Limit-Reset`` is "seconds remaining until a new time window opens"). A window is a day at most,
so a reset further away is clamped to a day and remembered as clamped, for the error and quota_status to
say so. A value that cannot be read is treated as absent (and logged), never as an internal error.

The API key travels in the query string, so an upstream can echo it back in any of the forms a URL
carries: :class:`KeyScrubber` finds it raw, percent-encoded (``quote`` with and without ``/`` kept safe,
``quote_plus``; either hex case) and redacts each.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote, quote_plus

__all__ = ["MAX_COUNT", "MAX_QUOTA", "MAX_RESET_SECONDS", "KeyScrubber", "Rate", "read_rate"]

log = logging.getLogger("dockyard.name_origin")

MAX_QUOTA = 999_999_999  # names in a window: nine digits is far above any plan nationalize sells
MAX_RESET_SECONDS = 86_400  # nationalize's quota window is a day; a reset further away is not believed
MAX_COUNT = 10_000_000_000  # records for one name: above the world's population is not an answer
_INTEGER = re.compile(r"^[0-9]{1,9}$")
_SECONDS = re.compile(r"^[0-9]{1,15}(\.[0-9]{1,6})?$")


@dataclass(frozen=True)
class Rate:
    """A quota as nationalize reported it, each value checked. ``claimed_reset`` holds the seconds it said
    when they were clamped to :data:`MAX_RESET_SECONDS` (None when believed as said)."""

    limit: int | None
    remaining: int | None
    reset_at: datetime | None
    observed_at: datetime
    claimed_reset: float | None = None

    @property
    def reset_seconds(self) -> int | None:
        if self.reset_at is None:
            return None
        return max(0, math.ceil((self.reset_at - self.observed_at).total_seconds()))

    def as_headers(self) -> dict[str, str]:
        """The checked figures as nationalize's headers (for code that reads headers, never the raw ones)."""
        headers = {}
        if self.limit is not None:
            headers["X-Rate-Limit-Limit"] = str(self.limit)
        if self.remaining is not None:
            headers["X-Rate-Limit-Remaining"] = str(self.remaining)
        if self.reset_seconds is not None:
            headers["X-Rate-Limit-Reset"] = str(self.reset_seconds)
        return headers


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _figure(headers: Mapping[str, str], name: str) -> int | None:
    value = _header(headers, name)
    if value is None:
        return None
    if not _INTEGER.match(value):
        log.warning("nationalize.io sent %s %r: not a count this server believes; ignored", name, value[:40])
        return None
    return int(value)


def _seconds(headers: Mapping[str, str], name: str) -> float | None:
    value = _header(headers, name)
    if value is None:
        return None
    if not _SECONDS.match(value):
        log.warning("nationalize.io sent %s %r: not a number of seconds; ignored", name, value[:40])
        return None
    return float(value)


def read_rate(headers: Mapping[str, str], now: datetime) -> Rate | None:
    """The quota in nationalize's ``X-Rate-Limit-*`` headers (``Retry-After`` for the reset when the
    window's own reset is missing), or None when none of them holds a value to believe."""
    limit = _figure(headers, "x-rate-limit-limit")
    remaining = _figure(headers, "x-rate-limit-remaining")
    reset = _seconds(headers, "x-rate-limit-reset")
    if reset is None:
        reset = _seconds(headers, "retry-after")
    claimed = None
    if reset is not None and reset > MAX_RESET_SECONDS:
        claimed, reset = reset, MAX_RESET_SECONDS
        log.warning(
            "nationalize.io said its quota resets in %s s, past its one-day window: believed as a day",
            claimed,
        )
    if limit is not None and remaining is not None and remaining > limit:
        remaining = limit  # more left than the whole window holds: the window is the bound
    if limit is None and remaining is None and reset is None:
        return None
    reset_at = now + timedelta(seconds=math.ceil(reset)) if reset is not None else None
    return Rate(limit, remaining, reset_at, now, claimed)


class KeyScrubber:
    """Redacts the API key from a text in every form a URL or a careless upstream may carry it."""

    REDACTED = "[redacted]"

    def __init__(self, key: str | None) -> None:
        self._pattern: re.Pattern[str] | None = None
        if key:
            forms = {key, quote(key, safe=""), quote(key), quote_plus(key), quote_plus(key, safe="/")}
            # Longest first, so a form that contains another is redacted whole. IGNORECASE catches
            # lower-case percent escapes (%2f); over-matching a key's letters in another case is harmless.
            alternatives = sorted(forms, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(form) for form in alternatives), re.IGNORECASE)

    def __call__(self, text: str) -> str:
        return self._pattern.sub(self.REDACTED, text) if self._pattern else text
