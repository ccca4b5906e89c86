"""How the remote toolset reaches a remote: which URLs, which credentials, which settings — the repository's
own config has no say in any of it.

The repository is untrusted, and so are its remotes. A URL is used only when :func:`classify` allows the
URL git will *actually* contact (after ``url.<base>.insteadOf``): ``https``/``ssh``/scp-style, plain
``http`` and ``file`` each only when the operator lists them (``--remote-protocol``), a local path only
inside the roots and only to a repository the runner would serve; never ``<transport>::<address>``
(``ext::``, ``fd::``…), whose helper is a program. :meth:`RemoteAccess.network` then builds the
:class:`~.gitcmd.NetworkAccess` of one command:

* ``GIT_ALLOW_PROTOCOL`` is exactly the protocols of the URLs checked, so git refuses any other transport
  (a remote helper named by ``remote.<name>.vcs``, a redirect to another scheme) whatever config says;
* credentials come from the operator only. Every credential helper the repository names is emptied (an
  empty ``credential.helper`` empties the list), then come the token helper — it prints the token from
  the child's environment, ``$DOCKYARD_GIT_REMOTE_TOKEN``, and is configured only for the hosts of
  ``--remote-token-host`` — and the helpers of the operator's own git config, run with the operator's
  home. ssh is the operator's (``GIT_SSH_COMMAND``, ``GIT_SSH`` or ``core.sshCommand`` from their own
  config), else ``ssh -o BatchMode=yes``; the ssh agent is reached through ``SSH_AUTH_SOCK``;
* the settings that change where or how git connects are reset for every key the repository's config
  files set, whatever its URL subsection: ``http.*`` proxies, extra headers, cookie files, redirects,
  TLS verification, ``remote.*.proxy``; redirects are never followed (``http.followRedirects=false``), so
  git contacts exactly the URL checked; pushes never follow tags, sign, or send push options. The upload
  and receive programs are ours, on the command line (:meth:`RemoteAccess.pack_programs`).
  ``http.sslCAInfo``/``sslCAPath``/``sslCert``/``sslKey`` have no neutral value and are refused instead.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from dockyard_shared import NotFound, PermissionDenied

from ..gitcmd import NetworkAccess
from ..settings import RemoteSettings

__all__ = ["OperatorGit", "RemoteAccess", "RemoteUrl", "classify", "scrub", "shown_url"]

TOKEN_VARIABLE = "DOCKYARD_GIT_REMOTE_TOKEN"
TOKEN_USER = "x-access-token"  # what GitHub asks for; GitLab and Gitea accept any name with a token
_TOKEN_HELPER = (
    '!f() { test "$1" = get || return 0; '
    f"printf 'username=%s\\npassword=%s\\n' {TOKEN_USER} \"${TOKEN_VARIABLE}\"; }}; f"
)
_DEFAULT_SSH = "ssh -o BatchMode=yes"

# (section, last part of the key) → the value that means "as if unset", for every such key the
# repository's config files set, in any subsection (http.<url>.proxy too).
_NEUTRAL_KEYS: dict[tuple[str, str], str] = {
    ("http", "proxy"): "",  # empty: no proxy at all
    ("http", "proxyauthmethod"): "anyauth",
    ("http", "proxysslcert"): "",
    ("http", "proxysslkey"): "",
    ("http", "proxysslcainfo"): "",
    ("http", "proxysslcertpasswordprotected"): "false",
    ("http", "sslverify"): "true",
    ("http", "sslversion"): "",
    ("http", "sslcipherlist"): "",
    ("http", "sslcertpasswordprotected"): "false",
    ("http", "extraheader"): "",  # empty: the list of extra headers is emptied
    ("http", "curloptresolve"): "",  # the same for the host → address table
    ("http", "cookiefile"): "",  # cookies kept in memory only, no file read
    ("http", "savecookies"): "false",
    ("http", "emptyauth"): "false",
    ("http", "delegation"): "none",
    ("http", "followredirects"): "false",
    ("remote", "proxy"): "",
    ("remote", "proxyauthmethod"): "anyauth",
    ("remote", "mirror"): "false",  # a mirror push forces every ref
}

# Keys whose every value points curl at a file of the repository's choosing; no value means "unset".
_REFUSED_KEYS = {
    ("http", "sslcainfo"): "which certificate authorities to trust",
    ("http", "sslcapath"): "which certificate authorities to trust",
    ("http", "sslcert"): "a client certificate",
    ("http", "sslkey"): "a client key",
}

_FIXED = (
    # Never follow a redirect: where it leads was not checked, and git would ask the credential helpers
    # (the token's too) for the new host and keep using it. A redirect is refused, saying so (remotes/context.py).
    ("http.followRedirects", "false"),
    ("push.followTags", "false"),
    ("push.gpgSign", "false"),
    ("push.pushOption", ""),  # empty: no push options (they ask the server to do things)
    ("push.recurseSubmodules", "no"),
    ("fetch.recurseSubmodules", "false"),
    ("fetch.writeCommitGraph", "false"),
    # Always keep what is fetched as one pack: the file-size limit then bounds the whole fetch.
    ("fetch.unpackLimit", "1"),
    ("transfer.unpackLimit", "1"),
)

# The other side of a local transport: a git of our choosing, hooks and automatic gc off there too, and
# a push into a checked-out branch refused (updateInstead would check files out there).
_REMOTE_SIDE = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.alternateRefsCommand=",
    "gc.auto=0",
    "receive.autogc=false",
    "receive.denyCurrentBranch=refuse",
    "receive.denyDeleteCurrent=refuse",
)

# The operator's own git variables that network commands keep: which certificate authorities to trust.
# Every other GIT_* variable of theirs (GIT_DIR, GIT_TRACE_CURL, GIT_SSL_NO_VERIFY…) is dropped.
_INHERITED_GIT = ("GIT_SSL_CAINFO", "GIT_SSL_CAPATH")

_TRANSPORT_SYNTAX = re.compile(r"^([A-Za-z0-9][A-Za-z0-9+.-]*)::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEMES = {
    "https": "https",
    "http": "http",
    "ssh": "ssh",
    "git+ssh": "ssh",
    "ssh+git": "ssh",
    "file": "file",
}
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^@/\s?#]*)@")
_MAX_URL = 2048


@dataclass(frozen=True)
class RemoteUrl:
    raw: str = ""  # as git will contact it; may hold credentials: never shown
    protocol: str = ""
    shown: str = ""  # without user name and password (https) or password (ssh)
    local: Path | None = None  # the git directory of a local remote

    def __repr__(self) -> str:
        return f"RemoteUrl({self.shown!r})"


def shown_url(text: str) -> str:
    """``text`` with the credentials of every URL in it removed: all of ``user:password@`` for http(s)
    (a lone user name there is often a token), the password for ssh."""

    def strip(match: re.Match[str]) -> str:
        scheme, userinfo = match.group(1), match.group(2)
        if scheme.lower().startswith(("http", "ftp")):
            return scheme
        return f"{scheme}{userinfo.split(':', 1)[0]}@"

    return _USERINFO.sub(strip, text)


def scrub(text: str, secrets: Sequence[str | None] = ()) -> str:
    """git's words made safe to show: URL credentials stripped, any secret replaced."""
    text = shown_url(text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def _is_local(url: str) -> bool:
    """git's rule (url_is_local_not_ssh): no colon, or a slash before the first colon."""
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def _file_path(url: str) -> str:
    """The path git opens for a ``file://`` URL: decoded, and whatever host it names skipped."""
    rest = unquote(url[len("file://") :])
    if rest.startswith("["):
        rest = rest[rest.find("]") + 1 :] if "]" in rest else ""
    slash = rest.find("/")
    return rest[slash:] if slash >= 0 else ""


def classify(
    url: str,
    *,
    cwd: Path,
    protocols: Sequence[str],
    inside_roots: Callable[[Path], bool],
    refusal: Callable[[Path], str | None],
) -> RemoteUrl:
    """What ``url`` is, or :class:`PermissionDenied` saying why this server does not contact it.

    ``cwd`` is where git runs (a relative local path is relative to it); ``inside_roots`` says whether a
    resolved path is one the server may use; ``refusal`` is the runner's verdict on a git directory.
    """
    if not url or len(url) > _MAX_URL or any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise PermissionDenied(
            "The remote's URL is empty, too long or holds control characters.",
            next_step="Ask the user to fix the remote's URL.",
        )
    shown = shown_url(url)
    helper = _TRANSPORT_SYNTAX.match(url)
    if helper:
        raise PermissionDenied(
            f"The remote URL {shown!r} names the transport helper {helper.group(1)!r} "
            "(<transport>::<address>), which runs a program; this server contacts only https, ssh and "
            "file URLs.",
            next_step="Ask the user to set an https or ssh URL for this remote.",
        )
    scheme = _SCHEME.match(url)
    if scheme:
        protocol = _SCHEMES.get(scheme.group(1).lower())
        if protocol is None:
            raise PermissionDenied(
                f"The remote URL {shown!r} uses the protocol {scheme.group(1)!r}, which this server never "
                "uses (only https, ssh, and where the operator allows them, http and file).",
                next_step="Ask the user to set an https or ssh URL for this remote.",
            )
    else:
        protocol = "file" if _is_local(url) else "ssh"  # else scp-style: [user@]host:path
    if protocol not in protocols:
        allowed = ", ".join(protocols) or "none"
        raise PermissionDenied(
            f"The remote URL {shown!r} uses {protocol}, which this server may not use (allowed: {allowed}).",
            next_step=f"The operator can allow it with --remote-protocol {protocol}"
            + (" (local repositories inside the roots only)." if protocol == "file" else "."),
        )
    if protocol == "ssh":
        host = urlsplit(url).netloc.rpartition("@")[2] if scheme else url.split(":", 1)[0].rpartition("@")[2]
        if not host or host.startswith("-") or any(c.isspace() for c in host):
            raise PermissionDenied(f"The remote URL {shown!r} names no usable host.")
        return RemoteUrl(url, protocol, shown)
    if protocol in ("http", "https"):
        if not urlsplit(url).hostname:
            raise PermissionDenied(f"The remote URL {shown!r} names no host.")
        return RemoteUrl(url, protocol, shown)
    return RemoteUrl(url, protocol, shown, _local_repository(url, shown, cwd, inside_roots, refusal))


def _local_repository(
    url: str,
    shown: str,
    cwd: Path,
    inside_roots: Callable[[Path], bool],
    refusal: Callable[[Path], str | None],
) -> Path:
    path = _file_path(url) if scheme_is_file(url) else url
    if not path:
        raise PermissionDenied(f"The remote URL {shown!r} names no path.")
    if path.startswith("~"):
        raise PermissionDenied(
            f"The remote path {shown!r} starts with '~', which git reads as a home folder.",
            next_step="Ask the user to use a path inside the served folders.",
        )
    base = path if os.path.isabs(path) else os.path.join(cwd, path)
    # Where git looks, in its order (enter_repo): every candidate that exists must be inside the roots.
    candidates = [base + "/.git", base, base + ".git/.git", base + ".git"]
    chosen = None
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        real = Path(os.path.realpath(candidate))
        if not inside_roots(real):
            raise PermissionDenied(
                f"The remote {shown!r} is outside the folders this server may use.",
                next_step="Only repositories inside the roots can be local remotes; use an https or ssh "
                "remote.",
            )
        if chosen is None and (os.path.isfile(candidate) or os.path.isfile(os.path.join(candidate, "HEAD"))):
            chosen = (candidate, real)
    if chosen is None:
        raise NotFound(f"There is no repository at the remote path {shown!r}.")
    if os.path.isfile(chosen[0]):
        raise PermissionDenied(
            f"The remote {shown!r} is a linked work tree or submodule (its .git is a file); local remotes "
            "must be repositories of their own."
        )
    reason = refusal(chosen[1])
    if reason:
        raise PermissionDenied(f"The remote repository {shown!r} is not served: {reason}.")
    return chosen[1]


def scheme_is_file(url: str) -> bool:
    return url[:7].lower() == "file://"


def refused_config(names: frozenset[str]) -> str | None:
    """Why the repository's config stops any network command, in words, or ``None``."""
    for name in sorted(names):
        section, _, rest = name.partition(".")
        what = _REFUSED_KEYS.get((section.lower(), rest.rpartition(".")[2].lower()))
        if what:
            return (
                f"its config sets {name}, which would choose {what} for git; remote commands do not use "
                "the repository's TLS settings"
            )
    return None


@dataclass(frozen=True)
class OperatorGit:
    """The operator's own credential helpers and ssh command, read from their git config (never the
    repository's), and the environment they need."""

    helpers: tuple[tuple[str, str], ...] = ()  # (credential.helper or credential.<url>.helper, value)
    ssh_command: str = _DEFAULT_SSH
    ssh_variant: str = "ssh"
    environment: Mapping[str, str] | None = None

    def __repr__(self) -> str:
        return f"OperatorGit(helpers={len(self.helpers)}, ssh_command={self.ssh_command!r})"

    @classmethod
    def discover(cls, git: str, environ: Mapping[str, str]) -> OperatorGit:
        settings = _operator_config(git, environ)
        helpers = tuple((key, value) for key, value in settings if key.startswith("credential."))
        ssh_command, variant = _DEFAULT_SSH, "ssh"
        configured = [value for key, value in settings if key == "core.sshcommand"]
        if environ.get("GIT_SSH_COMMAND"):
            ssh_command, variant = environ["GIT_SSH_COMMAND"], "auto"
        elif environ.get("GIT_SSH"):
            ssh_command, variant = shlex.quote(environ["GIT_SSH"]), "auto"
        elif configured and configured[-1]:
            ssh_command, variant = configured[-1], "auto"
        variant = environ.get("GIT_SSH_VARIANT") or variant
        inherited = {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in _INHERITED_GIT}
        return cls(helpers, ssh_command, variant, inherited)


def _operator_config(git: str, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, value) of the operator's credential helpers and core.sshCommand: system and global config,
    read where no repository can be found."""
    env = {
        k: v
        for k, v in environ.items()
        if k
        not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS")
    }
    with tempfile.TemporaryDirectory(prefix="dockyard-git-operator-") as empty:
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(empty)
        try:
            listing = subprocess.run(
                [git, "config", "--null", "--get-regexp", r"^(credential\..*helper|core\.sshcommand)$"],
                capture_output=True,
                env=env,
                cwd=empty,
                stdin=subprocess.DEVNULL,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
    entries = []
    for record in listing.stdout.split(b"\0"):
        if record:
            key, _, value = record.partition(b"\n")
            entries.append((os.fsdecode(key), os.fsdecode(value)))
    return entries


def _wrapped_helper(helper: str, environ: Mapping[str, str]) -> str:
    """The operator's helper as git would run it for them, with their home (the runner's is empty)."""
    if not helper:
        return ""  # an empty entry empties the list, as in their config
    if helper.startswith("!"):
        command = helper[1:]
    elif os.path.isabs(helper):
        command = helper
    else:
        command = "git credential-" + helper
    restore = ""
    for name in ("HOME", "XDG_CONFIG_HOME"):
        value = environ.get(name)
        restore += f"{name}={shlex.quote(value)}; export {name}; " if value else f"unset {name}; "
    return f'!_dockyard_helper() {{ {restore}{command} "$@"; }}; _dockyard_helper'


class RemoteAccess:
    """Builds each network command's :class:`~.gitcmd.NetworkAccess` from the operator's settings."""

    def __init__(
        self, settings: RemoteSettings, git: str, exec_path: str, operator: OperatorGit | None = None
    ) -> None:
        self.settings = settings
        self.git = git
        self.exec_path = exec_path  # git's own programs: the other side of a local transport runs from there
        environ = settings.operator_environment
        if environ is None:
            environ = dict(os.environ)
        self.operator = operator or OperatorGit.discover(git, environ)
        self._environ = environ

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.settings.token,) if self.settings.token else ()

    def pack_programs(self, urls: Sequence[RemoteUrl]) -> tuple[str, str]:
        """``--upload-pack`` and ``--receive-pack`` for a command with ``urls``: on the command line, as git
        takes the *first* ``remote.<name>.uploadpack``/``receivepack`` it reads (the repository's), so no
        later config entry can replace them. For a local remote, a git whose hooks and automatic gc are off
        on the other side too: git clears ``GIT_CONFIG_*`` for a local transport, and the runner's gatekeeper
        would stop the git programs that side starts (their GIT_DIR is the remote's)."""
        if not any(url.local is not None for url in urls):
            return "git-upload-pack", "git-receive-pack"
        side = " ".join(f"-c {shlex.quote(setting)}" for setting in _REMOTE_SIDE)
        git = f"GIT_EXEC_PATH={shlex.quote(self.exec_path)} {shlex.quote(self.git)} {side}"
        return f"{git} upload-pack", f"{git} receive-pack"

    def network(self, remote: str, urls: Sequence[RemoteUrl], *, fetching: bool) -> NetworkAccess:
        overrides = [
            ("credential.helper", ""),
            *self._token_helpers(),
            *((key, _wrapped_helper(value, self._environ)) for key, value in self.operator.helpers),
            (f"remote.{remote}.mirror", "false"),
            *_FIXED,
        ]
        variables = {
            "GIT_SSH_COMMAND": self.operator.ssh_command,
            "GIT_SSH_VARIANT": self.operator.ssh_variant,
            "GIT_PROXY_COMMAND": "",  # set (even empty): core.gitProxy is not read
        }
        if self.settings.token:
            variables[TOKEN_VARIABLE] = self.settings.token
        return NetworkAccess(
            protocols=tuple(sorted({url.protocol for url in urls})),
            overrides=tuple(overrides),
            key_overrides=_NEUTRAL_KEYS,
            inherited=self.operator.environment or {},
            variables=variables,
            timeout_s=self.settings.timeout_s,
            max_file_bytes=self.settings.max_fetch_bytes if fetching else None,
        )

    def _token_helpers(self) -> list[tuple[str, str]]:
        if not self.settings.token:
            return []
        schemes = ["https"] + (["http"] if "http" in self.settings.protocols else [])
        return [
            (f"credential.{scheme}://{host}.helper", _TOKEN_HELPER)
            for host in self.settings.token_hosts
            for scheme in schemes
        ]
