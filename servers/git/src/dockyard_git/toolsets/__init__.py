"""One module per toolset: thin tools, each one call into :class:`~dockyard_git.context.GitContext`."""
