"""Command line of dockyard-git."""

from __future__ import annotations

import argparse
import os

from dockyard_shared.runner import ServerEntry, run_server

from .settings import DEFAULT_TOKEN_HOSTS, REMOTE_PROTOCOLS, TOOLSETS, RemoteSettings, settings_from

SUMMARY = (
    "Local git repositories — safe, bounded, fast on large histories — plus GitHub pull requests and issues."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("repositories")
    group.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="a repository, or a folder whose repositories are served (repeatable; default: the folders "
        "the client shares as MCP roots)",
    )
    group.add_argument(
        "--allow-write",
        action="store_true",
        help="serve the write toolset (add, unstage, commit, branch, checkout, stash): --toolsets default,write",
    )
    group.add_argument(
        "--github-token-env",
        default="GITHUB_TOKEN",
        metavar="NAME",
        help="environment variable holding a GitHub token; the github toolset is served when it is set",
    )
    group.add_argument(
        "--github-api-url",
        default="https://api.github.com",
        metavar="URL",
        help="GitHub (Enterprise) API URL",
    )
    group.add_argument(
        "--git-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="time limit per git process, any wait for a free slot (--max-git-processes) included",
    )
    group.add_argument(
        "--git-memory",
        type=int,
        default=1024,
        metavar="MIB",
        help="address-space limit per git process, in MiB (default 1024)",
    )
    group.add_argument(
        "--git-cpu",
        type=int,
        default=None,
        metavar="SECONDS",
        help="CPU-time limit per git process (default: the --git-timeout)",
    )
    group.add_argument(
        "--max-git-processes",
        type=int,
        default=None,
        metavar="N",
        help="git processes running at once, server-wide; more wait in arrival order within their "
        "--git-timeout (default: the number of cores, at least 2)",
    )
    add_remote_arguments(parser)


def add_remote_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = RemoteSettings()
    group = parser.add_argument_group("remotes (the remote toolset)")
    group.add_argument(
        "--allow-remote",
        action="store_true",
        help="serve the remote toolset (git_remotes, git_fetch; git_pull and git_push with --allow-write too)",
    )
    group.add_argument(
        "--remote-protocol",
        action="append",
        choices=REMOTE_PROTOCOLS,
        metavar="PROTOCOL",
        help="a protocol remotes may use (repeatable; default: https and ssh; 'http' is unencrypted; 'file' "
        "reaches only repositories inside the roots)",
    )
    group.add_argument(
        "--remote-token-env",
        metavar="NAME",
        help="environment variable holding a token for https remotes (sent only to --remote-token-host)",
    )
    group.add_argument(
        "--remote-token-host",
        action="append",
        metavar="HOST[:PORT]",
        help=f"a host the token is sent to (repeatable; default: {', '.join(DEFAULT_TOKEN_HOSTS)})",
    )
    group.add_argument(
        "--remote-timeout",
        type=float,
        default=defaults.timeout_s,
        metavar="SECONDS",
        help="time limit of one fetch, pull or push",
    )
    group.add_argument(
        "--max-remote-git-processes",
        type=int,
        default=2,
        metavar="N",
        help="fetch, pull, push and ls-remote processes running at once, server-wide (a pool apart from "
        "--max-git-processes, so slow remotes never hold up local reads; default 2)",
    )
    group.add_argument(
        "--max-fetch-bytes",
        type=int,
        default=defaults.max_fetch_bytes,
        metavar="BYTES",
        help="largest file (one pack) a fetch may write",
    )
    group.add_argument(
        "--protected-branch",
        action="append",
        metavar="NAME",
        help="a branch (or glob) whose pushes need the user's confirmation (repeatable; default: the "
        "remote's default branch)",
    )


def build(args: argparse.Namespace):
    # Imported here, not at the top: `dockyard list` loads this module and must not pay for FastMCP.
    from .server import create_server

    return create_server(settings_from(args))


entry = ServerEntry(
    name="git",
    summary=SUMMARY,
    build=build,
    add_arguments=add_arguments,
    # A host config must name the folders: a desktop host sends no roots, and its working directory is
    # often / or the app's own folder.
    config_args=("--root", "/ABSOLUTE/PATH/TO/YOUR/REPOSITORIES"),
    # `dockyard serve all` serves the current directory (the demo serves this checkout): its clients share
    # no roots.
    serve_all_args=lambda: ("--root", os.getcwd()),
    toolsets=TOOLSETS,
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
