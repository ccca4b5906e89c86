"""What the tools return, and the one internal record of a nationalize answer.

The reference server returned nationalize's raw JSON; predict_origin's ``name``, ``count`` and ``country:
[{country_id, probability}]`` keep those names so a client written against it keeps working. batch_predict's
reply (:class:`OriginReply`) keeps the field names but is compact — a model reads it whole, every character
— so each country is a ``[code, probability]`` pair and nothing restates the request; :class:`BatchResult`
is the full record a batch builds it from (predict_traits reads that one).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from dockyard_shared.schema import bulk_list

__all__ = [
    "Answer",
    "BatchItem",
    "BatchResult",
    "CacheStatus",
    "Confidence",
    "CountryGuess",
    "NameOrigin",
    "OriginReply",
    "Prediction",
    "QuotaStatus",
    "Status",
]

Confidence = Literal["none", "low", "medium", "high"]
Status = Literal[
    "ok",
    "unknown",
    "invalid",
    "not fetched: quota exhausted",
    "not fetched: upstream unavailable",
    "not fetched: offline",
]


@dataclass(frozen=True)
class Answer:
    """nationalize's answer for one normalised name, as fetched or as cached."""

    name: str
    count: int
    countries: tuple[tuple[str, float], ...]  # (ISO 3166-1 alpha-2, probability), most likely first
    fetched_at: datetime
    cached: bool = False

    @property
    def known(self) -> bool:
        return self.count > 0 and bool(self.countries)


class CountryGuess(BaseModel):
    country_id: str
    probability: float
    country_name: str | None = Field(description="ISO 3166 English short name; null for a code it lacks.")


class Prediction(BaseModel):
    name: str = Field(description="The name as looked up (trimmed, lower case, Unicode NFC).")
    count: int = Field(description="How many records nationalize holds for this name: the sample size.")
    country: list[CountryGuess]
    confidence: Confidence
    status: Literal["ok", "unknown"]
    cached: bool
    fetched_at: datetime = Field(description="When nationalize gave this answer (UTC).")
    note: str | None = None


class BatchItem(BaseModel):
    input: str | None = Field(default=None, description="The name as given, when it differs from name.")
    name: str | None = None
    status: Status
    count: int | None = None
    country: list[CountryGuess] | None = None
    confidence: Confidence | None = None
    reason: str | None = None


class BatchResult(BaseModel):
    # A plain array in the output schema: clients validate a 350-item page in constant time (see bulk_list).
    results: Annotated[
        list[BatchItem],
        bulk_list(
            "one per name given, in input order, from offset: {input?, name, status, count, country: "
            "[{country_id, probability, country_name}], confidence, reason?}"
        ),
    ]
    total: int = Field(description="Names given.")
    offset: int
    next_offset: int | None = Field(
        default=None, description="Pass as offset with the same names for the rest."
    )
    statuses: dict[str, int] = Field(description="How many names got each status (all names, not one page).")
    from_cache: int = Field(
        description="Names answered without a request of this call: from the cache, or by another call "
        "that was fetching them at the same time."
    )
    fetched: int
    upstream_requests: int
    retry_at: datetime | None = None
    note: str | None = None


class NameOrigin(BaseModel):
    name: str = Field(description="As given (cut to 100 characters).")
    status: Status | None = Field(default=None, description="Absent when ok.")
    count: int | None = Field(default=None, description="nationalize's records of the name: the sample size.")
    country: list[tuple[str, float]] | None = Field(
        default=None, description="[ISO 3166-1 alpha-2, probability], most likely first."
    )
    confidence: Confidence | None = None
    reason: str | None = None


class OriginReply(BaseModel):
    results: Annotated[
        list[NameOrigin],
        bulk_list(
            "one per name given, in input order, from offset: {name, status? (absent: ok), count, "
            "country: [[code, probability]], confidence, reason?}"
        ),
    ]
    statuses: dict[str, int] | None = Field(
        default=None, description="Names per status (all names, not one page); only when some are not ok."
    )
    next_offset: int | None = Field(
        default=None, description="Pass as offset with the same names for the rest."
    )
    retry_at: datetime | None = None
    note: str | None = None


class CacheStatus(BaseModel):
    enabled: bool
    backend: str | None = None
    entries: int | None = Field(default=None, description="Fresh cached predictions.")
    ttl_days: float | None = None
    hits: int = 0
    misses: int = 0
    hit_rate: float | None = None


class QuotaStatus(BaseModel):
    limit: int | None = Field(default=None, description="Names per period, as nationalize last said.")
    remaining: int | None = None
    reset_at: datetime | None = None
    observed_at: datetime | None = Field(default=None, description="When those figures were read (UTC).")
    circuit: str = Field(description="closed, or open with when the next try is allowed.")
    offline: bool
    cache: CacheStatus
    note: str | None = None
