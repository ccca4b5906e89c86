"""Dockyard git MCP server."""
