"""Which repositories are served, and confinement of every path and revision a model names.

A root is a repository (work tree or, only when named directly, bare) or a folder whose non-bare
repositories — found by a scan of bounded depth and count that never follows symlinks — are all served.
Everything is compared after symlinks are resolved: ``..``, absolute paths and links that leave a root
are refused, whatever their spelling. A repository that would make git read data from outside the roots —
a ``commondir`` file, alternate object stores or links in its git directory leading out (see
:meth:`~.gitcmd.GitRunner.refusal`) — is left out of the list and refused by name, so neither its listing
nor any tool can show another repository's commits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from dockyard_shared import InvalidArgument, NotFound, PermissionDenied, did_you_mean

from .gitcmd import GitRunner

__all__ = ["Repository", "RepositorySet", "git_dir_of", "validate_revision_text"]

MAX_DEPTH = 3
MAX_REPOSITORIES = 500
_SKIP_DIRS = {
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    "target",
    "dist",
    "build",
}


@dataclass(frozen=True)
class Repository:
    path: Path  # the work tree, or the git directory of a bare repository
    git_dir: Path
    bare: bool

    @property
    def work_tree(self) -> Path | None:
        return None if self.bare else self.path

    @property
    def name(self) -> str:
        return self.path.name


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def git_dir_of(work_tree: Path) -> Path | None:
    """The git directory of a work tree (``.git`` folder, or the target of a ``.git`` file)."""
    marker = work_tree / ".git"
    if marker.is_symlink():
        return None
    if marker.is_dir():
        return marker.resolve()
    if marker.is_file():
        content = marker.read_text(errors="replace").strip()
        if content.startswith("gitdir:"):
            target = Path(content.removeprefix("gitdir:").strip())
            return (work_tree / target).resolve() if not target.is_absolute() else target.resolve()
    return None


class RepositorySet:
    def __init__(self, roots: list[Path], runner: GitRunner) -> None:
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self.runner = runner
        # The runner checks every git call against the roots too: a repository that turns hostile after
        # it was listed is still refused.
        runner.confine_to(self.roots)
        self._repositories: list[Repository] | None = None
        self._refused: dict[Path, str] = {}  # repositories found but refused, and why

    # -- discovery ----------------------------------------------------------------------------

    def repositories(self, *, refresh: bool = False) -> list[Repository]:
        if self._repositories is None or refresh:
            found: dict[Path, Repository] = {}
            refused: dict[Path, str] = {}
            for root in self.roots:
                for repository in self._scan(root):
                    reason = self.runner.refusal(repository.git_dir)
                    if reason:
                        refused.setdefault(repository.path, reason)
                        continue
                    found.setdefault(repository.path, repository)
                    if len(found) >= MAX_REPOSITORIES:
                        break
            self._repositories = sorted(found.values(), key=lambda r: str(r.path))
            self._refused = refused
        return self._repositories

    def _scan(self, root: Path) -> Iterator[Repository]:
        if self.runner.is_bare(root) and not (root / ".git").exists():
            yield Repository(root, root, True)  # a root may name a bare repository; a scan never finds one
            return
        pending = [(root, 0)]
        while pending:
            folder, depth = pending.pop()
            git_dir = git_dir_of(folder)
            if git_dir is not None and self.allows(git_dir):
                yield Repository(folder, git_dir, False)
            if depth >= MAX_DEPTH:
                continue
            try:
                children = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            for child in children:
                if (
                    child.name == ".git"
                    or child.name in _SKIP_DIRS
                    or not child.is_dir(follow_symlinks=False)
                ):
                    continue
                pending.append((Path(child.path), depth + 1))

    def none_found(self) -> NotFound:
        """What to say when the served folders hold no repository: where it looked, and what helps."""
        folders = ", ".join(str(root) for root in self.roots)
        return NotFound(
            f"No git repository was found in the served folder{'s' if len(self.roots) != 1 else ''} "
            f"{folders} (searched {MAX_DEPTH} folders deep).",
            next_step="Ask the user to serve a repository: a folder holding .git, or one with repositories up to "
            f"{MAX_DEPTH} folders down (dockyard-git --root <folder>, or the folder opened in the client); "
            "`git init` makes a folder a repository. Then call git_repositories again.",
        )

    def allows(self, path: Path) -> bool:
        """Whether ``path``, symlinks resolved, lies inside one of the roots."""
        real = Path(os.path.realpath(path))
        return any(_inside(real, root) for root in self.roots)

    # -- resolution ---------------------------------------------------------------------------

    def resolve(self, repo_path: str | None) -> Repository:
        repositories = self.repositories()
        if not repo_path:
            if len(repositories) == 1:
                return repositories[0]
            if not repositories and self._refused:
                self._refuse(*next(iter(self._refused.items())))
            if not repositories:
                raise self.none_found()
            raise InvalidArgument(
                f"{len(repositories)} repositories are served; say which one with repo_path.",
                next_step="Call git_repositories to list them, then pass repo_path.",
            )
        _reject_option_like(repo_path, "repo_path")
        if "\x00" in repo_path:
            raise InvalidArgument("repo_path may not contain a NUL character.")
        candidate = Path(os.path.expanduser(repo_path))
        options = [candidate] if candidate.is_absolute() else [root / candidate for root in self.roots]
        for option in options:
            real = Path(os.path.realpath(option))
            if not self.allows(real):
                continue
            containing = [r for r in repositories if _inside(real, r.path)]
            # A linked worktree made inside a served repository since the last scan is a repository too.
            if not containing or (all(r.path != real for r in containing) and os.path.lexists(real / ".git")):
                containing = [r for r in self.repositories(refresh=True) if _inside(real, r.path)]
            served = max(containing, key=lambda r: len(r.path.parts)) if containing else None
            # A refused repository nested in a served one is refused, not quietly swapped for its parent.
            for path, reason in self._refused.items():
                if _inside(real, path) and (served is None or _inside(path, served.path)):
                    self._refuse(path, reason)
            if served is not None:
                return served
        if candidate.is_absolute() and not self.allows(Path(os.path.realpath(candidate))):
            raise PermissionDenied(
                f"{repo_path} is outside the folders this server may use.",
                next_step="Call git_repositories to list the repositories you can use.",
            )
        raise NotFound(
            f"No served repository at {repo_path!r}.",
            next_step=did_you_mean(candidate.name, [r.name for r in repositories], kind="repository")
            + " Call git_repositories for the full paths.",
        )

    def by_name(self, name: str) -> Repository:
        """The served repository whose folder is called ``name`` (how resources name repositories)."""
        repositories = self.repositories()
        matches = [r for r in repositories if r.name == name]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise InvalidArgument(
                f"Several served repositories are named {name!r}.",
                next_step="Use the tools with repo_path instead.",
            )
        raise NotFound(
            f"No served repository is named {name!r}.",
            next_step=did_you_mean(name, [r.name for r in repositories], kind="repository"),
        )

    def _refuse(self, path: Path, reason: str) -> NoReturn:
        raise PermissionDenied(
            f"The repository at {path} is not served: {reason}.",
            next_step="Use another repository (git_repositories lists them); this one can only be used "
            "after the user fixes it.",
        )

    def relative_path(self, repository: Repository, path: str) -> str:
        """``path`` as a literal path relative to the work tree, refused if it leaves it."""
        _reject_option_like(path, "path")
        if "\x00" in path or "\n" in path:
            raise InvalidArgument("Paths may not contain NUL or newline characters.")
        base = repository.work_tree or repository.path
        candidate = Path(path)
        joined = candidate if candidate.is_absolute() else base / candidate
        real = Path(os.path.realpath(joined))  # resolves symlinks in every existing component
        base_real = Path(os.path.realpath(base))
        if not _inside(real, base_real) or (repository.work_tree and _inside(real, repository.git_dir)):
            raise PermissionDenied(
                f"The path {path!r} leads outside the repository {repository.name}.",
                next_step="Use a path inside the repository, relative to its top folder.",
            )
        relative = real.relative_to(base_real).as_posix()
        return relative or "."


def _reject_option_like(value: str, what: str) -> None:
    if value.startswith("-"):
        raise InvalidArgument(
            f"{what} may not start with '-' (it would be read as an option).",
            next_step=f"Pass a real {what}; for a file named like an option, prefix it with ./",
        )


def validate_revision_text(revision: str, what: str = "revision") -> str:
    """Cheap checks before git verifies a revision: no options, no control characters, bounded."""
    revision = revision.strip()
    if not revision:
        raise InvalidArgument(f"The {what} is empty.")
    _reject_option_like(revision, what)
    if len(revision) > 256 or any(ord(c) < 32 for c in revision):
        raise InvalidArgument(f"The {what} {revision[:40]!r} is not a valid revision.")
    return revision
