"""What predict_traits returns: one item per input, in input order, and counts and a note for the call."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from dockyard_shared.schema import bulk_list

from .models import Confidence, CountryGuess, Status

__all__ = ["TraitItem", "TraitsResult", "What"]

What = Literal["gender", "age", "origin"]


class TraitItem(BaseModel):
    input: str = Field(description="The input as given (cut to 100 characters).")
    parse: str | None = Field(
        default=None, description="How an e-mail address or handle was read, e.g. email -> given 'jane'."
    )
    looked_up: str | None = None
    status: Status
    gender: Literal["male", "female"] | None = None
    probability: float | None = None
    age: int | None = None
    country: list[CountryGuess] | None = None
    count: int | None = None
    confidence: Confidence | None = None
    lowered: str | None = None
    low_sample: bool | None = None
    reason: str | None = None


class TraitsResult(BaseModel):
    what: What
    country_id: str | None = None
    results: Annotated[
        list[TraitItem],
        bulk_list(
            "one per input, in input order: {input, parse?, looked_up, status, gender+probability | age | "
            "country, count, confidence, lowered?, low_sample?, reason?}"
        ),
    ]
    statuses: dict[str, int]
    from_cache: int
    fetched: int
    upstream_requests: int
    retry_at: datetime | None = None
    note: str
