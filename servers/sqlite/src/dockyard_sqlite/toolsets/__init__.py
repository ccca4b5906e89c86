"""The tools of dockyard-sqlite, one module per toolset (declared in :mod:`..settings`)."""
