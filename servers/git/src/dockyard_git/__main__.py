"""Command line of dockyard-git."""

from __future__ import annotations

import argparse
import os

from dockyard_shared.runner import ServerEntry, run_server

from .settings import TOOLSETS, add_arguments, settings_from

SUMMARY = (
    "Local git repositories — safe, bounded, fast on large histories — plus GitHub pull requests and issues."
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
