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
"""

from __future__ import annotations

import codecs
import os
import pwd
import re
import stat
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .process import Finished, ProcessLimits, run_bounded

__all__ = ["EMPTY_HOME", "Layout", "Layouts"]

EMPTY_HOME = tempfile.mkdtemp(prefix="dockyard-git-home-")

# Set on every call that may write, whether or not a config mentions them (some have risky defaults:
# hooks live in $GIT_DIR/hooks unless hooksPath says otherwise).
FIXED_OVERRIDES = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.fsmonitorHookVersion": "0",
    "core.pager": "cat",
    "core.editor": "false",
    "core.askPass": "",
    "core.sshCommand": "false",
    "core.gitProxy": "",
    "core.alternateRefsCommand": "",
    "core.excludesFile": "/dev/null",
    "core.attributesFile": "/dev/null",
    "sequence.editor": "false",
    "diff.external": "",
    "interactive.diffFilter": "cat",
    "credential.helper": "",
    "protocol.allow": "never",
    "gpg.program": "false",
    "gpg.openpgp.program": "false",
    "gpg.ssh.program": "false",
    "gpg.x509.program": "false",
    "gpg.ssh.defaultKeyCommand": "false",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "log.showSignature": "false",
    "merge.verifySignatures": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
    "color.ui": "never",
    "blame.ignoreRevsFile": "",
    # Submodules: never looked into (the runner also passes --ignore-submodules and the like on the
    # command line, which beats a submodule.<name>.ignore in .gitmodules; these cover the rest).
    "status.submoduleSummary": "false",
    "submodule.recurse": "false",
    "diff.submodule": "short",
    "diff.ignoreSubmodules": "all",
    "fetch.recurseSubmodules": "false",
    # Which regex engine log --grep/--author use: the one the tools say, not one a config picks.
    "grep.patternType": "default",
    "grep.extendedRegexp": "false",
}

# Overridden for read-only commands too, whether or not a config sets them: the default of hooksPath is
# the repository's own hooks folder (git status runs post-index-change when it refreshes the index), and
# fsmonitor is consulted by every command that reads the index.
ALWAYS_OVERRIDDEN = ("core.hooksPath", "core.fsmonitor")

# Keys that name a program, matched on (section, last part) whatever the subsection — ``filter.<driver>.clean``,
# ``credential.<url>.helper``, ``sendemail.<identity>.toCmd`` — each with the value that makes it harmless.
# Every one found in a config file is overridden (``pager.<command>`` too). An empty filter command means
# "no filter"; elsewhere an empty command only makes git fail to start it.
COMMAND_KEYS: dict[tuple[str, str], str] = {
    ("filter", "clean"): "",
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",  # a required filter whose command was blanked would fail every call
    ("diff", "command"): "",
    ("diff", "textconv"): "",
    ("merge", "driver"): "",
    ("trailer", "command"): "",
    ("trailer", "cmd"): "",
    ("credential", "helper"): "",  # an empty value also empties the helper list
    ("protocol", "allow"): "never",  # protocol.<name>.allow=always would beat protocol.allow=never
    ("remote", "uploadpack"): "git-upload-pack",
    ("remote", "receivepack"): "git-receive-pack",
    ("remote", "vcs"): "",  # a remote helper, found by a name the config chooses
    ("gpg", "program"): "false",
    ("gpg", "defaultkeycommand"): "false",
    ("difftool", "cmd"): "",
    ("difftool", "path"): "",
    ("mergetool", "cmd"): "",
    ("mergetool", "path"): "",
    ("man", "cmd"): "",
    ("man", "path"): "",
    ("browser", "cmd"): "",
    ("browser", "path"): "",
    ("guitool", "cmd"): "",
    ("submodule", "update"): "none",  # "!command" runs a command on submodule update
    ("submodule", "ignore"): "all",
    ("tar", "command"): "false",  # git archive's compressors
    ("sendemail", "tocmd"): "",
    ("sendemail", "cccmd"): "",
    ("sendemail", "headercmd"): "",
    ("sendemail", "smtpserver"): "",  # an absolute path is run as sendmail
    ("hook", "command"): "true",  # config-defined hooks of newer git releases
}

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
_MAX_INCLUDE_DEPTH = 10  # git's own limit: deeper includes make it fail
_MAX_ALTERNATES = 64
_MAX_ALTERNATE_DEPTH = 5  # git ignores alternates nested deeper
# objects/ holds at most 256 loose-object folders plus info and pack; objects/pack a few files per pack;
# a loose-object folder one file per object.
_MAX_OBJECT_FOLDER_ENTRIES = 100_000
# Submodule git directories under modules/ (nested ones included) and linked worktrees under worktrees/.
_MAX_OTHER_GIT_DIRS = 1_000
_MAX_MODULES_DEPTH = 16  # folders between modules/ and a git directory (a submodule's name may hold '/')
_MAX_CONFIG_LISTING_BYTES = 16_000_000  # what `git config --list` of one file may print
_FAN_OUT = re.compile(r"[0-9a-f]{2}")
# A file changed less than this before its stat was taken may change again without its stat changing
# (file system timestamps are coarse): such a signature is not cached.
_RACY_NS = 100_000_000

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


# _stamp's mode for a folder whose list of entries matters (objects, objects/pack): its times change
# when an entry is added, removed or renamed, not when a file inside is rewritten.
_LISTING = "listing"


def _stamp(path: str, follow: bool | str) -> tuple | None:
    """What changes when a file changes: type, identity, size and times; ``None`` when it is absent.

    A directory's own content changes all the time (objects, refs), so only its identity counts, unless
    it is stamped as a :data:`_LISTING`. An entry read with ``follow=False`` is only checked for being a
    symlink, so a plain file or folder stamps as its type alone (HEAD and the index are rewritten all the
    time; that must not discard the cache).
    """
    try:
        st = os.stat(path, follow_symlinks=bool(follow))
    except (OSError, ValueError):
        return None
    kind = stat.S_IFMT(st.st_mode)
    if stat.S_ISDIR(st.st_mode):
        if follow == _LISTING:
            return (kind, st.st_dev, st.st_ino, 0, st.st_mtime_ns, st.st_ctime_ns)
        return (kind, st.st_dev, st.st_ino) if follow else (kind,)
    if not follow and not stat.S_ISLNK(st.st_mode):
        return (kind,)
    return (kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _racy(stamp: tuple | None, since_ns: int) -> bool:
    return stamp is not None and len(stamp) > 3 and max(stamp[4], stamp[5]) >= since_ns - _RACY_NS


def _override_environment(common_dir: str, overrides: dict[str, str]) -> dict[str, str]:
    """``GIT_COMMON_DIR`` and ``overrides`` as git's environment config (keys verbatim, see above)."""
    environment = {"GIT_COMMON_DIR": common_dir, "GIT_CONFIG_COUNT": str(len(overrides))}
    for index, (name, value) in enumerate(overrides.items()):
        environment[f"GIT_CONFIG_KEY_{index}"] = name
        environment[f"GIT_CONFIG_VALUE_{index}"] = value
    return environment


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


def _fan_out_folders(objects: str) -> list[str]:
    """The loose-object folders (``objects/ab``) that are real folders; linked ones are refused apart."""
    try:
        with os.scandir(objects) as entries:
            return sorted(
                entry.path
                for entry in entries
                if _FAN_OUT.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _unquote_c(text: bytes) -> bytes:
    """A C-quoted alternates line (``"…"``), as git reads it."""
    inner = text[1:]
    if inner.endswith(b'"'):
        inner = inner[:-1]
    return codecs.escape_decode(inner)[0]


class _NotRegular(Exception):
    """A FIFO, device or folder where git expects a file: reading it could block or mean anything."""


def _read_regular(path: str, limit: int = 1_000_000) -> bytes:
    """The start of the regular file ``path`` (OSError when it is absent or unreadable)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the server
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise _NotRegular(path)
        return os.read(descriptor, limit)
    finally:
        os.close(descriptor)


def _common_dir(git_dir: str, commondir: str) -> tuple[str, str | None]:
    """The common directory git uses for ``git_dir``: the ``commondir`` file, read as git reads it."""
    if not os.path.lexists(commondir):
        return git_dir, None
    try:
        data = _read_regular(commondir).rstrip(b"\r\n")
    except _NotRegular:
        return git_dir, f"its commondir file {commondir} is not a regular file"
    except OSError:
        return git_dir, f"its commondir file {commondir} cannot be read"
    if not data:
        return git_dir, f"its commondir file {commondir} is empty"
    target = os.fsdecode(data)
    if not target.startswith("/"):
        target = f"{git_dir}/{target}"
    return os.path.realpath(target), None


def _alternates(objects: str, listing: str) -> list[str]:
    """The object stores an ``info/alternates`` file names (relative ones against ``objects``)."""
    try:
        data = _read_regular(listing)
    except OSError:
        return []
    base = os.path.realpath(objects)
    stores = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.startswith(b'"'):
            try:
                line = _unquote_c(line)
            except ValueError:
                pass  # git, too, takes a line it cannot unquote as it is
        entry = os.fsdecode(line)
        stores.append(entry if entry.startswith("/") else f"{base}/{entry}")
    return stores


def _other_git_dirs(common_dir: str, watched: list) -> tuple[list[str], list[str], list[str]]:
    """The git directories of submodules (``modules/**``, nested ones too) and of linked worktrees
    (``worktrees/*``) that commands run in this repository can read, and problems found on the way.

    The walk never follows a symlink: a linked folder among them is returned as it is, so where it leads
    is checked like any git directory's.
    """
    modules: list[str] = []
    worktrees: list[str] = []
    pending = [(f"{common_dir}/modules", 0), (f"{common_dir}/worktrees", -1)]
    visited = 0
    while pending:
        folder, depth = pending.pop()
        watched.append((folder, _LISTING))
        visited += 1
        if visited > _MAX_OTHER_GIT_DIRS * 4 or len(modules) + len(worktrees) > _MAX_OTHER_GIT_DIRS:
            return (
                modules,
                worktrees,
                [f"it holds more than {_MAX_OTHER_GIT_DIRS} submodule or worktree git directories"],
            )
        try:
            with os.scandir(folder) as entries:
                children = sorted((entry.path, entry.is_symlink()) for entry in entries if entry.is_dir())
        except OSError:
            continue
        for child, linked in children:
            if depth < 0:
                worktrees.append(child)  # every worktrees/<id> is a git directory
            elif linked or os.path.lexists(f"{child}/HEAD"):
                modules.append(child)
                if not linked:
                    pending.append((f"{child}/modules", 0))  # nested submodules
            elif depth < _MAX_MODULES_DEPTH:
                pending.append((child, depth + 1))  # part of a submodule name holding '/'
    return modules, worktrees, []


class Layouts:
    """The cached :class:`Layout` of each git directory (thread-safe)."""

    def __init__(
        self,
        *,
        git: str,
        timeout_s: float,
        limits: ProcessLimits,
        extra_overrides: dict[str, str] | None = None,
    ) -> None:
        self.git = git
        self.timeout_s = timeout_s
        self.limits = limits
        self._extra = dict(extra_overrides or {})  # set for every command (the runner's memory settings)
        self._roots: tuple[str, ...] | None = None
        self._layouts: dict[str, Layout] = {}
        self._loose: dict[str, tuple[tuple | None, list[str]]] = {}  # folder → (listing stamp, problems)
        self._system_prefix: str | None = None
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
        if cached is not None and all(_stamp(path, how) == stamp for path, how, stamp in cached.signature):
            layout = cached
        else:
            started = time.time_ns()
            layout = self._compute(git_dir)
            if not any(_racy(stamp, started) for _, _, stamp in layout.signature):
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
            if max(stamp[1], stamp[2]) < started - _RACY_NS:  # else it may change again unseen
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
        common_dir, problem = _common_dir(git_dir, commondir)
        if problem:
            refusals.append(problem)
        modules, worktrees, problems = _other_git_dirs(common_dir, watched)
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
        names, problem = self._config_names(config_files, watched, limit)
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
        signature = tuple((path, how, _stamp(path, how)) for path, how in dict.fromkeys(watched))
        return Layout(
            signature,
            _override_environment(common_dir, {**FIXED_OVERRIDES, **per_driver, **self._extra}),
            _override_environment(common_dir, {**read_overrides, **per_driver, **self._extra}),
            refusals[0] if refusals else None,
            tuple(folder for objects in dict.fromkeys(object_dirs) for folder in _fan_out_folders(objects)),
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
                watched.append((other + folder, _LISTING))
            for name in _GIT_ENTRIES:
                entry = f"{other}/{name}"
                if os.path.islink(entry) and _leaves(entry, roots):
                    problems.append(f"{entry} is a link to {os.path.realpath(entry)}, {_OUTSIDE}")
            commondir_file = f"{other}/commondir"
            if os.path.lexists(commondir_file):
                target, problem = _common_dir(other, commondir_file)
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
                stores = _alternates(objects, listing)
            except _NotRegular:
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
                watched.append((folder, _LISTING))
                problems += _links_leaving(folder, roots)
        return problems

    def _config_names(self, files: list[str], watched: list, limit: int) -> tuple[set[str], str | None]:
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
            stamp = _stamp(path, True)
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
            listing = self._git_alone(["config", "--file", path, "--null", "--list"])
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

    def _git_alone(self, args: list[str]) -> Finished:
        """git run outside any repository (reading one config file, or its own exec path), bounded."""
        return run_bounded(
            [self.git, *args],
            cwd=EMPTY_HOME,
            env=listing_environment(),
            limits=self.limits,
            timeout_s=self.timeout_s,
            max_bytes=_MAX_CONFIG_LISTING_BYTES,
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
                exec_path = self._git_alone(["--exec-path"]).stdout.decode("utf-8", "replace").strip()
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
