"""Configuration of the name-origin server: where nationalize.io is, the key, the cache and the limits."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

from dockyard_shared import InvalidArgument
from dockyard_shared.paths import user_data_dir
from dockyard_shared.task_backend import TaskBackend, add_task_backend_arguments, task_backend_from
from dockyard_shared.toolsets import Exposure, Toolset, exposure_from

__all__ = [
    "DEFAULT_API_URL",
    "DEFAULT_KEY_ENV",
    "TOOLSETS",
    "Limits",
    "Settings",
    "add_arguments",
    "default_cache_url",
    "settings_from",
]

DEFAULT_API_URL = "https://api.nationalize.io"
DEFAULT_KEY_ENV = "NATIONALIZE_API_KEY"
DEFAULT_GENDERIZE_URL = "https://api.genderize.io"
DEFAULT_AGIFY_URL = "https://api.agify.io"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

TOOLSETS = (
    Toolset(
        "predict", "batch_predict: where 1 to 1,000 names are most common, cached and batched", read_only=True
    ),
    # Off by default: every turn's listing pays for each tool served, and batch_predict answers one name
    # as well as many. predict_origin (the reference server's one-name tool, in full) and quota_status are
    # one flag away.
    Toolset(
        "details",
        "predict_origin: one name in full (every country, named, notes); quota_status: quota, circuit, cache",
        read_only=True,
        default=False,
    ),
    # Off by default: gender and age are sensitive attributes an operator opts into, and they spend the
    # same quota as origin (one key for all three Demografix APIs).
    Toolset(
        "traits",
        "predict_traits: gender (genderize.io), age (agify.io) or origin for names, e-mail addresses and "
        "handles, on the same key, quota and cache",
        read_only=True,
        default=False,
    ),
)


@dataclass(frozen=True)
class Limits:
    max_names: int = 1_000  # names per batch_predict call
    max_name_chars: int = 100
    upstream_batch: int = 10  # nationalize's own maximum of names per request
    concurrency: int = 4  # requests in flight at once: fast, and still polite to a free public API
    connect_timeout: float = 5.0
    read_timeout: float = 10.0  # between two reads of one answer
    request_deadline: float = 20.0  # one upstream request, its retries and their waits included
    call_deadline: float = 50.0  # one tool call, inside the ~60 s hosts wait: the rest is reported unfetched
    max_attempts: int = 4  # per request, for transient failures only
    backoff_base: float = 0.25  # seconds before the first retry, doubling, with jitter
    backoff_cap: float = 4.0
    breaker_threshold: int = 5  # consecutive upstream failures that open the circuit
    breaker_cooldown: float = 30.0  # seconds before one trial request is let through
    max_body_bytes: int = 64 * 1024  # a 10-name answer is about 3 KB
    max_reply_chars: int = 80_000  # one batch reply; about 20,000 tokens
    batch_countries: int = 3  # countries per name in a batch reply (predict_origin gives all)
    pool_connections: int = 8
    max_trait_names: int = 100  # inputs per predict_traits call: one reply, never paged


@dataclass(frozen=True)
class Settings:
    api_url: str = DEFAULT_API_URL
    genderize_url: str = DEFAULT_GENDERIZE_URL
    agify_url: str = DEFAULT_AGIFY_URL
    api_key_env: str = DEFAULT_KEY_ENV
    api_key: str | None = field(default=None, repr=False)  # never printed, logged or returned
    cache_url: str | None = field(default=None, repr=False)  # None: no cache; may hold a password
    cache_ttl_days: float = 30.0
    offline: bool = False
    tasks: bool = False  # serve the MCP tasks extension (dockyard_shared.long_calls)
    task_backend: TaskBackend = field(default_factory=TaskBackend)  # --tasks-url, --tasks-queue
    limits: Limits = field(default_factory=Limits)
    exposure: Exposure = field(default_factory=Exposure)


def default_cache_url() -> str:
    """SQLite in the user data directory (created when the cache opens)."""
    return f"sqlite:///{user_data_dir('name-origin') / 'cache.db'}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("nationalize.io")
    group.add_argument("--api-url", default=DEFAULT_API_URL, help="base URL of the nationalize API")
    group.add_argument("--genderize-url", default=DEFAULT_GENDERIZE_URL, help="base URL of the genderize API")
    group.add_argument("--agify-url", default=DEFAULT_AGIFY_URL, help="base URL of the agify API")
    group.add_argument(
        "--api-key-env",
        default=DEFAULT_KEY_ENV,
        metavar="NAME",
        help="environment variable holding the API key (unset: the free tier, about 100 names a day)",
    )
    cache = group.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-url",
        default=None,
        metavar="URL",
        help="SQLAlchemy URL of the prediction cache, e.g. postgresql://host/db to share it between "
        "replicas (default: SQLite in the user data directory)",
    )
    cache.add_argument("--no-cache", action="store_true", help="keep no cache (every name spends quota)")
    group.add_argument(
        "--cache-ttl", type=float, default=30.0, metavar="DAYS", help="how long a cached prediction is used"
    )
    group.add_argument(
        "--offline", action="store_true", help="answer from the cache only; never call nationalize.io"
    )
    parser.add_argument(
        "--tasks",
        action="store_true",
        help="serve the MCP tasks extension: a batch_predict that must ask nationalize.io runs as a task the "
        "client polls and can cancel (clients that declare it, 2026-07-28 protocol; others get plain calls)",
    )
    add_task_backend_arguments(parser)


def _base_url(value: str, flag: str, default: str) -> str:
    url = value.strip().rstrip("/")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.query or parsed.username:
        raise InvalidArgument(
            f"{flag} must be an http(s) URL without credentials or query, not {value!r}.",
            next_step=f"Use the default {default}, or a compatible service's base URL.",
        )
    return url


def settings_from(args: argparse.Namespace) -> Settings:
    api_url = _base_url(args.api_url, "--api-url", DEFAULT_API_URL)
    if not _ENV_NAME.match(args.api_key_env):
        raise InvalidArgument(
            f"--api-key-env must name an environment variable, not {args.api_key_env!r}.",
            next_step=f"Pass the variable's name (e.g. {DEFAULT_KEY_ENV}), never the key itself.",
        )
    if not args.cache_ttl > 0:
        raise InvalidArgument("--cache-ttl must be a positive number of days.")
    if args.offline and args.no_cache:
        raise InvalidArgument(
            "--offline answers from the cache only, so it cannot go with --no-cache.",
            next_step="Drop --no-cache (or --offline).",
        )
    cache_url = None if args.no_cache else (args.cache_url or default_cache_url())
    return Settings(
        api_url=api_url,
        genderize_url=_base_url(args.genderize_url, "--genderize-url", DEFAULT_GENDERIZE_URL),
        agify_url=_base_url(args.agify_url, "--agify-url", DEFAULT_AGIFY_URL),
        api_key_env=args.api_key_env,
        api_key=os.environ.get(args.api_key_env, "").strip() or None,
        cache_url=cache_url,
        cache_ttl_days=args.cache_ttl,
        offline=args.offline,
        tasks=args.tasks,
        task_backend=task_backend_from(args, distribution="dockyard-name-origin"),
        exposure=exposure_from(args),
    )
