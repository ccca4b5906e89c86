"""The quota ledger and the circuit breaker, shared by replicas through the PostgreSQL cache.

One row per API key in ``name_origin_limits`` (keyed by a SHA-256 fingerprint of the key, never the key):
what the upstream last said (remaining, limit, reset), the names reserved and not yet answered, and until
when the circuit is open and why. Every change is one single-row ``UPDATE … RETURNING``, atomic under
PostgreSQL's row lock, so replicas never grant the same name of quota twice:

- before a request, :meth:`SharedQuotaLedger.areserve` grants ``min(wanted, remaining - in_flight)``
  (everything while the quota is not known) and reads the circuit: one round-trip;
- after it, :meth:`SharedQuotaLedger.arelease` gives the unspent reservation back, merges what the
  upstream's headers said (within one window the lowest remaining wins) and opens the shared circuit if
  this replica's breaker opened: one round-trip.

So an upstream request costs two short statements on one row. Reservations of a replica that died are not
given back: the row forgets them when no replica has reserved for ``hold`` seconds (past the longest call),
and the upstream's next figures are the truth anyway. The database failing never stops a request: the
replica falls back to its own figures and says so in the log.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from dockyard_shared.offload import run_in_thread

from .quota import UNKNOWN_RESET_WAIT, QuotaLedger
from .resilience import CircuitBreaker, CircuitOpen, Clock

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["SharedBreaker", "SharedQuotaLedger", "key_fingerprint"]

log = logging.getLogger("dockyard.name_origin")

_UNKNOWN_WAIT = UNKNOWN_RESET_WAIT.total_seconds()
_SAME_WINDOW_SLACK = 60.0  # seconds: two answers whose resets are this close describe one window

# Every parameter cast: psycopg sends them typed by the server, and a NULL alone has no type to infer.
_TYPES = {
    "fp": "TEXT", "wanted": "INTEGER", "now": "DOUBLE PRECISION", "hold": "DOUBLE PRECISION",
    "seen": "BOOLEAN", "released": "INTEGER", "remaining": "INTEGER", "quota_limit": "INTEGER",
    "reset_at": "DOUBLE PRECISION", "observed_at": "DOUBLE PRECISION", "claimed_reset": "DOUBLE PRECISION",
    "open_until": "DOUBLE PRECISION", "cause": "TEXT",
}  # fmt: skip
_P = {name: f"CAST(:{name} AS {kind})" for name, kind in _TYPES.items()}

_LIVE = f"(CASE WHEN in_flight_until < {_P['now']} THEN 0 ELSE in_flight END)"
_FRESH = f"(remaining IS NOT NULL AND COALESCE(reset_at, observed_at + {_UNKNOWN_WAIT}) > {_P['now']})"
_GRANT = f"(CASE WHEN {_FRESH} THEN LEAST({_P['wanted']}, GREATEST(remaining - {_LIVE}, 0)) ELSE {_P['wanted']} END)"
_COLUMNS = "remaining, quota_limit, reset_at, observed_at, claimed_reset, in_flight, open_until, cause"
_ROW = f"WHERE key_fingerprint = {_P['fp']} RETURNING last_grant, {_COLUMNS}"

_CREATE = text(
    "INSERT INTO name_origin_limits (key_fingerprint, in_flight, in_flight_until, last_grant) "
    "VALUES (:fp, 0, 0, 0) ON CONFLICT (key_fingerprint) DO NOTHING"
)
# The SET expressions all read the row as it was before the statement, so last_grant and in_flight agree;
# a concurrent UPDATE waits on the row lock and then re-reads the row it changed.
_RESERVE = text(
    f"UPDATE name_origin_limits SET last_grant = {_GRANT}, in_flight = {_LIVE} + {_GRANT}, "
    f"in_flight_until = {_P['now']} + {_P['hold']} {_ROW}"
)
_SEEN = f"WHEN NOT {_P['seen']} THEN"
_SAME = (
    f"(remaining IS NOT NULL AND reset_at IS NOT NULL AND {_P['reset_at']} IS NOT NULL "
    f"AND {_P['reset_at']} <= reset_at + {_SAME_WINDOW_SLACK})"
)
_RELEASE = text(
    f"UPDATE name_origin_limits SET in_flight = GREATEST(0, in_flight - {_P['released']}), "
    # within one window the lowest figure wins: answers to concurrent requests arrive in any order
    f"remaining = CASE {_SEEN} remaining WHEN {_SAME} THEN LEAST(remaining, {_P['remaining']}) "
    f"ELSE {_P['remaining']} END, "
    f"quota_limit = CASE {_SEEN} quota_limit ELSE COALESCE({_P['quota_limit']}, quota_limit) END, "
    f"reset_at = CASE {_SEEN} reset_at ELSE {_P['reset_at']} END, "
    f"observed_at = CASE {_SEEN} observed_at ELSE {_P['observed_at']} END, "
    f"claimed_reset = CASE {_SEEN} claimed_reset ELSE {_P['claimed_reset']} END, "
    f"open_until = CASE WHEN {_P['open_until']} IS NULL THEN open_until "
    f"ELSE GREATEST(COALESCE(open_until, 0), {_P['open_until']}) END, "
    f"cause = COALESCE({_P['cause']}, cause) {_ROW}"
)
_READ = text(f"SELECT last_grant, {_COLUMNS} FROM name_origin_limits WHERE key_fingerprint = :fp")


def key_fingerprint(api_key: str | None) -> str:
    """What names the key's row: a hash, so the database never holds the key (no key: the free tier)."""
    return hashlib.sha256(b"dockyard-name-origin\0" + (api_key or "").encode()).hexdigest()


def _at(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else None


class SharedQuotaLedger(QuotaLedger):
    """A :class:`QuotaLedger` whose figures and reservations live in the key's row; the attributes are the
    row as of the last statement (each reservation, release or :meth:`refresh` reads it back)."""

    def __init__(
        self,
        engine: Engine,
        fingerprint: str,
        *,
        hold: float,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(now)
        self._engine = engine
        self._fp = fingerprint
        self._hold = hold
        self._wall = wall
        self._seen = False  # an observation not yet written to the row
        self.open_until: float | None = None  # the shared circuit, as of the last statement
        self.cause: str | None = None
        self.breaker: SharedBreaker | None = None  # set by the breaker: its opening travels with a release
        try:  # the row, made once by whichever replica comes first
            with engine.begin() as connection:
                connection.execute(_CREATE, {"fp": fingerprint})
        except SQLAlchemyError as error:  # each statement finds no row and this replica uses its own figures
            log.warning(
                "shared quota row not created: %s", type(getattr(error, "orig", None) or error).__name__
            )

    # -- what the client calls as answers arrive ----------------------------------------------------

    def observe(self, rate) -> None:
        before = (self.remaining, self.reset_at, self.observed_at)
        super().observe(rate)
        self._seen = self._seen or (self.remaining, self.reset_at, self.observed_at) != before

    def observe_spent(self, rate) -> None:
        super().observe_spent(rate)
        self._seen = True

    # -- the database ---------------------------------------------------------------------------------

    async def areserve(self, wanted: int) -> int:
        params = {"fp": self._fp, "wanted": wanted, "now": self._wall(), "hold": self._hold}
        row = await self._run(_RESERVE, params)
        if row is None:  # the database failed: this replica's own figures
            return self.reserve(wanted)
        return int(row.last_grant)

    async def arelease(self, reserved: int) -> None:
        params: dict = {"fp": self._fp, "released": reserved, "seen": self._seen}
        params |= {
            "remaining": self.remaining,
            "quota_limit": self.limit,
            "reset_at": self.reset_at.timestamp() if self.reset_at else None,
            "observed_at": self.observed_at.timestamp() if self.observed_at else None,
            "claimed_reset": self.claimed_reset,
        }
        opened = self.breaker.take_opening() if self.breaker is not None else None
        params["open_until"], params["cause"] = opened or (None, None)
        self._seen = False
        row = await self._run(_RELEASE, params)
        if row is None:
            self.release(reserved)
            if opened is not None and self.breaker is not None:
                self.breaker.put_back(opened)

    async def refresh(self) -> None:
        await self._run(_READ, {"fp": self._fp})

    async def _run(self, statement, params: dict):
        def run():
            with self._engine.begin() as connection:
                return connection.execute(statement, params).one_or_none()

        try:
            row = await run_in_thread(run)
        except SQLAlchemyError as error:
            log.warning(
                "shared quota row unavailable, using this replica's figures: %s",
                type(getattr(error, "orig", None) or error).__name__,
            )
            return None
        if row is not None:
            self._adopt(row)
        return row

    def _adopt(self, row) -> None:
        """The row's figures become this replica's (the row already holds this replica's news)."""
        self.remaining, self.limit = row.remaining, row.quota_limit
        self.reset_at, self.observed_at = _at(row.reset_at), _at(row.observed_at)
        self.claimed_reset = row.claimed_reset
        self._in_flight = row.in_flight
        self.open_until, self.cause = row.open_until, row.cause


class SharedBreaker(CircuitBreaker):
    """A :class:`CircuitBreaker` that also refuses while the key's row says the circuit is open (another
    replica saw the upstream fail), and writes its own opening there with the next release."""

    def __init__(
        self, ledger: SharedQuotaLedger, *, threshold: int, cooldown: float, clock: Clock, wall=time.time
    ) -> None:
        super().__init__(threshold=threshold, cooldown=cooldown, clock=clock)
        self._ledger = ledger
        self._wall = wall
        self._opening: tuple[float, str | None] | None = None
        self._cause: str | None = None
        ledger.breaker = self

    @property
    def shared_cause(self) -> str | None:
        return self._ledger.cause if self._shared_wait() > 0 else None

    def _shared_wait(self) -> float:
        until = self._ledger.open_until
        return max(0.0, until - self._wall()) if until is not None else 0.0

    def retry_in(self) -> float:
        return max(super().retry_in(), self._shared_wait())

    def before_request(self) -> None:
        if (wait := self._shared_wait()) > 0:
            raise CircuitOpen(wait)
        super().before_request()

    def record_failure(self, cause: str | None = None) -> None:
        was_open_for = super().retry_in()
        self._cause = cause or self._cause
        super().record_failure(cause)
        if (now_open_for := super().retry_in()) > was_open_for:  # it opened (or a trial failed) just now
            self._opening = (self._wall() + now_open_for, self._cause)

    def take_opening(self) -> tuple[float, str | None] | None:
        opening, self._opening = self._opening, None
        return opening

    def put_back(self, opening: tuple[float, str | None]) -> None:
        self._opening = self._opening or opening
