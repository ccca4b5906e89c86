"""Headless Chromium for the view tests: the machine's Chromium through Playwright for Python, on a thread
of its own for the whole session, and the test host page (``node/``) bundled and served on loopback."""

from __future__ import annotations

import asyncio
import functools
import http.server
import inspect
import os
import shutil
import subprocess
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

NODE_DIR = Path(__file__).resolve().parent / "node"
T = TypeVar("T")


def chromium_path() -> str | None:
    """Debian's Chromium (``DOCKYARD_CHROMIUM`` overrides), or None."""
    configured = os.environ.get("DOCKYARD_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def missing_tools() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if chromium_path() is None:
        return "no Chromium (apt-get install chromium, or set DOCKYARD_CHROMIUM)"
    # esbuild's npm package installs a native binary: bundling needs no Node.js, only `npm ci` once.
    if (
        not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "ext-apps").is_dir()
        or not (NODE_DIR / "node_modules" / ".bin" / "esbuild").exists()
    ):
        return "tests/apps/node has no node_modules (bash tests/interop/prepare.sh, or npm ci there)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed (uv sync --all-packages)"
    return None


def build_host_page(into: Path) -> Path:
    """Bundle ``node/host.js`` with the SDK into ``into`` and copy ``host.html`` beside it."""
    into.mkdir(parents=True, exist_ok=True)
    esbuild = NODE_DIR / "node_modules" / ".bin" / "esbuild"
    subprocess.run(
        [
            str(esbuild),
            str(NODE_DIR / "host.js"),
            "--bundle",
            "--format=iife",
            "--platform=browser",
            "--target=chrome120",
            f"--outfile={into / 'host.js'}",
            "--log-level=warning",
        ],
        check=True,
        cwd=NODE_DIR,
        timeout=120,
    )
    shutil.copyfile(NODE_DIR / "host.html", into / "host.html")
    return into


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


@dataclass
class StaticServer:
    """The host page on a loopback port the OS chose; stops with :meth:`close`."""

    root: Path
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> str:
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/host.html"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class BrowserThread:
    """Playwright and one headless Chromium on their own thread and event loop, for the whole session.

    Starting Playwright's driver and Chromium costs seconds on a busy machine; sharing them across tests
    needs a loop that outlives each test's own (pytest-asyncio gives every test a new one). Each test gets
    a fresh browser context (no shared storage). Everything that touches Playwright runs here, through
    :meth:`run`; the MCP sessions stay on the test's loop.
    """

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="playwright", daemon=True)
        self._playwright: Any = None
        self.browser: Any = None

    def start(self, timeout_s: float = 120) -> BrowserThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(timeout_s)
        return self

    async def _start(self) -> None:
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        self.browser = await self._playwright.chromium.launch(executable_path=self.executable, headless=True)

    async def run(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()`` on the browser's loop from the test's loop."""

        async def go() -> T:
            return await make()

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(go(), self.loop))

    def stop(self, timeout_s: float = 60) -> None:
        async def close() -> None:
            if self.browser is not None:
                await self.browser.close()
            if self._playwright is not None:
                await self._playwright.stop()

        try:
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout_s)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout_s)


class RemoteLocator:
    """A Playwright ``Locator`` used from the test's loop: its async methods (``count()``, ``click()``,
    ``inner_text()``…) run on the browser's loop; ``first``, ``nth()``, ``locator()`` give RemoteLocators.
    (Not for ``playwright.async_api.expect``: use the View's ``wait_for_*`` methods.)"""

    def __init__(self, browser: BrowserThread, locator: Any) -> None:
        self._browser = browser
        self._locator = locator

    def _wrap(self, value: Any) -> Any:
        from playwright.async_api import Locator

        return RemoteLocator(self._browser, value) if isinstance(value, Locator) else value

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._locator, name)
        if not callable(value):
            return self._wrap(value)

        def call(*args: Any, **kwargs: Any) -> Any:
            outcome = value(*args, **kwargs)  # an async method only builds its coroutine here
            if inspect.isawaitable(outcome):
                return self._browser.run(lambda: outcome)
            return self._wrap(outcome)

        return call
