"""Predictions for names: normalise, answer from the cache, fetch the rest in batches, say what is missing.

A name is looked up as its normal form (Unicode NFC, surrounding whitespace removed, inner runs of
whitespace made one space, case-folded), so ``" Michael"`` and ``"MICHAEL"`` are one lookup and one cache
entry. A batch is deduplicated after normalising; cached names cost nothing; the rest go out ten to a
request (nationalize's maximum), a few requests at a time. Whatever cannot be fetched (quota spent,
upstream down, out of time) is reported per name, so a partial quota still yields partial results.
"""

from __future__ import annotations

import logging
import math
import unicodedata
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from dockyard_shared import InvalidArgument, UpstreamUnavailable
from dockyard_shared.offload import run_in_thread
from dockyard_shared.opened import Opened

from .claims import LocalClaims, SharedClaims, new_owner
from .client import NationalizeClient
from .models import (
    Answer,
    BatchResult,
    CacheStatus,
    Prediction,
    QuotaStatus,
)
from .quota import SERVICE
from .replies import (
    OFFLINE,
    QUOTA,
    UNAVAILABLE,
    Outcome,
    Progress,
    Run,
    batch_result,
    confidence,
    guesses,
    outcome_of,
    shown,
)
from .resilience import Deadline
from .sending import send_batch
from .settings import Limits

if TYPE_CHECKING:  # the cache module imports SQLAlchemy, which the server imports only when it opens one
    from .cache import PredictionCache

__all__ = ["Predictor", "confidence", "invalid_reason", "normalise"]

log = logging.getLogger("dockyard.name_origin")


SINGLE_WORD_NOTE = (
    "Only one word was given: first names say little about origin, surnames carry most of the signal. "
    "Pass the surname or the full name when you have it."
)
UNKNOWN_NOTE = "nationalize has no record of this name, so there is no prediction (the name is not wrong)."


def normalise(raw: str) -> str:
    """The form a name is looked up and cached under."""
    return unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", raw).split()).casefold())


def invalid_reason(raw: object, max_chars: int) -> str | None:
    """Why ``raw`` cannot be looked up, or None when it can."""
    if not isinstance(raw, str):
        return "it is not a string"
    name = normalise(raw)
    if not name:
        return "it is empty"
    if len(name) > max_chars:
        return f"it is longer than {max_chars} characters"
    if any(unicodedata.category(char) in ("Cc", "Cs", "Co") for char in name):
        return "it holds control, private-use or unpaired surrogate characters"
    if not any(char.isalpha() for char in name):
        return "it has no letters"
    return None


class Predictor:
    def __init__(
        self,
        *,
        upstream: NationalizeClient | None,
        cache: Opened[PredictionCache] | None,
        limits: Limits,
        key_env: str,
    ) -> None:
        self.upstream = upstream  # None: --offline
        self.cache = cache  # opened by its first use (in a worker thread: opening blocks)
        self.limits = limits
        self.key_env = key_env
        self.local_claims = LocalClaims()
        # A claim outlives the longest call by a margin, so a replica that died holding one delays the
        # others by that much at most.
        hold = limits.call_deadline + limits.request_deadline
        self.shared_claims = SharedClaims(cache, hold_seconds=hold) if cache is not None else None

    # -- one name ---------------------------------------------------------------------------------

    async def predict_one(self, raw: str) -> Prediction:
        reason = invalid_reason(raw, self.limits.max_name_chars)
        if reason:
            raise InvalidArgument(
                f"The name {shown(raw, 60)!r} cannot be looked up: {reason}.",
                next_step="Pass a person's name: letters, at most "
                f"{self.limits.max_name_chars} characters. Nothing was sent to nationalize.io.",
            )
        name = normalise(raw)
        answer = (await self._cached([name])).get(name)
        if answer is None:
            if self.upstream is None:
                # nationalize.io is unavailable by the operator's choice, not because the name does not exist.
                raise UpstreamUnavailable(
                    f"{name!r} is not in the cache, and this server runs --offline (set by its operator): it "
                    "never calls nationalize.io, so a name it has not cached cannot be looked up.",
                    next_step="Retrying will not help while the server is offline. Tell the user; the operator "
                    "can restart the server without --offline to look the name up (it is then cached, and "
                    "answers offline too). Cached names still answer: batch_predict lists which are missing.",
                    retryable=False,
                )
            answer = await self._fetch_one(name, Deadline(self.limits.call_deadline))
        notes = []
        if not answer.known:
            notes.append(UNKNOWN_NOTE)
        if " " not in name:
            notes.append(SINGLE_WORD_NOTE)
        return Prediction(
            name=answer.name,
            count=answer.count,
            country=guesses(answer),
            confidence=confidence(answer),
            status="ok" if answer.known else "unknown",
            cached=answer.cached,
            fetched_at=answer.fetched_at,
            note=" ".join(notes) or None,
        )

    async def _fetch_one(self, name: str, deadline: Deadline) -> Answer:
        """``name``'s answer: waited for when another call is fetching it, else fetched under a claim."""
        mine, theirs = self.local_claims.take([name])
        if theirs:
            outcome = (await LocalClaims.wait(theirs, deadline)).get(name)
            if outcome is not None and outcome.answer is not None:
                return outcome.answer
            return await self._send_one(name, deadline)  # the other call did not get it: try here
        answer = None
        owner = new_owner()
        held = True
        try:
            if self.shared_claims is not None:
                held = name in await self.shared_claims.take([name], owner)
                if held:  # another replica may have stored it since this call's cache read
                    answer = (await self.shared_claims.stored([name])).get(name)
                else:  # another replica is fetching it
                    answer = (await self.shared_claims.wait([name], deadline)).get(name)
            if answer is None:
                answer = await self._send_one(name, deadline)
            return answer
        finally:
            if held and self.shared_claims is not None:
                await self.shared_claims.release([name], owner)
            self.local_claims.settle(mine, lambda _: outcome_of(answer) if answer is not None else None)

    async def _send_one(self, name: str, deadline: Deadline) -> Answer:
        assert self.upstream is not None
        quota = self.upstream.quota
        # Reserved before it is sent, as a batch's names are: concurrent calls with one name left send one
        # request, not one each.
        if not await quota.areserve(1):
            raise quota.exhausted_problem()
        try:
            (answer,) = await self.upstream.fetch([name], deadline.sooner(self.limits.request_deadline))
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled call still gives its reservation back
                await quota.arelease(1)
        await self._store([answer])
        return answer

    # -- many names -------------------------------------------------------------------------------

    async def predict_many(
        self, names: Sequence[str], *, offset: int = 0, progress: Progress | None = None
    ) -> BatchResult:
        limits = self.limits
        if not names:
            raise InvalidArgument("names is empty.", next_step="Pass at least one name.")
        if len(names) > limits.max_names:
            raise InvalidArgument(
                f"{len(names):,} names is over the limit of {limits.max_names:,} per call.",
                next_step=f"Split the list into calls of at most {limits.max_names:,} names.",
            )
        if not 0 <= offset < len(names):
            raise InvalidArgument(
                f"offset {offset} is outside the {len(names)} names given.",
                next_step="Use 0, or the next_offset of the previous reply with the same names.",
            )
        window = list(names[offset:])
        reasons = [invalid_reason(raw, limits.max_name_chars) for raw in window]
        normal = [None if reason else normalise(raw) for raw, reason in zip(window, reasons, strict=True)]
        distinct = list(dict.fromkeys(name for name in normal if name))
        cached = await self._cached(distinct)
        run = Run({name: outcome_of(answer) for name, answer in cached.items()}, len(distinct), progress)
        if progress is not None and distinct:
            await progress(
                len(cached), len(distinct), f"{len(cached)} of {len(distinct)} names answered from the cache"
            )
        missing = [name for name in distinct if name not in run.outcomes]
        requests_before = self.upstream.requests_sent if self.upstream else 0
        if missing and self.upstream is None:
            run.settle(missing, OFFLINE)
        elif missing and offset > 0 and self.cache is not None:
            self._settle_unfetched_page(missing, run)
        elif missing:
            await self._fetch_claimed(missing, run, Deadline(limits.call_deadline))
            if run.fatal is not None:
                raise run.fatal
        await run.report(force=True)
        requests = (self.upstream.requests_sent if self.upstream else 0) - requests_before
        from_cache = len(cached) + run.waited
        return batch_result(
            self.limits,
            self.cache is not None,
            names,
            offset,
            window,
            normal,
            reasons,
            run,
            from_cache,
            requests,
        )

    async def _fetch_claimed(self, missing: list[str], run: Run, deadline: Deadline) -> None:
        """Fetch ``missing``, except the names another call is fetching (in this process, or on another
        replica sharing the cache): those are waited for, and fetched here only if that call did not."""
        mine, theirs = self.local_claims.take(missing)
        owner = new_owner()
        held: list[str] = []
        try:
            remote: list[str] = []
            if self.shared_claims is not None:
                taken = await self.shared_claims.take(mine, owner)
                held = [name for name in mine if name in taken]
                remote = [name for name in mine if name not in taken]
            else:
                held = mine
            try:
                # Another replica may have fetched, stored and released some of these between this call's
                # cache read and its claim: its claim was gone, so this call's succeeded.
                stored = await self.shared_claims.stored(held) if self.shared_claims is not None else {}
                self._adopt({name: outcome_of(answer) for name, answer in stored.items()}, run)
                if to_fetch := [name for name in held if name not in stored]:
                    await self._fetch_all(to_fetch, run, deadline)
            finally:
                # Released before waiting on other replicas' claims: two replicas each waiting for a name
                # the other holds (and failed to fetch) would otherwise wait each other out.
                if self.shared_claims is not None:
                    await self.shared_claims.release(held, owner)
            if remote and run.fatal is None and self.shared_claims is not None:
                found = await self.shared_claims.wait(remote, deadline)
                self._adopt({name: outcome_of(answer) for name, answer in found.items()}, run)
                if rest := [name for name in remote if name not in found]:
                    await self._fetch_all(rest, run, deadline)
        finally:
            self.local_claims.settle(mine, run.outcomes.get)
        if theirs and run.fatal is None:
            self._adopt(await LocalClaims.wait(theirs, deadline), run)
            if rest := [name for name in theirs if name not in run.outcomes]:
                await self._fetch_all(rest, run, deadline)

    def _adopt(self, outcomes: dict[str, Outcome], run: Run) -> None:
        """Take another call's outcomes as this one's (a name it could not fetch, this one would not either)."""
        for name, outcome in outcomes.items():
            run.outcomes[name] = outcome
            run.waited += outcome.answer is not None
            if outcome.status == QUOTA and self.upstream is not None:
                run.retry_at = run.retry_at or self.upstream.quota.retry_at()

    def _settle_unfetched_page(self, missing: list[str], run: Run) -> None:
        """A later page is answered from the cache only, as the first page's note promised: the names the
        first call could not fetch keep the status it gave them, and no quota is spent."""
        assert self.upstream is not None
        quota = self.upstream.quota
        if quota.spent():
            run.retry_at = quota.retry_at()
            run.settle(missing, QUOTA)
            return
        run.unavailable_because = (
            "they were not fetched by the call that made the first page, and later pages are answered from "
            "the cache only (call batch_predict with offset=0 to fetch them)"
        )
        run.settle(missing, UNAVAILABLE)

    async def _fetch_all(self, missing: list[str], run: Run, deadline: Deadline) -> None:
        assert self.upstream is not None
        size = self.limits.upstream_batch
        run.queue.extend(tuple(missing[i : i + size]) for i in range(0, len(missing), size))

        async def worker() -> None:
            while run.queue and run.fatal is None:
                await self._fetch_batch(run.queue.popleft(), run, group)

        with anyio.move_on_after(deadline.remaining()):
            async with anyio.create_task_group() as group:
                if not self.upstream.quota.known:
                    # The first answer says how much quota is left: learn it before sending more.
                    await self._fetch_batch(run.queue.popleft(), run, group)
                for _ in range(min(self.limits.concurrency, len(run.queue))):
                    group.start_soon(worker)
        late = [name for name in missing if name not in run.outcomes]
        if late and run.fatal is None:
            run.unavailable_because = f"the call's time limit of {self.limits.call_deadline:g} s ran out"
            run.settle(late, UNAVAILABLE)

    async def _fetch_batch(self, batch: tuple[str, ...], run: Run, group: anyio.abc.TaskGroup) -> None:
        upstream = self.upstream
        assert upstream is not None

        def fetch(names: tuple[str, ...]) -> Awaitable[list[Answer]]:
            return upstream.fetch(names, Deadline(self.limits.request_deadline))

        answers = await send_batch(batch, run, group, quota=upstream.quota, fetch=fetch, service=SERVICE)
        if answers is None:
            await run.report()
            return
        for answer in answers:
            run.outcomes[answer.name] = outcome_of(answer)
        run.fetched += len(answers)
        group.start_soon(self._store, answers)  # the worker goes on to its next request meanwhile
        await run.report()

    # -- quota and cache --------------------------------------------------------------------------

    async def quota_status(self) -> QuotaStatus:
        cache_status = CacheStatus(enabled=False)
        if self.cache is not None:
            handle = self.cache
            entries = await run_in_thread(lambda: handle.get().size())
            cache = handle.get()  # open now: the line above opened it
            lookups = cache.hits + cache.misses
            cache_status = CacheStatus(
                enabled=True,
                backend=cache.backend,
                entries=entries,
                ttl_days=cache.ttl_days,
                hits=cache.hits,
                misses=cache.misses,
                hit_rate=round(cache.hits / lookups, 4) if lookups else None,
            )
        upstream = self.upstream
        if upstream is None:
            return QuotaStatus(
                limit=None,
                remaining=None,
                reset_at=None,
                observed_at=None,
                circuit="closed",
                offline=True,
                cache=cache_status,
                note="Offline: answers come from the cache only; nationalize.io is never called.",
            )
        quota = upstream.quota
        await quota.refresh()  # replicas sharing the ledger: its row, as it is now
        breaker = upstream.breaker
        retry_in = breaker.retry_in()
        circuit = f"open: next try in {math.ceil(retry_in)} s" if retry_in > 0 else breaker.state.value
        key = (
            f"an API key from ${self.key_env}"
            if upstream.has_key
            else "no API key (the free tier: about 100 names a day)"
        )
        note = f"Requests carry {key}. Hits and misses count since the server started."
        if quota.observed_at is None:
            note = "No answer from nationalize.io yet, so the quota is not known. " + note
        if quota.claimed_reset is not None:
            note += f" reset_at is clamped{quota.clamp_note()}."
        return QuotaStatus(
            limit=quota.limit,
            remaining=quota.remaining,
            reset_at=quota.reset_at,
            observed_at=quota.observed_at,
            circuit=circuit,
            offline=False,
            cache=cache_status,
            note=note,
        )

    async def names_to_fetch(self, names: Sequence[str], offset: int = 0) -> int:
        """How many distinct valid names of ``names[offset:]`` a batch would ask nationalize.io for (0 when
        offline, or when the cache answers them all); reads the cache, fetches nothing."""
        if self.upstream is None or (offset > 0 and self.cache is not None):  # a later page: cache only
            return 0
        limits = self.limits
        window = names[offset:] if 0 <= offset < len(names) else []
        distinct = list(
            dict.fromkeys(
                normalise(raw) for raw in window if invalid_reason(raw, limits.max_name_chars) is None
            )
        )
        return len(distinct) - len(await self._cached(distinct))

    async def cached_names(self, prefix: str, limit: int = 20) -> list[str]:
        """Cached names starting with ``prefix`` (for completions); nothing is fetched."""
        key = normalise(prefix)[: self.limits.max_name_chars]
        if self.cache is None or any(unicodedata.category(char) in ("Cc", "Cs", "Co") for char in key):
            return []
        cache = self.cache
        return await run_in_thread(lambda: cache.get().names_starting(key, limit))

    async def _cached(self, names: list[str]) -> dict[str, Answer]:
        if self.cache is None or not names:
            return {}
        cache = self.cache
        return await run_in_thread(lambda: cache.get().get_many(names))

    async def _store(self, answers: list[Answer]) -> None:
        if self.cache is not None and answers:
            cache = self.cache
            await run_in_thread(lambda: cache.get().put_many(answers))
