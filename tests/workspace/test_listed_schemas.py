"""Every server lists each schema as FastMCP's own dereferencing would (its pass is off; ours inlines
references without importing jsonref, see dockyard_shared.schema.inline_local_refs)."""

from __future__ import annotations

import json

import pytest
from fastmcp.server.middleware.dereference import _dereference_resource_template, _dereference_tool

from dockyard_shared.approvals import RESOLVE_TOOL
from dockyard_shared.schema import ListedSchemas, nullable_as_type_list, without_null_defaults
from tests.harness import open_session
from tests.workspace.test_context_budget import SERVERS, widest


def as_sent(schema):
    """As JSON values (the client's models put "type" first, so the keys' order is not compared here)."""
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.loads(json.dumps(schema))


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_every_listed_schema_is_what_fastmcp_would_have_listed(name, monkeypatch, tmp_path):
    server = widest(name, monkeypatch, tmp_path)
    tools = {tool.name: tool for tool in await server.list_tools(run_middleware=False)}
    templates = {t.uri_template: t for t in await server.list_resource_templates(run_middleware=False)}
    async with open_session(server) as session:
        listed = await session.list_tools()
        listed_templates = await session.list_resource_templates()
    tools.pop(RESOLVE_TOOL, None)  # the approval card's tool is listed only to clients that render views
    assert {tool.name for tool in listed} == set(tools)
    inlined = 0
    for tool in listed:
        raw = tools[tool.name]
        if raw.output_schema is not None:  # the output schema is made lean first, as it was before
            raw = raw.model_copy(update={"output_schema": nullable_as_type_list(raw.output_schema)})
            inlined += "$defs" in raw.output_schema
        # Every schema is listed without "default": null (dockyard_shared.schema.without_null_defaults).
        raw = raw.model_copy(
            update={
                "parameters": without_null_defaults(raw.parameters),
                "output_schema": without_null_defaults(raw.output_schema),
            }
        )
        expected = _dereference_tool(raw).to_mcp_tool()  # what FastMCP's DereferenceRefsMiddleware lists
        assert as_sent(tool.input_schema) == as_sent(expected.input_schema), tool.name
        assert as_sent(tool.output_schema) == as_sent(expected.output_schema), tool.name
    for template in listed_templates:
        raw = templates[template.uri_template]
        raw = raw.model_copy(update={"parameters": without_null_defaults(raw.parameters)})
        expected = _dereference_resource_template(raw).to_mcp_template()
        assert as_sent(template) == as_sent(expected), template.uri_template
    # (a recursive schema, such as sqlite's query plan, keeps its references: FastMCP cannot inline it either)
    if name in ("tasks", "git"):
        assert inlined, "these servers return nested models: some output schema had references to inline"


async def test_each_schema_is_rewritten_once_however_often_it_is_listed(monkeypatch, tmp_path):
    server = widest("tasks", monkeypatch, tmp_path)
    (listed,) = [m for m in server.middleware if isinstance(m, ListedSchemas)]
    sizes = []
    for _ in range(3):
        async with open_session(server) as session:
            await session.list_tools()
            await session.list_resource_templates()
        sizes.append(len(listed._listed))
    assert sizes[0] > 0 and sizes == [sizes[0]] * 3
