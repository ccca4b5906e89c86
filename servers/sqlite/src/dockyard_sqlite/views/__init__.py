"""The MCP Apps views of dockyard-sqlite (``io.modelcontextprotocol/ui``): HTML a host that renders apps shows
beside a tool's result. The result stays complete text and structured content for every other host.

``ui://sqlite/result`` renders a ``query`` page as a table: sortable columns (this page only), the next page
asked for through the host with the reply's ``next_cursor``, and the page copied as CSV.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dockyard_shared.apps import add_view, load_view, view_meta

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["RESULT_VIEW", "query_meta", "register_views"]

RESULT_VIEW = "ui://sqlite/result"


def query_meta() -> dict[str, Any]:
    """The ``_meta`` of the ``query`` tool: the view its results are shown in. The model sees the tool
    as before; the view calls it too, for the next page."""
    return view_meta(RESULT_VIEW)


def register_views(server: FastMCP) -> None:
    """Serve the views of the tools this server has (only ``query`` has one)."""
    add_view(
        server,
        RESULT_VIEW,
        load_view(__name__, "result.html"),
        name="query result",
        description="A query's page as a table: sort its columns, read the next page, copy it as CSV.",
    )
