"""``dockyard eval``: does a model, given a server's tools, pick the right one with the right arguments?

The third layer of testing after unit and protocol tests. :mod:`.cases` holds the versioned data set and
the argument comparison, :mod:`.scoring` scores the first tool call, :mod:`.chat` talks to any
OpenAI-compatible chat completions endpoint (with bounded retries), :mod:`.report` makes the figures and
:mod:`.command` is the subcommand. The tools are exported exactly as ``dockyard tools --format openai``
exports them (:mod:`dockyard_shared.export`).
"""
