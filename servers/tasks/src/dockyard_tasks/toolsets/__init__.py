"""The tools, one module per toolset: ``read`` (read-only) and ``write``. Each tool body is one store call."""
