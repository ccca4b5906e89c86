"""Toolsets and the common selection flags: a tool that is filtered out does not exist for the client."""

from __future__ import annotations

import pytest

from dockyard_shared import InvalidArgument
from dockyard_shared.server import new_server
from dockyard_shared.toolsets import Exposure, Toolset, exposure_arguments, exposure_from, install, prompt
from tests.harness import open_session
from tests.shared.toy_server import TOOLSETS, entry

READ_TOOLS = {"add", "word", "crash", "sleep"}


def toy(*argv: str):
    return entry.build(entry.parser(with_runner=False).parse_args(list(argv)))


async def names(server, era) -> set[str]:
    async with open_session(server, era=era) as session:
        return await session.tool_names()


async def test_by_default_only_the_toolsets_on_by_default_are_served(era):
    assert await names(toy(), era) == READ_TOOLS | {"echo"}


async def test_a_toolset_off_by_default_is_neither_listed_nor_callable(era):
    async with open_session(toy(), era=era) as session:
        assert "forget" not in await session.tool_names()
        text = await session.call_error("forget", {"name": "alpha"})
    assert "'forget' exists but is switched off" in text and "--toolsets default,write" in text


async def test_toolsets_all_serves_every_toolset(era):
    assert await names(toy("--toolsets", "all"), era) == READ_TOOLS | {"echo", "forget"}


async def test_toolsets_names_exactly_what_is_served(era):
    assert await names(toy("--toolsets", "write"), era) == {"forget"}
    assert await names(toy("--toolsets", "read,write"), era) == READ_TOOLS | {"forget"}


async def test_read_only_wins_over_every_other_flag(era):
    server = toy("--toolsets", "all", "--tools", "forget", "--read-only")
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == READ_TOOLS | {"echo"}
        assert "--read-only" in await session.call_error("forget", {"name": "alpha"})


async def test_exclude_tools_removes_a_tool_and_tools_adds_one(era):
    server = toy("--exclude-tools", "crash,sleep", "--tools", "forget")
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == {"add", "word", "echo", "forget"}
        assert "switched off" in await session.call_error("crash")


def test_an_unknown_toolset_is_refused_with_the_valid_ones():
    with pytest.raises(InvalidArgument) as refused:
        toy("--toolsets", "read,wrte")
    assert "'wrte'" in refused.value.what
    assert "read, write" in refused.value.next_step and "network" in refused.value.next_step


def test_an_unknown_tool_name_is_refused_with_the_valid_ones():
    with pytest.raises(InvalidArgument) as refused:
        toy("--exclude-tools", "crsh")
    assert "'crsh'" in refused.value.what
    assert "crash" in refused.value.next_step


async def test_an_unavailable_toolset_is_skipped_by_default_and_refused_when_asked_for(era):
    assert await names(toy("--offline"), era) == READ_TOOLS
    with pytest.raises(InvalidArgument, match="'network' toolset cannot be served: started with --offline"):
        toy("--offline", "--toolsets", "read,network")


def test_a_read_only_toolset_cannot_hold_a_tool_that_writes():
    from dockyard_shared import DESTRUCTIVE

    def register(tools):
        @tools.tool(annotations=DESTRUCTIVE)
        def wipe() -> str:
            return "gone"

    with pytest.raises(TypeError, match="read-only toolset"):
        install(new_server("t", instructions="t"), Exposure(), {Toolset("r", "r", read_only=True): register})


def test_a_toolset_left_off_is_not_registered_unless_a_tool_is_named():
    """Its register function may import what only its tools need: a default start does not call it."""
    calls: list[str] = []
    toolsets = {
        Toolset("on", "on", read_only=True): lambda tools: calls.append("on"),
        Toolset("off", "off", read_only=True, default=False): lambda tools: calls.append("off"),
    }
    install(new_server("t", instructions="t"), Exposure(), toolsets)
    assert calls == ["on"]
    # A named tool may be in any toolset: each one is registered, to find it (or refuse the name).
    with pytest.raises(InvalidArgument, match="Unknown tool 'nowhere'"):
        install(new_server("t", instructions="t"), Exposure(exclude_tools=("nowhere",)), toolsets)
    assert calls == ["on", "on", "off"]


def test_the_flags_parse_comma_lists_and_repeats_and_round_trip_to_a_command_line():
    args = entry.parser().parse_args(
        [
            "--toolsets",
            "read, write",
            "--tools",
            "a",
            "--tools",
            "b,c",
            "--read-only",
            "--trust-model-confirmation",
        ]
    )
    exposure = exposure_from(args)
    assert exposure == Exposure(
        toolsets=("read", "write"), tools=("a", "b", "c"), read_only=True, trust_model_confirmation=True
    )
    again = exposure_from(entry.parser().parse_args(exposure_arguments(exposure)))
    assert again == exposure
    assert exposure_arguments(Exposure()) == []


def test_enabling_adds_a_toolset_to_whatever_was_asked_for():
    assert Exposure().enabling("write").enabled_toolsets(TOOLSETS) == {"read", "network", "write"}
    assert Exposure(toolsets=("read",)).enabling("write").enabled_toolsets(TOOLSETS) == {"read", "write"}


def test_a_process_started_with_an_unknown_toolset_exits_2_naming_the_valid_ones(toy_launch):
    result = toy_launch.run("--toolsets", "nope")
    assert result.returncode == 2
    assert "Unknown toolset 'nope'" in result.stderr and "read, write" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


async def test_a_plain_docstring_is_the_description_and_a_sectioned_one_keeps_its_parameter_descriptions():
    server = new_server("described", instructions="test")
    tool = Toolset("t", "tools", read_only=False)

    def register(tools) -> None:
        @tools.tool
        def plain(word: str) -> str:
            """Echo a word.

            Use when: you need the word back.
            """
            return word

        @tools.tool
        def sectioned(word: str) -> str:
            """Echo a word.

            Args:
                word: the word to echo.
            """
            return word

    install(server, Exposure(toolsets=("t",)), {tool: register})

    @prompt(server)
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello {name}"

    async with open_session(server, era="2025-11-25") as session:
        listed = {t.name: t for t in await session.list_tools()}
        prompts = await session.list_prompts()
    assert listed["plain"].description == "Echo a word.\n\nUse when: you need the word back."
    assert listed["sectioned"].description == "Echo a word."
    assert listed["sectioned"].input_schema["properties"]["word"]["description"] == "the word to echo."
    assert [(p.name, p.description) for p in prompts] == [("greet", "Greet someone by name.")]
