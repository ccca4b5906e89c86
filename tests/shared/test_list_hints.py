"""What every server's listings carry for hosts: a cache lifetime where the list is fixed (2026-07-28
``ttlMs``), and icons on the server and its tools (both eras), through real client sessions."""

from __future__ import annotations

import base64

import pytest
from fastmcp import Client

from dockyard_shared.cli import discover_servers
from dockyard_shared.server import LIST_TTL_MS
from tests.harness import ERAS, LEGACY

SERVERS = discover_servers()
PNG = b"\x89PNG\r\n\x1a\n"


def build(name: str, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    entry = SERVERS[name]
    args = {"git": ["--root", str(tmp_path)], "sqlite": ["--demo"]}.get(name, [])
    return entry.build(entry.parser().parse_args(args))


def decoded(icon) -> bytes:
    head, _, data = icon.src.partition(",")
    assert head == f"data:{icon.mime_type};base64"  # self-contained: no URL a host would have to fetch
    return base64.b64decode(data, validate=True)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_fixed_lists_carry_a_lifetime_and_the_server_and_its_tools_an_icon(
    name, era, tmp_path, monkeypatch
):
    server = build(name, tmp_path, monkeypatch)
    async with Client(server, mode="legacy" if era == LEGACY else "auto") as client:
        tools = await client.list_tools_mcp()
        prompts = await client.list_prompts_mcp()
        templates = await client.list_resource_templates_mcp()
        resources = await client.list_resources_mcp()
        info = client.server_info

    if era == LEGACY:  # 2025-11-25 has no ttlMs on the wire: nothing arrives, and the lists still do
        assert tools.ttl_ms == 0
    else:
        assert tools.ttl_ms == prompts.ttl_ms == templates.ttl_ms == LIST_TTL_MS
        # resources/list can change while the server runs (dockyard-tasks: one resource per project).
        assert resources.ttl_ms == 0

    assert info is not None and info.icons, f"{name} ({era}) has no icon"
    assert {icon.mime_type for icon in info.icons} == {"image/png", "image/svg+xml"}
    for icon in info.icons:
        body = decoded(icon)
        assert body.startswith(PNG) if icon.mime_type == "image/png" else body.startswith(b"<svg ")
        assert len(body) < 2_000
    assert tools.tools
    for tool in tools.tools:
        assert tool.icons and [icon.mime_type for icon in tool.icons] == ["image/png"], tool.name
        assert decoded(tool.icons[0]).startswith(PNG)


async def test_a_resource_read_is_never_given_a_lifetime(tmp_path, monkeypatch):
    server = build("tasks", tmp_path, monkeypatch)
    async with Client(server) as client:
        (resource, *_) = (await client.list_resources_mcp()).resources
        read = await client.read_resource_mcp(resource.uri)
    assert read.ttl_ms == 0
