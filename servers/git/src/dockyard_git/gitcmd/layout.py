"""What git may read for one repository: the git directories it can reach, checked and neutralised.

For a repository's git directory, :class:`Layouts` works out, and caches:

* the config overrides, passed through the environment (``GIT_CONFIG_COUNT``, ``GIT_CONFIG_KEY_<n>``,
  ``GIT_CONFIG_VALUE_<n>``), that neutralise every command a config can name (hooks, fsmonitor, filters,
  diff and merge drivers, pagers, editors, helpers, signing programs, gc). The environment takes a key
  verbatim, where ``-c key=value`` splits at the first ``=`` and so cannot name a driver called ``a=b``.
  Per-driver keys (``filter.<driver>.clean``…) are found in *every* config file git could read: ``config``
  and ``config.worktree`` of the git directory, of its common directory and of every submodule git
  directory under ``modules/``, and every file they include under any condition;
* which of those a read-only command needs: only the fixed keys a config file actually sets, plus
  :data:`ALWAYS_OVERRIDDEN` (keys whose built-in default is the danger). Each override costs every config
  lookup git makes (33 of them made ``git status`` ~6% slower);
* whether the repository must be refused: its common directory, alternate object stores, the top-level
  entries of any git directory it can reach (its own, the common one, submodules' under ``modules/``,
  linked worktrees' under ``worktrees/``), pack files, loose-object folders or loose object files lead
  outside the roots, or a config file is not a regular file.

A layout is cached against a stat signature of every file and folder it was computed from; a change to any
of them recomputes it. Loose object files are checked folder by folder (:meth:`Layouts._loose_problems`),
so writing an object rescans one fan-out folder, not the whole layout.

This module holds the cache and the confinement checks; the rest lives beside it: the overrides in
:mod:`.config_overrides`, listing the keys config files set in :mod:`.config_files`, finding the git
directories and object stores one git directory leads to in :mod:`.git_dirs`, the stamps in
:mod:`.file_stamps`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .config_files import EMPTY_HOME, ConfigReader, listing_environment
from .config_overrides import ALWAYS_OVERRIDDEN, COMMAND_KEYS, FIXED_OVERRIDES, override_environment
from .file_stamps import LISTING, RACY_NS, file_stamp, is_racy
from .git_dirs import NotRegular, fan_out_folders, other_git_dirs, read_alternates, read_common_dir
from .process import ProcessLimits
from .slots import ProcessSlots

__all__ = ["EMPTY_HOME", "Layout", "Layouts", "listing_environment"]

# Entries of a git directory whose target git reads by name: a symlink among them leaving the roots would
# serve another repository's objects, refs or index.
_GIT_ENTRIES = (
    "HEAD",
    "index",
    "config",
    "config.worktree",
    "commondir",
    "packed-refs",
    "shallow",
    "objects",
    "objects/info",
    "objects/pack",
    "refs",
    "refs/heads",
    "refs/tags",
    "refs/remotes",
    "refs/stash",
    "logs",
    "logs/HEAD",
    "logs/refs",
    "info",
)
# The folders holding those entries: a link replacing one changes its folder's listing.
_ENTRY_FOLDERS = ("", "/objects", "/refs", "/logs")

_MAX_CONFIG_FILES = 64  # config files in one git directory's include closure
_MAX_ALTERNATES = 64
_MAX_ALTERNATE_DEPTH = 5  # git ignores alternates nested deeper
# objects/ holds at most 256 loose-object folders plus info and pack; objects/pack a few files per pack;
# a loose-object folder one file per object.
_MAX_OBJECT_FOLDER_ENTRIES = 100_000

_OUTSIDE = "outside the folders this server may use"


@dataclass(frozen=True)
class Layout:
    """What the runner knows about one git directory, valid while ``signature`` still matches."""

    signature: tuple[tuple[str, bool | str, tuple | None], ...]  # (path, how it is stamped, stamp)
    environment: dict[str, str]  # GIT_COMMON_DIR and every GIT_CONFIG_* override, for any command
    read_environment: dict[str, str]  # the same with only the overrides a read-only command needs
    refusal: str | None  # why the repository may not be used, or None
    # The loose-object folders (objects/ab) of every object store git reads. The listing of each objects/
    # folder is in the signature, so this list holds as long as the layout does.
    fan_out: tuple[str, ...] = ()
    config_names: frozenset[str] = frozenset()  # every key its config files set, as git lists them


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _resolutions(path: str) -> set[str]:
    """Where ``path`` may lead: git sometimes folds ``..`` before resolving symlinks, sometimes after."""
    return {os.path.realpath(path), os.path.realpath(os.path.normpath(path))}


def _leaves(path: str, roots: Sequence[str]) -> bool:
    return not all(_inside(real, roots) for real in _resolutions(path))


def _links_leaving(folder: str, roots: Sequence[str]) -> list[str]:
    """The entries of ``folder`` that are symlinks leading outside ``roots``, in words."""
    problems = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= _MAX_OBJECT_FOLDER_ENTRIES:
                    return [f"{folder} holds more than {_MAX_OBJECT_FOLDER_ENTRIES} entries"]
                if entry.is_symlink() and _leaves(entry.path, roots):
                    problems.append(f"{entry.path} is a link to {os.path.realpath(entry.path)}, {_OUTSIDE}")
    except OSError:
        pass  # absent or unreadable: git finds nothing there either
    return problems


class Layouts:
    """The cached :class:`Layout` of each git directory (thread-safe)."""

    def __init__(
        self,
        *,
        git: str,
        timeout_s: float,
        limits: ProcessLimits,
        extra_overrides: dict[str, str] | None = None,
        slots: ProcessSlots | None = None,
    ) -> None:
        self.git = git
        self.timeout_s = timeout_s
        self.limits = limits
        self._extra = dict(extra_overrides or {})  # set for every command (the runner's memory settings)
        self._roots: tuple[str, ...] | None = None
        self._layouts: dict[str, Layout] = {}
        self._loose: dict[str, tuple[tuple | None, list[str]]] = {}  # folder → (listing stamp, problems)
        self._configs = ConfigReader(git=git, timeout_s=timeout_s, limits=limits, slots=slots)
        self._lock = threading.Lock()

    def confine_to(self, roots: Sequence[str]) -> None:
        with self._lock:
            self._roots = tuple(roots)
            self._layouts.clear()
            self._loose.clear()

    def get(self, git_dir: str) -> Layout:
        """The layout of ``git_dir``: cached if no file it was computed from changed, else fresh."""
        with self._lock:
            cached = self._layouts.get(git_dir)
        if cached is not None and all(
            file_stamp(path, how) == stamp for path, how, stamp in cached.signature
        ):
            layout = cached
        else:
            started = time.time_ns()
            layout = self._compute(git_dir)
            if not any(is_racy(stamp, started) for _, _, stamp in layout.signature):
                with self._lock:
                    self._layouts[git_dir] = layout
        if layout.refusal is None and self._roots is not None:
            problems = self._loose_problems(layout.fan_out, self._roots)
            if problems:
                return replace(layout, refusal=problems[0])
        return layout

    # -- loose objects ------------------------------------------------------------------------

    def _loose_problems(self, fan_out: Sequence[str], roots: Sequence[str]) -> list[str]:
        """Loose object files that are links leading outside the roots, one fan-out folder at a time:
        a folder whose listing did not change since it was scanned is not scanned again (one ``stat``)."""
        problems: list[str] = []
        scans = self._loose
        for folder in fan_out:
            try:
                st = os.stat(folder, follow_symlinks=False)
                stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
            except OSError:
                continue  # gone (pruned): nothing in it to read
            cached = scans.get(folder)
            if cached is not None and cached[0] == stamp:
                problems += cached[1]
                continue
            started = time.time_ns()
            found = _links_leaving(folder, roots)
            if max(stamp[1], stamp[2]) < started - RACY_NS:  # else it may change again unseen
                with self._lock:
                    scans[folder] = (stamp, found)
            problems += found
        return problems

    # -- computing a layout -------------------------------------------------------------------

    def _compute(self, git_dir: str) -> Layout:
        watched: list[tuple[str, bool | str]] = []  # every path the layout depends on, and how to stamp it
        refusals: list[str] = []
        roots = self._roots

        commondir = f"{git_dir}/commondir"
        watched.append((commondir, True))
        common_dir, problem = read_common_dir(git_dir, commondir)
        if problem:
            refusals.append(problem)
        modules, worktrees, problems = other_git_dirs(common_dir, watched)
        others = modules + worktrees
        refusals += problems
        object_dirs: list[str] = []
        if roots is not None:
            refusals += self._confinement_problems(
                git_dir, common_dir, commondir, others, roots, watched, object_dirs
            )

        # A submodule's config is read too (its drivers are neutralised as well), unless the submodule's
        # git directory leads out of the roots — then the repository is refused and nothing is read there.
        bases = [git_dir, common_dir] + [m for m in modules if roots is None or not _leaves(m, roots)]
        config_files = [
            f"{base}/{name}" for base in dict.fromkeys(bases) for name in ("config", "config.worktree")
        ]
        limit = _MAX_CONFIG_FILES * (len(dict.fromkeys(bases)) - (1 if common_dir != git_dir else 0))
        names, problem = self._configs.names(config_files, watched, limit)
        if problem:
            refusals.append(problem)
        per_driver = {}
        for name in sorted(names):
            section, _, rest = name.partition(".")
            leaf = rest.rpartition(".")[2]
            if section == "pager":
                per_driver[name] = "cat"
            elif (section, leaf) in COMMAND_KEYS:
                per_driver[name] = COMMAND_KEYS[(section, leaf)]
        # git lists section and key names in lower case; a key differing only in case is the same key.
        mentioned = {name.lower() for name in names}
        read_overrides = {
            name: value
            for name, value in FIXED_OVERRIDES.items()
            if name in ALWAYS_OVERRIDDEN or name.lower() in mentioned
        }
        signature = tuple((path, how, file_stamp(path, how)) for path, how in dict.fromkeys(watched))
        return Layout(
            signature,
            override_environment(common_dir, {**FIXED_OVERRIDES, **per_driver, **self._extra}),
            override_environment(common_dir, {**read_overrides, **per_driver, **self._extra}),
            refusals[0] if refusals else None,
            tuple(folder for objects in dict.fromkeys(object_dirs) for folder in fan_out_folders(objects)),
            frozenset(names),
        )

    def _confinement_problems(
        self,
        git_dir: str,
        common_dir: str,
        commondir: str,
        others: list[str],
        roots: Sequence[str],
        watched: list,
        object_dirs: list[str],
    ) -> list[str]:
        problems = []
        if _leaves(git_dir, roots):
            problems.append(f"its git directory {git_dir} is {_OUTSIDE}")
        if common_dir != git_dir and _leaves(common_dir, roots):
            problems.append(f"its commondir file {commondir} leads to {common_dir}, {_OUTSIDE}")
        for base in dict.fromkeys((git_dir, common_dir)):
            for name in _GIT_ENTRIES:
                entry = f"{base}/{name}"
                watched.append((entry, False))
                if os.path.islink(entry) and _leaves(entry, roots):
                    problems.append(f"{entry} is a link to {os.path.realpath(entry)}, {_OUTSIDE}")
        # Submodules' and linked worktrees' git directories: git reads their HEAD and refs (a
        # submodule's recorded state, a branch checked out elsewhere). Their folders are watched as
        # listings: replacing an entry with a link changes the listing of the folder holding it.
        for other in others:
            if _leaves(other, roots):
                problems.append(f"{other} is a link to {os.path.realpath(other)}, {_OUTSIDE}")
                continue
            for folder in _ENTRY_FOLDERS:
                watched.append((other + folder, LISTING))
            for name in _GIT_ENTRIES:
                entry = f"{other}/{name}"
                if os.path.islink(entry) and _leaves(entry, roots):
                    problems.append(f"{entry} is a link to {os.path.realpath(entry)}, {_OUTSIDE}")
            commondir_file = f"{other}/commondir"
            if os.path.lexists(commondir_file):
                target, problem = read_common_dir(other, commondir_file)
                watched.append((commondir_file, True))
                if problem:
                    problems.append(problem)
                elif _leaves(target, roots):
                    problems.append(f"its commondir file {commondir_file} leads to {target}, {_OUTSIDE}")
        # Alternate object stores: git reads them from the objects folder of the common directory (that of
        # the git directory too, to be safe), then recursively from each store's own info/alternates.
        pending = [(f"{base}/objects", 0) for base in dict.fromkeys((git_dir, common_dir))]
        object_dirs += [objects for objects, _ in pending]
        seen: set[str] = set()
        while pending:
            objects, depth = pending.pop()
            listing = f"{objects}/info/alternates"
            watched.append((listing, True))
            try:
                stores = read_alternates(objects, listing)
            except NotRegular:
                problems.append(f"{listing} is not a regular file")
                continue
            for store in stores:
                if _leaves(store, roots):
                    problems.append(f"its alternate object store {store} (in {listing}) is {_OUTSIDE}")
                    continue
                real = os.path.realpath(store)
                if real in seen:
                    continue
                seen.add(real)
                object_dirs.append(real)
                if len(seen) > _MAX_ALTERNATES:
                    return [*problems, f"{listing} names more than {_MAX_ALTERNATES} alternate object stores"]
                if depth < _MAX_ALTERNATE_DEPTH:
                    pending.append((real, depth + 1))
        # Inside every object store git reads: a pack file or a loose-object folder (objects/ab) may be a
        # link too (loose object files inside the folders: see _loose_problems).
        for objects in dict.fromkeys(object_dirs):
            for folder in (objects, f"{objects}/pack"):
                watched.append((folder, LISTING))
                problems += _links_leaving(folder, roots)
        return problems
