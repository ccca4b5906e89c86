"""Dockyard servers as A2A agents (``dockyard a2a``), on the official ``a2a-sdk`` (the ``a2a`` extra).

Each chosen server becomes one agent, at ``http://HOST:PORT/NAME/``:

* its Agent Card at ``/NAME/.well-known/agent-card.json``, one skill per listed tool (the tool's description,
  and an example request holding its input schema) — :mod:`.card`;
* A2A JSON-RPC at ``/NAME/``: a message whose part is the data ``{"tool": NAME, "arguments": {...}}`` runs
  that tool through an in-process MCP client session on the server, so every safety rule, bound and error
  of the MCP server applies unchanged; a confirmation the tool asks for becomes the ``input-required``
  state, answered by the caller's next message; a plain text message is answered with the skills and the
  shape expected — :mod:`.executor`;
* the runner's bearer token (``--auth-token`` / ``DOCKYARD_AUTH_TOKEN``) guards the JSON-RPC endpoint; the
  card is public, as A2A discovery expects, and declares the bearer scheme — :mod:`.serve`;
* tasks kept in the server's own PostgreSQL database when it names one (``ServerEntry.database``), so any
  replica answers for them; else in memory — :mod:`.store`.
"""
