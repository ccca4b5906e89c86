"""Each tool's listed schemas, built once per installation instead of once per process.

Why: FastMCP builds a tool's input and output JSON schemas when the tool is registered: pydantic walks the
function's signature and its return model, for every tool, in every process, before the server can answer
``initialize``. That is 1–3 ms a tool, most of dockyard-tasks' own start-up work (16 tools) and a third of
dockyard-git's (bench/startup). The schemas change only when the code or the libraries that shape them do.

How: :class:`ToolSchemas` keeps, per server, a JSON file in the user's cache folder
(:func:`~dockyard_shared.paths.user_cache_dir`) holding, for each tool, the description, input schema and
output schema FastMCP built for it. A tool found there is made as FastMCP's ``FunctionTool.from_function``
makes it (the same function, the same fields) without building its schemas; a tool not found is built by
``from_function`` itself and added to the file. What shapes a schema is part of the key, so an entry is
only ever found by the code that built it:

- the file's name carries the Python environment (each keeps its own file), Python's version and, for
  FastMCP, pydantic, pydantic-core and the MCP SDK, the size and modification time of the package's
  ``__init__.py`` (an upgrade rewrites it);
- each entry's key carries the size and modification time of every module of the package the tool is
  defined in and of dockyard_shared (as Python checks bytecode against its source: an edit to a model
  makes new keys), and the tool's own inputs: its module and name, its signature as Python prints it
  (types, ``Field`` constraints, defaults, whatever a closure put there), its docstring and its
  registration options.

Argument validation never reads the cached schemas: FastMCP builds a tool's validator from the function
itself. The file is the user's own (mode 0600, in their cache folder), as trusted as their configuration. ``DOCKYARD_SCHEMA_CACHE=off`` turns the cache off. A cache that cannot be read or written is
rebuilt or skipped, with a debug line; it never stops a server.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_type_hints

from fastmcp.server.dependencies import transform_context_annotations
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.tasks import TaskConfig
from mcp_types import ToolAnnotations

from .paths import user_cache_dir

__all__ = ["OFF_SWITCH", "ToolSchemas"]

log = logging.getLogger("dockyard.tool_schemas")

OFF_SWITCH = "DOCKYARD_SCHEMA_CACHE"  # "off" turns the cache off

# The libraries whose versions shape a schema: FastMCP's schema passes, pydantic's generator, the SDK's types.
_LIBRARIES = ("fastmcp", "pydantic", "pydantic_core", "mcp", "mcp_types")
# Registration options a cached tool is made with; a tool given any other is always built by FastMCP.
_OPTIONS = frozenset({"name", "title", "description", "annotations", "tags", "meta", "timeout"})
_FORMAT = 2  # bumped when what an entry holds changes
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class ToolSchemas:
    """The tools of one server, made from cached schemas where the cache has them (see the module)."""

    def __init__(self, server: str, folder: Path) -> None:
        self._server = server
        self._folder = folder
        self._path: Path | None = None
        self._entries: dict[str, dict[str, Any]] = {}
        self._changed = False
        self._packages: dict[str, str] = {}  # package -> fingerprint of its module files, once per build

    @classmethod
    def for_server(cls, server: str) -> ToolSchemas | None:
        """The cache of ``server`` in the user's cache folder; None when ``DOCKYARD_SCHEMA_CACHE=off``
        (FastMCP's own ``server.tool`` then registers every tool)."""
        if os.environ.get(OFF_SWITCH, "").strip().lower() in {"off", "0", "false", "no"}:
            return None
        return cls(server, user_cache_dir() / "tool-schemas")

    def tool(self, fn: Callable[..., Any], options: Mapping[str, Any]) -> FunctionTool | None:
        """The tool FastMCP's ``server.tool(fn, **options)`` would register, made from the cache when it
        holds it and added to the cache when not. None when the cache does not serve this tool (options it
        does not mirror, hints that do not resolve, a source file gone mid-walk): register it with
        ``server.tool`` then, as without the cache."""
        if not set(options) <= _OPTIONS:
            return None
        options = dict(options)
        if isinstance(options.get("annotations"), dict):
            options["annotations"] = ToolAnnotations(**options["annotations"])
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception:  # hints FastMCP resolves as far as it can, and reports itself
            return None
        try:
            key = self._key(fn, hints, options)
            entry = self._load().get(key)
        except OSError as error:  # a module file gone mid-walk (an upgrade under a running host)
            log.debug("tool schema cache skipped for %s: %s", fn.__qualname__, error)
            return None
        if entry is not None:
            try:
                return _made_from(fn, hints, options, entry)
            except (KeyError, TypeError, ValueError) as error:  # an entry not written by this code
                log.debug("tool schema cache entry for %s unusable, rebuilt: %s", fn.__qualname__, error)
        tool = FunctionTool.from_function(fn, task=False, **options)
        self._entries[key] = {
            "description": tool.description,
            "parameters": tool.parameters,
            "output_schema": tool.output_schema,
            # What the entry was built from, so save() can drop it once that source has changed.
            "packages": {package: self._packages[package] for package in _packages_of(fn)},
        }
        self._changed = True
        return tool

    def _key(self, fn: Callable[..., Any], hints: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        packages = _packages_of(fn)
        for package in packages:
            if package not in self._packages:
                self._packages[package] = _package_fingerprint(package)
        inputs = (
            fn.__module__,
            fn.__qualname__,
            str(inspect.signature(fn)),
            # Resolved, so a constraint a module-level name holds is in the key, not only the name.
            sorted((name, repr(hint)) for name, hint in hints.items()),
            fn.__doc__,
            sorted((name, repr(value)) for name, value in options.items()),
            [self._packages[package] for package in packages],
        )
        # A default with no repr of its own (FastMCP's CurrentContext()) prints its address: not a schema input.
        text = _ADDRESS.sub("", repr(inputs))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def save(self) -> None:
        """Write what was built since loading, replacing the file at once. Dropped: the entries built from
        a package's sources as they no longer are (a developer's edits would otherwise pile up in the file),
        and this environment's older files of the server (left by an upgrade)."""
        if not self._changed or self._path is None:
            return
        self._changed = False
        self._entries = {key: entry for key, entry in self._entries.items() if self._current(entry)}
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"format": _FORMAT, "tools": self._entries}, separators=(",", ":"))
            descriptor, temporary = tempfile.mkstemp(dir=self._path.parent, prefix=".", suffix=".tmp")
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, self._path)
            # This environment's earlier files (another uvx environment or checkout keeps its own).
            for older in self._path.parent.glob(f"{self._server}-{_environment()}-*.json"):
                if older != self._path:
                    older.unlink(missing_ok=True)
        except OSError as error:
            log.debug("tool schemas not cached at %s: %s", self._path, error)

    def _current(self, entry: Any) -> bool:
        """Whether ``entry`` was built from the sources as they are, as far as this process looked."""
        built_from = entry.get("packages") if isinstance(entry, dict) else None
        if not isinstance(built_from, dict):
            return False
        return all(
            self._packages.get(package, fingerprint) == fingerprint
            for package, fingerprint in built_from.items()
        )

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._path is not None:
            return self._entries
        self._path = self._folder / f"{self._server}-{_environment()}-{_libraries_fingerprint()}.json"
        try:
            stored = json.loads(self._path.read_text(encoding="utf-8"))
            if stored.get("format") == _FORMAT and isinstance(stored.get("tools"), dict):
                self._entries = stored["tools"]
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as error:
            log.debug("tool schema cache %s unreadable, rebuilt: %s", self._path, error)
        return self._entries


def _made_from(
    fn: Callable[..., Any], hints: Mapping[str, Any], options: Mapping[str, Any], entry: Mapping[str, Any]
) -> FunctionTool:
    """``FunctionTool.from_function(fn, task=False, **options)``, with the schemas it built before."""
    # What from_function does to the function, so FastMCP injects a Context parameter the same way.
    fn = transform_context_annotations(fn)
    returns = inspect.signature(fn).return_annotation
    return FunctionTool(
        fn=fn,
        # The annotation FastMCP serializes a result by, resolved from a string as it does.
        return_type=hints.get("return", returns) if isinstance(returns, str) else returns,
        name=options.get("name") or fn.__name__,
        title=options.get("title"),
        description=entry["description"],
        parameters=entry["parameters"],
        output_schema=entry["output_schema"],
        annotations=options.get("annotations"),
        tags=options.get("tags") or set(),
        meta=options.get("meta"),
        task_config=TaskConfig.from_bool(False),
        timeout=options.get("timeout"),
    )


def _packages_of(fn: Callable[..., Any]) -> tuple[str, str]:
    """The packages whose sources shape ``fn``'s schemas: its own and dockyard_shared (the toolsets' helpers)."""
    return fn.__module__.partition(".")[0], __name__.partition(".")[0]


def _package_fingerprint(package: str) -> str:
    """The size and modification time of each module file of ``package`` (its source as installed)."""
    module = sys.modules.get(package)
    stats = []
    for folder in getattr(module, "__path__", ()):
        for root, directories, files in os.walk(folder):
            directories[:] = sorted(d for d in directories if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    status = os.stat(path)
                    stats.append((os.path.relpath(path, folder), status.st_size, status.st_mtime_ns))
    source = getattr(module, "__file__", None)
    if not stats and source:  # a module outside a package: its own file
        status = os.stat(source)
        stats.append((source, status.st_size, status.st_mtime_ns))
    return hashlib.sha256(repr(stats).encode()).hexdigest()[:16]


def _environment() -> str:
    """Which Python environment this is: each keeps its own file, so two do not overwrite each other's."""
    return hashlib.sha256(sys.prefix.encode()).hexdigest()[:8]


def _libraries_fingerprint() -> str:
    stats: list[Any] = [sys.version, sys.implementation.cache_tag]
    for library in _LIBRARIES:
        module = sys.modules.get(library)
        source = getattr(module, "__file__", None)
        if source is None:
            stats.append((library, None))
            continue
        status = os.stat(source)
        stats.append((library, getattr(module, "__version__", None), status.st_size, status.st_mtime_ns))
    return hashlib.sha256(repr(stats).encode()).hexdigest()[:16]
