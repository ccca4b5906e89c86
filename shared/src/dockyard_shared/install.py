"""``dockyard install``: each server as a uv tool, so a host starts it by absolute path, offline.

Why a uv tool (``uv tool install``) and not a virtual environment of our own under the user's data folder:
uv already owns everything such an environment needs — picking a Python, building the member from this
checkout (its ``dockyard-shared`` from the workspace), keeping one environment per tool, linking the
executable into one folder (``uv tool dir --bin``; ``UV_TOOL_BIN_DIR``/``UV_TOOL_DIR`` move both) — and the
user can see and undo it with the commands they know (``uv tool list``, ``uv tool uninstall``). Writing our
own would repeat that and leave environments nothing else knows about.

What makes the installed form start offline: the executable is a script in the tool's own environment;
starting it runs Python on installed files, with no resolver and no index between the host and the server
(unlike ``uvx``, which checks the index at every start unless told ``--offline``).

What makes it the tested form: the versions are the workspace lock's (``uv export --frozen`` of the member,
given as constraints), not whatever the index serves that day; a server's own package and
``dockyard-shared`` are always rebuilt from the checkout, so ``dockyard install`` again after a change (or
``git pull``) installs that change.

This module imports neither FastMCP nor the MCP SDK: it runs uv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .problems import UpstreamUnavailable
from .runner import ServerEntry

__all__ = [
    "InstallFailed",
    "Installed",
    "check_installed",
    "executable",
    "find_uv",
    "given_server_args",
    "install",
    "tool_bin_dir",
]

SHARED = "dockyard-shared"
#: Extras a server is installed with where it declares them: ``tasks`` (fastmcp-tasks, for ``--tasks``), so
#: an installed server has every flag its README lists.
EXTRAS = ("tasks",)


class InstallFailed(UpstreamUnavailable):
    """uv is missing, or failed to install a server: its message, and what to do about it."""

    retryable = False


def _failed(what: str, next_step: str) -> InstallFailed:
    return InstallFailed(what, next_step=next_step)


def find_uv() -> str:
    """The ``uv`` command: on PATH, else the one this interpreter's ``uv`` package ships."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv  # type: ignore[import-not-found]  # the PyPI package that ships the binary

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        raise _failed(
            "uv is not installed (not on PATH)",
            "install it (pip install uv, or https://docs.astral.sh/uv/) and run this again",
        ) from None


def _run(command: Sequence[str], *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command), cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )


def tool_bin_dir(uv: str) -> Path:
    """Where uv links tool executables (``uv tool dir --bin``; honours ``UV_TOOL_BIN_DIR``)."""
    result = _run([uv, "tool", "dir", "--bin"])
    if result.returncode != 0 or not result.stdout.strip():
        raise _failed(
            f"`uv tool dir --bin` failed: {result.stderr.strip()}", "check that uv works: uv --version"
        )
    return Path(result.stdout.strip()).resolve()


def executable(name: str, bin_dir: Path) -> Path:
    """The absolute path of server ``name``'s installed executable in ``bin_dir`` (may not exist yet)."""
    return bin_dir / (f"dockyard-{name}.exe" if os.name == "nt" else f"dockyard-{name}")


@dataclass(frozen=True)
class Installed:
    name: str
    executable: Path
    source: str  # the member folder it was built from, or the distribution name from the index


def declared_extras(member: Path) -> list[str]:
    """Which of :data:`EXTRAS` the member folder's pyproject declares."""
    try:
        project = tomllib.loads((member / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, ValueError):
        return []
    return [extra for extra in EXTRAS if extra in project.get("optional-dependencies", {})]


def _constraints(
    uv: str, root: Path, distribution: str, folder: Path, extras: Sequence[str] = ()
) -> Path | None:
    """The workspace lock's versions of ``distribution``'s dependencies (with ``extras``), as a
    requirements file."""
    if not (root / "uv.lock").is_file():
        return None
    result = _run(
        [
            uv,
            "export",
            "--frozen",
            "--package",
            distribution,
            *(f"--extra={extra}" for extra in extras),
            "--no-dev",
            "--no-hashes",
            "--no-emit-workspace",
            "--no-header",
            "--no-annotate",
        ],
        cwd=root,
    )
    if result.returncode != 0:
        raise _failed(
            f"could not read {distribution}'s locked versions from {root / 'uv.lock'}: {result.stderr.strip()}",
            "run `uv lock` in the checkout, then install again",
        )
    path = folder / f"{distribution}.constraints.txt"
    path.write_text(result.stdout, encoding="utf-8")
    return path


def install(
    names: Sequence[str], root: Path, *, uv: str | None = None, offline: bool = False
) -> list[Installed]:
    """Install each named server as a uv tool; return where each executable is.

    A server is built from ``root/servers/NAME`` when this is a checkout, else installed from the package
    index by its distribution name. ``offline`` installs from uv's cache only (after one online install).
    Raises :class:`Problem` with uv's own message when an install fails.
    """
    uv = uv or find_uv()
    bin_dir = tool_bin_dir(uv)
    done: list[Installed] = []
    with tempfile.TemporaryDirectory(prefix="dockyard-install-") as scratch:
        for name in names:
            distribution = f"dockyard-{name}"
            folder = root / "servers" / name
            from_checkout = (folder / "pyproject.toml").is_file()
            command = [
                uv,
                "tool",
                "install",
                "--compile-bytecode",  # compiled once here, not at every start (bench/startup)
                "--force",  # replace an earlier install's links of the same name
            ]
            if offline:
                command.append("--offline")
            if from_checkout:
                # Built again from the checkout every time, so an update is installed; the rest comes from
                # the lock's versions (and so from uv's cache, when they are there).
                command += ["--reinstall-package", distribution, "--reinstall-package", SHARED]
                extras = declared_extras(folder)
                constraints = _constraints(uv, root, distribution, Path(scratch), extras)
                if constraints is not None:
                    command += ["--constraints", str(constraints)]
                wanted = f"{distribution}[{','.join(extras)}] @ {folder.resolve().as_uri()}"
                command.append(wanted if extras else str(folder))
            else:
                command.append(f"{distribution}[{','.join(EXTRAS)}]")
            result = _run(command, cwd=root if from_checkout else None)
            if result.returncode != 0:
                detail = result.stderr.strip().splitlines()
                raise _failed(
                    f"installing {distribution} failed: {' '.join(detail[-3:]) or 'uv exited with ' + str(result.returncode)}",
                    "an install needs the network once (or --offline with every package in uv's cache); "
                    "see uv's message, then run `dockyard install` again",
                )
            path = executable(name, bin_dir)
            if not path.exists():
                raise _failed(
                    f"uv installed {distribution} but {path} does not exist",
                    "check `uv tool dir --bin` and UV_TOOL_BIN_DIR, then install again",
                )
            done.append(Installed(name, path, str(folder) if from_checkout else distribution))
    return done


# -- What `dockyard config` writes for servers given --root / --db ---------------------------------------


def _absolute(flag: str, value: str) -> str:
    """``value`` with its path made absolute (a host starts servers from a folder of its own choosing);
    ``--db ALIAS=PATH`` keeps its alias."""
    alias, sep, path = value.partition("=") if flag == "--db" else ("", "", value)
    if not sep or "/" in alias or os.sep in alias:
        alias, sep, path = "", "", value
    return f"{alias}{sep}{Path(path).expanduser().resolve()}"


def given_server_args(
    servers: Mapping[str, ServerEntry], given: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Per server, the arguments that replace its ``config_args`` placeholders (git's ``--root
    /ABSOLUTE/PATH/...``, sqlite's ``--demo``): each given flag (``--root``, ``--db``; repeatable) goes to
    every server whose own parser accepts it, its paths made absolute. A server that accepts none keeps
    its ``config_args``."""
    chosen: dict[str, list[str]] = {}
    for name, entry in servers.items():
        parser = entry.parser(with_runner=False)
        args: list[str] = []
        for flag, values in given.items():
            if not values:
                continue
            try:
                _, unknown = parser.parse_known_args([flag, "x"])
            except SystemExit:  # the flag exists but refuses a plain value: not one we can pass
                continue
            if flag in unknown:
                continue
            for value in values:
                args += [flag, _absolute(flag, value)]
        if args:
            chosen[name] = args
    return chosen


def check_installed(names: Sequence[str], bin_dir: Path) -> None:
    """Raise :class:`InstallFailed` naming the servers whose executable is not in ``bin_dir``."""
    missing = [name for name in names if not executable(name, bin_dir).exists()]
    if missing:
        servers = " ".join(f"--server {name}" for name in missing)
        raise _failed(
            f"not installed in {bin_dir}: {', '.join(f'dockyard-{name}' for name in missing)}",
            f"run `uv run dockyard install {servers}` first (needs the network once), "
            "or print another form with --form uvx",
        )
