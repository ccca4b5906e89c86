"""The ``dockyard`` command: list, serve and configure the Dockyard servers installed here.

Servers are found through the ``dockyard.servers`` entry-point group; this package never imports a
server by name, so installing or removing one needs no change here.

    dockyard list
    dockyard serve NAME [server flags] [runner flags]
    dockyard serve all [runner flags]          every server on one HTTP port, each at /NAME/mcp
    dockyard install [--server NAME ...] [--offline]
    dockyard config claude-desktop|cursor|vscode [--form installed|uvx|run] [--offline] [--server NAME ...]
                    [--root PATH ...] [--db [ALIAS=]PATH ...]
                    [--toolsets A,B] [--tools X,Y] [--exclude-tools X,Y] [--read-only]
    dockyard tools NAME [--format openai|anthropic|gemini] [server flags]   function-calling definitions
    dockyard eval --base-url URL --model M [--server NAME ...] [--repeat N] [--json] [server flags]
    dockyard a2a [NAME ...] [server flags] [--host H --port N --auth-token T]   servers as A2A agents
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

import anyio

from .flags import DockyardArgumentParser
from .install import check_installed, executable, find_uv, given_server_args, install, tool_bin_dir
from .problems import Problem
from .runner import (
    ServerEntry,
    StartupRefused,
    add_runner_arguments,
    check_exposure,
    configure_logging,
    http_options,
    run_server,
    serve,
)
from .toolsets import Exposure, add_exposure_arguments, exposure_arguments, exposure_from, toolset_lines

__all__ = ["discover_servers", "host_config", "main", "workspace_root"]

ENTRY_POINT_GROUP = "dockyard.servers"

log = logging.getLogger("dockyard")


def discover_servers() -> dict[str, ServerEntry]:
    """Installed Dockyard servers by name, in name order."""
    found: dict[str, ServerEntry] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry = point.load()
        except Exception as error:  # a broken install must not take the others down with it
            log.warning("skipping Dockyard server %r: it failed to load (%s)", point.name, error)
            continue
        if not isinstance(entry, ServerEntry):
            log.warning("skipping entry point %r: it does not name a ServerEntry", point.name)
            continue
        found[entry.name] = entry
    return dict(sorted(found.items()))


def workspace_root() -> Path:
    """This checkout's root when dockyard-shared is installed from it (editable), else the cwd."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "pyproject.toml"
        if candidate.is_file() and "[tool.uv.workspace]" in candidate.read_text(encoding="utf-8"):
            return parent
    return Path.cwd().resolve()


def _launch(
    entry: ServerEntry,
    root: Path,
    form: str,
    extra: Sequence[str],
    *,
    server_args: Sequence[str] | None = None,
    bin_dir: Path | None = None,
    offline: bool = False,
) -> tuple[str, list[str]]:
    script = f"dockyard-{entry.name}"
    own = [*(entry.config_args if server_args is None else server_args), *extra]
    if form == "installed":
        # The executable `dockyard install` put in uv's tool folder: no resolver, no index at start.
        return str(executable(entry.name, bin_dir or Path.cwd())), own
    if form == "uvx":
        # --compile-bytecode: the environment uvx builds is compiled once, instead of every module at every
        # start where Python may not write bytecode (PYTHONDONTWRITEBYTECODE; see bench/startup).
        # --offline: after one online run, start from uv's cache without asking the index (~1 s, and a
        # failure with no network, saved at every start).
        source = [
            *(["--offline"] if offline else []),
            "--compile-bytecode",
            "--from",
            str(root / "servers" / entry.name),
        ]
        return "uvx", [*source, script, *own]
    return "uv", ["run", "--directory", str(root), script, *own]


def host_config(
    host: str,
    servers: dict[str, ServerEntry],
    root: Path,
    form: str = "uvx",
    exposure: Exposure | None = None,
    *,
    server_args: dict[str, list[str]] | None = None,
    bin_dir: Path | None = None,
    offline: bool = False,
) -> dict:
    """A config a host accepts as is: ``mcpServers`` (Claude Desktop, Cursor) or ``servers`` (VS Code).

    ``exposure`` (the tool-selection flags) is written into every server's arguments; toolset names are
    checked against each server's own, so a typo fails here rather than when the host starts it.
    ``form``: ``installed`` (the absolute executable in ``bin_dir``, from ``dockyard install``), ``uvx``
    (``offline``: with ``--offline``) or ``run``. ``server_args`` replaces a server's ``config_args``.
    """
    extra = exposure_arguments(exposure) if exposure else []
    entries = {}
    for entry in servers.values():
        if exposure is not None and entry.toolsets:
            exposure.enabled_toolsets(entry.toolsets)
        command, args = _launch(
            entry,
            root,
            form,
            extra,
            server_args=(server_args or {}).get(entry.name),
            bin_dir=bin_dir,
            offline=offline,
        )
        item: dict = {"command": command, "args": args}
        if host == "vscode":
            item = {"type": "stdio", **item}
        entries[f"dockyard-{entry.name}"] = item
    return {"servers": entries} if host == "vscode" else {"mcpServers": entries}


_CONFIG_HINTS = {
    "claude-desktop": "Merge into claude_desktop_config.json (Settings → Developer → Edit Config), "
    "then restart Claude Desktop.",
    "cursor": "Merge into ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project).",
    "vscode": "Save as .vscode/mcp.json in your workspace, or merge into your user mcp.json.",
}


def _parser() -> argparse.ArgumentParser:
    parser = DockyardArgumentParser(prog="dockyard", description="Dockyard MCP servers installed here.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list installed servers")
    serve_parser = commands.add_parser(
        "serve",
        help="serve one server (its own flags apply) or all of them over HTTP",
        add_help=False,
    )
    serve_parser.add_argument("name")
    installer = commands.add_parser(
        "install", help="install servers as uv tools, so a host starts them by absolute path, offline"
    )
    installer.add_argument(
        "--server", action="append", default=[], metavar="NAME", help="install only this server (repeatable)"
    )
    installer.add_argument("--offline", action="store_true", help="install from uv's cache only")
    config = commands.add_parser("config", help="print a host config for this checkout")
    config.add_argument("host", choices=sorted(_CONFIG_HINTS))
    config.add_argument(
        "--form",
        choices=["installed", "uvx", "run"],
        default="installed",
        help="installed: the absolute executable `dockyard install` made (starts offline); uvx: uvx --from "
        "each server's folder; run: uv run --directory the checkout",
    )
    config.add_argument(
        "--offline", action="store_true", help="uvx form: start from uv's cache (after one online run)"
    )
    config.add_argument(
        "--root", action="append", default=[], metavar="PATH", help="the git server's --root (repeatable)"
    )
    config.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="[ALIAS=]PATH",
        help="the sqlite server's --db (repeatable)",
    )
    config.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="NAME",
        help="configure only this server (repeatable; default: every installed one)",
    )
    add_exposure_arguments(config)
    tools = commands.add_parser(
        "tools",
        help="print one server's tools as OpenAI, Anthropic or Gemini function definitions (JSON)",
        add_help=False,
    )
    tools.add_argument("name")
    commands.add_parser(
        "eval", help="score how well a model picks the tools (OpenAI-compatible endpoint)", add_help=False
    )
    commands.add_parser(
        "a2a", help="serve servers as A2A agents over HTTP (needs the a2a extra)", add_help=False
    )
    return parser


def _serve_all(servers: dict[str, ServerEntry], argv: Sequence[str]) -> int:
    parser = DockyardArgumentParser(
        prog="dockyard serve all",
        description="Serve every installed Dockyard server on one HTTP port, each at /NAME/mcp, "
        "on its defaults (no external service needed).",
    )
    add_runner_arguments(parser, default_transport="http")
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    if args.transport != "http":
        print(
            "dockyard serve all: several servers share one endpoint only over HTTP; use --transport http, "
            "or serve one server over stdio with 'dockyard serve NAME'.",
            file=sys.stderr,
        )
        return 2
    try:
        check_exposure(http_options(args))
        built = {name: entry.default_server() for name, entry in servers.items()}
        anyio.run(lambda: serve(built, args, prefixed=True))
    except StartupRefused as refusal:
        print(f"dockyard: {refusal}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _install(servers: dict[str, ServerEntry], *, offline: bool) -> int:
    for entry in servers.values():
        print(f"installing dockyard-{entry.name} …", file=sys.stderr)
        (done,) = install([entry.name], workspace_root(), offline=offline)
        print(f"{done.executable}")
    print(
        "Installed. `dockyard config HOST` now writes these absolute paths; they start with no network.",
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    # `serve` hands everything after the name to the server's own parser.
    if argv[:1] == ["serve"] and len(argv) >= 2 and not argv[1].startswith("-"):
        name, rest = argv[1], argv[2:]
        servers = discover_servers()
        if name == "all":
            if not servers:
                print("dockyard: no Dockyard server is installed.", file=sys.stderr)
                return 2
            return _serve_all(servers, rest)
        if name not in servers:
            print(
                f"dockyard: no server named {name!r}; installed: {', '.join(servers) or 'none'}.",
                file=sys.stderr,
            )
            return 2
        return run_server(servers[name], rest)
    if argv[:1] == ["a2a"]:
        from .a2a.serve import run_a2a  # needs the `a2a` extra (a2a-sdk)

        return run_a2a(discover_servers(), argv[1:])
    if argv[:1] == ["tools"] and len(argv) >= 2 and not argv[1].startswith("-"):
        servers = discover_servers()
        if argv[1] not in servers:
            print(
                f"dockyard: no server named {argv[1]!r}; installed: {', '.join(servers) or 'none'}.",
                file=sys.stderr,
            )
            return 2
        from .export import run_export

        return run_export(servers[argv[1]], argv[2:])

    if argv[:1] == ["eval"]:
        from .evaluation.command import run_eval

        return run_eval(discover_servers(), argv[1:])

    args = parser.parse_args(argv)
    if args.command == "list":
        servers = discover_servers()
        if not servers:
            print("No Dockyard server is installed.")
        for entry in servers.values():
            print(f"{entry.name:<14} dockyard-{entry.name:<14} {entry.summary}")
            for line in toolset_lines(entry.toolsets):
                print(f"    toolset {line}")
        return 0
    if args.command in ("config", "install"):
        servers = discover_servers()
        unknown = [name for name in args.server if name not in servers]
        if unknown:
            print(
                f"dockyard: no server named {unknown[0]!r}; installed: {', '.join(servers)}.", file=sys.stderr
            )
            return 2
        chosen = {name: entry for name, entry in servers.items() if not args.server or name in args.server}
        if args.command == "config" and args.offline and args.form != "uvx":
            print(
                "dockyard: --offline is for --form uvx (the installed form never uses the network).",
                file=sys.stderr,
            )
            return 2
        try:
            if args.command == "install":
                return _install(chosen, offline=args.offline)
            bin_dir = None
            if args.form == "installed":
                bin_dir = tool_bin_dir(find_uv())
                check_installed(list(chosen), bin_dir)
            config = host_config(
                args.host,
                chosen,
                workspace_root(),
                args.form,
                exposure_from(args),
                server_args=given_server_args(chosen, {"--root": args.root, "--db": args.db}),
                bin_dir=bin_dir,
                offline=args.offline,
            )
        except Problem as problem:
            print(f"dockyard: {problem.what}", file=sys.stderr)
            if problem.next_step:
                print(f"  {problem.next_step}", file=sys.stderr)
            return 2
        print(json.dumps(config, indent=2))
        print(_CONFIG_HINTS[args.host], file=sys.stderr)
        return 0
    parser.error(f"{args.command} needs a server name" + (", or 'all'" if args.command == "serve" else ""))
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
