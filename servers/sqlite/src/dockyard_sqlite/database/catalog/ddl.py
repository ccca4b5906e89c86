"""The whole schema as CREATE statements, bounded, with a note saying what was left out and where to
read it."""

from __future__ import annotations

from dockyard_shared import bound_text

from ...workers.connection import RemoteConnection

__all__ = ["schema_ddl"]


def schema_ddl(connection: RemoteConnection, *, alias: str, max_chars: int) -> str:
    """Every CREATE statement, tables first, up to ``max_chars`` and a note past it."""
    parts: list[str] = []
    size = 0
    complete = True
    cursor = connection.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END, name"
    )
    for (statement,) in cursor:  # streamed: stop reading once the budget is spent
        if size > max_chars:
            complete = False
            break
        parts.append(f"{statement};")
        size += len(parts[-1]) + 2
    text = "\n\n".join(parts) + "\n"
    if complete and len(text) <= max_chars:
        return text
    total = (
        len(parts)
        if complete
        else connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
    )
    cut = bound_text(text, max_chars).text
    whole, end = 0, 0
    for part in parts:  # statements shown in full
        end += len(part)
        if end > len(cut):
            break
        whole += 1
        end += 2  # the blank line between statements
    partly = (
        ""
        if whole == len(parts) or end - len(parts[whole]) >= len(cut)
        else ", and the start of the next one"
    )
    return (
        cut.rstrip("\n")
        + f"\n\n-- Truncated: the schema is larger than one reply ({max_chars:,} characters). Shown: the "
        f"first {whole} of {total} CREATE statements in full{partly} (tables first, then views, indexes, "
        "triggers). Call list_tables to see every table, and describe_table (or read "
        f"sqlite://{alias}/tables/NAME) for one table's CREATE statement, columns and indexes.\n"
    )
