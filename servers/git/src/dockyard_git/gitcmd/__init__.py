"""The one way this server runs git (:mod:`.runner`), and what it needs to do so safely: one bounded,
killable process (:mod:`.process`), the git directories a repository reaches and the config overrides that
neutralise what their config files name (:mod:`.layout`, :mod:`.config_files`, :mod:`.config_overrides`,
:mod:`.git_dirs`, :mod:`.file_stamps`), what a command that talks to a remote may use (:mod:`.network`), and
the server-wide bound on git processes running at once (:mod:`.slots`). Nothing else in the server starts
git."""

from __future__ import annotations

from .network import NetworkAccess
from .process import running_processes
from .runner import GitOutput, GitRunner
from .slots import GitBusy

__all__ = ["GitBusy", "GitOutput", "GitRunner", "NetworkAccess", "running_processes"]
