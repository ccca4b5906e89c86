"""Cached genderize and agify answers: a second table in the prediction cache's database, same TTL.

A row is one (kind, country, name): ``gender``/``age``, the ``country_id`` it was localised to (``""`` for
worldwide: a localised answer is another answer), the normalised name, and what the API said. Unknown
names are cached like any other answer. Like the prediction cache, a database failure is logged and
treated as a miss (reads) or skipped (writes): the cache saves quota, it never fails a prediction. Hits
and misses count in the prediction cache's counters, so quota_status shows every lookup.

Blocking code: called through :func:`dockyard_shared.offload.run_in_thread`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, select
from sqlalchemy.exc import SQLAlchemyError

from .cache import PredictionCache
from .demografix import Kind, Trait

__all__ = ["TraitCache"]

log = logging.getLogger("dockyard.name_origin")

_metadata = MetaData()
traits = Table(
    "name_origin_traits",
    _metadata,
    Column("kind", String(8), primary_key=True),  # gender | age
    Column("country_id", String(2), primary_key=True),  # "" for worldwide
    Column("name", String(400), primary_key=True),  # normalised
    Column("count", Integer, nullable=False),
    Column("value", String(16), nullable=True),  # male | female | an age in years; NULL: no prediction
    Column("probability", Float, nullable=True),
    Column("fetched_at", Float, nullable=False),
)
_CHUNK = 500


class TraitCache:
    """The traits table of one :class:`PredictionCache` (created on first use)."""

    def __init__(self, cache: PredictionCache) -> None:
        self.cache = cache
        self._ready = False
        self._lock = threading.Lock()

    def _create(self) -> bool:
        with self._lock:
            if not self._ready:
                try:
                    _metadata.create_all(self.cache.engine)
                    self._ready = True
                except SQLAlchemyError as error:
                    log.warning("trait cache unavailable: %s", type(error).__name__)
            return self._ready

    def get_many(self, kind: Kind, country_id: str | None, names: Sequence[str]) -> dict[str, Trait]:
        found: dict[str, Trait] = {}
        if self._create():
            oldest = self.cache.fresh_since()
            try:
                with self.cache.engine.connect() as connection:
                    for start in range(0, len(names), _CHUNK):
                        rows = connection.execute(
                            select(traits).where(
                                traits.c.kind == kind,
                                traits.c.country_id == (country_id or ""),
                                traits.c.name.in_(list(names[start : start + _CHUNK])),
                                traits.c.fetched_at >= oldest,
                            )
                        )
                        for row in rows:
                            found[row.name] = _trait(row)
            except SQLAlchemyError as error:
                log.warning("trait cache read failed, fetching instead: %s", type(error).__name__)
                found = {}
        self.cache.count_lookups(len(found), len(set(names)) - len(found))
        return found

    def put_many(self, answers: Iterable[Trait]) -> None:
        rows = [
            {
                "kind": answer.kind,
                "country_id": answer.country_id or "",
                "name": answer.name,
                "count": answer.count,
                "value": None if answer.value is None else str(answer.value),
                "probability": answer.probability,
                "fetched_at": answer.fetched_at.timestamp(),
            }
            for answer in answers
        ]
        if not rows or not self._create():
            return
        backend = self.cache.backend
        if backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        statement = insert(traits)
        upsert = statement.on_conflict_do_update(
            index_elements=[traits.c.kind, traits.c.country_id, traits.c.name],
            set_={c: statement.excluded[c] for c in ("count", "value", "probability", "fetched_at")},
        )
        try:
            with self.cache.engine.begin() as connection:
                connection.execute(upsert, rows)
        except SQLAlchemyError as error:
            log.warning("trait cache write failed, not cached: %s", type(error).__name__)


def _trait(row) -> Trait:
    kind: Kind = "gender" if row.kind == "gender" else "age"
    value: str | int | None = row.value
    if kind == "age" and value is not None:
        value = int(value)
    return Trait(
        kind=kind,
        name=row.name,
        country_id=row.country_id or None,
        count=row.count,
        value=value,
        probability=row.probability,
        fetched_at=datetime.fromtimestamp(row.fetched_at, UTC),
        cached=True,
    )
