"""The remote operations: one shared context, and the objects that do each tool's work over it."""

from __future__ import annotations

from ..gitcmd import GitRunner
from ..repos import RepositorySet
from ..settings import Limits, RemoteSettings
from .access import RemoteAccess
from .context import RemoteContext
from .fetching import Fetching
from .listing import RemoteListing
from .pushing import Pushing, PushPlan

__all__ = ["PushPlan", "RemoteContext", "RemoteOperations"]


class RemoteOperations:
    """The remote tools' work, each in one module, over one shared :class:`~.context.RemoteContext`
    (running git in the repository, choosing the remote and branch, running on the network):
    ``listing`` (git_remotes, :mod:`.listing`), ``fetching`` (git_fetch and git_pull, :mod:`.fetching`)
    and ``pushing`` (git_push, :mod:`.pushing`)."""

    def __init__(
        self,
        repositories: RepositorySet,
        runner: GitRunner,
        settings: RemoteSettings,
        limits: Limits | None = None,
        *,
        access: RemoteAccess | None = None,
    ) -> None:
        self.context = RemoteContext(repositories, runner, settings, limits, access=access)
        self.listing = RemoteListing(self.context)
        self.fetching = Fetching(self.context)
        self.pushing = Pushing(self.context)
