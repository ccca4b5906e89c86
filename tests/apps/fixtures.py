"""Fixtures for view tests (tests/apps/conftest.py exposes them; elsewhere ``from tests.apps.fixtures import
open_view, view_artifacts, view_browser, view_host, view_page_url``). See tests/apps/README.md."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apps.host import (
    BrowserThread,
    StaticServer,
    View,
    ViewHost,
    build_host_page,
    chromium_path,
    missing_tools,
)

# open_view(target, tool_name, arguments, *, era=..., host_context=..., viewport=...) -> View
OpenView = Callable[..., Awaitable[View]]


@pytest.fixture(scope="session")
def view_page_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test host page (bundled once per session) on a loopback static server."""
    reason = missing_tools()
    if reason is not None:
        if os.environ.get("CI"):  # CI installs them (.ci/run): a skip there would hide the view tests
            pytest.fail(f"view tests cannot run in CI: {reason}")
        pytest.skip(f"view tests need headless Chromium and the ext-apps SDK: {reason}")
    root = build_host_page(tmp_path_factory.mktemp("apps-host"))
    server = StaticServer(root)
    url = server.start()
    yield url
    server.close()


@pytest.fixture(scope="session")
def view_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``$DOCKYARD_TEST_ARTIFACTS/views`` (CI: .ci/.artifacts), else a temp folder."""
    base = os.environ.get("DOCKYARD_TEST_ARTIFACTS")
    folder = Path(base) / "views" if base else tmp_path_factory.mktemp("artifacts") / "views"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def view_browser(view_page_url: str) -> Iterator[BrowserThread]:
    """One headless Chromium (Debian's, through Playwright) for the session, on its own thread."""
    browser = BrowserThread(chromium_path() or "chromium").start()
    yield browser
    browser.stop()


@pytest.fixture
async def view_host(
    view_browser: BrowserThread, view_page_url: str, view_artifacts: Path
) -> AsyncIterator[ViewHost]:
    """The test host for one test; its views and the MCP clients it opened close when the test ends."""
    async with ViewHost(view_browser, view_page_url, view_artifacts) as host:
        yield host


@pytest.fixture
def open_view(view_host: ViewHost) -> OpenView:
    """``await open_view(target, tool_name, arguments, era=...)``: call the tool through MCP and render the
    view it names in Chromium; returns a :class:`tests.apps.host.View`.

    ``target``: a FastMCP server or an HTTP URL (a client declaring the UI extension is opened in ``era``),
    or an open FastMCP ``Client`` / SDK ``ClientSession`` / ``tests.harness.Session`` (used as it is)."""

    async def open_(
        target: Any, tool_name: str, arguments: dict[str, Any] | None = None, **kwargs: Any
    ) -> View:
        return await view_host.open(target, tool_name, arguments, **kwargs)

    return open_
