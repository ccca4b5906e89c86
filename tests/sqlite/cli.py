"""A dockyard-sqlite server built from a command line, as the entry point builds it."""

from __future__ import annotations

from dockyard_sqlite.__main__ import entry

__all__ = ["from_command_line"]


def from_command_line(*argv: str):
    return entry.build(entry.parser(with_runner=False).parse_args([str(a) for a in argv]))
