"""What an upstream HTTP API's answer means for the model: a status and its rate-limit headers, as a problem.

Servers that call a web API (GitHub, nationalize.io) meet the same statuses; each is worded once here, so
every server tells the model the same things: whether the credential is the trouble (and which
environment variable holds it — never its value), whether retrying can help, and when a spent quota comes
back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .problems import InvalidArgument, NotFound, PermissionDenied, Problem, UpstreamUnavailable
from .untrusted import fence

__all__ = ["RateLimit", "problem_for_status", "rate_limit_from"]

# A reset value above this is an epoch time (GitHub), below it a number of seconds from now (nationalize.io).
_EPOCH_THRESHOLD = 1_000_000_000
_MAX_DETAIL_CHARS = 200


@dataclass(frozen=True)
class RateLimit:
    """A quota as the upstream last reported it."""

    limit: int | None
    remaining: int | None
    reset_at: datetime | None
    observed_at: datetime

    @property
    def exhausted(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def resets_in(self, now: datetime | None = None) -> timedelta | None:
        if self.reset_at is None:
            return None
        return max(self.reset_at - (now or datetime.now(UTC)), timedelta(0))


def _header(headers: Mapping[str, str], *names: str) -> str | None:
    lowered = {key.lower(): value for key, value in headers.items()}
    for name in names:
        value = lowered.get(name.lower())
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def _integer(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def rate_limit_from(headers: Mapping[str, str], *, now: datetime | None = None) -> RateLimit | None:
    """The quota in ``headers`` (``X-RateLimit-*`` or ``X-Rate-Limit-*``, and ``Retry-After``), or ``None``
    when they carry none."""
    now = now or datetime.now(UTC)
    limit = _integer(_header(headers, "x-ratelimit-limit", "x-rate-limit-limit"))
    remaining = _integer(_header(headers, "x-ratelimit-remaining", "x-rate-limit-remaining"))
    reset = _integer(_header(headers, "x-ratelimit-reset", "x-rate-limit-reset"))
    retry_after = _integer(_header(headers, "retry-after"))
    reset_at = None
    if reset is not None and reset >= 0:
        reset_at = (
            datetime.fromtimestamp(reset, UTC)
            if reset >= _EPOCH_THRESHOLD
            else now + timedelta(seconds=reset)
        )
    elif retry_after is not None and retry_after >= 0:
        reset_at = now + timedelta(seconds=retry_after)
    if limit is None and remaining is None and reset_at is None:
        return None
    return RateLimit(limit=limit, remaining=remaining, reset_at=reset_at, observed_at=now)


def _when(rate: RateLimit | None) -> str:
    if rate is None or rate.reset_at is None:
        return ""
    seconds = int(rate.resets_in(rate.observed_at).total_seconds())
    return f" It resets at {rate.reset_at.isoformat(timespec='seconds')} (in {seconds:,} s)."


def _quoted(detail: str | None, service: str) -> str:
    if not detail:
        return ""
    # The upstream's own words are chosen by whoever answers: one line, bounded, and fenced as data
    # (hidden characters removed, a forged marker neutralised), after our own sentence.
    text = " ".join(str(detail).split())[:_MAX_DETAIL_CHARS]
    return f" It said:\n{fence(text, f'error message from {service}')}" if text else ""


def problem_for_status(
    status: int,
    *,
    service: str,
    what: str,
    headers: Mapping[str, str] | None = None,
    credential_env: str | None = None,
    detail: str | None = None,
) -> Problem:
    """The problem for an unsuccessful answer ``status`` from ``service`` while doing ``what``."""
    headers = headers or {}
    rate = rate_limit_from(headers)
    said = _quoted(detail, service)
    credential = f"${credential_env}" if credential_env else "the configured credential"
    if status == 429 or (
        status == 403
        and ((rate is not None and rate.exhausted) or "retry-after" in {k.lower() for k in headers})
    ):
        return UpstreamUnavailable(
            f"{service}'s request quota is spent ({status} while {what}).{_when(rate)}{said}",
            retryable=True,
            next_step="Wait until the reset time before calling again; retrying sooner spends nothing but "
            "fails the same way.",
        )
    if status == 401:
        return PermissionDenied(
            f"{service} rejected the credential while {what} (401).{said}",
            next_step=f"Tell the user to check the key in {credential} (missing, mistyped, expired or revoked?).",
        )
    if status == 402:
        return PermissionDenied(
            f"{service} refused the request while {what}: the subscription is not active (402).{said}",
            next_step=f"Tell the user to check the plan behind {credential}; retrying will not help.",
        )
    if status == 403:
        return PermissionDenied(
            f"{service} refused access while {what} (403).{said}",
            next_step=f"The credential in {credential} may lack the permission this needs; retrying will not help.",
        )
    if status == 404:
        return NotFound(
            f"{service} answered 404 Not Found while {what}.{said}",
            next_step="Check the name or number; it may not exist, or the credential cannot see it.",
        )
    if status == 422:
        return InvalidArgument(
            f"{service} refused the request as invalid while {what} (422).{said}",
            next_step="Correct the input; the same request will fail again.",
        )
    if status >= 500:
        return UpstreamUnavailable(
            f"{service} failed while {what} ({status}).{said}",
            retryable=True,
            next_step="Retry shortly; if it keeps failing, the service is down — try again later.",
        )
    return UpstreamUnavailable(
        f"{service} answered an unexpected {status} while {what}.{said}",
        retryable=False,
        next_step="This is not something retrying fixes; report it to the user.",
    )
