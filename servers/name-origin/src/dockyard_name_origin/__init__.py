"""Dockyard name-origin MCP server: where a name probably comes from, via nationalize.io."""
