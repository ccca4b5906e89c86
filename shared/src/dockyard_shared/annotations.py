"""Tool annotations and the one way Dockyard tool descriptions are written.

Annotations are hints a host uses to decide what to confirm with the user. Four presets cover every
Dockyard tool; pass one to ``@server.tool(annotations=...)``:

* :data:`READ_ONLY`  — reads local state, changes nothing (list_tables, git_log);
* :data:`ADDITIVE`   — writes, but never destroys what exists (git_add, git_commit);
* :data:`DESTRUCTIVE` — may overwrite or delete (execute, git_checkout);
* :data:`OPEN_WORLD` — read-only, but talks to an external service (nationalize.io, GitHub).

Descriptions. A tool's docstring *is* its description, and every one has the same sections, in order,
each starting a line::

    One sentence: what the tool does.

    Use when: the situations the model should pick this tool for.
    Not for: near misses, and which tool to use instead.
    Returns: the shape of the result.
    Limits: bounds, truncation and how to get the rest.

:func:`missing_description_sections` checks a description; each server's tests run it over every
tool it lists, so a tool without a proper description fails CI.
"""

from __future__ import annotations

from mcp.types import ToolAnnotations

__all__ = [
    "ADDITIVE",
    "DESCRIPTION_SECTIONS",
    "DESTRUCTIVE",
    "OPEN_WORLD",
    "READ_ONLY",
    "missing_description_sections",
]

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
OPEN_WORLD = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)

DESCRIPTION_SECTIONS = ("Use when:", "Not for:", "Returns:", "Limits:")


def missing_description_sections(description: str | None) -> list[str]:
    """The sections of :data:`DESCRIPTION_SECTIONS` that ``description`` lacks or has out of order."""
    if not description or not description.strip():
        return ["summary", *DESCRIPTION_SECTIONS]
    lines = [line.strip() for line in description.splitlines()]
    missing: list[str] = []
    if any(lines[0].startswith(section) for section in DESCRIPTION_SECTIONS):
        missing.append("summary")
    position = -1
    for section in DESCRIPTION_SECTIONS:
        where = next((i for i, line in enumerate(lines) if line.startswith(section)), None)
        if where is None or where < position:
            missing.append(section)
        else:
            position = where
    return missing
