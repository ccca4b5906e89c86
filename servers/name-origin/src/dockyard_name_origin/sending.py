"""One upstream request of a batch, for origin (predict.py) and gender/age (traits.py) alike.

Both send a batch's names ten to a request through a queue of workers, and treat each request's outcome
the same way: names the quota cannot cover are not sent; a 429 that says a few names still fit sends
those few; a refused batch is split to find the name refused; a rejected key stops the whole call; any
other failure fails that request's names only, with its reason (and, when retrying cannot help, what
does: a wrong ``--api-url``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

import anyio
import anyio.abc

from dockyard_shared import InvalidArgument, NotFound, PermissionDenied, Problem, UpstreamUnavailable

from .models import Status
from .quota import QuotaSpent
from .replies import QUOTA, UNAVAILABLE

__all__ = ["BatchRun", "send_batch"]

T = TypeVar("T")


class BatchRun(Protocol):
    """What a call's shared state needs for :func:`send_batch` (replies.Run, traits._Run)."""

    queue: deque[tuple[str, ...]]
    resized: set[tuple[str, ...]]
    fatal: Problem | None
    retry_at: datetime | None
    unavailable_because: str | None
    unavailable_next: str | None

    def settle(self, names: Sequence[str], status: Status, reason: str | None = None) -> None: ...


class Quota(Protocol):
    async def areserve(self, names: int) -> int: ...

    async def arelease(self, names: int) -> None: ...

    def retry_at(self) -> datetime | None: ...


async def send_batch(
    batch: tuple[str, ...],
    run: BatchRun,
    group: anyio.abc.TaskGroup,
    *,
    quota: Quota,
    fetch: Callable[[tuple[str, ...]], Awaitable[list[T]]],
    service: str,
) -> list[T] | None:
    """Send what of ``batch`` the quota covers with ``fetch``; its answers, or None when every name was
    settled on ``run`` (or queued again) instead. A rejected key sets ``run.fatal`` and cancels ``group``."""
    allowed = await quota.areserve(len(batch))
    if allowed < len(batch):
        run.retry_at = quota.retry_at()
        run.settle(batch[allowed:], QUOTA)
        batch = batch[:allowed]
    if not batch:
        return None
    try:
        return await fetch(batch)
    except QuotaSpent as spent:
        run.retry_at = spent.reset_at or run.retry_at
        if spent.remaining and batch not in run.resized:
            run.resized.add(batch)  # fewer names still fit: send again, cut to what is left
            run.queue.appendleft(batch)
        else:
            run.settle(batch, QUOTA)
    except InvalidArgument as refused:
        if len(batch) > 1:
            run.queue.extend((name,) for name in batch)  # which name does it refuse?
        else:
            run.settle(batch, "invalid", f"{service} refused it: {refused.what}")
    except PermissionDenied as denied:
        run.fatal = denied
        group.cancel_scope.cancel()
    except (UpstreamUnavailable, NotFound) as down:
        # Any other answer is a fault of this request: its names only, never the call.
        run.unavailable_because = down.what
        if not down.retryable:  # e.g. a wrong --api-url: say what helps instead of "retry later"
            run.unavailable_next = down.next_step
        run.settle(batch, UNAVAILABLE)
    finally:
        with anyio.CancelScope(shield=True):  # a cancelled call still gives its reservation back
            await quota.arelease(allowed)
    return None
