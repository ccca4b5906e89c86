"""Retries with backoff and a circuit breaker: pure, with the clock, the sleep and the dice injected.

Retry only what can clear by itself (a dropped connection, a timeout, a 502/503/504), each wait capped
exponential backoff with jitter (so clients that failed together do not retry together), and never past
an overall deadline: a model waiting on a tool call is better served by an answer saying "unavailable,
retry after T" than by a call that hangs.

The circuit breaker stops a failing upstream from being hammered: after ``threshold`` consecutive failures
it opens and refuses every request for ``cooldown`` seconds, then lets one trial request through (half
open); its success closes the circuit, its failure opens it again for another cooldown.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

import anyio

__all__ = [
    "Backoff",
    "BreakerState",
    "CircuitBreaker",
    "CircuitOpen",
    "Clock",
    "Deadline",
    "GiveUp",
    "retrying",
]

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Backoff:
    base: float = 0.25
    cap: float = 4.0
    max_attempts: int = 4

    def delay(self, retry: int, rng: Callable[[], float] = random.random) -> float:
        """Seconds before retry number ``retry`` (1 = the first retry): half fixed, half jitter."""
        ceiling = min(self.cap, self.base * 2 ** (retry - 1))
        return ceiling / 2 + rng() * ceiling / 2


class Deadline:
    """A point in time on ``clock``; ``remaining()`` never goes below zero."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.at = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self.at - self._clock())

    @property
    def passed(self) -> bool:
        return self.remaining() <= 0

    def sooner(self, seconds: float) -> Deadline:
        """This deadline or one ``seconds`` from now, whichever comes first."""
        other = Deadline(seconds, self._clock)
        return self if self.at <= other.at else other


class GiveUp(Exception):
    """The retries ended without success: ``last`` is the final failure."""

    def __init__(self, last: BaseException, *, attempts: int, deadline_passed: bool) -> None:
        super().__init__(f"gave up after {attempts} attempt(s)")
        self.last = last
        self.attempts = attempts
        self.deadline_passed = deadline_passed


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    transient: Callable[[BaseException], bool],
    backoff: Backoff,
    deadline: Deadline,
    sleep: Sleep = anyio.sleep,
    rng: Callable[[], float] = random.random,
    on_failure: Callable[[BaseException], None] = lambda error: None,
) -> T:
    """Run ``attempt`` until it succeeds, a failure is not ``transient``, attempts run out or time does.

    A non-transient failure propagates as it is; running out raises :class:`GiveUp`. ``on_failure`` sees
    every failure (the circuit breaker counts them).
    """
    for number in range(1, backoff.max_attempts + 1):
        try:
            return await attempt()
        except Exception as error:
            on_failure(error)
            if not transient(error):
                raise
            wait = backoff.delay(number, rng)
            if number == backoff.max_attempts or wait >= deadline.remaining():
                raise GiveUp(error, attempts=number, deadline_passed=wait >= deadline.remaining()) from error
            await sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half open"


class CircuitOpen(Exception):
    """The breaker refused a request; the upstream is tried again ``retry_in`` seconds from now."""

    def __init__(self, retry_in: float) -> None:
        super().__init__(f"circuit open; next try in {retry_in:.1f}s")
        self.retry_in = retry_in


class CircuitBreaker:
    def __init__(self, *, threshold: int = 5, cooldown: float = 30.0, clock: Clock = time.monotonic) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._trial_running or self._clock() - self._opened_at >= self.cooldown:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def retry_in(self) -> float:
        """Seconds until a request may go again (0 when one may go now)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.cooldown - self._clock())

    def before_request(self) -> None:
        """Raise :class:`CircuitOpen` unless a request may go now (in half open: the one trial)."""
        state = self.state
        if state is BreakerState.CLOSED:
            return
        if state is BreakerState.HALF_OPEN and not self._trial_running:
            self._trial_running = True
            return
        raise CircuitOpen(max(self.retry_in(), 1.0) if self._trial_running else self.retry_in())

    def record_success(self) -> None:
        self._failures = 0
        self._opened_at = None
        self._trial_running = False

    def record_failure(self, cause: str | None = None) -> None:
        """One more failure; ``cause`` (in words) is for a breaker shared by replicas."""
        if self._trial_running:
            self._opened_at = self._clock()  # the trial failed: another full cooldown
            self._trial_running = False
            return
        if self._opened_at is not None:
            return  # a request that started before the circuit opened: it is open already
        self._failures += 1
        if self._failures >= self.threshold:
            self._opened_at = self._clock()

    def release_trial(self) -> None:
        """The trial ended without telling anything about the upstream (it was cancelled)."""
        self._trial_running = False
