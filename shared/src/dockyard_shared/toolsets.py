"""Toolsets: the unit every Dockyard protocol layer is built from, and the one filter that selects them.

A server declares its toolsets (:class:`Toolset`: a name, a one-line summary, whether it only reads,
whether it is on by default) in its ``settings.py``, where the ``dockyard`` command can read them without
importing the server. Each toolset module has a ``register(registrar, ...)`` function that decorates its
tools with ``registrar.tool(...)`` exactly as it would with ``server.tool(...)``. :func:`install` runs every
register function through a :class:`ToolRegistrar` that registers only the tools the operator's
:class:`Exposure` selects; a tool that is filtered out is never registered, so no client can list or call
it. One rule, applied in this order (as in github-mcp-server's inventory filter):

1. ``--read-only`` drops every tool not annotated ``readOnlyHint=True``, whatever else asks for it;
2. ``--exclude-tools`` drops the tools it names;
3. ``--tools`` adds the tools it names, even from a toolset that is off;
4. ``--toolsets`` turns whole toolsets on (``default``: those on by default; ``all``: every one).

Unknown names are refused at start-up with the valid ones listed, so a typo does not silently serve a
different set of tools than the operator meant.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .problems import InvalidArgument

if TYPE_CHECKING:  # Toolset records are read by `dockyard list` and settings modules: no FastMCP import
    from fastmcp import FastMCP

__all__ = [
    "ALL",
    "DEFAULT",
    "Exposure",
    "ToolRegistrar",
    "Toolset",
    "add_exposure_arguments",
    "exposure_arguments",
    "exposure_from",
    "install",
    "prompt",
    "toolset_lines",
]

DEFAULT = "default"
ALL = "all"


@dataclass(frozen=True)
class Toolset:
    """A named group of tools a server can serve or leave out as a whole."""

    name: str
    summary: str
    read_only: bool
    default: bool = True
    # The server's own flag that turns this toolset on (``--allow-write``), named when a model calls one of
    # its tools while it is off; without one, ``--toolsets`` is named.
    flag: str | None = None


@dataclass(frozen=True)
class Exposure:
    """Which tools the operator asked for (the common flags), and whether ``confirm=true`` is consent."""

    toolsets: tuple[str, ...] = (DEFAULT,)
    tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    read_only: bool = False
    # --trust-model-confirmation: the operator lets the model's confirm=true stand in for the user's
    # answer where the client cannot ask the user (dockyard_shared.confirm).
    trust_model_confirmation: bool = False

    def enabling(self, *toolsets: str) -> Exposure:
        """This exposure with ``toolsets`` turned on as well (how ``--allow-write`` is expressed)."""
        added = tuple(name for name in toolsets if name not in self.toolsets)
        return replace(self, toolsets=self.toolsets + added)

    def enabled_toolsets(self, declared: Sequence[Toolset]) -> set[str]:
        """The names of the declared toolsets this exposure turns on; unknown names are refused."""
        known = {toolset.name for toolset in declared}
        unknown = [name for name in self.toolsets if name not in known | {DEFAULT, ALL}]
        if unknown:
            raise InvalidArgument(
                f"Unknown toolset {', '.join(map(repr, unknown))}.",
                next_step=f"Valid toolsets: {', '.join(sorted(known))} (or '{DEFAULT}', '{ALL}').",
            )
        enabled = {name for name in self.toolsets if name in known}
        if DEFAULT in self.toolsets:
            enabled |= {toolset.name for toolset in declared if toolset.default}
        if ALL in self.toolsets:
            enabled |= known
        return enabled


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


class _Names(argparse.Action):
    """A comma-separated, repeatable list flag: ``--tools a,b --tools c`` gives ``[a, b, c]``."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        current = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, [*current, *_names(values)])


def add_exposure_arguments(parser: argparse.ArgumentParser) -> None:
    """The tool-selection flags every Dockyard server accepts."""
    group = parser.add_argument_group("tool selection (common to every Dockyard server)")
    group.add_argument(
        "--toolsets",
        action=_Names,
        default=None,
        metavar="A,B",
        help=f"serve only these toolsets ('{DEFAULT}': those on by default, '{ALL}': every one); "
        "see `dockyard list`",
    )
    group.add_argument(
        "--tools", action=_Names, default=[], metavar="X,Y", help="also serve these tools by name"
    )
    group.add_argument(
        "--exclude-tools", action=_Names, default=[], metavar="X,Y", help="never serve these tools"
    )
    group.add_argument(
        "--read-only",
        action="store_true",
        help="serve only tools that change nothing (wins over every other selection flag)",
    )
    group.add_argument(
        "--trust-model-confirmation",
        action="store_true",
        help="where the client cannot ask the user, accept the model's confirm=true for destructive "
        "actions: this trusts the model to have asked the user itself",
    )


def exposure_from(args: argparse.Namespace) -> Exposure:
    return Exposure(
        toolsets=tuple(getattr(args, "toolsets", None) or (DEFAULT,)),
        tools=tuple(getattr(args, "tools", None) or ()),
        exclude_tools=tuple(getattr(args, "exclude_tools", None) or ()),
        read_only=bool(getattr(args, "read_only", False)),
        trust_model_confirmation=bool(getattr(args, "trust_model_confirmation", False)),
    )


def exposure_arguments(exposure: Exposure) -> list[str]:
    """The command-line flags that express ``exposure`` (for generated host configs)."""
    args: list[str] = []
    if exposure.toolsets != (DEFAULT,):
        args += ["--toolsets", ",".join(exposure.toolsets)]
    if exposure.tools:
        args += ["--tools", ",".join(exposure.tools)]
    if exposure.exclude_tools:
        args += ["--exclude-tools", ",".join(exposure.exclude_tools)]
    if exposure.read_only:
        args.append("--read-only")
    if exposure.trust_model_confirmation:
        args.append("--trust-model-confirmation")
    return args


def _is_read_only(annotations: Any) -> bool:
    if annotations is None:
        return False
    if isinstance(annotations, Mapping):
        return bool(annotations.get("readOnlyHint", annotations.get("read_only_hint")))
    return bool(getattr(annotations, "read_only_hint", False))


@dataclass
class ToolRegistrar:
    """What a toolset's ``register`` function receives: ``tool`` decorates like ``FastMCP.tool``, but a tool
    the exposure leaves out is never registered (the function is returned unchanged)."""

    server: FastMCP
    toolset: Toolset
    wanted: Callable[[str, Toolset, bool], bool]
    seen: dict[str, Toolset] = field(default_factory=dict)
    installed: list[str] = field(default_factory=list)
    writes: set[str] = field(default_factory=set)  # the tools seen that are not read-only

    def tool(self, name_or_fn: Any = None, /, **options: Any) -> Any:
        if callable(name_or_fn):
            return self._register(name_or_fn, options)
        if isinstance(name_or_fn, str):
            options["name"] = name_or_fn
        return lambda fn: self._register(fn, options)

    def _register(self, fn: Callable[..., Any], options: dict[str, Any]) -> Any:
        name = options.get("name") or fn.__name__
        read_only = _is_read_only(options.get("annotations"))
        if self.toolset.read_only and not read_only:
            # A programming error, not a user one: --read-only must be able to trust the toolset's flag.
            raise TypeError(
                f"tool {name!r} is in read-only toolset {self.toolset.name!r} without readOnlyHint"
            )
        if name in self.seen:
            raise TypeError(
                f"tool {name!r} is registered by toolsets {self.seen[name].name!r} and {self.toolset.name!r}"
            )
        self.seen[name] = self.toolset
        if not read_only:
            self.writes.add(name)
        if not self.wanted(name, self.toolset, read_only):
            return fn
        self.installed.append(name)
        from .fastmcp_compat import described
        from .icons import tool_icons

        if options.get("task") is not None:  # may run as an MCP task, outside ProblemMiddleware
            from .errors import worded_failures

            fn = worded_failures(fn, name)
        if "icons" not in options:  # the server's icon, so a host that shows tool icons shows whose it is
            options["icons"] = tool_icons(self.server.icons)
        if "confirm" in inspect.signature(fn).parameters:  # asks the user: an Apps host shows the card
            from . import approvals

            approvals.install(self.server)
            options["meta"] = {**approvals.approval_meta(), **(options.get("meta") or {})}
        return self.server.tool(described(fn, options), **options)


def prompt(server: FastMCP, /, **options: Any) -> Callable[[Any], Any]:
    """``@prompt(server)`` registers a prompt as ``@server.prompt`` does, its plain docstring passed as the
    description (see :func:`dockyard_shared.fastmcp_compat.described`)."""
    from .fastmcp_compat import described

    def register(fn: Callable[..., Any]) -> Any:
        chosen = dict(options)
        return server.prompt(described(fn, chosen), **chosen)

    return register


def install(
    server: FastMCP,
    exposure: Exposure,
    registrations: Mapping[Toolset, Callable[[ToolRegistrar], None]],
    *,
    unavailable: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """Register the tools ``exposure`` selects from ``registrations``; return their names.

    ``unavailable`` names toolsets that cannot run in this configuration (a missing token), each with the
    reason: skipped when only on by default, refused with the reason when asked for by name.
    """
    unavailable = dict(unavailable or {})
    declared = list(registrations)
    enabled = exposure.enabled_toolsets(declared)
    refused = [name for name in exposure.toolsets if name in unavailable]
    if refused:
        raise InvalidArgument(f"The {refused[0]!r} toolset cannot be served: {unavailable[refused[0]]}")

    excluded, extra = set(exposure.exclude_tools), set(exposure.tools)

    def wanted(tool: str, toolset: Toolset, read_only: bool) -> bool:
        if exposure.read_only and not read_only:
            return False
        if tool in excluded:
            return False
        return tool in extra or toolset.name in enabled

    seen: dict[str, Toolset] = {}
    installed: list[str] = []
    writes: set[str] = set()
    skipped: list[Toolset] = []
    # With no tool named on the command line, a toolset left off registers nothing and has no name to
    # check, so its register function is not called: a server can import that toolset's module in it,
    # off the path to ``initialize`` (dockyard-git's remote toolset and its models: ~5 ms).
    names_given = bool(exposure.tools or exposure.exclude_tools)
    for toolset, register in registrations.items():
        if toolset.name in unavailable or not (names_given or toolset.name in enabled):
            skipped.append(toolset)
            continue
        register(ToolRegistrar(server, toolset, wanted, seen, installed, writes))
    _refuse_unknown_tools(exposure, seen, unavailable)

    def why_off(tool: str) -> Any:
        if not skipped_learnt:  # the first call to an unknown name: learn the names of the skipped toolsets
            skipped_learnt.append(True)
            for toolset in skipped:
                try:
                    registrations[toolset](ToolRegistrar(server, toolset, lambda *_: False, seen, [], writes))
                except Exception:  # a toolset that cannot even be read here stays unknown
                    continue
        toolset = seen.get(tool)
        if toolset is None or tool in installed:
            return None
        return _switched_off(tool, toolset, exposure, enabled, unavailable, writes)

    skipped_learnt: list[bool] = []
    from .switched_off import SwitchedOffTools  # the server exists, so FastMCP is imported already

    server.add_middleware(SwitchedOffTools(why_off))
    return tuple(installed)


def _switched_off(
    tool: str,
    toolset: Toolset,
    exposure: Exposure,
    enabled: set[str],
    unavailable: Mapping[str, str],
    writes: set[str],
) -> Any:
    """Why ``tool`` (of ``toolset``, not served) is off, and the flags that would serve it."""
    from .switched_off import switched_off_problem

    if toolset.name in unavailable:
        return switched_off_problem(
            tool,
            f"its toolset {toolset.name!r} cannot be served here: {unavailable[toolset.name].rstrip('.')}",
            "the operator must fix that and restart the server",
        )
    reasons, hows = [], []
    if tool in exposure.exclude_tools:
        reasons.append("the server was started with --exclude-tools naming it")
        hows.append("remove it from --exclude-tools")
    if exposure.read_only and tool in writes:
        reasons.append("it makes changes and the server runs with --read-only")
        hows.append("drop --read-only")
    if toolset.name not in enabled and tool not in exposure.tools:
        reasons.append(f"it belongs to the {toolset.name!r} toolset, which is off")
        first = toolset.flag or f"--toolsets default,{toolset.name}"
        also = f"--toolsets default,{toolset.name}, " if toolset.flag else ""
        hows.append(f"add {first} (or {also}--tools {tool} for this tool alone)")
    return switched_off_problem(
        tool,
        "; ".join(reasons) or "the server's flags leave it out",
        "restart the server with its flags changed: " + "; ".join(hows)
        if hows
        else "check the server's tool-selection flags",
    )


def _refuse_unknown_tools(
    exposure: Exposure, seen: Mapping[str, Toolset], unavailable: Mapping[str, str]
) -> None:
    unknown = [name for name in (*exposure.tools, *exposure.exclude_tools) if name not in seen]
    if not unknown:
        return
    off = "".join(f" The {name!r} toolset is not available: {reason}" for name, reason in unavailable.items())
    raise InvalidArgument(
        f"Unknown tool {', '.join(map(repr, dict.fromkeys(unknown)))}.{off}",
        next_step=f"Valid tools: {', '.join(sorted(seen))}.",
    )


def toolset_lines(toolsets: Iterable[Toolset]) -> list[str]:
    """One line per toolset for ``dockyard list``."""
    return [
        f"{toolset.name} ({'read-only' if toolset.read_only else 'writes'}"
        f"{'' if toolset.default else ', off by default'}): {toolset.summary}"
        for toolset in toolsets
    ]
