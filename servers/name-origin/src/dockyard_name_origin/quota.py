"""What nationalize.io (and the other Demografix APIs on the same key) last said about the quota: the
ledger that keeps requests within it, and the error for a spent one."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from dockyard_shared import UpstreamUnavailable
from dockyard_shared.upstream import RateLimit

from .upstream_values import MAX_RESET_SECONDS, Rate

__all__ = ["SERVICE", "UNKNOWN_RESET_WAIT", "QuotaLedger", "QuotaSpent", "describe_wait"]

SERVICE = "nationalize.io"
UNKNOWN_RESET_WAIT = timedelta(minutes=5)  # a spent quota with no reset time: when to ask again


class QuotaSpent(UpstreamUnavailable):
    """429: the quota is spent. Retrying before ``reset_at`` cannot help; ``remaining`` may still fit fewer names."""

    def __init__(
        self, what: str, *, next_step: str | None, reset_at: datetime | None, remaining: int | None
    ) -> None:
        super().__init__(what, next_step=next_step, retryable=True)
        self.reset_at = reset_at
        self.remaining = remaining


def describe_wait(until: datetime | None, now: datetime) -> str:
    """' at 2026-11-25T14:00:00Z (in 3 h 20 min)', or '' when unknown."""
    if until is None:
        return ""
    seconds = max(0, math.ceil((until - now).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    span = f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"
    return f" at {until.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} (in {span})"


class QuotaLedger:
    """What nationalize last said about the quota, minus the names sent since and not yet answered."""

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._now = now
        self.limit: int | None = None
        self.remaining: int | None = None
        self.reset_at: datetime | None = None
        self.observed_at: datetime | None = None
        self.claimed_reset: float | None = None  # seconds nationalize said, when clamped to a day
        self._in_flight = 0

    def observe(self, rate: Rate | RateLimit | None) -> None:
        if rate is None or rate.remaining is None:
            return
        same_window = (
            self.remaining is not None
            and self.reset_at is not None
            and rate.reset_at is not None
            and rate.reset_at <= self.reset_at + timedelta(seconds=60)
        )
        # Answers to concurrent requests arrive in any order: within one window the lowest figure is news.
        self.remaining = min(self.remaining, rate.remaining) if same_window else rate.remaining  # type: ignore[type-var]
        self.limit = rate.limit if rate.limit is not None else self.limit
        if rate.reset_at is not None:
            self.reset_at, self.claimed_reset = rate.reset_at, getattr(rate, "claimed_reset", None)
        self.observed_at = rate.observed_at

    def clamp_note(self) -> str:
        """What to say when nationalize's reset time was not believed ('' when it was)."""
        if self.claimed_reset is None:
            return ""
        return (
            f" (nationalize said {self.claimed_reset:,.0f} s; its quota window is a day, so this server "
            f"tries again after {MAX_RESET_SECONDS:,} s at most)"
        )

    def retry_at(self) -> datetime | None:
        """When the figures stop describing the current window: the reset, or (when nationalize did not
        say) a while after they were seen, so a 429 without headers does not stop requests for good."""
        if self.reset_at is not None:
            return self.reset_at
        return self.observed_at + UNKNOWN_RESET_WAIT if self.observed_at else None

    def _fresh(self) -> bool:
        """Whether the figures still describe the current window."""
        until = self.retry_at()
        return self.remaining is not None and (until is None or until > self._now())

    @property
    def known(self) -> bool:
        return self._fresh()

    def spent(self) -> bool:
        return self._fresh() and (self.remaining or 0) - self._in_flight <= 0

    def reserve(self, wanted: int) -> int:
        """How many of ``wanted`` names may be sent now (all when the quota is not known)."""
        allowed = wanted if not self._fresh() else max(0, min(wanted, self.remaining - self._in_flight))  # type: ignore[operator]
        self._in_flight += allowed
        return allowed

    def release(self, reserved: int) -> None:
        self._in_flight = max(0, self._in_flight - reserved)

    def observe_spent(self, rate: Rate | None) -> None:
        """A 429 whose figures were missing or zero: nothing fits any more, whatever the headers said."""
        self.remaining, self.observed_at = 0, self._now()
        self.reset_at = rate.reset_at if rate is not None else None
        self.claimed_reset = rate.claimed_reset if rate is not None else None

    # The awaitable forms every caller uses: in one process they are the plain ones; a ledger shared by
    # replicas (shared_limits.py) does them in the database.
    async def areserve(self, wanted: int) -> int:
        return self.reserve(wanted)

    async def arelease(self, reserved: int) -> None:
        self.release(reserved)

    async def refresh(self) -> None:
        """Bring the figures up to date (the shared ledger reads its row; here they are always current)."""

    def exhausted_problem(self) -> QuotaSpent:
        now = self._now()
        if self.reset_at is not None:
            when = f"until it resets{describe_wait(self.reset_at, now)}{self.clamp_note()}"
        else:
            when = f"for now (nationalize did not say when it resets; this server asks again{describe_wait(self.retry_at(), now)})"
        return QuotaSpent(
            f"{SERVICE}'s quota is spent: no new name can be looked up {when}.",
            next_step="Cached names still answer. Retry new names after the reset; the operator can set an API "
            "key with a larger quota.",
            reset_at=self.retry_at(),
            remaining=0,
        )
