"""The persistent prediction cache: one table, any SQLAlchemy database, a time to live.

SQLite in the user data directory by default; a PostgreSQL URL lets several replicas share one cache, so
a name looked up by one never spends quota on another. A name is kept with nationalize's answer and the
time it was fetched; an answer older than the TTL counts as absent and is overwritten on the next fetch.
Unknown names (``count: 0``) are cached like any other answer: asking again would cost the same quota for
the same empty answer.

Blocking code: the server calls it through :func:`dockyard_shared.offload.run_in_thread`. A database that
fails after start-up is logged and treated as a miss (reads) or skipped (writes): the cache saves quota,
it is never the reason a prediction fails.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from dockyard_shared import InvalidArgument

from .models import Answer

__all__ = ["PredictionCache", "safe_url"]

log = logging.getLogger("dockyard.name_origin")

_metadata = MetaData()
predictions = Table(
    "name_origin_predictions",
    _metadata,
    Column("name", String(400), primary_key=True),  # normalised (NFC, trimmed, case-folded)
    Column("count", Integer, nullable=False),
    Column("countries", Text, nullable=False),  # JSON [[country_id, probability], ...]
    Column("fetched_at", Float, nullable=False),  # seconds since the epoch, UTC
)

# Names being fetched right now, by whom, until when: replicas sharing the cache wait for a name another
# is fetching instead of paying for it twice. A claim whose holder died expires by itself.
claims = Table(
    "name_origin_claims",
    _metadata,
    Column("name", String(400), primary_key=True),
    Column("owner", String(64), nullable=False),  # one lookup (call) of one replica: a random id
    Column("expires_at", Float, nullable=False),  # seconds since the epoch, UTC
)

# What the upstream last said about the quota of one API key, the names reserved against it, and whether
# its circuit is open: shared by replicas on PostgreSQL (shared_limits.py). Keyed by a fingerprint of the
# key, never the key. Created with the other tables; a replica on SQLite never writes it.
limits = Table(
    "name_origin_limits",
    _metadata,
    Column("key_fingerprint", String(64), primary_key=True),
    Column("quota_limit", Integer),
    Column("remaining", Integer),  # the lowest figure heard in the current window
    Column("reset_at", Float),  # seconds since the epoch, UTC
    Column("observed_at", Float),
    Column("claimed_reset", Float),  # what the upstream said, when it was clamped to a day
    Column("in_flight", Integer, nullable=False, default=0),  # names reserved and not yet answered
    Column("in_flight_until", Float, nullable=False, default=0.0),  # reservations older count as gone
    Column("last_grant", Integer, nullable=False, default=0),  # what the last reservation was given
    Column("open_until", Float),  # the circuit is open until then (seconds since the epoch)
    Column("cause", Text),  # why it opened, in words (no URL, no key)
)

_CHUNK = 500  # names per IN (...) lookup


def engine_url(url: str) -> URL:
    """``url`` parsed, with PostgreSQL pointed at psycopg 3 (the driver installed with this server)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InvalidArgument(
            "--cache-url is not a database URL.",
            next_step="Use e.g. sqlite:////path/to/cache.db or postgresql://user@host/db.",
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def safe_url(url: str) -> str:
    """The URL with any password hidden: fit for a log line."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable URL>"


class PredictionCache:
    def __init__(self, engine: Engine, *, ttl_days: float, clock: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self.ttl_seconds = ttl_days * 86_400
        self.ttl_days = ttl_days
        self._clock = clock
        self._lock = threading.Lock()
        # SQLite takes one writer at a time; a connection that finds the write lock taken does not wait
        # for it to be released but sleeps and retries (sqlite3's busy handler: 1, 2, 5, 10, 15, 20, 25 ms
        # … until the timeout), so concurrent cold lookups in one process slept far past the other's commit
        # (cold predict_origin: fewer calls/s at 8 clients than at 1). Writers of this process take turns
        # on this lock instead; another process on the same file still meets the busy handler.
        self._write_turn = threading.Lock() if engine.dialect.name == "sqlite" else None
        self.hits = 0
        self.misses = 0

    @classmethod
    def open(
        cls, url: str, *, ttl_days: float, clock: Callable[[], float] = time.time, busy_timeout_s: float = 5
    ) -> PredictionCache:
        """Connect, create the table if needed; a URL that cannot be used is refused with the reason.
        ``busy_timeout_s``: on SQLite, how long a write waits for another process's write to end."""
        parsed = engine_url(url)
        options: dict = {}
        if parsed.get_backend_name() != "sqlite":
            # A server connection can drop while pooled; a SQLite file's cannot, and a ping there is one
            # more statement on every look-up (four per cold name), as dockyard-tasks' engine already avoids.
            options["pool_pre_ping"] = True
        else:
            if parsed.database and parsed.database != ":memory:":
                try:
                    Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as error:  # a file where a folder goes, no permission, a full disk
                    raise InvalidArgument(
                        f"The cache at {safe_url(url)} cannot be opened: its folder cannot be created "
                        f"({type(error).__name__}).",
                        next_step="Check that the folder can be created and written, or start with --no-cache.",
                    ) from None
            options["connect_args"] = {"check_same_thread": False, "timeout": busy_timeout_s}
        try:
            engine = create_engine(parsed, **options)
        except (ArgumentError, ImportError) as error:
            raise InvalidArgument(
                f"--cache-url {safe_url(url)} names a database this server cannot use ({type(error).__name__}).",
                next_step="Use a sqlite:// or postgresql:// URL.",
            ) from None
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        try:
            _metadata.create_all(engine)
        except SQLAlchemyError as error:
            engine.dispose()
            raise InvalidArgument(
                f"The cache at {safe_url(url)} cannot be opened ({_kind(error)}).",
                next_step="Check that the database is reachable and writable, or start with --no-cache.",
            ) from None
        return cls(engine, ttl_days=ttl_days, clock=clock)

    @property
    def engine(self) -> Engine:
        """The database, for the other tables this server keeps in it (``trait_cache``)."""
        return self._engine

    def fresh_since(self) -> float:
        """The oldest fetch time (seconds since the epoch) still inside the TTL."""
        return self._clock() - self.ttl_seconds

    def count_lookups(self, hits: int, misses: int) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses

    @property
    def backend(self) -> str:
        return self._engine.dialect.name

    def close(self) -> None:
        self._engine.dispose()

    def get_many(self, names: Sequence[str], *, counted: bool = True) -> dict[str, Answer]:
        """The fresh cached answers among ``names``; the hit and miss counters move when ``counted``."""
        found: dict[str, Answer] = {}
        oldest = self._clock() - self.ttl_seconds
        try:
            with self._engine.connect() as connection:
                for start in range(0, len(names), _CHUNK):
                    chunk = list(names[start : start + _CHUNK])
                    rows = connection.execute(
                        select(predictions).where(
                            predictions.c.name.in_(chunk), predictions.c.fetched_at >= oldest
                        )
                    )
                    for row in rows:
                        found[row.name] = _answer(row)
        except SQLAlchemyError as error:
            log.warning("cache read failed, fetching instead: %s", _kind(error))
            found = {}
        if not counted:  # a look while another replica fetches: not a lookup of its own
            return found
        with self._lock:
            self.hits += len(found)
            self.misses += len(set(names)) - len(found)
        return found

    def put_many(self, answers: Iterable[Answer]) -> None:
        rows = [
            {
                "name": answer.name,
                "count": answer.count,
                "countries": json.dumps([list(pair) for pair in answer.countries]),
                "fetched_at": answer.fetched_at.timestamp(),
            }
            for answer in answers
        ]
        if not rows:
            return
        try:
            with self._writing() as connection:
                connection.execute(self._upsert(), rows)
        except SQLAlchemyError as error:
            log.warning("cache write failed, not cached: %s", _kind(error))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A write transaction, taken in turn with this process's other writers on SQLite."""
        with self._write_turn or contextlib.nullcontext(), self._engine.begin() as connection:
            yield connection

    def _insert(self, table: Table):
        if self.backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif self.backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:  # pragma: no cover - only SQLite and PostgreSQL are installed with this server
            raise InvalidArgument(f"The cache does not support {self.backend}.")
        return insert(table)

    def _upsert(self):
        statement = self._insert(predictions)
        return statement.on_conflict_do_update(
            index_elements=[predictions.c.name],
            set_={c: statement.excluded[c] for c in ("count", "countries", "fetched_at")},
        )

    def claim(self, names: Sequence[str], owner: str, seconds: float) -> set[str]:
        """Claim ``names`` for ``owner`` for ``seconds``; the names it now holds (those another owner holds,
        unexpired, are left out). A database failure claims everything: the cache never stops a lookup."""
        now = self._clock()
        held: set[str] = set()
        try:
            with self._writing() as connection:
                for start in range(0, len(names), _CHUNK):
                    chunk = list(names[start : start + _CHUNK])
                    connection.execute(
                        claims.delete().where(claims.c.name.in_(chunk), claims.c.expires_at < now)
                    )
                    rows = [{"name": name, "owner": owner, "expires_at": now + seconds} for name in chunk]
                    connection.execute(
                        self._insert(claims).on_conflict_do_nothing(index_elements=["name"]), rows
                    )
                    held.update(
                        connection.scalars(
                            select(claims.c.name).where(claims.c.name.in_(chunk), claims.c.owner == owner)
                        )
                    )
        except SQLAlchemyError as error:
            log.warning("cache claim failed, fetching without one: %s", _kind(error))
            return set(names)
        return held

    def claimed(self, names: Sequence[str]) -> set[str]:
        """Those of ``names`` someone holds an unexpired claim on (none when the database cannot say)."""
        now = self._clock()
        found: set[str] = set()
        try:
            with self._engine.connect() as connection:
                for start in range(0, len(names), _CHUNK):
                    chunk = list(names[start : start + _CHUNK])
                    found.update(
                        connection.scalars(
                            select(claims.c.name).where(claims.c.name.in_(chunk), claims.c.expires_at >= now)
                        )
                    )
        except SQLAlchemyError as error:
            log.warning("cache claim lookup failed: %s", _kind(error))
        return found

    def release(self, names: Sequence[str], owner: str) -> None:
        try:
            with self._writing() as connection:
                for start in range(0, len(names), _CHUNK):
                    chunk = list(names[start : start + _CHUNK])
                    connection.execute(
                        claims.delete().where(claims.c.name.in_(chunk), claims.c.owner == owner)
                    )
        except SQLAlchemyError as error:  # the claims expire by themselves
            log.warning("cache claim release failed: %s", _kind(error))

    def size(self) -> int | None:
        """Fresh entries; None when the database cannot say right now."""
        oldest = self._clock() - self.ttl_seconds
        try:
            with self._engine.connect() as connection:
                return connection.execute(
                    select(func.count()).select_from(predictions).where(predictions.c.fetched_at >= oldest)
                ).scalar_one()
        except SQLAlchemyError as error:
            log.warning("cache size unavailable: %s", _kind(error))
            return None

    def ping(self) -> str:
        """``/health``: one round trip to the cache database; raises (its kind of failure) when down."""
        try:
            with self._engine.connect() as connection:
                connection.execute(select(1))
        except SQLAlchemyError as error:
            raise ConnectionError(f"cache database unreachable: {_kind(error)}") from None
        return f"reachable ({self.backend})"

    def names_starting(self, prefix: str, limit: int = 20) -> list[str]:
        """Fresh cached names that start with ``prefix`` (normalised), in order: for completions."""
        oldest = self._clock() - self.ttl_seconds
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        try:
            with self._engine.connect() as connection:
                rows = connection.execute(
                    select(predictions.c.name)
                    .where(predictions.c.name.like(pattern, escape="\\"), predictions.c.fetched_at >= oldest)
                    .order_by(predictions.c.name)
                    .limit(limit)
                )
                return [row.name for row in rows]
        except SQLAlchemyError as error:
            log.warning("cache completion failed: %s", _kind(error))
            return []

    def purge_expired(self) -> int:
        oldest = self._clock() - self.ttl_seconds
        try:
            with self._writing() as connection:
                return connection.execute(
                    predictions.delete().where(predictions.c.fetched_at < oldest)
                ).rowcount
        except SQLAlchemyError as error:
            log.warning("cache purge failed: %s", _kind(error))
            return 0


def _kind(error: SQLAlchemyError) -> str:
    """The driver's exception name when there is one (its message may hold the URL's password)."""
    return type(getattr(error, "orig", None) or error).__name__


def _answer(row) -> Answer:
    countries = tuple((str(code), float(probability)) for code, probability in json.loads(row.countries))
    return Answer(
        name=row.name,
        count=row.count,
        countries=countries,
        fetched_at=datetime.fromtimestamp(row.fetched_at, UTC),
        cached=True,
    )


def _sqlite_pragmas(connection, _record) -> None:
    # WAL: readers never wait for the writer, and two server processes can share one file.
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
