"""What the remote tools do: list remotes and tracking state, fetch, fast-forward pull, push.

Every network command reaches the remote through :mod:`.access` (which URLs, credentials and
settings), with the repository's lock held shared from the moment a remote's URL is checked until git has
used it, so no other command of this server rewrites the config in between. A fetch writes only
``refs/remotes/<remote>/*`` (an explicit refspec and ``--refmap=``: the remote's configured refspecs, tag
options and prune settings are not used); a pull only fast-forwards; a push sends one branch (and tags
only when named), never a plain force: force-with-lease pins the remote value it replaces.
"""

from __future__ import annotations

from .pushing import PushOperations, PushPlan

__all__ = ["PushPlan", "RemoteOperations"]


class RemoteOperations(PushOperations):
    """Every remote operation (listing, fetch and pull in :mod:`.fetching`, push in :mod:`.pushing`, what
    they share in :mod:`.base`)."""
