"""A batch's per-name outcomes and the reply built from them: statuses, pages, and the note.

Each name of a batch_predict call ends with an :class:`Outcome` (an answer, or why it has none); the
reply lists them in input order, cut to a page of about ``max_reply_chars``, with a note that says what
was not fetched, why, and what to do next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from dockyard_shared import Problem
from dockyard_shared.words import plural

from .countries import country_name
from .models import Answer, BatchItem, BatchResult, Confidence, CountryGuess, NameOrigin, OriginReply, Status
from .quota import describe_wait
from .settings import Limits

__all__ = [
    "OFFLINE",
    "QUOTA",
    "UNAVAILABLE",
    "Outcome",
    "Progress",
    "Run",
    "batch_result",
    "compact",
    "confidence",
    "guesses",
    "origin_reply",
    "outcome_of",
    "shown",
]

Progress = Callable[[float, float, str], Awaitable[None]]

_PROGRESS_STEPS = 50  # at most this many progress notifications per call, whatever the batch size

QUOTA: Status = "not fetched: quota exhausted"
UNAVAILABLE: Status = "not fetched: upstream unavailable"
OFFLINE: Status = "not fetched: offline"


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


def shown(raw: object, cap: int = 100) -> str:
    """``raw`` as a model may see it again: cut, and always valid UTF-8."""
    text = raw if isinstance(raw, str) else repr(raw)
    cut = text[:cap] + ("…" if len(text) > cap else "")
    return cut.encode("utf-8", "replace").decode("utf-8")


@dataclass
class Outcome:
    status: Status
    answer: Answer | None = None
    reason: str | None = None


@dataclass
class Run:
    """One batch_predict call's shared state while its requests are in flight."""

    outcomes: dict[str, Outcome]
    total: int
    progress: Progress | None
    queue: deque[tuple[str, ...]] = field(default_factory=deque)
    resized: set[tuple[str, ...]] = field(default_factory=set)
    fatal: Problem | None = None
    retry_at: datetime | None = None
    unavailable_because: str | None = None
    unavailable_next: str | None = None  # what to do when retrying cannot help
    fetched: int = 0
    waited: int = 0  # names another call (here or on another replica) fetched while this one waited
    reported: int = 0

    def settle(self, names: Sequence[str], status: Status, reason: str | None = None) -> None:
        for name in names:
            self.outcomes[name] = Outcome(status, reason=reason)

    async def report(self, force: bool = False) -> None:
        done = len(self.outcomes)
        if self.progress is None or (not force and done - self.reported < self.total / _PROGRESS_STEPS):
            return
        self.reported = done
        await self.progress(done, self.total, f"{done} of {plural(self.total, 'name')} answered")


def outcome_of(answer: Answer) -> Outcome:
    return Outcome("ok" if answer.known else "unknown", answer)


def batch_result(
    limits: Limits,
    cached: bool,
    names: Sequence[str],
    offset: int,
    window: list[str],
    normal: list[str | None],
    reasons: list[str | None],
    run: Run,
    from_cache: int,
    requests: int,
) -> BatchResult:
    items: list[BatchItem] = []
    size = 0
    next_offset = None
    statuses: dict[str, int] = {}
    single_words = 0
    for position, (raw, name, reason) in enumerate(zip(window, normal, reasons, strict=True)):
        item = _item(raw, name, reason, run, limits)
        statuses[item.status] = statuses.get(item.status, 0) + 1
        single_words += bool(name and " " not in name and item.status == "ok")
        if next_offset is not None:
            continue
        item_size = len(compact(item).model_dump_json(exclude_none=True)) + 1  # as batch_predict sends it
        if items and size + item_size > limits.max_reply_chars:
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
        note=_note(statuses, run, offset, next_offset, len(names), single_words, cached),
    )


def compact(item: BatchItem) -> NameOrigin:
    """``item`` as batch_predict sends it: the name as given, ``[code, probability]`` pairs rounded to two
    places (nationalize's samples do not support more; a country that rounds to 0 says nothing), the
    status only when it is not ok."""
    country = None
    if item.country is not None:
        pairs = ((guess.country_id, round(guess.probability, 2)) for guess in item.country)
        country = [(code, probability) for code, probability in pairs if probability > 0]
    return NameOrigin(
        name=shown(item.input if item.input is not None else item.name),
        status=None if item.status == "ok" else item.status,
        count=item.count,
        country=country,
        confidence=item.confidence,
        reason=item.reason,
    )


def origin_reply(result: BatchResult) -> OriginReply:
    """batch_predict's reply: each item compact; the counts only when some name is not ok (otherwise they
    repeat the list). What the call spent (cache hits, requests) stays in the BatchResult: it tells the
    model nothing it can act on."""
    return OriginReply(
        results=[compact(item) for item in result.results],
        statuses=result.statuses if set(result.statuses) - {"ok"} else None,
        next_offset=result.next_offset,
        retry_at=result.retry_at,
        note=result.note,
    )


def _item(raw: str, name: str | None, reason: str | None, run: Run, limits: Limits) -> BatchItem:
    if name is None:
        return BatchItem(input=shown(raw), status="invalid", reason=reason)
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
        country=guesses(answer, limits.batch_countries),
        confidence=confidence(answer),
    )


def _note(
    statuses: dict[str, int],
    run: Run,
    offset: int,
    next_offset: int | None,
    total: int,
    single_words: int,
    cached: bool,
) -> str | None:
    parts = []
    again = (
        "call batch_predict again with the same names then: the names answered are cached and spend no quota"
        if cached
        else "call batch_predict again with those names then"
    )
    if statuses.get(QUOTA):
        now = datetime.now(run.retry_at.tzinfo) if run.retry_at else datetime.now()
        when = describe_wait(run.retry_at, now) or " (reset time unknown)"
        parts.append(
            f"{plural(statuses[QUOTA], 'name')} not fetched: nationalize.io's quota is spent; it resets{when}; "
            f"{again}."
        )
    if statuses.get(UNAVAILABLE):
        because = run.unavailable_because or "nationalize.io did not answer"
        then = f". {run.unavailable_next}" if run.unavailable_next else f"; retry later, {again}."
        parts.append(f"{plural(statuses[UNAVAILABLE], 'name')} not fetched: {because.rstrip('.')}{then}")
    if statuses.get(OFFLINE):
        parts.append(
            f"{plural(statuses[OFFLINE], 'name')} {'is' if statuses[OFFLINE] == 1 else 'are'} not in the cache and this server runs --offline, so they were not "
            "looked up (the operator can restart it without --offline)."
        )
    if next_offset is not None:
        unfetched = sum(n for status, n in statuses.items() if status.startswith("not fetched"))
        rest = (
            "answered from the cache, no quota"
            + (
                "; names not fetched here stay not fetched on later pages — call with offset=0 to fetch them"
                if unfetched
                else ""
            )
            if cached
            else "fetched again: this server keeps no cache"
        )
        parts.append(
            f"Only names {offset + 1}-{next_offset} of {total} fit in this reply; call batch_predict with the "
            f"same names and offset={next_offset} for the rest ({rest})."
        )
    if single_words:
        parts.append(
            f"{plural(single_words, 'name')} {'is' if single_words == 1 else 'are'} a single word: surnames carry most of the signal about origin."
        )
    return " ".join(parts) or None
