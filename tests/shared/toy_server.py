"""A small server built like every Dockyard server, used to test the shared package and the harness
before (and independently of) the real servers. Like a real server's ``__main__``, this module imports
no FastMCP: the tools live in :mod:`.toy_tools`, imported when the server is built."""

from __future__ import annotations

import argparse

from dockyard_shared.runner import ServerEntry, run_server
from dockyard_shared.toolsets import Toolset

WORDS = ["alpha", "beta", "gamma", "delta"]

READ = Toolset("read", "add numbers, look up words, fail, sleep", read_only=True)
WRITE = Toolset("write", "forget a word (destructive: asks the user)", read_only=False, default=False)
NETWORK = Toolset("network", "echo through the network (unavailable with --offline)", read_only=True)
TOOLSETS = (READ, WRITE, NETWORK)


def build(args: argparse.Namespace):
    from tests.shared.toy_tools import build_server

    return build_server(args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offset", type=int, default=0, help="added to every sum")
    parser.add_argument("--offline", action="store_true", help="(tests) mark a 'network' toolset unavailable")
    parser.add_argument("--warm-up-file", default=None, help="(tests) a file the warm-up writes")


entry = ServerEntry(
    name="toy", summary="A toy server for tests.", build=build, add_arguments=add_arguments, toolsets=TOOLSETS
)

if __name__ == "__main__":
    raise SystemExit(run_server(entry))
