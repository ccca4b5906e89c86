"""Dockyard sqlite MCP server."""
