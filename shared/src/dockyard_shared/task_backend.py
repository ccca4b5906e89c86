"""Where MCP tasks (``--tasks``, :mod:`dockyard_shared.long_calls`) keep their state: the flags and their check.

This module imports neither FastMCP nor fastmcp-tasks: every server's settings use it, also when started
without ``--tasks``.

fastmcp-tasks runs tasks on Docket (pydocket), whose only backends are Redis (and what speaks its protocol:
Valkey, Sentinel, Cluster) and an in-process imitation of it (``memory://``). The default is in memory: a
task lives as long as the process, and only that process can answer for it. ``--tasks-url redis://…``
shares the state between replicas: a task started on one can be polled, and cancelled, on any other, and
whichever replica's worker is free runs it. Replicas of one deployment share a *queue* (the Redis key
prefix): ``--tasks-queue``, or by default a name the server derives from what makes it one deployment (the
tasks server: its database), so two deployments on one Redis never run each other's work.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .problems import InvalidArgument

__all__ = [
    "ENCRYPTION_KEY_ENV",
    "MEMORY",
    "TaskBackend",
    "add_task_backend_arguments",
    "deployment_digest",
    "task_backend_from",
]

MEMORY = "memory://"
#: fastmcp-tasks' own variable: the key its task snapshots (the caller's token and headers) are encrypted
#: with before they are written to the backend. Required for a shared backend (long_calls.py says why).
ENCRYPTION_KEY_ENV = "FASTMCP_TASKS_ENCRYPTION_KEY"
# The schemes Docket's RedisConnection accepts (docket/_redis.py), and its in-process backend.
_SCHEMES = ("redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "unix", "memory")
_QUEUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True)
class TaskBackend:
    """Where tasks live. ``url`` may hold a password: never log or return it (``shown`` hides it)."""

    url: str = MEMORY
    queue: str | None = None  # None: the server derives one (shared backends only)

    @property
    def shared(self) -> bool:
        return not self.url.startswith(MEMORY)

    @property
    def shown(self) -> str:
        """The URL without its credentials, for logs and /health."""
        parts = urlsplit(self.url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return f"{parts.scheme}://{host}{parts.path}"


def add_task_backend_arguments(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """``--tasks-url`` and ``--tasks-queue``, beside a server's own ``--tasks``."""
    group.add_argument(
        "--tasks-url",
        default=MEMORY,
        metavar="URL",
        help="with --tasks: where task state lives. memory:// keeps it in this process; redis://host:6379/0 "
        "(or rediss://, redis+sentinel://) shares it, so any replica polls, cancels and runs a task another "
        f"started (needs ${ENCRYPTION_KEY_ENV}, the same on every replica)",
    )
    group.add_argument(
        "--tasks-queue",
        default=None,
        metavar="NAME",
        help="with --tasks-url redis://…: the queue (key prefix) this deployment's replicas share (default: "
        "derived from what the replicas share, e.g. the database)",
    )


def task_backend_from(args: argparse.Namespace, *, distribution: str) -> TaskBackend:
    """The backend the flags ask for, or :class:`InvalidArgument` saying which is wrong; with ``--tasks``,
    also when fastmcp-tasks is not installed (the ``tasks`` extra of ``distribution``)."""
    if getattr(args, "tasks", False) and importlib.util.find_spec("fastmcp_tasks") is None:
        raise InvalidArgument(
            "--tasks serves the MCP tasks extension through fastmcp-tasks, which is not installed.",
            next_step=f"Install the server with its tasks extra: uv tool install '{distribution}[tasks]' (or "
            f"pip install '{distribution}[tasks]'; a workspace checkout: uv sync --all-packages), then start again.",
        )
    url = (getattr(args, "tasks_url", None) or MEMORY).strip()
    queue = getattr(args, "tasks_queue", None)
    scheme = urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise InvalidArgument(
            f"--tasks-url must be memory:// or a Redis URL (redis://, rediss://, redis+sentinel://, unix://), "
            f"not a {scheme or 'scheme-less'} URL.",
            next_step="Task state lives in Redis (Docket, the engine of fastmcp-tasks, has no other shared "
            "backend): e.g. --tasks-url redis://127.0.0.1:6379/0.",
        )
    if queue is not None and not _QUEUE.fullmatch(queue):
        raise InvalidArgument(
            "--tasks-queue must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit."
        )
    if queue is not None and url.startswith(MEMORY):
        raise InvalidArgument(
            "--tasks-queue names a queue shared through Redis; with --tasks-url memory:// there is none.",
            next_step="Add --tasks-url redis://…, or drop --tasks-queue.",
        )
    return TaskBackend(url=url, queue=queue)


def deployment_digest(identity: str) -> str:
    """A short, stable queue name for what makes replicas one deployment: a database URL without its user
    and password (replicas may sign in differently to the same database; a password is no name)."""
    parts = urlsplit(identity)
    if "@" in parts.netloc:
        identity = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl()
    return hashlib.sha256(identity.encode()).hexdigest()[:16]
