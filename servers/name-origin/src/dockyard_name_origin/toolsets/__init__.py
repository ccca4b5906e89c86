"""The toolsets of dockyard-name-origin: one, ``predict``, every tool of which only reads."""
