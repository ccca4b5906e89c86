"""Annotated tags: create, delete (the tool asks the user first), and verify a signature — only with the
verification the operator set up (``--tag-signatures``): the operator's gpg and keyring, or ssh-keygen and
an allowed-signers file. Otherwise the repository's ``gpg.*`` settings stay neutralised and verification
is refused, saying how to enable it."""

from __future__ import annotations

import os
import shutil

from dockyard_shared import Conflict, InvalidArgument, NotFound, PermissionDenied
from dockyard_shared.untrusted import fence

from ..local_models import TagResult, TagVerification
from ..repos import Repository, validate_revision_text
from ..settings import TagSignatures
from .plumbing import Plumbing, clip

__all__ = ["TagSignatures", "Tags"]

_MAX_MESSAGE = 20_000


class Tags:
    def __init__(self, plumbing: Plumbing, signatures: TagSignatures | None = None) -> None:
        self.plumbing = plumbing
        self.signatures = signatures or TagSignatures()

    def _name(self, repo: Repository, name: str) -> str:
        validate_revision_text(name, "tag name")
        check = self.plumbing.git(repo, "check-ref-format", f"refs/tags/{name}", check=False)
        if check.returncode != 0 or name != name.strip():
            raise InvalidArgument(
                f"{clip(name, 100)!r} is not a valid tag name.",
                next_step="Use letters, digits, '.', '-', '_', '/' (no spaces, '..', '~', '^', ':').",
            )
        return name

    def _exists(self, repo: Repository, name: str) -> bool:
        found = self.plumbing.git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{name}", check=False)
        return found.returncode == 0

    def create(self, repo: Repository, name: str, message: str, revision: str | None) -> TagResult:
        name = self._name(repo, name)
        if not message.strip() or len(message) > _MAX_MESSAGE or "\x00" in message:
            raise InvalidArgument(
                f"message must be 1 to {_MAX_MESSAGE:,} characters without NUL (an annotated tag needs one)."
            )
        if self._exists(repo, name):
            raise Conflict(
                f"The tag {name!r} already exists.", next_step="Pick another name; tags are never moved here."
            )
        commit = self.plumbing.verify(repo, revision or "HEAD")
        email = self.plumbing.git(repo, "config", "--get", "user.email", check=False).text.strip()
        if not email:
            raise Conflict(
                "The repository has no tagger identity (user.name / user.email in its config).",
                next_step="Ask the user to set them: git config user.name '…' && git config user.email '…'.",
            )
        self.plumbing.runner.run(
            repo.git_dir,
            repo.work_tree,
            ["tag", "-a", "--no-sign", "--cleanup=strip", "-F", "-", "--end-of-options", name, commit],
            stdin=message.encode(),
        )
        return TagResult(
            repository=str(repo.path), message=f"Created the annotated tag {name}.", tag=name, commit=commit
        )

    def existing(self, repo: Repository, name: str) -> str:
        validate_revision_text(name, "tag name")
        if not self._exists(repo, name):
            raise NotFound(f"There is no tag {clip(name, 100)!r}.", next_step="Check the name with git_tags.")
        return name

    def delete(self, repo: Repository, name: str) -> TagResult:
        name = self.existing(repo, name)
        commit = self.plumbing.git(repo, "rev-parse", "--verify", f"refs/tags/{name}^{{commit}}", check=False)
        self.plumbing.git(repo, "tag", "-d", "--end-of-options", name)
        return TagResult(
            repository=str(repo.path),
            message=f"Deleted the local tag {name}; a copy already pushed stays on the remote.",
            tag=name,
            commit=commit.text.strip() or None,
        )

    def verify(self, repo: Repository, name: str) -> TagVerification:
        if not self.signatures.formats:
            raise PermissionDenied(
                "Tag signatures are not verified: the operator has not enabled it.",
                next_step="Tell the user: restart dockyard-git with --tag-signatures gpg (their gpg keyring) or "
                "--tag-signatures ssh --ssh-allowed-signers FILE.",
            )
        name = self.existing(repo, name)
        kind = self.plumbing.git(repo, "cat-file", "-t", f"refs/tags/{name}").text.strip()
        if kind != "tag":
            return TagVerification(
                repository=str(repo.path),
                tag=name,
                valid=False,
                details="A lightweight tag: it carries no signature.",
            )
        body = self.plumbing.git(repo, "cat-file", "tag", f"refs/tags/{name}", max_bytes=1_000_000).text
        fmt = (
            "ssh"
            if "-----BEGIN SSH SIGNATURE-----" in body
            else "gpg"
            if "-----BEGIN PGP SIGNATURE-----" in body
            else None
        )
        if fmt is None:
            return TagVerification(
                repository=str(repo.path),
                tag=name,
                valid=False,
                details="The tag is not signed (or not by gpg or ssh).",
            )
        if fmt not in self.signatures.formats:
            raise PermissionDenied(
                f"The tag is signed with {fmt}, whose verification the operator has not enabled.",
                next_step=f"Tell the user: add --tag-signatures {fmt} when starting dockyard-git.",
            )
        entries: list[tuple[str, str]] = []
        env: dict[str, str] = {}
        if "gpg" in self.signatures.formats:
            gpg = shutil.which("gpg") or "gpg"
            entries += [("gpg.program", gpg), ("gpg.openpgp.program", gpg)]
            env["GNUPGHOME"] = self.signatures.gnupg_home or os.path.expanduser("~/.gnupg")
        if "ssh" in self.signatures.formats:
            entries += [("gpg.ssh.program", shutil.which("ssh-keygen") or "ssh-keygen")]
            entries += [("gpg.ssh.allowedSignersFile", self.signatures.allowed_signers or "/dev/null")]
            entries += [("gpg.ssh.revocationFile", "")]
        output = self.plumbing.runner.run(
            repo.git_dir,
            repo.work_tree,
            ["verify-tag", "--raw", "--end-of-options", name],
            check=False,
            extra_config=tuple(entries),
            extra_env=env,
        )
        report = (output.stderr or output.text).strip()
        return TagVerification(
            repository=str(repo.path),
            tag=name,
            valid=output.returncode == 0,
            format=fmt,
            details=fence(clip(report, 2000), "output of the signature verifier"),
        )
