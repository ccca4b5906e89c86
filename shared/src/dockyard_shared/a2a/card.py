"""The Agent Card of one Dockyard server: one skill per tool the server lists to a client.

The card is built from what an in-memory MCP session lists (after every selection flag), so a tool the
operator switched off is neither listed nor a skill. A skill's examples are the request to send, as JSON:
``{"tool": NAME, "arguments": {...}}`` with the tool's input schema beside it, so a calling agent (or its
model) can build the data part without reading anything else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

if TYPE_CHECKING:
    import mcp.types as mt

__all__ = ["BEARER", "agent_card", "request_shape", "skills_text"]

BEARER = "bearer"
_MEDIA = ["application/json", "text/plain"]


def _example_value(schema: dict[str, Any]) -> Any:
    """A placeholder for a required argument: its default, first enum value or a typed blank."""
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(schema.get("anyOf"), list):
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"]
        return _example_value(branches[0]) if branches else None
    return {"string": "…", "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}.get(
        kind or ""
    )


def request_shape(tool: mt.Tool) -> dict[str, Any]:
    """The data part that runs ``tool``: its required arguments, each with a placeholder value."""
    schema = tool.input_schema or {}
    properties = schema.get("properties", {})
    arguments = {name: _example_value(properties.get(name, {})) for name in schema.get("required", [])}
    return {"tool": tool.name, "arguments": arguments}


def _skill(tool: mt.Tool) -> AgentSkill:
    example = json.dumps(request_shape(tool), ensure_ascii=False)
    schema = json.dumps(tool.input_schema or {}, ensure_ascii=False, separators=(",", ":"))
    tags = ["read-only" if (tool.annotations and tool.annotations.read_only_hint) else "writes"]
    return AgentSkill(
        id=tool.name,
        name=tool.title or tool.name,
        description=f"{tool.description or ''}\n\nSend a data part {example} (arguments: this input "
        f"schema: {schema}).",
        tags=tags,
        examples=[example],
        input_modes=["application/json"],
        output_modes=_MEDIA,
    )


def agent_card(
    name: str, summary: str, version: str, url: str, tools: Sequence[mt.Tool], *, bearer: bool
) -> AgentCard:
    """The card of server ``name`` answering A2A JSON-RPC at ``url``."""
    card = AgentCard(
        name=f"dockyard-{name}",
        description=f"{summary} Each skill is one MCP tool: send a message whose part is the data "
        '{"tool": NAME, "arguments": {...}}; the result is an artifact (data and text). A plain text '
        "message is answered with this list; free text is not interpreted.",
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        version=version,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=_MEDIA,
        default_output_modes=_MEDIA,
        skills=[_skill(tool) for tool in tools],
    )
    if bearer:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="The token the server was started with (--auth-token or DOCKYARD_AUTH_TOKEN).",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: {}}))
    return card


def skills_text(name: str, tools: Sequence[mt.Tool]) -> str:
    """The answer to a plain text message: what this agent does and the data part it expects."""
    lines = [
        f"dockyard-{name} runs its tools on structured requests only; free text is not interpreted. "
        'Send a message whose part is the data {"tool": NAME, "arguments": {...}} (the arguments as the '
        "tool's input schema on the Agent Card says). Tools:"
    ]
    for tool in tools:
        first = (tool.description or "").strip().splitlines()[0] if tool.description else ""
        lines.append(f"- {tool.name}: {first}  e.g. {json.dumps(request_shape(tool), ensure_ascii=False)}")
    return "\n".join(lines)
