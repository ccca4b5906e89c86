"""The files export_csv writes and import_csv reads, confined to the operator's folders (--export-dir,
--import-dir).

A file is named by a plain name (:func:`checked_name`: no folder, no path, no hidden file, a .csv or .tsv
ending), opened relative to the folder's descriptor and never through a symbolic link. An export is
written to a hidden temporary file first and linked under its name only when complete, so a file that
already exists is never overwritten (the export takes a fresh name: ``orders-2.csv``), and an export
stopped by its size limit, its time limit or an error leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, Problem
from dockyard_shared.errors import problem_from_os_error

__all__ = ["DELIMITERS", "ExportFile", "checked_name", "open_import"]

DELIMITERS = {".csv": ",", ".tsv": "\t"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,99}")
# How many fresh names (name-2.csv, name-3.csv, …) an export tries before giving up.
_FRESH_NAMES = 100


def checked_name(name: str, flag: str) -> tuple[str, str]:
    """``name`` if it is a plain file name ending in .csv or .tsv, and its delimiter."""
    suffix = os.path.splitext(name)[1].lower()
    if not _NAME.fullmatch(name) or name.endswith((" ", ".")) or suffix not in DELIMITERS:
        raise InvalidArgument(
            f"{name[:120]!r} is not a plain file name ending in .csv or .tsv.",
            next_step=f"Pass a name such as orders.csv: letters, digits, '.', '_', '-' and spaces, no "
            f"folder (files live in the folder {flag} names).",
        )
    return name, DELIMITERS[suffix]


def _folder(folder: Path) -> int:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise problem_from_os_error(error, what="The operator's folder cannot be opened") from None


class ExportFile:
    """One export being written: :meth:`write` the chunks, then :meth:`finish` (or :meth:`discard`)."""

    def __init__(self, folder: Path, name: str, max_bytes: int) -> None:
        self.folder = folder
        self.name = name
        self.max_bytes = max_bytes
        self.size = 0
        self._dir = _folder(folder)
        self._temporary = f".{name}.{secrets.token_hex(6)}.partial"
        try:
            self._fd = os.open(
                self._temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=self._dir,
            )
        except OSError as error:
            os.close(self._dir)
            raise problem_from_os_error(error, what="The export file cannot be created") from None

    def write(self, data: bytes) -> None:
        if self.size + len(data) > self.max_bytes:
            raise LimitExceeded(
                f"The export passed the {self.max_bytes // (1024 * 1024)} MiB limit (--max-export-mb); "
                "the partial file was removed.",
                next_step="Export fewer rows or columns (WHERE, LIMIT, chosen columns) in several files, "
                "or ask the user to raise --max-export-mb.",
            )
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as error:
            raise problem_from_os_error(error, what="Writing the export file failed") from None
        self.size += len(data)

    def finish(self) -> tuple[Path, str | None]:
        """Link the complete file under its name, or a fresh one if that is taken: its path, and a note
        when the name changed."""
        try:
            os.fsync(self._fd)
            stem, suffix = os.path.splitext(self.name)
            for number in range(1, _FRESH_NAMES + 1):
                candidate = self.name if number == 1 else f"{stem}-{number}{suffix}"
                try:
                    os.link(self._temporary, candidate, src_dir_fd=self._dir, dst_dir_fd=self._dir)
                except FileExistsError:
                    continue
                except OSError as error:
                    raise problem_from_os_error(error, what="The export file cannot be named") from None
                note = (
                    None
                    if number == 1
                    else f"{self.name} already exists (never overwritten): wrote {candidate}."
                )
                return self.folder / candidate, note
            raise Conflict(
                f"{self.name} and {_FRESH_NAMES - 1} fresh variants of it already exist.",
                next_step="Pass another file name.",
            )
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary file (what is linked under a name stays)."""
        if self._dir < 0:
            return
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(OSError):
            os.unlink(self._temporary, dir_fd=self._dir)
        os.close(self._dir)
        self._dir = -1


def open_import(folder: Path, name: str, max_bytes: int) -> int:
    """A descriptor of the file ``name`` in ``folder`` (a regular file, not a link, at most ``max_bytes``)."""
    directory = _folder(folder)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=directory)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InvalidArgument(
                f"{name} is a symbolic link; import_csv reads only plain files of the import folder.",
                next_step="Copy the file itself into the import folder.",
            ) from None
        problem: Problem = problem_from_os_error(error, what=f"{name} cannot be opened")
        if isinstance(error, FileNotFoundError):
            problem.next_step = "Check the name: the file must be in the import folder (--import-dir)."
        raise problem from None
    finally:
        os.close(directory)
    size = os.fstat(fd)
    if not stat.S_ISREG(size.st_mode) or size.st_size > max_bytes:
        os.close(fd)
        if not stat.S_ISREG(size.st_mode):
            raise InvalidArgument(f"{name} is not a regular file.", next_step="Pass a CSV or TSV file.")
        raise LimitExceeded(
            f"{name} is {size.st_size:,} bytes; import_csv reads at most {max_bytes:,} (--max-write-mb).",
            next_step="Split the file, or ask the user to raise --max-write-mb.",
        )
    return fd
