"""What a query plan's full table scans say: the referenced, unindexed column an index would help on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...workers.connection import RemoteConnection
from .names import cut_name

__all__ = ["scan_notes"]


def scan_notes(connection: RemoteConnection, details: Sequence[str], sql: str) -> list[str]:
    """For each full table scan in a plan: the referenced, unindexed column an index would help on."""
    notes = []
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
    tables = {
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    for detail in details:
        match = re.match(r"SCAN (\S+)(?: AS \S+)?$", detail)
        if not match or match.group(1) not in tables:
            continue
        table = match.group(1)
        # The leading column of every index (UNIQUE constraints' own included), and the primary key.
        indexed = {
            name
            for (name,) in connection.execute(
                "SELECT ii.name FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii "
                "WHERE ii.seqno = 0 AND ii.name IS NOT NULL "
                "UNION SELECT name FROM pragma_table_info(?) WHERE pk > 0",
                (table, table),
            )
        }
        candidates = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM pragma_table_xinfo(?) WHERE hidden != 1 ORDER BY cid", (table,)
            )
            if name.lower() in words and name not in indexed
        ]
        shown = cut_name(table)
        if candidates:
            listed = ", ".join(cut_name(c) or "" for c in candidates[:10])
            more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
            notes.append(
                f"Full scan of {shown}: an index on {shown}({cut_name(candidates[0])}) would avoid it if that "
                f"column filters or joins here (referenced, unindexed: {listed}{more})."
            )
        else:
            notes.append(
                f"Full scan of {shown}: expected when every row is needed; no unindexed filter column found."
            )
    return notes
