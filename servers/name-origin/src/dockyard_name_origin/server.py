"""The MCP face of dockyard-name-origin: the ``predict`` toolset, the ISO 3166 resource and a prompt.

The server uses one ``httpx.AsyncClient`` for as long as it runs (pooled HTTP/1.1 keep-alive connections,
explicit timeouts), instead of a client, a TCP and a TLS handshake per call. It is an ``Opened`` handle
handed to the nationalize client: built by the warm-up or the first request (not before ``initialize``:
importing httpx and building a TLS context are a fair part of a start), closed by the lifespan when the
server stops. The cache is one too: the default one (a SQLite file this server chooses) opens on first use;
a ``--cache-url`` the operator gave opens at start, so a wrong or unreachable one stops the server with the
reason (should the default one fail to open later, the call that needed it says why, in the same words).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP
from fastmcp.server.lifespan import lifespan

from dockyard_shared.observe import add_gauge, add_health_check
from dockyard_shared.opened import Opened
from dockyard_shared.server import complete_arguments, new_server
from dockyard_shared.toolsets import install, prompt
from dockyard_shared.warmup import after_initialize

from .client import NationalizeClient, new_http_client
from .countries import country_table
from .demografix import DemografixClient
from .predict import Predictor, normalise
from .resilience import Backoff, BreakerState, CircuitBreaker, Clock
from .settings import TOOLSETS, Settings, default_cache_url
from .toolsets import predict as predict_tools
from .toolsets import traits as trait_tools
from .traits import TraitPredictor

if TYPE_CHECKING:  # httpx and SQLAlchemy are imported by the first call or the warm-up, not at start-up
    import httpx

    from .cache import PredictionCache

__all__ = ["create_server"]

# Counted on every turn with the listing: only what no tool description says.
INSTRUCTIONS = "A prediction describes a name, never a person: see the interpret_name_origin prompt."

INTERPRET = """You are interpreting name-origin predictions from nationalize.io{about}. Do it responsibly:

1. Get the predictions with the dockyard-name-origin tools: batch_predict for one name or several (one
   call); predict_origin, where served, gives one name's every country. A surname or full name says much
   more than a first name.
2. Read every prediction as a statement about a name: how people bearing it are spread over countries in
   nationalize's records. It is not a fact about any person. Anyone can bear any name: migration, marriage,
   adoption and transliteration make a name a weak signal about an individual.
3. Report probabilities with their sample size (count) and confidence label. With confidence "low" or
   "none", say that there is too little data to say anything; never round a 0.3 up to "is from".
4. Do not infer or state an individual's nationality, ethnicity, religion, immigration status or any other
   protected attribute, and do not use these predictions to decide anything about a person (hiring,
   lending, housing, policing, eligibility) or to single out, profile or target people. If asked to, decline
   and explain why.
5. Aggregate, statistical uses are the fitting ones (how diverse the names in a dataset are, which
   languages a list of names suggests for localisation), stated with their uncertainty.
6. nationalize's records are uneven between countries: say so when a result may reflect that.
7. Gender and age (predict_traits, from genderize.io and agify.io) are the same kind of statement: the share
   of a given name's records marked male or female, and a typical age of its bearers. They never tell a
   person's gender or age: never assign either to someone, never address or classify a person by it; a
   person's own word overrides any prediction. genderize knows only "male" and "female": say that
   non-binary people are not represented. State probability and count; low_sample means too little data.
8. An input parsed from an e-mail address or handle is a guess twice over (the parse, then the name): say
   what it was read as (the parse field) and give its lowered confidence; never read digits as a birth year."""

log = logging.getLogger("dockyard.name_origin")


def create_server(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock = time.monotonic,
) -> FastMCP:
    """The server for ``settings``. ``transport`` replaces the HTTP transport of the one client (tests,
    proxies); ``clock`` is the circuit breaker's."""
    limits = settings.limits
    cache = None
    if settings.cache_url:
        cache = Opened(partial(_open_cache, settings.cache_url, settings.cache_ttl_days))
        if settings.cache_url != default_cache_url():
            cache.get()

    def open_http_client() -> httpx.AsyncClient:
        return new_http_client(
            connect_timeout=limits.connect_timeout,
            read_timeout=limits.read_timeout,
            connections=limits.pool_connections,
            user_agent=f"dockyard-name-origin/{_version()}",
            transport=transport,
        )

    http = Opened(open_http_client)
    upstream = None
    if not settings.offline:
        upstream = NationalizeClient(
            api_url=settings.api_url,
            api_key=settings.api_key,
            key_env=settings.api_key_env,
            http=http,
            backoff=Backoff(limits.backoff_base, limits.backoff_cap, limits.max_attempts),
            breaker=CircuitBreaker(
                threshold=limits.breaker_threshold, cooldown=limits.breaker_cooldown, clock=clock
            ),
            max_body_bytes=limits.max_body_bytes,
            attempt_timeout=limits.connect_timeout + limits.read_timeout,
            normalise=normalise,
        )
    if upstream is not None and cache is not None and cache.is_open and cache.get().backend == "postgresql":
        _share_limits(upstream, cache.get().engine, settings, clock)  # replicas on one key: one ledger
    predictor = Predictor(upstream=upstream, cache=cache, limits=limits, key_env=settings.api_key_env)
    traits = TraitPredictor(
        clients=_trait_clients(settings, upstream, http, clock), origin=predictor, cache=cache, limits=limits
    )
    # nationalize wants the key in the URL: httpx logs every request's URL at INFO, and httpcore logs the
    # headers of every answer at DEBUG (a redirect's Location repeats the query, key and all).
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)

    @lifespan
    async def close_http_client(server: FastMCP) -> AsyncIterator[dict]:
        try:
            yield {}
        finally:
            await http.aclose()  # a later session (in-memory clients) builds a new one on first use

    server = new_server(
        "dockyard-name-origin",
        instructions=INSTRUCTIONS,
        distribution="dockyard-name-origin",
        lifespan=close_http_client,
    )
    task = _serve_tasks(server, predictor, settings) if settings.tasks else None
    predict_set, details_set, traits_set = TOOLSETS
    install(
        server,
        settings.exposure,
        {
            predict_set: partial(predict_tools.register, predictor=predictor, task=task),
            details_set: partial(predict_tools.register_details, predictor=predictor),
            traits_set: partial(trait_tools.register, traits=traits),
        },
    )
    if upstream is not None:
        after_initialize(server, http.get)
    # pycountry reads its ISO 3166 database on first use: 2-3 ms of the first prediction, which names
    # each country.
    after_initialize(server, country_table)
    if cache is not None and not cache.is_open:
        after_initialize(server, cache.get)

    @server.resource("iso3166://countries", mime_type="application/json")
    def countries() -> dict[str, str]:
        """ISO 3166-1 alpha-2 country codes (the country_id of predictions) and their English short names."""
        return country_table()

    @prompt(server)
    def interpret_name_origin(names: str = "") -> str:
        """Interpret name-origin predictions responsibly: probabilities about a name, not facts about a person."""
        about = f" for: {' '.join(names.split())[:500]}" if names.strip() else ""
        return INTERPRET.format(about=about)

    async def complete(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        """The prompt's ``names``: the last comma-separated entry completed from the cached names."""
        if argument != "names":
            return []
        head, comma, last = value.rpartition(",")
        lead = f"{head}, " if comma else ""
        return [lead + name for name in await predictor.cached_names(last)]

    complete_arguments(server, complete)
    observe(server, cache, upstream)
    return server


def _trait_clients(
    settings: Settings, upstream: NationalizeClient | None, http: Opened, clock: Clock
) -> dict | None:
    """genderize and agify clients sharing the nationalize client's key, HTTP client and quota ledger."""
    if upstream is None:
        return None
    limits = settings.limits
    clients = {}
    for kind, url in (("gender", settings.genderize_url), ("age", settings.agify_url)):
        client = DemografixClient(
            kind,
            api_url=url,
            api_key=settings.api_key,
            key_env=settings.api_key_env,
            http=http,
            backoff=Backoff(limits.backoff_base, limits.backoff_cap, limits.max_attempts),
            breaker=CircuitBreaker(
                threshold=limits.breaker_threshold, cooldown=limits.breaker_cooldown, clock=clock
            ),
            max_body_bytes=limits.max_body_bytes,
            attempt_timeout=limits.connect_timeout + limits.read_timeout,
            normalise=normalise,
        )
        client.quota = upstream.quota  # one key, one quota for all three Demografix APIs
        clients[kind] = client
    return clients


def observe(
    server: FastMCP, cache: Opened[PredictionCache] | None, upstream: NationalizeClient | None
) -> None:
    """What ``/health`` and ``/metrics`` report: the cache database (required: every answer goes through
    it), the upstream's circuit and quota (optional: cached names are still answered without it)."""
    if cache is not None:
        add_health_check(
            server, "cache", lambda: cache.get().ping() if cache.is_open else "opens on first use"
        )
    if upstream is None:
        return
    add_health_check(server, "upstream", lambda: upstream_state(upstream), required=False)
    add_gauge(
        server,
        "upstream_quota_remaining",
        "Names the upstream (nationalize.io) said are left in its quota window",
        lambda: upstream.quota.remaining,
    )
    add_gauge(
        server,
        "upstream_circuit_open",
        "1 while the circuit breaker stops requests to the upstream, else 0",
        lambda: float(upstream.breaker.state == BreakerState.OPEN),
    )


def upstream_state(upstream: NationalizeClient) -> str:
    quota = upstream.quota
    left = "quota unknown yet" if quota.remaining is None else f"quota left {quota.remaining}"
    if quota.limit is not None and quota.remaining is not None:
        left += f" of {quota.limit}"
    state = upstream.breaker.state
    if state == BreakerState.OPEN:
        raise ConnectionError(
            f"circuit open after repeated failures of {upstream.address}; next try in "
            f"{upstream.breaker.retry_in():.0f} s ({left})"
        )
    return f"circuit {state.value.replace('_', ' ')}, {left}"


def _share_limits(upstream: NationalizeClient, engine, settings: Settings, clock: Clock) -> None:
    """The quota ledger and the circuit in the shared database's row for the key (shared_limits.py)."""
    from .shared_limits import SharedBreaker, SharedQuotaLedger, key_fingerprint

    limits = settings.limits
    hold = limits.call_deadline + limits.request_deadline  # past the longest call: then a lost reservation
    ledger = SharedQuotaLedger(engine, key_fingerprint(settings.api_key), hold=hold)
    upstream.quota = ledger
    upstream.breaker = SharedBreaker(
        ledger, threshold=limits.breaker_threshold, cooldown=limits.breaker_cooldown, clock=clock
    )


def _serve_tasks(server: FastMCP, predictor: Predictor, settings: Settings) -> Any:
    """Serve the tasks extension (``--tasks``); return batch_predict's task configuration. A batch runs as
    a task only when it must ask nationalize.io: names the cache answers come back at once. On a shared
    backend the replicas sharing a cache (--cache-url) share a queue."""
    from dockyard_shared.long_calls import LongCalls, task_config  # pydocket: only with --tasks

    long_calls = LongCalls(
        "dockyard-name-origin", backend=settings.task_backend, deployment=settings.cache_url or ""
    )

    async def must_fetch(arguments: Mapping[str, Any]) -> bool:
        names, offset = arguments["names"], arguments.get("offset") or 0
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            return False  # the tool refuses them, in place
        return await predictor.names_to_fetch(names, int(offset)) > 0

    long_calls.decide("batch_predict", must_fetch)
    long_calls.report_health(server)
    server.add_extension(long_calls)
    return task_config()


def _open_cache(url: str, ttl_days: float) -> PredictionCache:
    from .cache import PredictionCache  # SQLAlchemy: imported when the cache opens

    return PredictionCache.open(url, ttl_days=ttl_days)


def _version() -> str:
    try:
        return version("dockyard-name-origin")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled checkout
        return "0"
