"""The one way this server runs git: hardened, bounded, killable.

Every git process gets:

* an environment with no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  an empty ``HOME``), no prompts, no pager, no transport protocol, and ``GIT_DIR``, ``GIT_COMMON_DIR`` and
  ``GIT_WORK_TREE`` set explicitly — so neither a repository's ``core.worktree`` nor a ``commondir`` file
  written after the checks below can point git elsewhere;
* config overrides, passed through the environment (``GIT_CONFIG_COUNT``, ``GIT_CONFIG_KEY_<n>``,
  ``GIT_CONFIG_VALUE_<n>``), that neutralise every command a repository's own config can name: hooks,
  fsmonitor, clean/smudge/process filters, external diff and textconv drivers, merge drivers, pagers,
  editors, ssh/askpass/credential helpers, signing programs, automatic gc. The environment takes a key
  verbatim, where ``-c key=value`` splits at the first ``=`` and so cannot name a driver called ``a=b``;
* for the per-driver keys (``filter.<driver>.clean`` and the like), overrides computed from *every* config
  file git could read for the repository: ``config`` and ``config.worktree`` of the git directory and of
  its common directory, and every file they include — through ``include.path`` or any ``includeIf``,
  whatever its condition, so a condition that turns true after a checkout is already covered. The result
  is cached against a stat signature of each of those files (present or absent) and of the ``commondir``
  file, so any change — a checkout rewriting an included tracked file, a file appearing — recomputes it,
  and a cache hit costs only ``stat`` calls;
* for a command that writes no file git reads config from (status, log, diff… — :data:`_SHARED_COMMANDS`),
  only the fixed overrides whose key the repository's config files set, plus :data:`_ALWAYS_OVERRIDDEN`
  (the keys whose *built-in default* runs repository code). With system and global config shut out, those
  files are the only place a key can come from, so an unset key keeps git's harmless default; and each
  override costs every config lookup git makes (33 of them made ``git status`` ~6% slower). A command that
  may rewrite a config file or an included tracked file (checkout, stash, commit…) still gets every fixed
  override, because the git processes it starts re-read the config it has just rewritten;
* confinement, once a :class:`~.repos.RepositorySet` has given the runner its roots: a repository whose
  common directory, alternate object stores, top-level git entries (objects, refs, HEAD, index…), pack
  files or loose-object folders resolve outside the roots is refused — git would otherwise read another
  repository's commits;
* a per-repository lock: a command that may rewrite work-tree files (checkout, stash, reset…) runs alone,
  so no other git process starts with overrides computed from config files it is rewriting;
* a time limit, after which it is killed, and an output budget: stdout is read only up to the budget,
  then the process is killed and the result marked truncated — a 25 MB diff costs what the budget costs.
"""

from __future__ import annotations

import codecs
import contextvars
import errno
import os
import pwd
import re
import selectors
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound, PermissionDenied

__all__ = ["GitOutput", "GitRunner", "running_processes"]

# The git processes started on behalf of the current tool call (the list is shared with the worker
# thread that runs the call), so a cancelled request can kill them instead of waiting for the timeout.
running_processes: contextvars.ContextVar[list[subprocess.Popen] | None] = contextvars.ContextVar(
    "running_processes", default=None
)

_EMPTY_HOME = tempfile.mkdtemp(prefix="dockyard-git-home-")

# Set on every call, whether or not the repository's config mentions them (some have risky defaults:
# hooks live in $GIT_DIR/hooks unless hooksPath says otherwise).
_FIXED_OVERRIDES = {
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
    "status.submoduleSummary": "false",
    "submodule.recurse": "false",
    "diff.submodule": "short",
}

# Overridden for read-only commands too, whether or not the config sets them: the default of hooksPath is
# the repository's own hooks folder (git status runs post-index-change when it refreshes the index), and
# fsmonitor is consulted by every command that reads the index.
_ALWAYS_OVERRIDDEN = ("core.hooksPath", "core.fsmonitor")

# Keys that name a program, matched on (section, last part) whatever the subsection — ``filter.<driver>.clean``,
# ``credential.<url>.helper``, ``sendemail.<identity>.toCmd`` — each with the value that makes it harmless.
# Every one found in the repository's config files is overridden (``pager.<command>`` too, below). An empty
# filter command means "no filter"; elsewhere an empty command only makes git fail to start it.
_COMMAND_KEYS: dict[tuple[str, str], str] = {
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

_MAX_CONFIG_FILES = 64  # config files in one repository's include closure
_MAX_INCLUDE_DEPTH = 10  # git's own limit: deeper includes make it fail
_MAX_ALTERNATES = 64
_MAX_ALTERNATE_DEPTH = 5  # git ignores alternates nested deeper
# objects/ holds at most 256 loose-object folders plus info and pack; objects/pack a few files per pack.
_MAX_OBJECT_FOLDER_ENTRIES = 100_000
# A file changed less than this before its stat was taken may change again without its stat changing
# (file system timestamps are coarse): such a signature is not cached.
_RACY_NS = 100_000_000

# Commands that write no work-tree file and no config: they may run side by side in one repository.
_SHARED_COMMANDS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "grep",
        "rev-parse",
        "rev-list",
        "symbolic-ref",
        "cat-file",
        "ls-files",
        "ls-tree",
        "for-each-ref",
        "show-ref",
        "check-ref-format",
        "merge-base",
        "describe",
        "shortlog",
        "name-rev",
        "count-objects",
    }
)

_OUTSIDE = "outside the folders this server may use"


# What of git's stderr is kept: enough for any error message; the rest is read and dropped.
_MAX_STDERR_BYTES = 65_536


@dataclass(frozen=True)
class GitOutput:
    text: str
    truncated: bool  # stopped at the output budget; the process was killed
    returncode: int | None
    stderr: str


@dataclass(frozen=True)
class _Layout:
    """What the runner knows about one git directory, valid while ``signature`` still matches."""

    signature: tuple[tuple[str, bool, tuple | None], ...]  # (path, follow symlinks, stamp)
    environment: dict[str, str]  # GIT_COMMON_DIR and every GIT_CONFIG_* override, for any command
    read_environment: dict[str, str]  # the same with only the overrides a read-only command needs
    refusal: str | None  # why the repository may not be used, or None


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


def _override_environment(common_dir: str, overrides: dict[str, str]) -> dict[str, str]:
    """``GIT_COMMON_DIR`` and ``overrides`` as git's environment config (keys verbatim, see above)."""
    environment = {"GIT_COMMON_DIR": common_dir, "GIT_CONFIG_COUNT": str(len(overrides))}
    for index, (name, value) in enumerate(overrides.items()):
        environment[f"GIT_CONFIG_KEY_{index}"] = name
        environment[f"GIT_CONFIG_VALUE_{index}"] = value
    return environment


def _links_leaving(folder: str, roots: Sequence[str]) -> list[str]:
    """The entries of ``folder`` that are symlinks leading outside ``roots``, in words."""
    problems = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= _MAX_OBJECT_FOLDER_ENTRIES:
                    return [f"{folder} holds more than {_MAX_OBJECT_FOLDER_ENTRIES} entries"]
                if entry.is_symlink() and not all(_inside(r, roots) for r in _resolutions(entry.path)):
                    problems.append(f"{entry.path} is a link to {os.path.realpath(entry.path)}, {_OUTSIDE}")
    except OSError:
        pass  # absent or unreadable: git finds no objects there either
    return problems


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _resolutions(path: str) -> set[str]:
    """Where ``path`` may lead: git sometimes folds ``..`` before resolving symlinks, sometimes after."""
    return {os.path.realpath(path), os.path.realpath(os.path.normpath(path))}


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


class _SharedExclusive:
    """A readers-writer lock that lets a waiting writer in before new readers."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting_writers = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._condition:
            while self._writing or self._waiting_writers:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if not self._readers:
                    self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._condition:
            self._waiting_writers += 1
            try:
                while self._writing or self._readers:
                    self._condition.wait()
            finally:
                self._waiting_writers -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._condition:
                self._writing = False
                self._condition.notify_all()


class GitRunner:
    def __init__(self, *, timeout_s: float = 20.0, git: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.git = git or shutil.which("git") or "git"
        self._roots: tuple[str, ...] | None = None
        self._layouts: dict[str, _Layout] = {}
        self._repository_locks: dict[str, _SharedExclusive] = {}
        self._system_prefix: str | None = None
        self._lock = threading.Lock()

    def confine_to(self, roots: Sequence[Path]) -> None:
        """Refuse, from now on, every repository that reads git data from outside ``roots``."""
        with self._lock:
            self._roots = tuple(os.path.realpath(root) for root in roots)
            self._layouts.clear()

    def refusal(self, git_dir: Path) -> str | None:
        """Why the repository at ``git_dir`` may not be used (for the model to read), or ``None``."""
        return self._layout(git_dir).refusal

    # -- configuration ------------------------------------------------------------------------

    def _environment(self, git_dir: Path, work_tree: Path | None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": _EMPTY_HOME,
            "XDG_CONFIG_HOME": _EMPTY_HOME,
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_LITERAL_PATHSPECS": "1",  # a path is a path: no ':(top)', globs or other pathspec magic
            # Only the listed protocols may be used, whatever protocol.<name>.allow says: none is listed.
            "GIT_ALLOW_PROTOCOL": "none",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": "false",
            "GIT_SSH_COMMAND": "false",
            "GIT_ASKPASS": "false",
            "SSH_ASKPASS": "false",
            "GIT_DIR": str(git_dir),
        }
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return env

    def _layout(self, git_dir: Path) -> _Layout:
        """The cached layout of ``git_dir`` if no file it was computed from changed, else a fresh one."""
        key = str(git_dir)
        with self._lock:
            cached = self._layouts.get(key)
        if cached is not None and all(
            _stamp(path, follow) == stamp for path, follow, stamp in cached.signature
        ):
            return cached
        started = time.time_ns()
        layout = self._compute_layout(key)
        racy = started - _RACY_NS
        if not any(
            stamp is not None and len(stamp) > 3 and max(stamp[4], stamp[5]) >= racy
            for _, _, stamp in layout.signature
        ):
            with self._lock:
                self._layouts[key] = layout
        return layout

    def _compute_layout(self, git_dir: str) -> _Layout:
        watched: list[tuple[str, bool]] = []  # every path the layout depends on, and how to stat it
        refusals: list[str] = []
        roots = self._roots

        commondir = f"{git_dir}/commondir"
        watched.append((commondir, True))
        common_dir, problem = _common_dir(git_dir, commondir)
        if problem:
            refusals.append(problem)
        if roots is not None:
            refusals += self._confinement_problems(git_dir, common_dir, commondir, roots, watched)

        names, problem = self._config_names(git_dir, common_dir, watched)
        if problem:
            refusals.append(problem)
        per_driver = {}
        for name in sorted(names):
            section, _, rest = name.partition(".")
            leaf = rest.rpartition(".")[2]
            if section == "pager":
                per_driver[name] = "cat"
            elif (section, leaf) in _COMMAND_KEYS:
                per_driver[name] = _COMMAND_KEYS[(section, leaf)]
        # git lists section and key names in lower case; a key differing only in case is the same key.
        mentioned = {name.lower() for name in names}
        read_overrides = {
            name: value
            for name, value in _FIXED_OVERRIDES.items()
            if name in _ALWAYS_OVERRIDDEN or name.lower() in mentioned
        }
        signature = tuple((path, follow, _stamp(path, follow)) for path, follow in dict.fromkeys(watched))
        return _Layout(
            signature,
            _override_environment(common_dir, {**_FIXED_OVERRIDES, **per_driver}),
            _override_environment(common_dir, {**read_overrides, **per_driver}),
            refusals[0] if refusals else None,
        )

    def _confinement_problems(
        self,
        git_dir: str,
        common_dir: str,
        commondir: str,
        roots: Sequence[str],
        watched: list[tuple[str, bool]],
    ) -> list[str]:
        problems = []
        if not all(_inside(real, roots) for real in _resolutions(git_dir)):
            problems.append(f"its git directory {git_dir} is {_OUTSIDE}")
        if common_dir != git_dir and not all(_inside(real, roots) for real in _resolutions(common_dir)):
            problems.append(f"its commondir file {commondir} leads to {common_dir}, {_OUTSIDE}")
        for base in dict.fromkeys((git_dir, common_dir)):
            for name in _GIT_ENTRIES:
                entry = f"{base}/{name}"
                watched.append((entry, False))
                if os.path.islink(entry) and not all(_inside(r, roots) for r in _resolutions(entry)):
                    problems.append(f"{entry} is a link to {os.path.realpath(entry)}, {_OUTSIDE}")
        # Inside the object folders, a pack file or a loose-object folder (objects/ab) may be a link too.
        for base in dict.fromkeys((git_dir, common_dir)):
            for folder in (f"{base}/objects", f"{base}/objects/pack"):
                watched.append((folder, _LISTING))
                problems += _links_leaving(folder, roots)
        # Alternate object stores: git reads them from the objects folder of the common directory (that of
        # the git directory too, to be safe), then recursively from each store's own info/alternates.
        pending = [(f"{base}/objects", 0) for base in dict.fromkeys((git_dir, common_dir))]
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
                if not all(_inside(real, roots) for real in _resolutions(store)):
                    problems.append(f"its alternate object store {store} (in {listing}) is {_OUTSIDE}")
                    continue
                real = os.path.realpath(store)
                if real in seen:
                    continue
                seen.add(real)
                if len(seen) > _MAX_ALTERNATES:
                    return [*problems, f"{listing} names more than {_MAX_ALTERNATES} alternate object stores"]
                if depth < _MAX_ALTERNATE_DEPTH:
                    pending.append((real, depth + 1))
        return problems

    def _config_names(
        self, git_dir: str, common_dir: str, watched: list[tuple[str, bool]]
    ) -> tuple[set[str], str | None]:
        """Every key set in a config file git could read for this repository, under any include condition."""
        pending = [
            (f"{git_dir}/config", 0),
            (f"{git_dir}/config.worktree", 0),
            (f"{common_dir}/config", 0),
            (f"{common_dir}/config.worktree", 0),
        ]
        seen: set[str] = set()
        names: set[str] = set()
        while pending:
            path, depth = pending.pop(0)
            if path in seen:
                continue
            seen.add(path)
            watched.append((path, True))
            if len(seen) > _MAX_CONFIG_FILES:
                return names, f"its config includes more than {_MAX_CONFIG_FILES} files"
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
            listing = subprocess.run(
                [self.git, "config", "--file", path, "--null", "--list"],
                capture_output=True,
                timeout=self.timeout_s,
                env=self._listing_environment(),
                cwd=_EMPTY_HOME,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return [], f"its config file {path} could not be read in time"
        # A file git cannot parse makes git fail as soon as it reads it: the entries before the bad line
        # are all that could ever take effect.
        entries = []
        for record in listing.stdout.split(b"\0"):
            if record:
                name, newline, value = record.partition(b"\n")
                entries.append((os.fsdecode(name), os.fsdecode(value) if newline else None))
        return entries, None

    def _listing_environment(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": _EMPTY_HOME,
            "XDG_CONFIG_HOME": _EMPTY_HOME,
            "LC_ALL": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            # `git config --file` needs no repository: do not look for one above the empty home.
            "GIT_CEILING_DIRECTORIES": os.path.dirname(_EMPTY_HOME),
        }

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
                home = _EMPTY_HOME
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
                exec_path = subprocess.run(
                    [self.git, "--exec-path"],
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    env=self._listing_environment(),
                    cwd=_EMPTY_HOME,
                    stdin=subprocess.DEVNULL,
                ).stdout.strip()
            except subprocess.TimeoutExpired:
                exec_path = ""
            self._system_prefix = os.path.dirname(os.path.dirname(exec_path)) if exec_path else "/usr"
        return self._system_prefix

    def command(self, args: Sequence[str]) -> list[str]:
        return [self.git, "--no-pager", "--no-replace-objects", *args]

    def _repository_lock(self, git_dir: Path) -> _SharedExclusive:
        with self._lock:
            return self._repository_locks.setdefault(str(git_dir), _SharedExclusive())

    # -- running ------------------------------------------------------------------------------

    def run(
        self,
        git_dir: Path,
        work_tree: Path | None,
        args: Sequence[str],
        *,
        max_bytes: int = 4_000_000,
        timeout_s: float | None = None,
        check: bool = True,
        stdin: bytes | None = None,
    ) -> GitOutput:
        """Run git; read at most ``max_bytes`` of stdout, then stop it."""
        lock = self._repository_lock(git_dir)
        read_only = bool(args) and args[0] in _SHARED_COMMANDS
        with lock.shared() if read_only else lock.exclusive():
            layout = self._layout(git_dir)
            if layout.refusal:
                raise PermissionDenied(
                    f"The repository at {git_dir} is not served: {layout.refusal}.",
                    next_step="Use another repository (git_repositories lists them); this one can only be "
                    "used after the user fixes it.",
                )
            overrides = layout.read_environment if read_only else layout.environment
            env = {**self._environment(git_dir, work_tree), **overrides}
            return self._run_process(git_dir, work_tree, args, env, max_bytes, timeout_s, check, stdin)

    def _run_process(
        self,
        git_dir: Path,
        work_tree: Path | None,
        args: Sequence[str],
        env: dict[str, str],
        max_bytes: int,
        timeout_s: float | None,
        check: bool,
        stdin: bytes | None,
    ) -> GitOutput:
        timeout = timeout_s or self.timeout_s
        try:
            process = subprocess.Popen(
                self.command(args),
                cwd=str(work_tree or git_dir),
                env=env,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            if error.errno == errno.E2BIG:  # the kernel's limit on one argument (128 KiB) or all of them
                raise InvalidArgument(
                    "The arguments are too long to pass to git (a pattern, filter or path list of this size "
                    "exceeds the operating system's limit).",
                    next_step="Use a shorter pattern or filter, or fewer paths per call.",
                ) from None
            raise
        tracked = running_processes.get()
        if tracked is not None:
            tracked.append(process)
        # One thread watches both pipes and the deadline: no timer or reader thread per git process
        # (they cost as much as a short `git status`), and stderr is drained as it comes, so a chatty git
        # can never block on a full stderr pipe while we wait on stdout.
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        stderr_chunks: list[bytes] = []
        size = stderr_size = 0
        truncated = expired = False
        try:
            if stdin is not None:
                process.stdin.write(stdin)
                process.stdin.close()
            with selectors.DefaultSelector() as selector:
                selector.register(process.stdout, selectors.EVENT_READ, "out")
                selector.register(process.stderr, selectors.EVENT_READ, "err")
                while selector.get_map() and not truncated:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        expired = True
                        break
                    for key, _ in selector.select(remaining):
                        chunk = os.read(key.fd, 65536)
                        if not chunk:
                            selector.unregister(key.fileobj)
                        elif key.data == "out":
                            chunks.append(chunk)
                            size += len(chunk)
                            if size > max_bytes:
                                truncated = True
                                break
                        elif stderr_size < _MAX_STDERR_BYTES:
                            stderr_chunks.append(chunk)
                            stderr_size += len(chunk)
            if truncated or expired:
                process.kill()
            process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdout.close()
            process.stderr.close()
        stderr = b"".join(stderr_chunks)[:_MAX_STDERR_BYTES].decode("utf-8", "replace")
        data = b"".join(chunks)[:max_bytes] if truncated else b"".join(chunks)
        if expired and not truncated:
            raise LimitExceeded(
                f"git took longer than {timeout:.0f} s and was stopped.",
                next_step="Narrow the request: a revision range, a path filter or a smaller max_count.",
            )
        if check and not truncated and process.returncode != 0:
            raise _problem_from_stderr(args, stderr)
        return GitOutput(data.decode("utf-8", "replace"), truncated, process.returncode, stderr)


def _problem_from_stderr(args: Sequence[str], stderr: str):
    message = " ".join(line.strip() for line in stderr.strip().splitlines()[-3:]) or "git failed"
    message = re.sub(r"(?i)(https?://)[^@\s/]+@", r"\1", message)  # never echo credentials in URLs
    lowered = message.lower()
    command = args[0] if args else "git"
    if (
        "unknown revision" in lowered
        or "bad revision" in lowered
        or "invalid object name" in lowered
        or "bad object" in lowered
    ):
        return NotFound(
            f"git {command}: {message}", next_step="Check the revision with git_log or git_branches."
        )
    if "does not exist in" in lowered or "exists on disk, but not in" in lowered or "pathspec" in lowered:
        return NotFound(f"git {command}: {message}", next_step="Check the path with git_status or git_grep.")
    if "index.lock" in lowered or "unable to create" in lowered:
        return Conflict(
            f"git {command}: another git process is working in this repository ({message}).",
            retryable=True,
            next_step="Retry in a few seconds.",
        )
    if "not a git repository" in lowered:
        return NotFound(
            f"git {command}: not a git repository.",
            next_step="Call git_repositories to list served repositories.",
        )
    return InvalidArgument(f"git {command} failed: {message}", next_step="Check the arguments and try again.")
