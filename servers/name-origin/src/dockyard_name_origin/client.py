"""The one way this server talks to nationalize.io: a request of up to 10 names, checked, retried, metered.

Every answer is checked before it is believed: the content type is JSON, the body is small, it parses, it
has nationalize's shape, and each answer names the name that was asked, in order. Anything else is an
upstream fault: reported, never passed through. The quota headers of every answer are kept
(:class:`QuotaLedger`), so a batch is never sent larger than the quota left (nationalize fails such a
batch as a whole) and nothing is sent at all while the quota is known to be spent.

The API key travels as the ``apikey`` query parameter, as nationalize wants; so no URL is ever logged or
put in an error (httpx's own request log is kept at WARNING), and an upstream's error text is scrubbed of
the key before it is quoted.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from dockyard_shared import InvalidArgument, PermissionDenied, Problem, UpstreamUnavailable
from dockyard_shared.offload import run_in_thread
from dockyard_shared.opened import Opened
from dockyard_shared.upstream import problem_for_status

from .models import Answer
from .quota import SERVICE, QuotaLedger, QuotaSpent
from .resilience import Backoff, CircuitBreaker, CircuitOpen, Deadline, GiveUp, retrying
from .upstream_values import MAX_COUNT, KeyScrubber, Rate, read_rate

if TYPE_CHECKING:  # httpx is imported by the first request (or the warm-up), not at start-up
    import httpx

__all__ = [
    "NationalizeClient",
    "QuotaLedger",
    "QuotaSpent",
    "UpstreamFault",
    "new_http_client",
    "parse_answers",
]

log = logging.getLogger("dockyard.name_origin")

TRANSIENT_STATUSES = frozenset({502, 503, 504})
# What nationalize documents besides 200: a refusal that says the service is up and answering.
REFUSALS = frozenset({401, 402, 422, 429})
_COUNTRY_ID = re.compile(r"^[A-Z]{2}$")
_MAX_COUNTRIES = 10  # nationalize sends 5 at most; more is not its answer
_PAUSED = f"{SERVICE} failed repeatedly, so requests to it are paused (circuit open)"


class UpstreamFault(Exception):
    """nationalize answered, but not with something to believe (``what`` says what was wrong)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _TransientStatus(Exception):
    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers


def new_http_client(
    *,
    connect_timeout: float,
    read_timeout: float,
    connections: int,
    user_agent: str,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The client every request goes through: pooled HTTP/1.1 keep-alive connections, explicit timeouts."""
    import httpx

    return httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
        limits=httpx.Limits(
            max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=30
        ),
        headers={"User-Agent": user_agent, "Accept": "application/json"},
    )


@dataclass(frozen=True)
class Request:
    names: tuple[str, ...]  # normalised, 1 to 10
    deadline: Deadline


class NationalizeClient:
    def __init__(
        self,
        *,
        api_url: str,
        api_key: str | None,
        key_env: str,
        http: Opened[httpx.AsyncClient],
        backoff: Backoff,
        breaker: CircuitBreaker,
        max_body_bytes: int,
        attempt_timeout: float,
        normalise: Callable[[str], str],
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        rng: Callable[[], float] = random.random,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.base_url = api_url.rstrip("/") + "/"
        # Where requests go, as the operator configured it (--api-url has no credentials or query): named
        # in every error about reaching it, so a wrong URL reads as a wrong URL, not as an outage.
        self.address = api_url.rstrip("/")
        self._api_key = api_key
        self._scrubber = KeyScrubber(api_key)
        self.key_env = key_env
        self.backoff = backoff
        self.breaker = breaker
        self.max_body_bytes = max_body_bytes
        self.attempt_timeout = attempt_timeout
        self._normalise = normalise
        self._sleep = sleep
        self._rng = rng
        self._now = now
        self.quota = QuotaLedger(now)
        # The one HTTP client, built by the warm-up or the first request (importing httpx and building its TLS
        # context would hold up the server's start) and closed by the server's lifespan.
        self.http = http
        self.requests_sent = 0
        self.last_failure: str | None = (
            None  # why the last failed request failed: said while the circuit is open
        )

    @property
    def has_key(self) -> bool:
        return self._api_key is not None

    def scrub(self, text: str) -> str:
        return self._scrubber(text)

    async def fetch(self, names: Sequence[str], deadline: Deadline) -> list[Answer]:
        """nationalize's answers for ``names`` (normalised, at most 10), in order.

        Raises a :class:`~dockyard_shared.problems.Problem`: :class:`QuotaSpent` (429), PermissionDenied
        (401/402), InvalidArgument (422), UpstreamUnavailable (down, faulty, circuit open, out of time).
        """
        try:
            return await self._fetch(Request(tuple(names), deadline))
        except Problem as problem:
            # Whatever nationalize wrote may quote the key in any encoding: scrub before anyone reads it.
            problem.what = self.scrub(problem.what)
            problem.next_step = self.scrub(problem.next_step) if problem.next_step else None
            # The operator's view of the same event (words only: never a URL, which holds the key).
            log.warning("%s: %s", type(problem).__name__, problem.what)
            raise

    async def _fetch(self, request: Request) -> list[Answer]:
        try:
            return await retrying(
                lambda: self._attempt(request),
                transient=_is_transient,
                backoff=self.backoff,
                deadline=request.deadline,
                sleep=self._sleep,
                rng=self._rng,
            )
        except CircuitOpen as open_circuit:
            raise self._circuit_problem(open_circuit.retry_in) from None
        except GiveUp as gave_up:
            raise self._unavailable(gave_up.last, attempts=gave_up.attempts) from None
        except UpstreamFault as fault:
            raise UpstreamUnavailable(
                f"{SERVICE} sent an answer that was discarded: {fault.what}.",
                next_step="Retry later; if it persists the service (or something between us) is misbehaving.",
            ) from None

    async def _attempt(self, request: Request) -> list[Answer]:
        import httpx

        http = self.http.if_open() or await run_in_thread(self.http.get)
        self.breaker.before_request()
        try:
            answers = await self._send(request, http)
        except (UpstreamFault, _TransientStatus, httpx.TransportError, TimeoutError) as error:
            self.last_failure = f"{SERVICE} {self._cause(error)}."
            self.breaker.record_failure(self.last_failure)
            raise
        except (PermissionDenied, InvalidArgument, QuotaSpent):
            self.breaker.record_success()  # a documented refusal: the service is up and answering
            raise
        except Problem:
            self.breaker.record_failure()  # a 5xx or an undocumented status: the service is failing
            raise
        except BaseException:
            self.breaker.release_trial()
            raise
        self.breaker.record_success()
        return answers

    async def _send(self, request: Request, http: httpx.AsyncClient) -> list[Answer]:
        import httpx

        names = request.names
        batch = len(names) > 1
        params = self._query(names, batch)
        if self._api_key:
            params.append(("apikey", self._api_key))
        self.requests_sent += 1
        with anyio.fail_after(max(0.001, min(self.attempt_timeout, request.deadline.remaining()))):
            async with http.stream("GET", self.base_url, params=params) as response:
                try:
                    body = await self._read_capped(response)
                except httpx.DecodingError:
                    raise UpstreamFault("its body could not be decoded") from None
        rate = read_rate(response.headers, self._now())
        self.quota.observe(rate)
        status = response.status_code
        log.debug("%s: %d name(s) -> HTTP %d", SERVICE, len(names), status)
        if status in TRANSIENT_STATUSES:
            raise _TransientStatus(status, response.headers)
        if status in REFUSALS or status >= 500:
            raise self._problem(status, rate, body, len(names))
        if status != 200:
            raise self._wrong_address(status, response.reason_phrase)
        try:
            return self._parse(body, response.headers.get("content-type", ""), names, batch)
        except (ValueError, TypeError, OverflowError, RecursionError) as error:
            # parse_answers checks every value it knows of; this is the net for what it did not foresee:
            # still an answer not to believe, for these names only, never the whole call's failure.
            raise UpstreamFault(f"it could not be read ({type(error).__name__})") from None

    def _query(self, names: tuple[str, ...], batch: bool) -> list[tuple[str, str]]:
        """The query parameters asking for ``names`` (a subclass for another Demografix API adds its own)."""
        return [("name[]", n) for n in names] if batch else [("name", names[0])]

    def _parse(self, body: bytes, content_type: str, names: tuple[str, ...], batch: bool) -> list:
        """The checked answers in ``body`` (a subclass for another Demografix API reads its own shape)."""
        return parse_answers(
            body, content_type, names, batch=batch, normalise=self._normalise, fetched_at=self._now()
        )

    async def _read_capped(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit():
            if len(declared) > 15:  # past any body, and past what int() converts without complaint
                raise UpstreamFault(f"its declared body of {len(declared)} digits' worth of bytes is absurd")
            if int(declared) > self.max_body_bytes:
                raise UpstreamFault(
                    f"its body of {int(declared):,} bytes is over the {self.max_body_bytes:,}-byte limit"
                )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise UpstreamFault(f"its body is over the {self.max_body_bytes:,}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks)

    def _problem(self, status: int, rate: Rate | None, body: bytes, count: int):
        detail = _error_text(body)
        problem = problem_for_status(
            status,
            service=SERVICE,
            what=f"looking up {count} name{'s' if count != 1 else ''}",
            headers=rate.as_headers() if rate else {},  # the checked figures, never the raw headers
            credential_env=self.key_env if (self._api_key or status in (401, 402)) else None,
            detail=self.scrub(detail) if detail else None,
        )
        if status == 429:
            if rate is None or rate.remaining in (None, 0):
                # Nothing fits any more: the ledger must say so even if the headers were missing.
                self.quota.observe_spent(rate)
            return QuotaSpent(
                problem.what + self.quota.clamp_note(),
                next_step=problem.next_step,
                reset_at=self.quota.retry_at(),
                remaining=rate.remaining if rate else None,
            )
        return problem

    def _wrong_address(self, status: int, reason: str) -> UpstreamUnavailable:
        """An HTTP status nationalize never sends (404, a redirect…): the configured URL is not its API."""
        said = f"HTTP {status} {reason}".strip()
        return UpstreamUnavailable(
            f"{SERVICE} at {self.address} (the server's --api-url) answered {said}, which nationalize's API "
            "never sends: that URL does not look like nationalize's API.",
            retryable=False,
            next_step="Retrying will not help. Tell the user to correct the server's --api-url (nationalize's "
            "own is https://api.nationalize.io) and restart it; cached names still answer meanwhile.",
        )

    def _cause(self, error: BaseException) -> str:
        """What went wrong with one attempt, after the service's name: 'did not answer in time'."""
        import httpx

        if isinstance(error, UpstreamFault):
            return f"sent an answer that was discarded: {error.what}"
        if isinstance(error, _TransientStatus):
            return f"answered HTTP {error.status}"
        if isinstance(error, (httpx.TimeoutException, TimeoutError)):
            return "did not answer in time"
        if isinstance(error, httpx.ConnectError):
            return f"could not be reached at {self.address}: {_connect_cause(error)}"
        return f"dropped the connection ({type(error).__name__})"

    def _unavailable(self, error: BaseException, *, attempts: int) -> UpstreamUnavailable:
        import httpx

        check = ""
        if isinstance(error, httpx.ConnectError):
            check = "; if it persists, tell the user to check the server's --api-url"
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        circuit = ""
        if self.breaker.retry_in() > 0:
            circuit = f" Requests are paused for {math.ceil(self.breaker.retry_in())} s to let it recover."
        return UpstreamUnavailable(
            f"{SERVICE} {self._cause(error)} ({tries}).{circuit}",
            next_step=f"Retry in a minute{check}; cached names still answer meanwhile.",
        )

    def _circuit_problem(self, retry_in: float) -> UpstreamUnavailable:
        # Another replica may have opened a shared circuit: its cause, then this one's own.
        cause = getattr(self.breaker, "shared_cause", None) or self.last_failure
        last = f" The last failure: {cause}" if cause else ""
        return UpstreamUnavailable(
            f"{_PAUSED}; the next try is allowed in {max(1, math.ceil(retry_in))} s.{last}",
            next_step="Retry after that; cached names still answer meanwhile.",
        )


def _connect_cause(error: BaseException) -> str:
    """Why a connection failed, in words: the operating system's error found under the client's wrapping."""
    import socket

    seen: BaseException | None = error
    for _ in range(8):  # the client library wraps the OS error two or three levels down
        if seen is None:
            break
        if isinstance(seen, socket.gaierror):
            return "its host name could not be resolved (DNS lookup failed)"
        if isinstance(seen, ConnectionRefusedError):
            return "the connection was refused (nothing listens at that address and port)"
        if isinstance(seen, OSError) and seen.errno is not None:
            return f"{seen.strerror or seen}".lower()
        seen = seen.__cause__ or seen.__context__
    return "the connection failed"


def _is_transient(error: BaseException) -> bool:
    import httpx

    return isinstance(error, (_TransientStatus, httpx.TransportError, TimeoutError))


def _error_text(body: bytes) -> str | None:
    """nationalize's ``{"error": "..."}`` text, if the body is that."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    text = value.get("error") if isinstance(value, dict) else None
    return str(text)[:200] if text else None


def answer_items(body: bytes, content_type: str, asked: Sequence[str], *, batch: bool) -> list:
    """The JSON items of a Demografix answer, one per name ``asked``, or :class:`UpstreamFault`: the
    checks nationalize.io, genderize.io and agify.io answers share before each item is read."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UpstreamFault(f"its content type was {media_type[:60] or 'missing'!r}, not JSON")
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise UpstreamFault("its body was not valid JSON") from None
    except RecursionError:
        raise UpstreamFault("its JSON was nested too deeply to be an answer") from None
    items = value if batch else [value]
    if not isinstance(items, list) or len(items) != len(asked):
        raise UpstreamFault(f"it did not hold one answer for each of the {len(asked)} names asked")
    return items


def parse_answers(
    body: bytes,
    content_type: str,
    asked: Sequence[str],
    *,
    batch: bool,
    normalise: Callable[[str], str],
    fetched_at: datetime,
) -> list[Answer]:
    """The answers in ``body`` for the names ``asked`` (normalised), or :class:`UpstreamFault`."""
    items = answer_items(body, content_type, asked, batch=batch)
    answers = []
    for position, (item, name) in enumerate(zip(items, asked, strict=True), start=1):
        answer = _answer(item, fetched_at)
        if answer is None:
            raise UpstreamFault(f"answer {position} did not have nationalize's shape")
        if normalise(answer.name) != name:
            raise UpstreamFault(f"answer {position} was for another name than the one asked")
        answers.append(Answer(name, answer.count, answer.countries, fetched_at))
    return answers


def _answer(item: object, fetched_at: datetime) -> Answer | None:
    if not isinstance(item, dict):
        return None
    name, count, countries = item.get("name"), item.get("count"), item.get("country")
    if not isinstance(name, str) or not isinstance(countries, list):
        return None
    if type(count) is not int or not 0 <= count <= MAX_COUNT:
        return None
    pairs = []
    for country in countries[:_MAX_COUNTRIES]:
        if not isinstance(country, dict):
            return None
        code, probability = country.get("country_id"), country.get("probability")
        if not isinstance(code, str) or not _COUNTRY_ID.match(code):
            return None
        if type(probability) not in (int, float) or not 0 <= probability <= 1:
            return None
        pairs.append((code, float(probability)))
    pairs.sort(key=lambda pair: -pair[1])
    return Answer(name, count, tuple(pairs), fetched_at)
