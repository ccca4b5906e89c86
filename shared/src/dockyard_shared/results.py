"""Tool results serialised once, for tools whose replies can be large.

FastMCP turns a returned pydantic model into a result by walking it three times: to plain JSON values
for the structured content, to a JSON string for the text copy, and once more when it builds its
``ToolResult``. For a page of 10,000 rows those walks cost more than running the query (measured: ~30 ms
of a ~115 ms reply). :func:`model_result` walks the model once and writes the text copy with
pydantic-core's JSON encoder; fields the tool built itself from plain JSON values (rows fetched from a
cursor, already made JSON-safe) can skip the walk altogether.

Use it from a tool still annotated with the model, so the output schema comes from the annotation; FastMCP
passes a ``ToolResult`` through unchanged::

    @server.tool
    async def query(...) -> QueryResult:
        return model_result(page, plain_fields=("rows",))
"""

from __future__ import annotations

from collections.abc import Collection

import pydantic_core
from fastmcp.tools import ToolResult
from mcp.types import ResourceLink, TextContent
from pydantic import BaseModel

__all__ = ["linked_result", "model_result"]


def model_result(
    model: BaseModel,
    *,
    plain_fields: Collection[str] = (),
    exclude_none: bool = False,
    exclude_defaults: bool = False,
) -> ToolResult:
    """``model`` as a tool result: structured content plus its JSON text copy, as FastMCP would send it.

    ``plain_fields`` name fields whose values are already plain JSON values (str, int, float, bool,
    None, and lists/dicts of those): they go in as they are. Anything else there would reach the
    client unconverted, so only name fields your own code filled. ``exclude_none`` leaves out fields
    (at any depth, outside ``plain_fields``) whose value is None: for optional fields the caller did
    not ask for, which would otherwise cost the reader a ``"key": null`` each. ``exclude_defaults`` leaves
    out every field (at any depth, outside ``plain_fields``) still at its declared default (None, an
    empty list): the output schema then must give each such field its default, so leaving it out is valid.
    """
    fields = type(model).model_fields
    dumped = model.model_dump(
        mode="json",
        exclude=set(plain_fields) or None,
        exclude_none=exclude_none,
        exclude_defaults=exclude_defaults,
    )
    structured = {
        name: getattr(model, name) if name in plain_fields else dumped[name]
        for name in fields
        if name in plain_fields or name in dumped
    }
    text = pydantic_core.to_json(structured).decode()
    # model_construct: ToolResult's own __init__ would walk the structured content once more.
    return ToolResult.model_construct(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        meta=None,
        is_error=False,
    )


def linked_result(
    model: BaseModel,
    *,
    uri: str,
    name: str,
    description: str,
    mime_type: str,
    size: int | None = None,
    plain_fields: Collection[str] = (),
    exclude_none: bool = False,
) -> ToolResult:
    """``model`` as :func:`model_result` makes it, plus a ``resource_link`` block to ``uri``: where the
    whole of a result that ``model`` carries only a bounded part of can be read (``resources/read``).

    For a host that attaches or shows a linked resource instead of pasting it into the conversation.
    Nothing in either era's capabilities says whether a client does, so the link is added beside the
    bounded reply, never instead of it: a host that ignores the block loses nothing.
    """
    result = model_result(model, plain_fields=plain_fields, exclude_none=exclude_none)
    link = ResourceLink(
        type="resource_link", uri=uri, name=name, description=description, mime_type=mime_type, size=size
    )
    result.content.append(link)
    return result
