"""Configuration of the tasks server: which database, who acts, which tools, and the limits."""

from __future__ import annotations

import argparse
import getpass
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dockyard_shared import InvalidArgument
from dockyard_shared.paths import user_data_dir
from dockyard_shared.signin import signs_in
from dockyard_shared.task_backend import TaskBackend, add_task_backend_arguments, task_backend_from
from dockyard_shared.toolsets import Exposure, Toolset, exposure_from

from .rules import check_name

if TYPE_CHECKING:
    from .store import StoreLimits

# The entry point imports this module (and so does `dockyard list`): the store, SQLAlchemy and Alembic
# are imported only when a server is built, and then only when its database needs them (opening.py).

__all__ = [
    "ACTORS_ENV",
    "GITHUB",
    "MANAGE",
    "READ",
    "TOOLSETS",
    "WRITE",
    "Settings",
    "SubscriptionLimits",
    "default_database_url",
    "demo_database_url",
    "settings_from",
]

READ = Toolset("read", "list_projects, list_tasks, get_task, next_task, show_board", read_only=True)
WRITE = Toolset("write", "create_task, update_task_status, add_comment, update_checklist", read_only=False)
# Off by default: every turn's tool listing pays for each tool served, and the everyday job (find, read,
# start, finish, comment, add a task) needs none of these. `--toolsets all` serves them.
MANAGE = Toolset(
    "manage",
    "update_task, create_tasks, create_project, dependencies, move_tasks, changes_since, export/import; delete asks the user",
    read_only=False,
    default=False,
)
# Off by default, and only with a token (the git server's rule): GitHub issues imported as tasks.
GITHUB = Toolset(
    "github", "import a repository's GitHub issues as tasks (needs a token)", False, default=False
)
TOOLSETS = (READ, WRITE, MANAGE, GITHUB)

# A JSON file {"token": "actor", ...}: over HTTP each bearer token acts as its own actor.
# With --auth jwt, these scopes pick the tools a signed-in caller may use (read-only tools, or all).
READ_SCOPE = "tasks:read"
WRITE_SCOPE = "tasks:write"
ACTORS_ENV = "DOCKYARD_TASKS_ACTORS"


@dataclass(frozen=True)
class SubscriptionLimits:
    """What resource subscriptions may hold (``subscriptions.py``); each refusal names its flag."""

    uris_per_subscriber: int = 1_000  # URIs one listen stream, or one 2025-11-25 session, may watch
    streams_per_client: int = 16  # open subscriptions/listen streams per client address
    streams: int = 256  # open subscriptions/listen streams in all
    uris: int = 100_000  # watched URIs in all, every stream and session counted


@dataclass(frozen=True)
class Settings:
    database_url: str
    actor: str = "model"
    # bearer token → actor, over HTTP (--actors); empty: everyone acts as `actor`.
    actors: Mapping[str, str] = field(default_factory=dict)
    # --auth jwt: callers sign in; their token's actor claim is the actor, its scopes pick the tools.
    signed_in: bool = False
    demo: bool = False
    exposure: Exposure = field(default_factory=Exposure)
    limits: StoreLimits | None = None  # None: the store's defaults
    subscriptions: SubscriptionLimits = field(default_factory=SubscriptionLimits)
    # Database safety (--statement-timeout, --allow-shared-file): see add_arguments.
    statement_timeout_s: float = 10.0
    allow_shared_file: bool = False
    # The github toolset (github.py): the token is read from the variable named, never logged.
    github_token: str | None = field(default=None, repr=False)
    github_token_env: str = "GITHUB_TOKEN"
    github_api_url: str = "https://api.github.com"
    # --max-writes-per-minute: each actor's write calls, shared by every replica (write_limits.py); None: off.
    max_writes_per_minute: int | None = None
    # --tasks: a large import_project runs as an MCP task (long_imports.py); its state where --tasks-url says.
    tasks: bool = False
    task_backend: TaskBackend = field(default_factory=TaskBackend)


def default_database_url() -> str:
    """The embedded default: a SQLite file in the user's data directory."""
    return f"sqlite:///{user_data_dir('tasks') / 'tasks.db'}"


def demo_database_url() -> str:
    """The sample tracker ``dockyard serve all`` serves, apart from the user's own (as sqlite's demo is)."""
    return f"sqlite:///{user_data_dir('tasks') / 'demo.db'}"


def _default_actor() -> str:
    try:
        return getpass.getuser() or "model"
    except Exception:  # no login name (a container without a passwd entry)
        return "model"


def read_actors(path: str) -> dict[str, str]:
    try:
        raw = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InvalidArgument(
            f"Cannot read the actor map {path}: {error}.",
            next_step='Give a JSON file like {"<token>": "alice", "<other token>": "bob"}.',
        ) from None
    if not isinstance(raw, dict) or not raw:
        raise InvalidArgument(f"The actor map {path} must be a non-empty JSON object of token → actor.")
    actors = {}
    for token, actor in raw.items():
        if not isinstance(token, str) or len(token) < 16:
            raise InvalidArgument(f"A token in {path} is shorter than 16 characters: too easy to guess.")
        actors[token] = check_name(actor, field="actor")
    return actors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tasks")
    group.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="sqlite:///path/to/tasks.db or postgresql://user@host/db (default: a SQLite file in the "
        "user data directory)",
    )
    group.add_argument(
        "--actor", default=None, help="who the changes are recorded as (default: the login name)"
    )
    group.add_argument(
        "--actors",
        default=os.environ.get(ACTORS_ENV),
        metavar="FILE",
        help=f"over HTTP: a JSON file mapping bearer tokens to actors, each token acting as its actor "
        f"(default: ${ACTORS_ENV}); replaces --auth-token",
    )
    group.add_argument(
        "--demo", action="store_true", help="add the sample project TASK (if absent) to the database"
    )
    defaults = SubscriptionLimits()
    for flag, default, help in (
        (
            "--max-subscription-uris",
            defaults.uris_per_subscriber,
            "resources one subscriptions/listen stream, or one 2025-11-25 session, may subscribe to",
        ),
        (
            "--max-listen-streams-per-client",
            defaults.streams_per_client,
            "open subscriptions/listen streams one client address may hold",
        ),
        ("--max-listen-streams", defaults.streams, "open subscriptions/listen streams in all"),
        (
            "--max-subscribed-uris",
            defaults.uris,
            "resource subscriptions in all, every stream and session counted",
        ),
    ):
        group.add_argument(flag, type=_positive_int, default=default, metavar="N", help=help)
    # Database safety: a bound on each PostgreSQL statement; one process per SQLite file.
    group.add_argument(
        "--statement-timeout",
        type=_positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="PostgreSQL: the longest one statement, or its wait for a lock, may take before it is "
        "cancelled and the call fails with nothing saved (default: 10)",
    )
    group.add_argument(
        "--github-token-env",
        default="GITHUB_TOKEN",
        metavar="NAME",
        help="environment variable holding a GitHub token; the github toolset (import_github_issues, off "
        "by default: --toolsets default,github) needs it",
    )
    group.add_argument(
        "--github-api-url",
        default="https://api.github.com",
        metavar="URL",
        help="GitHub (Enterprise) API URL",
    )
    group.add_argument(
        "--max-writes-per-minute",
        type=_positive_int,
        default=None,
        metavar="N",
        help="each actor's write calls a minute, counted in the database across every replica; a call "
        "over it is refused, saying when to retry (default: no limit)",
    )
    group.add_argument(
        "--allow-shared-file",
        action="store_true",
        help="SQLite: serve a file another dockyard-tasks process is already serving (its subscribers "
        "will not hear this process's changes; replicas need PostgreSQL)",
    )
    add_tasks_arguments(parser)


def add_tasks_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MCP tasks")
    group.add_argument(
        "--tasks",
        action="store_true",
        help="serve the MCP tasks extension: an import_project of 500 tasks or more runs as a task the client "
        "polls and can cancel, nothing saved (clients that declare it, 2026-07-28; others get plain calls)",
    )
    add_task_backend_arguments(group)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("give a number of seconds above 0 and at most 3600")
    return value


def database_url(url: str) -> str:
    """``url`` as the store uses it, or InvalidArgument saying why not. A plain ``sqlite:///path`` is that
    already; any other URL is parsed and normalised by SQLAlchemy's parser, imported for it."""
    from .migrations.ready import simple_sqlite_path

    if simple_sqlite_path(url) is not None:
        return url
    from .store.engine import normalise_url

    return normalise_url(url)


def settings_from(args: argparse.Namespace) -> Settings:
    url = database_url(args.database_url) if args.database_url else default_database_url()
    actor = check_name(args.actor, field="--actor") if args.actor else _default_actor()
    actors = read_actors(args.actors) if getattr(args, "actors", None) else {}
    if actors and signs_in(args):
        raise InvalidArgument(
            f"--actors and --auth {args.auth} both set who may call.",
            next_step=f"Use one: --auth {args.auth} signs people in with the identity provider.",
        )
    if actors and getattr(args, "auth_token", None):
        raise InvalidArgument(
            "--actors and --auth-token both set the bearer token.",
            next_step="Use one: --actors gives each person a token of their own.",
        )
    subscriptions = SubscriptionLimits(
        uris_per_subscriber=args.max_subscription_uris,
        streams_per_client=args.max_listen_streams_per_client,
        streams=args.max_listen_streams,
        uris=args.max_subscribed_uris,
    )
    return Settings(
        database_url=url,
        actor=actor,
        actors=actors,
        signed_in=signs_in(args),
        demo=args.demo,
        exposure=exposure_from(args),
        subscriptions=subscriptions,
        statement_timeout_s=getattr(args, "statement_timeout", 10.0),
        allow_shared_file=getattr(args, "allow_shared_file", False),
        github_token=os.environ.get(getattr(args, "github_token_env", "GITHUB_TOKEN")) or None,
        github_token_env=getattr(args, "github_token_env", "GITHUB_TOKEN"),
        github_api_url=getattr(args, "github_api_url", "https://api.github.com"),
        max_writes_per_minute=getattr(args, "max_writes_per_minute", None),
        tasks=getattr(args, "tasks", False),
        task_backend=task_backend_from(args, distribution="dockyard-tasks"),
    )
