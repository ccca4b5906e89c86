"""A small server built like every Dockyard server, used to test the shared package and the harness
before (and independently of) the real servers."""

from __future__ import annotations

import argparse
import asyncio
from typing import Annotated

import mcp.types as mt
from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import READ_ONLY, InvalidArgument, NotFound
from dockyard_shared.runner import ServerEntry, run_server
from dockyard_shared.server import new_server

WORDS = ["alpha", "beta", "gamma", "delta"]


def build(args: argparse.Namespace):
    server = new_server("toy", instructions="A toy server for tests.", distribution="dockyard-shared")

    @server.tool(annotations=READ_ONLY)
    def add(a: int, b: int) -> int:
        """Add two integers.

        Use when: testing.
        Not for: anything else.
        Returns: the sum.
        Limits: none.
        """
        return a + b + args.offset

    @server.tool(annotations=READ_ONLY)
    def word(name: str) -> str:
        """Look up a word.

        Use when: testing errors.
        Not for: anything else.
        Returns: the word.
        Limits: four words.
        """
        if name.startswith("-"):
            raise InvalidArgument("name must not start with '-'.", next_step="Pass a plain word.")
        if name not in WORDS:
            from dockyard_shared import did_you_mean

            raise NotFound(f"no word {name!r}.", next_step=did_you_mean(name, WORDS, kind="word"))
        return name

    @server.tool(annotations=READ_ONLY)
    def crash() -> str:
        """Fail unexpectedly.

        Use when: testing that internals do not leak.
        Not for: anything else.
        Returns: never.
        Limits: none.
        """
        raise RuntimeError("secret detail /home/someone/.ssh/id_rsa")

    @server.tool(annotations=READ_ONLY)
    async def sleep(seconds: Annotated[float, Field(ge=0, le=5)], ctx: Context = CurrentContext()) -> str:
        """Sleep, then answer.

        Use when: testing concurrency.
        Not for: anything else.
        Returns: "slept".
        Limits: none.
        """
        # Progress 0 first (sent only when the request carries a progress token): a test that waits
        # for it knows the call is under way, without guessing at timing.
        await ctx.report_progress(0, seconds)
        await asyncio.sleep(seconds)
        return "slept"

    @server.resource("toy://words/{name}")
    def word_resource(name: str) -> str:
        if name not in WORDS:
            raise NotFound(f"no word {name!r}.", next_step="Read toy://words/alpha.")
        return f"the word {name}"

    @server.prompt
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."

    @server.completion
    def complete(ref, argument, context):
        if isinstance(ref, mt.ResourceTemplateReference) and argument.name == "name":
            return [w for w in WORDS if w.startswith(argument.value)]
        return []

    return server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offset", type=int, default=0, help="added to every sum")


entry = ServerEntry(name="toy", summary="A toy server for tests.", build=build, add_arguments=add_arguments)

if __name__ == "__main__":
    raise SystemExit(run_server(entry))
