"""dockyard-tasks: a shared project task tracker for models, on SQLite or PostgreSQL."""
