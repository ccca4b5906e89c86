"""Names in the catalog: finding a table or view by name, the tables and columns a statement names, and
a name as a reply shows it (bounded by :data:`MAX_NAME_CHARS`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dockyard_shared import NotFound, did_you_mean

from ...workers.connection import RemoteConnection
from ..connection import quote_identifier, quote_literal
from ..errors import ColumnsNearby

__all__ = [
    "HINT_TABLES",
    "LONG_NAMES_NOTE",
    "MAX_NAME_CHARS",
    "USER_OBJECTS",
    "columns_nearby",
    "cut_name",
    "resolve",
    "sql_literal",
    "table_names",
]

# A column hint looks at the tables the statement names; when it names none it knows (a CTE, a
# typo), at the first this many tables of the catalog.
HINT_TABLES = 200

# A name, type or default longer than this is shown cut, so a reply stays bounded whatever the schema holds.
MAX_NAME_CHARS = 1_000

USER_OBJECTS = "type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"


def resolve(connection: RemoteConnection, name: str, *, alias: str) -> tuple[str, str]:
    """The catalog's own spelling of ``name`` (exact, else any case) and whether it is a table or a view."""
    catalog = connection.execute(
        f"SELECT name, type FROM sqlite_master WHERE {USER_OBJECTS}", prefetch=True
    ).fetchall()
    for matches in (lambda c: c == name, lambda c: c.lower() == name.lower()):
        for candidate, kind in catalog:
            if matches(candidate):
                return candidate, kind
    raise NotFound(
        f"There is no table or view named {name!r} in database {alias!r}.",
        next_step=did_you_mean(name, [c for c, _ in catalog], kind="table")
        + " Call list_tables to see them all.",
    )


def table_names(
    connection: RemoteConnection, prefix: str = "", limit: int | None = None, *, schema: str = "main"
) -> list[str]:
    """Names of tables and views starting with ``prefix`` (any case), by name, without counting rows
    (in the attached database ``schema``, for query_across)."""
    wanted = prefix.lower()
    names: list[str] = []
    catalog = "sqlite_master" if schema == "main" else f"{quote_identifier(schema)}.sqlite_master"
    for (name,) in connection.execute(f"SELECT name FROM {catalog} WHERE {USER_OBJECTS} ORDER BY name"):
        if name.lower().startswith(wanted):
            names.append(name)
            if limit is not None and len(names) >= limit:
                break
    return names


def columns_nearby(connection: RemoteConnection, sql: str | None) -> ColumnsNearby:
    """The tables ``sql`` names and their columns; when it names none the catalog knows, the columns
    of its first :data:`HINT_TABLES` tables."""
    catalog = table_names(connection)
    by_name = {name.lower(): name for name in catalog}
    named = list(dict.fromkeys(by_name[w] for w in _identifiers(sql or "") if w in by_name))
    tables = named or catalog[:HINT_TABLES]
    columns = {
        table: [r[0] for r in connection.execute("SELECT name FROM pragma_table_info(?)", (table,))]
        for table in tables
    }
    return named, columns


_IDENTIFIER = re.compile(r'"((?:[^"]|"")+)"|`([^`]+)`|\[([^\]]+)\]|([^\W\d][\w$]*)')


def _identifiers(sql: str) -> Iterator[str]:
    """Every identifier-like word of ``sql``, unquoted and lower-cased (string literals included)."""
    for match in _IDENTIFIER.finditer(sql):
        quoted, backticked, bracketed, bare = match.groups()
        word = quoted.replace('""', '"') if quoted is not None else backticked or bracketed or bare
        yield word.lower()


LONG_NAMES_NOTE = (
    f"Names longer than {MAX_NAME_CHARS:,} characters are cut; read them whole with query: "
    f"SELECT name FROM sqlite_master WHERE length(name) > {MAX_NAME_CHARS}."
)


def cut_name(text: str | None) -> str | None:
    """``text`` as a reply shows a name, type or default: whole up to :data:`MAX_NAME_CHARS` characters."""
    if text is None or len(text) <= MAX_NAME_CHARS:
        return text
    return text[:MAX_NAME_CHARS] + f"…[cut: {len(text) - MAX_NAME_CHARS} more characters]"


def sql_literal(name: str) -> str:
    """``name`` as an SQL literal for a note, or a placeholder when it is too long to repeat."""
    return quote_literal(name) if len(name) <= MAX_NAME_CHARS else "'<the name>'"
