"""Backoff, the retry loop and the circuit breaker, with the clock, sleep and dice in the test's hands."""

from __future__ import annotations

import pytest

from dockyard_name_origin.resilience import (
    Backoff,
    BreakerState,
    CircuitBreaker,
    CircuitOpen,
    Deadline,
    GiveUp,
    retrying,
)
from tests.name_origin.helpers import ManualClock


class Transient(Exception):
    pass


class Permanent(Exception):
    pass


def test_backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half():
    backoff = Backoff(base=1.0, cap=5.0)
    assert [backoff.delay(n, lambda: 0.0) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 2.5, 2.5]
    assert [backoff.delay(n, lambda: 1.0) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


class Script:
    """An operation failing with the listed exceptions, then returning 'done'; sleeps are recorded."""

    def __init__(self, *failures: Exception) -> None:
        self.clock = ManualClock()
        self.failures = list(failures)
        self.calls = 0
        self.slept: list[float] = []
        self.seen: list[BaseException] = []

    async def attempt(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "done"

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.clock.advance(seconds)


async def run(script: Script, *, attempts: int = 4, deadline: float = 100.0) -> str:
    return await retrying(
        script.attempt,
        transient=lambda error: isinstance(error, Transient),
        backoff=Backoff(base=1.0, cap=8.0, max_attempts=attempts),
        deadline=Deadline(deadline, script.clock),
        sleep=script.sleep,
        rng=lambda: 0.0,
        on_failure=script.seen.append,
    )


async def test_transient_failures_are_retried_with_growing_waits():
    script = Script(Transient(), Transient())
    assert await run(script) == "done"
    assert script.calls == 3 and script.slept == [0.5, 1.0] and len(script.seen) == 2


async def test_a_permanent_failure_is_not_retried():
    script = Script(Permanent("no"))
    with pytest.raises(Permanent):
        await run(script)
    assert script.calls == 1 and script.slept == []


async def test_retries_stop_after_the_last_attempt():
    script = Script(*(Transient() for _ in range(10)))
    with pytest.raises(GiveUp) as gave_up:
        await run(script, attempts=3)
    assert script.calls == 3 and gave_up.value.attempts == 3 and not gave_up.value.deadline_passed
    assert isinstance(gave_up.value.last, Transient)


async def test_retries_stop_when_the_next_wait_would_pass_the_deadline():
    script = Script(*(Transient() for _ in range(10)))
    with pytest.raises(GiveUp) as gave_up:
        await run(script, attempts=10, deadline=1.2)  # waits 0.5; 1.0 more would end past the 0.7 s left
    assert gave_up.value.deadline_passed
    assert script.calls == 2 and script.slept == [0.5]


def test_the_breaker_opens_after_consecutive_failures_and_refuses_until_the_cooldown():
    clock = ManualClock()
    breaker = CircuitBreaker(threshold=3, cooldown=30, clock=clock)
    for _ in range(2):
        breaker.before_request()
        breaker.record_failure()
    breaker.before_request()
    breaker.record_success()  # a success resets the count
    for _ in range(3):
        breaker.before_request()
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    clock.advance(10)
    with pytest.raises(CircuitOpen) as refused:
        breaker.before_request()
    assert refused.value.retry_in == pytest.approx(20)
    assert breaker.retry_in() == pytest.approx(20)


def opened_by_one_failure(cooldown: float, clock: ManualClock) -> CircuitBreaker:
    """A breaker whose circuit a single failed request has just opened."""
    breaker = CircuitBreaker(threshold=1, cooldown=cooldown, clock=clock)
    breaker.before_request()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    return breaker


def test_after_the_cooldown_one_trial_goes_and_its_success_closes_the_circuit():
    clock = ManualClock()
    breaker = opened_by_one_failure(cooldown=30, clock=clock)
    clock.advance(30)
    assert breaker.state is BreakerState.HALF_OPEN
    breaker.before_request()  # the trial
    with pytest.raises(CircuitOpen):
        breaker.before_request()  # only one at a time
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.retry_in() == 0
    breaker.before_request()


def test_a_failed_trial_opens_the_circuit_for_another_cooldown():
    clock = ManualClock()
    breaker = opened_by_one_failure(cooldown=30, clock=clock)
    clock.advance(31)
    breaker.before_request()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN and breaker.retry_in() == pytest.approx(30)


def test_a_failure_reported_while_open_does_not_extend_the_cooldown():
    clock = ManualClock()
    breaker = opened_by_one_failure(cooldown=30, clock=clock)
    clock.advance(20)
    breaker.record_failure()  # a request that started before the circuit opened
    assert breaker.retry_in() == pytest.approx(10)


def test_a_cancelled_trial_lets_the_next_request_be_the_trial():
    clock = ManualClock()
    breaker = opened_by_one_failure(cooldown=5, clock=clock)
    clock.advance(5)
    breaker.before_request()
    breaker.release_trial()
    breaker.before_request()
