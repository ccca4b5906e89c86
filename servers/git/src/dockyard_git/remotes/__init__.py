"""What the remote tools do: list remotes and tracking state, fetch, fast-forward pull, push.

Every network command reaches the remote through :mod:`.access` (which URLs, credentials and
settings), with the repository's lock held shared from the moment a remote's URL is checked until git has
used it, so no other command of this server rewrites the config in between. A fetch writes only
``refs/remotes/<remote>/*`` (an explicit refspec and ``--refmap=``: the remote's configured refspecs, tag
options and prune settings are not used); a pull only fast-forwards; a push sends one branch (and tags
only when named), never a plain force: force-with-lease pins the remote value it replaces.

The entry point is :class:`.operations.RemoteOperations`. This package module imports nothing: the
remote toolset imports :mod:`.models` when it is installed, and the rest waits for the first remote call.
"""
