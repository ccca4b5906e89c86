"""How much a read may cost before its page is complete, judged from SQLite's own plan (EXPLAIN QUERY PLAN)
and the tables' sizes: what ``--tasks`` uses to decide whether a ``query`` call runs as a task.

The estimate is of rows visited, an upper bound where it can be one, never a promise:

- every loop of the plan multiplies: a full scan (``SCAN t``, also through an index) visits all of ``t``'s
  rows; a search on an equality (``t.id = ?``) :data:`EQ_FANOUT` rows (SQLite's own assumption without
  ``ANALYZE``), one on the integer primary key one row; a range (``x > ?``), or an automatic index SQLite
  builds on each run, the whole table. Loops that do not nest (a UNION's parts, two scalar subqueries) are
  multiplied too: the bound is loose, and a loose bound only makes a task of a call that did not need one.
- a recursive CTE, or a virtual table other than the catalog's ``pragma_*`` and JSON's (generate_series,
  full-text search), has no bound before it runs.
- a statement that streams (nothing filters, groups, sorts in a temporary b-tree, aggregates or skips
  rows: ``SELECT * FROM big``) costs only the rows of the page it is asked for, since a page is read
  lazily and the statement is dropped when the page is full.

No FastMCP here: plain functions of the plan's text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["EQ_FANOUT", "Weight", "statement_words", "streams", "weigh"]

# Rows an equality on an index is assumed to match (SQLite assumes 10 without sqlite_stat1).
EQ_FANOUT = 10
# Rows a JSON table-valued function is assumed to yield per character of the values bound (a JSON array
# needs at least two characters an element).
_JSON_CHARS_PER_ROW = 2
_CAP = 10**18

# Words after which SQLite may read more rows than it returns: filters, joins on a condition, grouping,
# distinct, compound selects, windows, an OFFSET it skips.
_FILTERS = frozenset(
    [
        "where",
        "on",
        "using",
        "group",
        "having",
        "distinct",
        "union",
        "intersect",
        "except",
        "over",
        "window",
        "natural",
        "offset",
    ]
)
# Aggregate functions: with no GROUP BY they read every row before the first one comes back.
_AGGREGATES = frozenset(
    [
        "count",
        "sum",
        "avg",
        "min",
        "max",
        "total",
        "group_concat",
        "string_agg",
        "json_group_array",
        "json_group_object",
        "jsonb_group_array",
        "jsonb_group_object",
    ]
)
# Words that follow a table's name without being its alias.
_NOT_ALIASES = _FILTERS | frozenset(
    [
        "join",
        "inner",
        "left",
        "right",
        "full",
        "outer",
        "cross",
        "limit",
        "order",
        "indexed",
        "not",
        "as",
        "set",
        "values",
        "returning",
    ]
)
# String literals, quoted identifiers and comments: their words are not the statement's.
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)", re.S)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\s*\()?")

_SCAN = re.compile(r"^SCAN (\S+)(?: (VIRTUAL TABLE)| USING)?")
_SEARCH = re.compile(r"^SEARCH (\S+)(?: USING (.*?)(?:\((.*)\))?)?$")
_PRODUCED = re.compile(r"^(?:CO-ROUTINE|MATERIALIZE) (\S+)")


@dataclass(frozen=True)
class Weight:
    """Rows a statement may visit before its page is complete (None: no bound known before it runs), and
    the plan step that says so most."""

    rows: int | None
    why: str

    def over(self, threshold: int) -> bool:
        return self.rows is None or self.rows > threshold


def statement_words(sql: str) -> list[tuple[str, bool]]:
    """The statement's words, lower case, outside literals, quoted names and comments; each with whether
    a ``(`` follows it (a function call)."""
    bare = _QUOTED.sub(" ", sql)
    return [(m.group(0).rstrip("( \t\r\n").lower(), m.group(1) is not None) for m in _WORD.finditer(bare)]


def streams(sql: str, steps: Sequence[str]) -> bool:
    """Whether the statement returns rows as it reads them, so a page costs only its own rows."""
    if any(step.startswith(("USE TEMP B-TREE", "RECURSIVE STEP")) for step in steps):
        return False
    return not any(word in _FILTERS or (call and word in _AGGREGATES) for word, call in statement_words(sql))


def weigh(
    sql: str,
    steps: Sequence[str],
    row_counts: Mapping[str, int | None],
    *,
    page_rows: int | None,
    bound_chars: int = 0,
) -> Weight:
    """The rows ``sql`` may visit, from its plan ``steps`` (EXPLAIN QUERY PLAN's details, in order) and
    ``row_counts`` (table name, lower case → rows; None when not counted). ``page_rows``: the rows the call
    reads if the statement streams (the page, and those a cursor skips; None: every row is read, as an
    export does, or the statement reads a view, whose own filters its text does not show);
    ``bound_chars``: the characters of the values bound to it (what a JSON table-valued function over
    them can yield)."""
    if page_rows is not None and streams(sql, steps):
        return Weight(page_rows, f"streams: {page_rows} rows for the page")
    produced = {m.group(1).lower() for step in steps if (m := _PRODUCED.match(step))}
    words = [word for word, _ in statement_words(sql)]
    # A plan names a table by its alias where it has one ("FROM orders o", "orders AS o"); an alias not
    # read so weighs as the largest table the statement names.
    aliases = {}
    for index, word in enumerate(words[:-1]):
        if word in row_counts:
            alias = (
                words[index + 2] if words[index + 1] == "as" and index + 2 < len(words) else words[index + 1]
            )
            if alias not in _NOT_ALIASES and alias not in row_counts:
                aliases.setdefault(alias, word)
    largest = [row_counts[word] for word in set(words) if word in row_counts]
    any_table = None if None in largest else max(largest, default=None)  # type: ignore[type-var]

    def rows_of(name: str) -> int | None:
        key = name.lower()
        key = aliases.get(key, key) if key not in row_counts else key
        if key in row_counts:
            return row_counts[key]
        if key in produced:
            return 1  # a CTE or subquery: its own steps are weighed where the plan lists them
        return any_table

    total, heaviest, why = 1, 1, "one row"
    for step in steps:
        cost: int | None = 1
        if step == "SCAN CONSTANT ROW" or step.startswith(("USE TEMP", "CO-ROUTINE", "MATERIALIZE")):
            cost = 1
        elif step.startswith("RECURSIVE STEP"):
            return Weight(None, "a recursive CTE: how many rows it makes is known only once it has run")
        elif scan := _SCAN.match(step):
            name = scan.group(1)
            if scan.group(2):  # a virtual table
                if name.lower().startswith("pragma_"):
                    cost = 1_000  # the catalog: a table's columns, a database's indexes
                elif name.lower() in ("json_each", "json_tree", "jsonb_each", "jsonb_tree"):
                    cost = max(100, bound_chars // _JSON_CHARS_PER_ROW)
                else:
                    return Weight(None, f"{step}: a virtual table's size is known only once it has run")
            else:
                cost = rows_of(name)
        elif search := _SEARCH.match(step):
            name, how, terms = search.group(1), search.group(2) or "", search.group(3) or ""
            equalities = terms and all(
                "=" in term and not re.search(r"[<>]", term) for term in terms.split(" AND ")
            )
            if "AUTOMATIC" in how or not how or not equalities:
                cost = rows_of(name)  # built from, or read across, the whole table
            elif "INTEGER PRIMARY KEY" in how:
                cost = 1
            else:
                cost = EQ_FANOUT
        if cost is None:
            return Weight(None, f"{step}: a table whose size is not known")
        total = min(_CAP, total * max(1, cost))
        if cost > heaviest:
            heaviest, why = cost, f"{step}: about {cost:,} rows"
    return Weight(total, why)
