"""The tools, one module per toolset: ``read`` (read-only), ``write`` and ``manage`` (off by default). Each tool
body is one store call."""
