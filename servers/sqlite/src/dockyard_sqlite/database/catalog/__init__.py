"""What a database holds: its tables and views, their columns, keys, indexes, DDL and row counts.

Read one way only: ``sqlite_master`` and the ``pragma_*`` table-valued functions, on a guarded connection
the caller checked out (so under its budget, with its authorizer log). Bounded like every reply: the
listing by :data:`MAX_LISTED_TABLES`, the DDL by the page budget, a count by its own time slice, each
with a note saying how to get the rest.
"""

from __future__ import annotations

from .ddl import schema_ddl
from .description import describe
from .index_advice import index_suggestions, scan_notes
from .listing import (
    EXACT_COUNT_UP_TO,
    LISTED_EXACT_UP_TO,
    MAX_LISTED_TABLES,
    TableListing,
    count_rows,
    listing,
    object_problem,
    volatile,
)
from .names import MAX_NAME_CHARS, columns_nearby, cut_name, resolve, table_names

__all__ = [
    "EXACT_COUNT_UP_TO",
    "LISTED_EXACT_UP_TO",
    "MAX_LISTED_TABLES",
    "MAX_NAME_CHARS",
    "TableListing",
    "columns_nearby",
    "count_rows",
    "cut_name",
    "describe",
    "index_suggestions",
    "listing",
    "object_problem",
    "resolve",
    "scan_notes",
    "schema_ddl",
    "table_names",
    "volatile",
]
