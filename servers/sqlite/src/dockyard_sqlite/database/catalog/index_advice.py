"""What a query plan's full table scans say: the referenced, unindexed column an index would help on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...workers.connection import RemoteConnection
from ..connection import quote_identifier
from .names import MAX_NAME_CHARS, cut_name

__all__ = ["index_suggestions", "scan_notes"]

# Where a column filters, joins, groups or orders the rows: an index on such a column is the likely help.
_CLAUSES = re.compile(r"(?is)\b(?:where|on|group\s+by|order\s+by)\b(.*)")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def scan_notes(connection: RemoteConnection, details: Sequence[str], sql: str) -> list[str]:
    """For each full table scan in a plan: the referenced, unindexed column an index would help on."""
    notes = []
    for table, candidates in _full_scans(connection, details, sql):
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


def index_suggestions(connection: RemoteConnection, details: Sequence[str], sql: str) -> list[str]:
    """A ``CREATE INDEX`` statement for each full scan with a referenced, unindexed column, the columns
    that filter, join, group or order the rows first: advice for the operator, never run here."""
    suggestions = []
    clauses = _CLAUSES.search(sql)
    filtering = {w.lower() for w in _WORDS.findall(clauses.group(1))} if clauses else set()
    wanted = [(table, candidates, False) for table, candidates in _full_scans(connection, details, sql)]
    # An automatic index is one SQLite builds on every run: the real one would be built once.
    for detail in details:
        automatic = re.match(r"SEARCH (\S+) USING AUTOMATIC (?:COVERING |PARTIAL )*INDEX \((\w+)=", detail)
        if automatic:
            table = _table_named(automatic.group(1), connection, sql)
            if table:
                wanted.append((table, [automatic.group(2)], True))
    for table, candidates, certain in wanted:
        if not candidates or len(table) > MAX_NAME_CHARS:
            continue
        # Only a column that filters, joins, groups or orders: an index on one merely selected would not help.
        column = next((c for c in candidates if certain or c.lower() in filtering), None)
        if column is None or len(column) > MAX_NAME_CHARS:
            continue
        name = quote_identifier(f"{table}_by_{column}")
        suggestion = f"CREATE INDEX {name} ON {quote_identifier(table)}({quote_identifier(column)})"
        if suggestion not in suggestions:  # a self-join scans one table twice
            suggestions.append(suggestion)
    return suggestions


# Words that follow a table's name in a FROM clause without being its alias.
_NOT_ALIASES = frozenset(
    [
        "where",
        "join",
        "on",
        "using",
        "group",
        "order",
        "limit",
        "inner",
        "left",
        "right",
        "full",
        "outer",
        "cross",
        "natural",
        "set",
        "values",
        "union",
        "except",
        "intersect",
        "window",
        "having",
        "as",
        "indexed",
        "not",
    ]
)


def _aliases(sql: str, tables: set[str]) -> dict[str, str]:
    """``alias -> table`` for the plain ``table [AS] alias`` spellings in ``sql`` (a plan names the alias)."""
    found: dict[str, str] = {}
    lowered = {t.lower(): t for t in tables}
    # A lookahead, so that "FROM customers c" yields (customers, c) after (FROM, customers).
    for name, alias in re.findall(r'(?i)\b(?="?(\w+)"?\s+(?:as\s+)?"?(\w+))', sql):
        table = lowered.get(name.lower())
        if table and alias.lower() not in _NOT_ALIASES and alias.lower() not in lowered:
            found.setdefault(alias, table)
    return found


def _table_named(name: str, connection: RemoteConnection, sql: str) -> str | None:
    tables = _table_set(connection)
    return name if name in tables else _aliases(sql, tables).get(name)


def _table_set(connection: RemoteConnection) -> set[str]:
    return {
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }


def _full_scans(
    connection: RemoteConnection, details: Sequence[str], sql: str
) -> list[tuple[str, list[str]]]:
    """(table, its columns the statement names that no index leads with) for each full scan in a plan."""
    found = []
    words = {w.lower() for w in _WORDS.findall(sql)}
    tables = _table_set(connection)
    aliases = _aliases(sql, tables)
    for detail in details:
        match = re.match(r"SCAN (\S+)(?: AS \S+)?$", detail)
        table = match and (match.group(1) if match.group(1) in tables else aliases.get(match.group(1)))
        if not table:
            continue
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
        found.append((table, candidates))
    return found
