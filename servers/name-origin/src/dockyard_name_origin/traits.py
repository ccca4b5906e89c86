"""Gender and age (and origin) for names, e-mail addresses and handles: one call, cached, batched, honest.

Each input is read by :func:`.handles.parse` (a plain name, an e-mail address or a handle); the parse is
shown and lowers the confidence (one level when separators split it, two when one run of letters had to
be guessed). Gender and age are predicted from the given name (genderize and agify are first-name
services), origin from given name and surname through the origin :class:`~.predict.Predictor`.

Gender and age answers go through the same machinery as origin's: the prediction cache's database (its
own table, same TTL), ten names to a request with a few in flight, the one quota ledger of the key (a
batch never larger than what is left; nothing sent while it is spent) and per-name statuses, so a partial
quota still yields partial results. An unknown name is an answer (``unknown``), not an error.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from dockyard_shared import InvalidArgument, Problem
from dockyard_shared.offload import run_in_thread
from dockyard_shared.opened import Opened

from .claims import LocalClaims
from .countries import country_table
from .demografix import SERVICES, DemografixClient, Kind, Trait
from .handles import Parse, Unparsable, lowered, parse
from .models import BatchItem, Confidence, Status
from .predict import Predictor, invalid_reason, normalise
from .quota import describe_wait
from .replies import OFFLINE, QUOTA, UNAVAILABLE, Progress, shown
from .resilience import Deadline
from .sending import send_batch
from .settings import Limits
from .trait_models import TraitItem, TraitsResult, What

if TYPE_CHECKING:
    from .cache import PredictionCache
    from .trait_cache import TraitCache

__all__ = ["LOW_SAMPLE", "TraitPredictor", "age_confidence", "gender_confidence"]

LOW_SAMPLE = 100  # records under which an answer is flagged low_sample
_COUNTRY = re.compile(r"^[A-Z]{2}$")
HONESTY = (
    "A prediction describes how a name is used in {source}'s records, never the person who bears it: "
    "do not state or decide anything about a person from it (read the interpret_name_origin prompt)."
)


def gender_confidence(trait: Trait) -> Confidence:
    """none: no prediction; low: under 100 records or a probability under 0.6; high: at least 1,000
    records and 0.9 or more; medium otherwise."""
    if not trait.known or trait.probability is None:
        return "none"
    if trait.count < LOW_SAMPLE or trait.probability < 0.6:
        return "low"
    return "high" if trait.count >= 1_000 and trait.probability >= 0.9 else "medium"


def age_confidence(trait: Trait) -> Confidence:
    """none: no prediction; low: under 100 records; medium otherwise, never high: agify gives one age
    with no spread, so no sample size makes it a precise figure."""
    if not trait.known:
        return "none"
    return "low" if trait.count < LOW_SAMPLE else "medium"


@dataclass
class _Row:
    raw: object
    parsed: Parse | None = None
    key: str | None = None
    reason: str | None = None


@dataclass
class _Run:
    kind: Kind
    country_id: str | None
    total: int
    progress: Progress | None
    traits: dict[str, Trait] = field(default_factory=dict)
    failed: dict[str, tuple[Status, str | None]] = field(default_factory=dict)
    queue: deque[tuple[str, ...]] = field(default_factory=deque)
    resized: set[tuple[str, ...]] = field(default_factory=set)
    fatal: Problem | None = None
    retry_at: datetime | None = None
    unavailable_because: str | None = None
    # Set by sending.send_batch when retrying cannot help; unused in the note: its text names --api-url.
    unavailable_next: str | None = None
    fetched: int = 0
    waited: int = 0  # names another call of this server fetched while this one waited

    def settle(self, names: Sequence[str], status: Status, reason: str | None = None) -> None:
        for name in names:
            self.failed[name] = (status, reason)

    async def report(self) -> None:
        if self.progress is not None:
            done = len(self.traits) + len(self.failed)
            await self.progress(done, self.total, f"{done} of {self.total} names answered")


class TraitPredictor:
    def __init__(
        self,
        *,
        clients: dict[Kind, DemografixClient] | None,
        origin: Predictor,
        cache: Opened[PredictionCache] | None,
        limits: Limits,
    ) -> None:
        self.clients = clients  # None: --offline
        self.origin = origin
        self.cache = cache
        self.limits = limits
        self._trait_cache: TraitCache | None = None
        self.claims = LocalClaims()

    async def predict(
        self,
        inputs: Sequence[object],
        what: What,
        country_id: str | None = None,
        progress: Progress | None = None,
    ) -> TraitsResult:
        limit = self.limits.max_trait_names
        if not inputs:
            raise InvalidArgument("names is empty.", next_step="Pass at least one name, address or handle.")
        if len(inputs) > limit:
            raise InvalidArgument(
                f"{len(inputs):,} inputs is over the limit of {limit} per call.",
                next_step=f"Split the list into calls of at most {limit}.",
            )
        country = self._country(country_id, what)
        rows = [self._row(raw, what) for raw in inputs]
        keys = list(dict.fromkeys(row.key for row in rows if row.key))
        if what == "origin":
            return await self._origin(rows, keys, progress)
        run = _Run(what, country, len(keys), progress)
        cached = await self._cached(what, country, keys)
        run.traits.update(cached)
        missing = [key for key in keys if key not in cached]
        client = self.clients[what] if self.clients is not None else None
        requests_before = client.requests_sent if client else 0
        if missing and client is None:
            run.settle(missing, OFFLINE)
        elif missing and client is not None:
            await self._fetch_claimed(client, missing, run)
            if run.fatal is not None:
                raise run.fatal
        requests = (client.requests_sent if client else 0) - requests_before
        items = [self._item(row, run) for row in rows]
        return self._result(what, country, items, len(cached) + run.waited, run, requests)

    # -- inputs ----------------------------------------------------------------------------------

    @staticmethod
    def _country(country_id: str | None, what: What) -> str | None:
        if country_id is None:
            return None
        if what == "origin":
            raise InvalidArgument(
                "country_id localises gender and age only; nationalize predicts the country itself.",
                next_step="Drop country_id for what=origin.",
            )
        code = country_id.strip().upper()
        if not _COUNTRY.match(code) or code not in country_table():
            raise InvalidArgument(
                f"country_id {shown(country_id, 20)!r} is not an ISO 3166-1 alpha-2 code.",
                next_step="Pass two letters such as US, DE or JP (the iso3166://countries resource lists "
                "them), or leave it out for a worldwide answer.",
            )
        return code

    def _row(self, raw: object, what: What) -> _Row:
        if not isinstance(raw, str):
            return _Row(raw, reason="it is not a string")
        try:
            parsed = parse(raw)
        except Unparsable as unparsable:
            return _Row(raw, reason=unparsable.reason)
        if what == "origin":
            key = " ".join(part for part in (parsed.given, parsed.surname) if part)
        else:
            key = parsed.given or ""
        if not key:
            initial = f" (only the initial {parsed.initial!r})" if parsed.initial else ""
            return _Row(raw, parsed, reason=f"it holds no given name{initial}: {what} is predicted from one")
        key = normalise(key)
        reason = invalid_reason(key, self.limits.max_name_chars)
        return _Row(raw, parsed, None if reason else key, reason)

    # -- origin ----------------------------------------------------------------------------------

    async def _origin(self, rows: list[_Row], keys: list[str], progress: Progress | None) -> TraitsResult:
        found: dict[str, BatchItem] = {}
        from_cache = fetched = requests = 0
        retry_at = None
        if keys:
            batch = await self.origin.predict_many(keys, progress=progress)
            found = {item.name: item for item in batch.results if item.name}
            from_cache, fetched, requests = batch.from_cache, batch.fetched, batch.upstream_requests
            retry_at = batch.retry_at
        items = []
        for row in rows:
            item = self._base(row)
            got = found.get(row.key) if row.key else None
            if got is None:
                items.append(item)
                continue
            item.status, item.count, item.country, item.reason = (
                got.status,
                got.count,
                got.country,
                got.reason,
            )
            self._rate(item, got.confidence, row.parsed)
            items.append(item)
        run = _Run("gender", None, 0, None, retry_at=retry_at)
        return self._result("origin", None, items, from_cache, run, requests, fetched=fetched)

    # -- gender and age ----------------------------------------------------------------------------

    async def _fetch_claimed(self, client: DemografixClient, missing: list[str], run: _Run) -> None:
        """Fetch ``missing``, except what another call of this server is fetching: that is waited for
        (and fetched here only if that call did not get it), so concurrent calls pay for a name once."""

        def claim(name: str) -> str:
            return f"{run.kind}|{run.country_id or ''}|{name}"

        def name_of(key: str) -> str:
            return key.split("|", 2)[2]

        mine, theirs = self.claims.take([claim(name) for name in missing])
        try:
            if mine:
                await self._fetch_all(client, [name_of(key) for key in mine], run)
        finally:
            self.claims.settle(mine, lambda key: run.traits.get(name_of(key)))
        if theirs and run.fatal is None:
            found = await LocalClaims.wait(theirs, Deadline(self.limits.call_deadline))
            for trait in found.values():
                run.traits[trait.name] = trait
            run.waited += len(found)
            if rest := [name_of(key) for key in theirs if key not in found]:
                await self._fetch_all(client, rest, run)

    async def _fetch_all(self, client: DemografixClient, missing: list[str], run: _Run) -> None:
        size = self.limits.upstream_batch
        run.queue.extend(tuple(missing[i : i + size]) for i in range(0, len(missing), size))

        async def worker(group: anyio.abc.TaskGroup) -> None:
            while run.queue and run.fatal is None:
                await self._fetch_batch(client, run.queue.popleft(), run, group)

        with anyio.move_on_after(self.limits.call_deadline):
            async with anyio.create_task_group() as group:
                if not client.quota.known:  # the first answer says how much quota is left
                    await self._fetch_batch(client, run.queue.popleft(), run, group)
                for _ in range(min(self.limits.concurrency, len(run.queue))):
                    group.start_soon(worker, group)
        late = [name for name in missing if name not in run.traits and name not in run.failed]
        if late and run.fatal is None:
            run.unavailable_because = f"the call's time limit of {self.limits.call_deadline:g} s ran out"
            run.settle(late, UNAVAILABLE)

    async def _fetch_batch(
        self, client: DemografixClient, batch: tuple[str, ...], run: _Run, group: anyio.abc.TaskGroup
    ) -> None:
        def fetch(names: tuple[str, ...]) -> Awaitable[list[Trait]]:
            return client.fetch_traits(names, Deadline(self.limits.request_deadline), run.country_id)

        traits = await send_batch(batch, run, group, quota=client.quota, fetch=fetch, service=client.service)
        if traits is None:
            return
        run.traits.update((trait.name, trait) for trait in traits)
        run.fetched += len(traits)
        await self._store(traits)
        await run.report()

    # -- replies ---------------------------------------------------------------------------------

    @staticmethod
    def _base(row: _Row) -> TraitItem:
        parsed = row.parsed
        return TraitItem(
            input=shown(row.raw),
            parse=parsed.shown() if parsed and parsed.source != "name" else None,
            looked_up=row.key,
            status="invalid",
            reason=row.reason,
        )

    @staticmethod
    def _rate(item: TraitItem, confidence: Confidence | None, parsed: Parse | None) -> None:
        item.confidence = confidence
        if (
            confidence
            and parsed
            and parsed.lowered_by
            and lowered(confidence, parsed.lowered_by) != confidence
        ):
            item.confidence = lowered(confidence, parsed.lowered_by)  # type: ignore[assignment]
            item.lowered = f"{confidence} -> {item.confidence}: {parsed.why}"
        if item.count is not None and item.status == "ok" and item.count < LOW_SAMPLE:
            item.low_sample = True

    def _item(self, row: _Row, run: _Run) -> TraitItem:
        item = self._base(row)
        if row.key is None:
            return item
        trait = run.traits.get(row.key)
        if trait is None:
            item.status, item.reason = run.failed.get(row.key, (UNAVAILABLE, None))
            return item
        item.status, item.count = ("ok" if trait.known else "unknown"), trait.count
        if trait.kind == "gender":
            item.gender, item.probability = trait.value, trait.probability  # type: ignore[assignment]
            confidence = gender_confidence(trait)
        else:
            item.age = trait.value  # type: ignore[assignment]
            confidence = age_confidence(trait)
        self._rate(item, confidence, row.parsed)
        return item

    def _result(
        self,
        what: What,
        country: str | None,
        items: list[TraitItem],
        from_cache: int,
        run: _Run,
        requests: int,
        *,
        fetched: int | None = None,
    ) -> TraitsResult:
        statuses: dict[str, int] = {}
        for item in items:
            statuses[item.status] = statuses.get(item.status, 0) + 1
        source = SERVICES.get(what, "nationalize.io")
        parts = [HONESTY.format(source=source)]
        if low := sum(bool(item.low_sample) for item in items):
            parts.append(
                f"{low} answers rest on fewer than {LOW_SAMPLE} records (low_sample): too little to go on."
            )
        if parsed := sum(item.parse is not None for item in items):
            parts.append(
                f"{parsed} inputs were read as an e-mail address or handle: the parse is shown and is a guess, "
                "so confidence is lowered (one level when separators split it, two for one run of letters); "
                "digits are never read as a birth year."
            )
        if what == "age":
            parts.append(
                "agify gives one typical age of a name's bearers, with no spread: confidence is at most medium."
            )
        if country:
            parts.append(f"Localised to {country}: each answer uses that country's records only.")
        if statuses.get(QUOTA):
            now = datetime.now(run.retry_at.tzinfo) if run.retry_at else datetime.now()
            when = describe_wait(run.retry_at, now) or " (reset time unknown)"
            parts.append(
                f"{statuses[QUOTA]} names not fetched: the key's quota, which nationalize, genderize and agify "
                f"share, is spent; it resets{when}. Call again then: names answered are cached."
            )
        if statuses.get(UNAVAILABLE):
            because = (run.unavailable_because or f"{source} did not answer").rstrip(".")
            parts.append(f"{statuses[UNAVAILABLE]} names not fetched: {because}; retry later.")
        if statuses.get(OFFLINE):
            parts.append(
                f"{statuses[OFFLINE]} names are not cached and this server runs --offline (its operator's "
                "choice), so they were not looked up."
            )
        return TraitsResult(
            what=what,
            country_id=country,
            results=items,
            statuses=statuses,
            from_cache=from_cache,
            fetched=run.fetched if fetched is None else fetched,
            upstream_requests=requests,
            retry_at=run.retry_at if statuses.get(QUOTA) else None,
            note=" ".join(parts),
        )

    # -- cache -----------------------------------------------------------------------------------

    def _traits(self) -> TraitCache:
        from .trait_cache import TraitCache  # SQLAlchemy: imported with the cache

        assert self.cache is not None
        if self._trait_cache is None or self._trait_cache.cache is not self.cache.get():
            self._trait_cache = TraitCache(self.cache.get())
        return self._trait_cache

    async def _cached(self, kind: Kind, country: str | None, names: list[str]) -> dict[str, Trait]:
        if self.cache is None or not names:
            return {}
        return await run_in_thread(lambda: self._traits().get_many(kind, country, names))

    async def _store(self, traits: list[Trait]) -> None:
        if self.cache is not None and traits:
            await run_in_thread(lambda: self._traits().put_many(traits))
