"""What the name-origin tests import: building the server against the fake, a clock to move by hand,
progress-aware calls, and the local PostgreSQL when there is one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from mcp import ClientSession

from dockyard_name_origin.server import create_server
from dockyard_name_origin.settings import Limits, Settings
from dockyard_shared.toolsets import Exposure
from tests.harness import Launch, Session, ToolOutcome, text_of
from tests.name_origin.fake_nationalize import prediction

# predict_origin and quota_status (the `details` toolset, off by default) are tested as features here;
# test_tools checks what the default flags serve.
DETAILS = Exposure(toolsets=("default", "details"))

# Short waits so retries and timeouts take milliseconds; the logic is the same at any scale.
FAST = Limits(
    backoff_base=0.01,
    backoff_cap=0.04,
    connect_timeout=1.0,
    read_timeout=0.5,
    request_deadline=5.0,
    call_deadline=60.0,
)


class ManualClock:
    """A monotonic clock that moves only when told to (the circuit breaker's)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_server(
    api_url: str,
    *,
    cache_url: str | None = None,
    api_key: str | None = None,
    offline: bool = False,
    exposure: Exposure | None = None,
    clock: ManualClock | None = None,
    tasks: bool = False,
    **limits: Any,
) -> FastMCP:
    settings = Settings(
        api_url=api_url,
        api_key=api_key,
        cache_url=cache_url,
        offline=offline,
        limits=replace(FAST, **limits),
        exposure=exposure or DETAILS,
        tasks=tasks,
    )
    return create_server(settings, clock=clock) if clock else create_server(settings)


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'cache.db'}"


def launch(api_url: str, data_dir: Path, *args: str, key: str | None = None) -> Launch:
    """The console script against ``api_url``, its default cache under ``data_dir``, with the ``details``
    toolset unless ``args`` choose toolsets."""
    env = {"XDG_DATA_HOME": str(data_dir), "NATIONALIZE_API_KEY": key or ""}
    chosen = () if "--toolsets" in args else ("--toolsets", "default,details")
    return Launch("dockyard-name-origin", ("--api-url", api_url, *chosen, *args), env=env)


def known_name(start: int = 0, *, at_least: int = 1) -> str:
    """A name the fake knows, with at least ``at_least`` records."""
    return next(
        name
        for i in range(start, start + 10_000)
        if prediction(name := f"given{i} family{i}")["count"] >= at_least
    )


def unknown_name() -> str:
    return next(name for i in range(10_000) if prediction(name := f"nobody{i}")["count"] == 0)


async def call_with_progress(
    session: Session, tool: str, arguments: dict[str, Any]
) -> tuple[ToolOutcome, list[tuple[float, float | None, str | None]]]:
    """Call ``tool`` asking for progress notifications; returns the outcome and every notification."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    client = session.raw
    if isinstance(client, ClientSession):
        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    else:
        result = await client.call_tool(tool, arguments, progress_handler=on_progress, raise_on_error=False)
    outcome = ToolOutcome(
        bool(result.is_error), text_of(result.content), result.structured_content, result.content
    )
    return outcome, seen


def status(item: dict[str, Any]) -> str:
    """A batch_predict item's status: the reply leaves it out when it is ok."""
    return item.get("status", "ok")
