"""The keys a repository's config files set, listed by a git that reads one config file and nothing else.

:class:`.layout.Layouts` neutralises every per-driver key found here (``filter.<driver>.clean``…), in
every file git could read, and every file those include under any condition.
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile

from .file_stamps import file_stamp
from .process import Finished, ProcessLimits, run_bounded
from .slots import ProcessSlots

__all__ = ["EMPTY_HOME", "ConfigReader", "listing_environment"]

EMPTY_HOME = tempfile.mkdtemp(prefix="dockyard-git-home-")

_MAX_INCLUDE_DEPTH = 10  # git's own limit: deeper includes make it fail
_MAX_CONFIG_LISTING_BYTES = 16_000_000  # what `git config --list` of one file may print


class ConfigReader:
    """Lists the keys config files set (bounded: every listing is a git process with limits)."""

    def __init__(
        self, *, git: str, timeout_s: float, limits: ProcessLimits, slots: ProcessSlots | None = None
    ) -> None:
        self.git = git
        self.timeout_s = timeout_s
        self.limits = limits
        self.slots = slots
        self._system_prefix: str | None = None

    def names(self, files: list[str], watched: list, limit: int) -> tuple[set[str], str | None]:
        """Every key set in ``files`` or a file they include, under any include condition."""
        pending = [(path, 0) for path in files]
        seen: set[str] = set()
        names: set[str] = set()
        while pending:
            path, depth = pending.pop(0)
            if path in seen:
                continue
            seen.add(path)
            watched.append((path, True))
            if len(seen) > limit:
                return names, f"its config includes more than {limit} files"
            stamp = file_stamp(path, True)
            if stamp is None:
                continue  # absent now; the signature notices when it appears
            if stamp[0] != stat.S_IFREG:
                # git would read a FIFO or device (even the commit message on stdin) as config
                return names, f"its config file {path} is not a regular file"
            entries, problem = self._list_config(path)
            if problem:
                return names, problem
            for name, value in entries:
                names.add(name)
                section, _, rest = name.partition(".")
                if (
                    section in ("include", "includeif")
                    and rest.rpartition(".")[2] == "path"
                    and value
                    and depth < _MAX_INCLUDE_DEPTH
                ):
                    target = self._include_target(path, value)
                    if target is not None:
                        pending.append((target, depth + 1))
        return names, None

    def _list_config(self, path: str) -> tuple[list[tuple[str, str | None]], str | None]:
        """(name, value) of each entry of one config file, includes not followed."""
        try:
            listing = self.git_alone(["config", "--file", path, "--null", "--list"])
        except OSError:
            return [], f"its config file {path} could not be read"
        if listing.expired or listing.out_of_cpu:
            return [], f"its config file {path} could not be read in time"
        if listing.truncated or listing.out_of_memory:
            return [], f"its config file {path} is too large"
        # A file git cannot parse makes git fail as soon as it reads it: the entries before the bad line
        # are all that could ever take effect.
        entries = []
        for record in listing.stdout.split(b"\0"):
            if record:
                name, newline, value = record.partition(b"\n")
                entries.append((os.fsdecode(name), os.fsdecode(value) if newline else None))
        return entries, None

    def git_alone(self, args: list[str], *, max_bytes: int = _MAX_CONFIG_LISTING_BYTES) -> Finished:
        """git run outside any repository (reading one config file, or its own exec path), bounded."""
        return run_bounded(
            [self.git, *args],
            cwd=EMPTY_HOME,
            env=listing_environment(),
            limits=self.limits,
            timeout_s=self.timeout_s,
            max_bytes=max_bytes,
            slots=self.slots,
        )

    def _include_target(self, including: str, value: str) -> str | None:
        """The file an include names, spelled as git spells it (``interpolate_path``, then relative)."""
        if value.startswith("~"):
            user, slash, rest = value[1:].partition("/")
            if user:
                try:
                    home = pwd.getpwnam(user).pw_dir
                except KeyError:
                    return None  # git fails on an unknown user
            else:
                home = EMPTY_HOME
            value = home + slash + rest
        elif value.startswith("%(prefix)/"):
            value = self._prefix() + "/" + value.removeprefix("%(prefix)/")
        if not value.startswith("/"):
            value = including[: including.rfind("/") + 1] + value
        return value

    def _prefix(self) -> str:
        """git's installation prefix (``%(prefix)/`` in an include): two levels above its exec path."""
        if self._system_prefix is None:
            try:
                exec_path = self.git_alone(["--exec-path"]).stdout.decode("utf-8", "replace").strip()
            except OSError:
                exec_path = ""
            self._system_prefix = os.path.dirname(os.path.dirname(exec_path)) if exec_path else "/usr"
        return self._system_prefix


def listing_environment() -> dict[str, str]:
    """The environment of a git that reads one config file and nothing else."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": EMPTY_HOME,
        "XDG_CONFIG_HOME": EMPTY_HOME,
        "LC_ALL": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        # `git config --file` needs no repository: do not look for one above the empty home.
        "GIT_CEILING_DIRECTORIES": os.path.dirname(EMPTY_HOME),
    }
