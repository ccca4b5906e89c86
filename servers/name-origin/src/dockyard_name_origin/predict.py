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
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from dockyard_shared import InvalidArgument, NotFound, PermissionDenied, Problem, UpstreamUnavailable
from dockyard_shared.offload import run_in_thread

from .client import NationalizeClient, QuotaSpent, describe_wait
from .countries import country_name
from .models import (
    Answer,
    BatchItem,
    BatchResult,
    CacheStatus,
    Confidence,
    CountryGuess,
    Prediction,
    QuotaStatus,
    Status,
)
from .resilience import Deadline
from .settings import Limits

if TYPE_CHECKING:  # the cache module imports SQLAlchemy, which the server imports only when it opens one
    from .cache import PredictionCache

__all__ = ["Predictor", "confidence", "invalid_reason", "normalise"]

log = logging.getLogger("dockyard.name_origin")

Progress = Callable[[float, float, str], Awaitable[None]]

SINGLE_WORD_NOTE = (
    "Only one word was given: first names say little about origin, surnames carry most of the signal. "
    "Pass the surname or the full name when you have it."
)
UNKNOWN_NOTE = "nationalize has no record of this name, so there is no prediction (the name is not wrong)."
_PROGRESS_STEPS = 50  # at most this many progress notifications per call, whatever the batch size

QUOTA: Status = "not fetched: quota exhausted"
UNAVAILABLE: Status = "not fetched: upstream unavailable"
OFFLINE: Status = "not fetched: offline"


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


def confidence(answer: Answer) -> Confidence:
    """How far to trust a prediction: the sample size and how clearly one country leads.

    none: unknown name; low: under 100 records or a top probability under 0.2; high: at least 1,000
    records and a top probability of 0.5 or more; medium otherwise.
    """
    if not answer.known:
        return "none"
    top = answer.countries[0][1]
    if answer.count < 100 or top < 0.2:
        return "low"
    if answer.count >= 1_000 and top >= 0.5:
        return "high"
    return "medium"


def guesses(answer: Answer, limit: int | None = None) -> list[CountryGuess]:
    return [
        CountryGuess(country_id=code, probability=probability, country_name=country_name(code))
        for code, probability in answer.countries[:limit]
    ]


def _shown(raw: object, cap: int = 100) -> str:
    """``raw`` as a model may see it again: cut, and always valid UTF-8."""
    text = raw if isinstance(raw, str) else repr(raw)
    cut = text[:cap] + ("…" if len(text) > cap else "")
    return cut.encode("utf-8", "replace").decode("utf-8")


@dataclass
class _Outcome:
    status: Status
    answer: Answer | None = None
    reason: str | None = None


@dataclass
class _Run:
    """One batch_predict call's shared state while its requests are in flight."""

    outcomes: dict[str, _Outcome]
    total: int
    progress: Progress | None
    queue: deque[tuple[str, ...]] = field(default_factory=deque)
    resized: set[tuple[str, ...]] = field(default_factory=set)
    fatal: Problem | None = None
    retry_at: datetime | None = None
    unavailable_because: str | None = None
    fetched: int = 0
    reported: int = 0

    def settle(self, names: Sequence[str], status: Status, reason: str | None = None) -> None:
        for name in names:
            self.outcomes[name] = _Outcome(status, reason=reason)

    async def report(self, force: bool = False) -> None:
        done = len(self.outcomes)
        if self.progress is None or (not force and done - self.reported < self.total / _PROGRESS_STEPS):
            return
        self.reported = done
        await self.progress(done, self.total, f"{done} of {self.total} names answered")


class Predictor:
    def __init__(
        self,
        *,
        upstream: NationalizeClient | None,
        cache: PredictionCache | None,
        limits: Limits,
        key_env: str,
    ) -> None:
        self.upstream = upstream  # None: --offline
        self.cache = cache
        self.limits = limits
        self.key_env = key_env

    # -- one name ---------------------------------------------------------------------------------

    async def predict_one(self, raw: str) -> Prediction:
        reason = invalid_reason(raw, self.limits.max_name_chars)
        if reason:
            raise InvalidArgument(
                f"The name {_shown(raw, 60)!r} cannot be looked up: {reason}.",
                next_step="Pass a person's name: letters, at most "
                f"{self.limits.max_name_chars} characters. Nothing was sent to nationalize.io.",
            )
        name = normalise(raw)
        answer = (await self._cached([name])).get(name)
        if answer is None:
            if self.upstream is None:
                raise NotFound(
                    f"{name!r} is not in the cache, and this server runs --offline: it never calls nationalize.io.",
                    next_step="Tell the user; the operator can restart the server without --offline.",
                )
            quota = self.upstream.quota
            # Reserved before it is sent, as a batch's names are: concurrent calls with one name left
            # send one request, not one each.
            if not quota.reserve(1):
                raise quota.exhausted_problem()
            deadline_s = min(self.limits.request_deadline, self.limits.call_deadline)
            try:
                (answer,) = await self.upstream.fetch([name], Deadline(deadline_s))
            finally:
                quota.release(1)
            await self._store([answer])
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
        run = _Run({name: _outcome(answer) for name, answer in cached.items()}, len(distinct), progress)
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
            await self._fetch_all(missing, run)
            if run.fatal is not None:
                raise run.fatal
        await run.report(force=True)
        requests = (self.upstream.requests_sent if self.upstream else 0) - requests_before
        return self._batch_result(names, offset, window, normal, reasons, run, len(cached), requests)

    def _settle_unfetched_page(self, missing: list[str], run: _Run) -> None:
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

    async def _fetch_all(self, missing: list[str], run: _Run) -> None:
        assert self.upstream is not None
        size = self.limits.upstream_batch
        run.queue.extend(tuple(missing[i : i + size]) for i in range(0, len(missing), size))

        async def worker() -> None:
            while run.queue and run.fatal is None:
                await self._fetch_batch(run.queue.popleft(), run, group)

        with anyio.move_on_after(self.limits.call_deadline):
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

    async def _fetch_batch(self, batch: tuple[str, ...], run: _Run, group: anyio.abc.TaskGroup) -> None:
        upstream = self.upstream
        assert upstream is not None
        allowed = upstream.quota.reserve(len(batch))
        if allowed < len(batch):
            run.retry_at = upstream.quota.reset_at
            run.settle(batch[allowed:], QUOTA)
            batch = batch[:allowed]
        if not batch:
            await run.report()
            return
        try:
            answers = await upstream.fetch(batch, Deadline(self.limits.request_deadline))
        except QuotaSpent as spent:
            run.retry_at = spent.reset_at or run.retry_at
            if spent.remaining and batch not in run.resized:
                run.resized.add(batch)  # fewer names still fit: send again, cut to what is left
                run.queue.appendleft(batch)
            else:
                run.settle(batch, QUOTA)
            return
        except InvalidArgument as refused:
            if len(batch) > 1:
                run.queue.extend((name,) for name in batch)  # which name does nationalize refuse?
            else:
                run.settle(batch, "invalid", f"nationalize.io refused it: {refused.what}")
            return
        except PermissionDenied as denied:
            run.fatal = denied
            group.cancel_scope.cancel()
            return
        except (UpstreamUnavailable, NotFound) as down:
            # Any other answer nationalize gave is a fault of this request: its names only, never the call.
            run.unavailable_because = down.what
            run.settle(batch, UNAVAILABLE)
            return
        finally:
            upstream.quota.release(allowed)
        for answer in answers:
            run.outcomes[answer.name] = _outcome(answer)
        run.fetched += len(answers)
        group.start_soon(self._store, answers)  # the worker goes on to its next request meanwhile
        await run.report()

    def _batch_result(
        self,
        names: Sequence[str],
        offset: int,
        window: list[str],
        normal: list[str | None],
        reasons: list[str | None],
        run: _Run,
        from_cache: int,
        requests: int,
    ) -> BatchResult:
        items: list[BatchItem] = []
        size = 0
        next_offset = None
        statuses: dict[str, int] = {}
        single_words = 0
        for position, (raw, name, reason) in enumerate(zip(window, normal, reasons, strict=True)):
            item = self._item(raw, name, reason, run)
            statuses[item.status] = statuses.get(item.status, 0) + 1
            single_words += bool(name and " " not in name and item.status == "ok")
            if next_offset is not None:
                continue
            item_size = len(item.model_dump_json(exclude_none=True)) + 1
            if items and size + item_size > self.limits.max_reply_chars:
                next_offset = offset + position
                continue
            items.append(item)
            size += item_size
        return BatchResult(
            results=items,
            total=len(names),
            offset=offset,
            next_offset=next_offset,
            statuses=statuses,
            from_cache=from_cache,
            fetched=run.fetched,
            upstream_requests=requests,
            retry_at=run.retry_at if statuses.get(QUOTA) else None,
            note=self._note(statuses, run, offset, next_offset, len(names), single_words),
        )

    def _item(self, raw: str, name: str | None, reason: str | None, run: _Run) -> BatchItem:
        if name is None:
            return BatchItem(input=_shown(raw), status="invalid", reason=reason)
        shown_input = raw if raw != name else None
        outcome = run.outcomes[name]
        answer = outcome.answer
        if answer is None:
            return BatchItem(input=shown_input, name=name, status=outcome.status, reason=outcome.reason)
        return BatchItem(
            input=shown_input,
            name=name,
            status=outcome.status,
            count=answer.count,
            country=guesses(answer, self.limits.batch_countries),
            confidence=confidence(answer),
        )

    def _note(
        self,
        statuses: dict[str, int],
        run: _Run,
        offset: int,
        next_offset: int | None,
        total: int,
        single_words: int,
    ) -> str | None:
        parts = []
        again = (
            "call batch_predict again with the same names then: the names answered are cached and spend no quota"
            if self.cache
            else "call batch_predict again with those names then"
        )
        if statuses.get(QUOTA):
            now = datetime.now(run.retry_at.tzinfo) if run.retry_at else datetime.now()
            when = describe_wait(run.retry_at, now) or " (reset time unknown)"
            parts.append(
                f"{statuses[QUOTA]} names not fetched: nationalize.io's quota is spent; it resets{when}; {again}."
            )
        if statuses.get(UNAVAILABLE):
            because = run.unavailable_because or "nationalize.io did not answer"
            parts.append(
                f"{statuses[UNAVAILABLE]} names not fetched: {because.rstrip('.')}; retry later, {again}."
            )
        if statuses.get(OFFLINE):
            parts.append(
                f"{statuses[OFFLINE]} names are not in the cache and this server runs --offline, so they were not "
                "looked up (the operator can restart it without --offline)."
            )
        if next_offset is not None:
            unfetched = sum(n for status, n in statuses.items() if status.startswith("not fetched"))
            rest = (
                "answered from the cache, no quota"
                + (
                    "; names not fetched here stay not fetched on later pages — call with offset=0 to fetch "
                    "them"
                    if unfetched
                    else ""
                )
                if self.cache
                else "fetched again: this server keeps no cache"
            )
            parts.append(
                f"Only names {offset + 1}-{next_offset} of {total} fit in this reply; call batch_predict with the "
                f"same names and offset={next_offset} for the rest ({rest})."
            )
        if single_words:
            parts.append(
                f"{single_words} names are a single word: surnames carry most of the signal about origin."
            )
        return " ".join(parts) or None

    # -- quota and cache --------------------------------------------------------------------------

    async def quota_status(self) -> QuotaStatus:
        cache_status = CacheStatus(enabled=False)
        if self.cache is not None:
            cache = self.cache
            entries = await run_in_thread(cache.size)
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

    async def cached_names(self, prefix: str, limit: int = 20) -> list[str]:
        """Cached names starting with ``prefix`` (for completions); nothing is fetched."""
        key = normalise(prefix)[: self.limits.max_name_chars]
        if self.cache is None or any(unicodedata.category(char) in ("Cc", "Cs", "Co") for char in key):
            return []
        cache = self.cache
        return await run_in_thread(lambda: cache.names_starting(key, limit))

    async def _cached(self, names: list[str]) -> dict[str, Answer]:
        if self.cache is None or not names:
            return {}
        cache = self.cache
        return await run_in_thread(lambda: cache.get_many(names))

    async def _store(self, answers: list[Answer]) -> None:
        if self.cache is not None and answers:
            cache = self.cache
            await run_in_thread(lambda: cache.put_many(answers))


def _outcome(answer: Answer) -> _Outcome:
    return _Outcome("ok" if answer.known else "unknown", answer)
