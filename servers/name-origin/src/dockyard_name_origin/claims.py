"""Claims on names being fetched, so concurrent lookups of one name pay for it once.

Two layers. :class:`LocalClaims`: within the process, the first call to need a name holds it; a second
call waits on an event for the first's outcome (an answer, or the status it ended with). Cross-replica,
:class:`SharedClaims` writes a claim row with an expiry into the shared cache's database; a replica that
finds a name claimed by another polls the cache for the answer until the claim is released or expires
(a holder that died), then fetches what is still missing itself. A claim taken is followed by one more
look at the cache before fetching, since a name may have been fetched, stored and released by another
replica since the first look. Claims never stop a lookup: when the database fails, every name counts as
one's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from dockyard_shared.offload import run_in_thread
from dockyard_shared.opened import Opened

from .models import Answer
from .resilience import Deadline

if TYPE_CHECKING:
    from .cache import PredictionCache

__all__ = ["LocalClaims", "SharedClaims", "new_owner"]

_POLL_FIRST = 0.05  # seconds between two looks at the cache while another replica fetches
_POLL_MAX = 0.5


def new_owner() -> str:
    return uuid.uuid4().hex


@dataclass
class Claim:
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: Any = None  # what the holder ended with for this name; None: nothing to share


class LocalClaims:
    """Names a call of this process is fetching. Used from the event loop only, so no lock is needed."""

    def __init__(self) -> None:
        self._held: dict[str, Claim] = {}

    def take(self, names: Sequence[str]) -> tuple[list[str], dict[str, Claim]]:
        """The names now held by the caller, and the claims of other calls on the rest."""
        mine: list[str] = []
        theirs: dict[str, Claim] = {}
        for name in names:
            claim = self._held.get(name)
            if claim is None:
                self._held[name] = Claim()
                mine.append(name)
            else:
                theirs[name] = claim
        return mine, theirs

    def settle(self, names: Sequence[str], outcome_of: Callable[[str], Any]) -> None:
        """Release ``names`` (held by the caller), handing each waiter the outcome."""
        for name in names:
            claim = self._held.pop(name, None)
            if claim is not None:
                claim.outcome = outcome_of(name)
                claim.done.set()

    @staticmethod
    async def wait(claims: dict[str, Claim], deadline: Deadline) -> dict[str, Any]:
        """The outcomes other calls ended with, as far as they came before ``deadline``."""
        with anyio.move_on_after(deadline.remaining()):
            for claim in claims.values():
                await claim.done.wait()
        return {name: claim.outcome for name, claim in claims.items() if claim.outcome is not None}


class SharedClaims:
    """Claims in the shared cache's database, seen by every replica using it."""

    def __init__(self, cache: Opened[PredictionCache], *, hold_seconds: float) -> None:
        self.cache = cache  # opened in a worker thread, by whichever use comes first
        self.hold_seconds = hold_seconds  # a claim's life: past the longest call, then it expires

    async def take(self, names: Sequence[str], owner: str) -> set[str]:
        """The names of ``names`` now held by ``owner``. Look at the cache again (:meth:`stored`) for
        them before fetching: a claim is free again once its holder stored the answer and released it."""
        if not names:
            return set()
        cache = self.cache
        return await run_in_thread(lambda: cache.get().claim(names, owner, self.hold_seconds))

    async def stored(self, names: Sequence[str]) -> dict[str, Answer]:
        """The answers the cache holds now for ``names``, read after claiming them: another replica may
        have claimed, fetched, stored and released them between the caller's first read and its claim,
        and an answer stored before a release is always visible after the next claim."""
        if not names:
            return {}
        return await run_in_thread(partial(_get_many, self.cache, list(names)))

    async def release(self, names: Sequence[str], owner: str) -> None:
        if not names:
            return
        cache = self.cache
        with anyio.CancelScope(shield=True):  # a cancelled call still lets the others go on at once
            await run_in_thread(lambda: cache.get().release(names, owner))

    async def wait(self, names: Sequence[str], deadline: Deadline) -> dict[str, Answer]:
        """The answers other replicas stored for ``names``, polled until each is answered, its claim is
        gone (released without an answer, or expired), or ``deadline`` passes."""
        cache = self.cache
        found: dict[str, Answer] = {}
        pending = list(names)
        pause = _POLL_FIRST
        while pending:
            found.update(await run_in_thread(partial(_get_many, cache, list(pending))))
            pending = [name for name in pending if name not in found]
            if not pending or deadline.remaining() <= pause:
                break
            still = await run_in_thread(partial(_claimed, cache, list(pending)))
            pending = [name for name in pending if name in still]
            if pending:
                await anyio.sleep(pause)
                pause = min(_POLL_MAX, pause * 2)
        if names and (late := [n for n in names if n not in found]):  # a claim released as we looked
            found.update(await run_in_thread(partial(_get_many, cache, late)))
        return found


def _get_many(cache: Opened[PredictionCache], names: list[str]) -> dict[str, Answer]:
    """Answers stored by another replica: not counted as this server's hits or misses."""
    return cache.get().get_many(names, counted=False)


def _claimed(cache: Opened[PredictionCache], names: list[str]) -> set[str]:
    return cache.get().claimed(names)
