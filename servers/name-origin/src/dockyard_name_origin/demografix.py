"""genderize.io and agify.io: nationalize's two siblings, spoken through the same checked, metered client.

Demografix serves the three APIs with one key (``apikey``) and one quota per key, so the clients for
genderize and agify share the nationalize client's :class:`~.client.QuotaLedger`: a name asked of any of
them is counted against the same window, and a batch is never sent larger than what is left of it. Each
has its own circuit breaker (one service failing says nothing of the others) and uses the same pooled
HTTP client. Requests carry up to 10 ``name[]`` and, when given, a ``country_id`` (ISO 3166-1 alpha-2)
that localises every name of the request; the answer echoes it.

Every answer is checked as nationalize's is (content type, size, shape, one answer per name asked, in
order, for the name asked), and a localised answer must echo the country asked: an answer for another
country, or none, is an upstream fault, never passed through as localised.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from dockyard_shared import Problem

from .client import SERVICE, NationalizeClient, Request, UpstreamFault, answer_items
from .resilience import Deadline
from .upstream_values import MAX_COUNT

__all__ = ["SERVICES", "DemografixClient", "Kind", "Trait", "parse_traits"]

log = logging.getLogger("dockyard.name_origin")

Kind = Literal["gender", "age"]
SERVICES: dict[str, str] = {"gender": "genderize.io", "age": "agify.io"}
MAX_AGE = 150

_country: ContextVar[str | None] = ContextVar("dockyard_demografix_country", default=None)


@dataclass(frozen=True)
class Trait:
    """One genderize or agify answer for a normalised name, as fetched or cached. ``value`` is
    ``"male"``/``"female"`` or an age in years, None when the API has no prediction."""

    kind: Kind
    name: str
    country_id: str | None
    count: int
    value: str | int | None
    probability: float | None  # genderize's share of records with that gender; None for age
    fetched_at: datetime
    cached: bool = False

    @property
    def known(self) -> bool:
        return self.count > 0 and self.value is not None


class DemografixClient(NationalizeClient):
    """A client for genderize.io (``kind="gender"``) or agify.io (``kind="age"``)."""

    def __init__(self, kind: Kind, **options: Any) -> None:
        super().__init__(**options)
        self.kind = kind
        self.service = SERVICES[kind]

    async def fetch_traits(
        self, names: Sequence[str], deadline: Deadline, country_id: str | None
    ) -> list[Trait]:
        """The answers for ``names`` (normalised, at most 10) in ``country_id`` (None: worldwide), in
        order; raises the same problems as :meth:`NationalizeClient.fetch`, naming this service."""
        token = _country.set(country_id)
        try:
            return await self._fetch(Request(tuple(names), deadline))  # type: ignore[return-value]
        except Problem as problem:
            # The shared client's texts name nationalize.io; this request went to another host. Whatever
            # the upstream wrote may quote the key: scrubbed before anyone reads it, as fetch() does.
            problem.what = self.scrub(problem.what.replace(SERVICE, self.service))
            if problem.next_step:
                problem.next_step = self.scrub(problem.next_step.replace(SERVICE, self.service))
            log.warning("%s: %s", type(problem).__name__, problem.what)
            raise
        finally:
            _country.reset(token)

    def _query(self, names: tuple[str, ...], batch: bool) -> list[tuple[str, str]]:
        params = super()._query(names, batch)
        if (country := _country.get()) is not None:
            params.append(("country_id", country))
        return params

    def _parse(self, body: bytes, content_type: str, names: tuple[str, ...], batch: bool) -> list:
        return parse_traits(
            self.kind,
            body,
            content_type,
            names,
            batch=batch,
            country_id=_country.get(),
            normalise=self._normalise,
            fetched_at=self._now(),
        )


def parse_traits(
    kind: Kind,
    body: bytes,
    content_type: str,
    asked: Sequence[str],
    *,
    batch: bool,
    country_id: str | None,
    normalise,
    fetched_at: datetime,
) -> list[Trait]:
    """The answers in ``body`` for the names ``asked`` (normalised), or :class:`UpstreamFault`."""
    items = answer_items(body, content_type, asked, batch=batch)
    traits = []
    for position, (item, name) in enumerate(zip(items, asked, strict=True), start=1):
        trait = _trait(kind, item, fetched_at)
        if trait is None:
            raise UpstreamFault(f"answer {position} did not have {SERVICES[kind]}'s shape")
        if normalise(trait.name) != name:
            raise UpstreamFault(f"answer {position} was for another name than the one asked")
        if trait.country_id != country_id:
            raise UpstreamFault(
                f"answer {position} was for country {trait.country_id or 'none (worldwide)'}, "
                f"not the {country_id or 'worldwide answer'} asked"
            )
        traits.append(Trait(kind, name, country_id, trait.count, trait.value, trait.probability, fetched_at))
    return traits


def _trait(kind: Kind, item: object, fetched_at: datetime) -> Trait | None:
    if not isinstance(item, dict):
        return None
    name, count, country = item.get("name"), item.get("count"), item.get("country_id")
    if not isinstance(name, str) or type(count) is not int or not 0 <= count <= MAX_COUNT:
        return None
    if country is not None and not (isinstance(country, str) and len(country) == 2 and country.isupper()):
        return None
    probability: float | None = None
    if kind == "gender":
        value, raw = item.get("gender"), item.get("probability")
        if value not in ("male", "female", None):
            return None
        if type(raw) not in (int, float) or not 0 <= raw <= 1:
            return None
        probability = float(raw) if value is not None else None
    else:
        value = item.get("age")
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_AGE):
            return None
    return Trait(kind, name, country, count, value, probability, fetched_at)
