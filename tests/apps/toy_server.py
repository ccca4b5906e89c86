"""A toy server with one MCP Apps view, for the harness's own tests."""

from __future__ import annotations

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from pydantic import BaseModel

from dockyard_shared.apps import add_view, client_shows_views, load_view, view_meta

VIEW_URI = "ui://toy/greeting"


class Greeting(BaseModel):
    name: str
    greeting: str
    shown_as_view: bool


def build() -> FastMCP:
    mcp = FastMCP("toy-apps")
    add_view(
        mcp,
        VIEW_URI,
        load_view("tests.apps", "views/toy.html"),
        name="toy_greeting",
        description="Shows a greeting and shouts it back through a tool call.",
    )

    @mcp.tool(meta=view_meta(VIEW_URI))
    def greet(name: str, ctx: Context) -> Greeting:
        """Greet someone. The text result is complete for hosts without Apps."""
        return Greeting(name=name, greeting=f"Hello, {name}!", shown_as_view=client_shows_views(ctx))

    @mcp.tool(meta=view_meta(VIEW_URI, visibility=("app",)))
    def shout(text: str) -> str:
        """The view's button: the text in capitals."""
        if not text:
            raise ToolError("nothing to shout: the greeting has no name; greet someone first")
        return text.upper() + "!"

    @mcp.tool
    def plain() -> str:
        """A tool with no view."""
        return "plain"

    return mcp
