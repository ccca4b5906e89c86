"""Replies of the read tools without what the reader already knows.

A field left at its default (``truncated: false``, ``binary: false``, an empty list, a null) says nothing:
each costs the model a ``"key": value`` on every call, in the text and in the structured content alike.
The output schemas already mark such fields optional, so leaving them out keeps every reply valid.
"""

from __future__ import annotations

import pydantic_core
from fastmcp.tools import ToolResult
from mcp.types import TextContent
from pydantic import BaseModel

__all__ = ["lean_result"]


def lean_result(model: BaseModel) -> ToolResult:
    """``model`` as a tool result (structured content + its JSON text), fields at their default left out."""
    structured = model.model_dump(mode="json", exclude_defaults=True)
    # model_construct, as dockyard_shared.results does: ToolResult's __init__ would walk the content again.
    return ToolResult.model_construct(
        content=[TextContent(type="text", text=pydantic_core.to_json(structured).decode())],
        structured_content=structured,
        meta=None,
        is_error=False,
    )
