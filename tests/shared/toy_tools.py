"""The toy server's tools, resources and prompt (:mod:`.toy_server` is its light entry point, as a real
server's ``__main__`` is: FastMCP is imported only when the server is built)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Annotated

import mcp.types as mt
from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import DESTRUCTIVE, READ_ONLY, InvalidArgument, NotFound
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.server import new_server
from dockyard_shared.toolsets import Exposure, ToolRegistrar, exposure_from, install
from dockyard_shared.warmup import after_initialize

from .toy_server import NETWORK, READ, WORDS, WRITE


def build_server(args: argparse.Namespace):
    server = new_server("toy", instructions="A toy server for tests.", distribution="dockyard-shared")
    exposure = exposure_from(args)
    words = list(WORDS)
    install(
        server,
        exposure,
        {
            READ: lambda tools: register_read(tools, args, words),
            WRITE: lambda tools: register_write(tools, exposure, words),
            NETWORK: register_network,
        },
        unavailable={"network": "started with --offline."} if args.offline else None,
    )
    register_resources(server, words)
    if args.warm_up_file:
        # The warm-up's proof for tests/shared/test_warmup.py: a file written once it has run.
        after_initialize(server, lambda: Path(args.warm_up_file).write_text("warmed up"))
    return server


def register_write(server: ToolRegistrar, exposure: Exposure, words: list[str]) -> None:
    @server.tool(annotations=DESTRUCTIVE)
    async def forget(
        name: str,
        confirm: Confirm = False,
        ctx: Context = CurrentContext(),
    ) -> list[str]:
        """Forget a word, after the user confirms.

        Use when: testing confirmation.
        Not for: anything else.
        Returns: the words left.
        Limits: asks the user first.
        """
        if name not in words:
            raise NotFound(f"no word {name!r}.")
        pending = await require_confirmation(
            ctx,
            f"Forget the word {name!r}?",
            confirm=confirm,
            exposure=exposure,
            declined=f"The user declined forgetting {name!r}; nothing was changed.",
        )
        if pending is not None:
            return pending  # type: ignore[return-value]
        words.remove(name)
        return words


def register_network(server: ToolRegistrar) -> None:
    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Echo a text.

        Use when: testing toolset availability.
        Not for: anything else.
        Returns: the text.
        Limits: none.
        """
        return text


def register_read(server: ToolRegistrar, args: argparse.Namespace, words: list[str]) -> None:
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
        if name not in words:
            from dockyard_shared import did_you_mean

            raise NotFound(f"no word {name!r}.", next_step=did_you_mean(name, words, kind="word"))
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


def register_resources(server, words: list[str]) -> None:
    @server.resource("toy://words/{name}")
    def word_resource(name: str) -> str:
        if name not in words:
            raise NotFound(f"no word {name!r}.", next_step="Read toy://words/alpha.")
        return f"the word {name}"

    @server.prompt
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."

    @server.completion
    def complete(ref, argument, context):
        if isinstance(ref, mt.ResourceTemplateReference) and argument.name == "name":
            return [w for w in words if w.startswith(argument.value)]
        return []
