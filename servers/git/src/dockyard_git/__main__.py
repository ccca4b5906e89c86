"""Command line of dockyard-git."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dockyard_shared import InvalidArgument, NotFound
from dockyard_shared.runner import ServerEntry, run_server

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
        help="a repository, or a folder whose repositories are served (repeatable; default: the current directory)",
    )
    group.add_argument(
        "--allow-write", action="store_true", help="register add/unstage/commit/branch/checkout/stash"
    )
    group.add_argument(
        "--github-token-env",
        default="GITHUB_TOKEN",
        metavar="NAME",
        help="environment variable holding a GitHub token; the GitHub tools are registered when it is set",
    )
    group.add_argument(
        "--github-api-url",
        default="https://api.github.com",
        metavar="URL",
        help="GitHub (Enterprise) API URL",
    )
    group.add_argument(
        "--git-timeout", type=float, default=20.0, metavar="SECONDS", help="time limit per git process"
    )


def build(args: argparse.Namespace):
    from .server import GitSettings, create_server

    roots = [Path(os.path.expanduser(r)).resolve() for r in (args.root or [os.getcwd()])]
    for root in roots:
        if not root.is_dir():
            raise NotFound(
                f"The root {root} is not a folder.",
                next_step="Pass --root with an existing repository or folder.",
            )
    if args.git_timeout <= 0:
        raise InvalidArgument("--git-timeout must be positive.")
    token = os.environ.get(args.github_token_env) or None
    settings = GitSettings(
        roots=roots,
        allow_write=args.allow_write,
        github_token=token,
        github_token_env=args.github_token_env,
        github_api_url=args.github_api_url,
        git_timeout_s=args.git_timeout,
    )
    return create_server(settings)


entry = ServerEntry(name="git", summary=SUMMARY, build=build, add_arguments=add_arguments)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
