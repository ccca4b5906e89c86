"""What the tools return: pydantic models, so every result has an output schema and structured content."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from dockyard_shared.schema import bulk_list

__all__ = [
    "ColumnInfo",
    "ExecuteResult",
    "ExportResult",
    "ForeignKeyInfo",
    "ImportResult",
    "IndexInfo",
    "PlanNode",
    "QueryPlan",
    "QueryResult",
    "SchemaMatch",
    "SchemaSearch",
    "TableDescription",
    "TableList",
    "TableSummary",
]


class TableSummary(BaseModel):
    name: str
    type: Literal["table", "view"]
    row_count: int | None = Field(description="rows, as row_count_is says; null when not counted")
    row_count_is: Literal["exact", "estimate", "at least", "not counted"] = Field(
        description="exact up to 10,000 rows; above, an estimate (the rowid range) or a lower bound"
    )
    column_count: int | None = Field(description="null when the object cannot be read (see problem)")
    problem: str | None = Field(
        default=None, description="what is wrong with this object when SQLite cannot read it here"
    )


class TableList(BaseModel):
    database: str
    tables: list[TableSummary]
    total: int = Field(description="tables and views in the database, listed or not")
    truncated: bool = Field(default=False, description="true when only the first tables are listed")
    note: str | None = None


class ColumnInfo(BaseModel):
    name: str
    type: str
    nullable: bool
    default: str | None
    primary_key: bool


class ForeignKeyInfo(BaseModel):
    columns: list[str]
    referred_table: str
    referred_columns: list[str]
    on_delete: str | None = None


class IndexInfo(BaseModel):
    name: str | None
    columns: list[str]
    unique: bool


class TableDescription(BaseModel):
    database: str
    name: str
    type: Literal["table", "view"]
    columns: list[ColumnInfo]
    foreign_keys: list[ForeignKeyInfo]
    indexes: list[IndexInfo]
    create_sql: str | None
    row_count: int | None
    row_count_exact: bool
    sample_rows: Annotated[
        list[list[Any]], bulk_list("the first few rows: lists of values, columns in the order above")
    ]
    note: str | None = Field(
        default=None, description="what was left out to fit one reply, and how to read it"
    )
    problem: str | None = Field(
        default=None, description="why sample_rows or row_count are missing: what SQLite cannot read here"
    )


class QueryResult(BaseModel):
    database: str
    columns: list[str]
    rows: Annotated[list[list[Any]], bulk_list("one list of values per row, in the order of columns")]
    row_count: int = Field(description="rows in this page")
    offset: int = Field(description="rows before this page")
    truncated: bool = Field(description="true when more rows exist; pass next_cursor to get them")
    next_cursor: str | None = None
    note: str | None = None


class PlanNode(BaseModel):
    detail: str
    children: list[PlanNode]


class QueryPlan(BaseModel):
    database: str
    plan: list[PlanNode]
    full_scans: list[str] = Field(description="full table scans, and the index that would avoid each")
    note: str | None = Field(default=None, description="what was left out to fit one reply")


class ExecuteResult(BaseModel):
    database: str
    rows_affected: int
    last_row_id: int | None
    returned_rows: list[list[Any]] | None = Field(
        default=None, description="rows of a RETURNING clause (≤ 100)"
    )
    note: str | None = Field(default=None, description="why RETURNING rows were left out")


class SchemaMatch(BaseModel):
    name: str
    type: Literal["table", "view"]
    column_count: int | None = Field(default=None, description="summary and full")
    columns: list[str] | None = Field(
        default=None, description="summary: the matching columns as 'name TYPE' (all when the name matched)"
    )
    column_details: list[ColumnInfo] | None = Field(default=None, description="full: every column")
    foreign_keys: list[ForeignKeyInfo] | None = Field(default=None, description="full")
    problem: str | None = None


class SchemaSearch(BaseModel):
    database: str
    detail: Literal["names", "summary", "full"]
    names: list[str] | None = Field(
        default=None, description="names: 'table' (its name matched) or 'table.column' (a column matched)"
    )
    tables: list[SchemaMatch] | None = Field(default=None, description="summary and full")
    total: int = Field(description="matching tables and views, shown or not")
    offset: int
    next_offset: int | None = Field(default=None, description="pass as offset for the next part")
    note: str | None = None


class ExportResult(BaseModel):
    database: str
    path: str = Field(description="the file written, inside the export folder")
    rows: int
    bytes: int
    neutralised_cells: int = Field(
        description="text cells a spreadsheet would run as formulas, written with a leading '"
    )
    note: str | None = None


class ImportResult(BaseModel):
    database: str
    table: str
    rows: int
    columns: list[str] = Field(description="'name TYPE' as created")
    types: Literal["inferred", "text"]
    note: str | None = None
