"""Uploading a local file or directory to a session's machine, for `bbrowse put` and the app's Files tab.

A file goes up with `write_file` (its permission bits kept); a directory with one streamed multipart
`upload` of all its files, then its empty directories and the executable bits of its scripts. Local
reads happen before the first request (`plan`), so the async part never blocks on the local disk.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bbrowse.client import NotFound
from bbrowse.client.files import Files

EXECUTABLE_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
#: `progress(bytes_sent_so_far)`.
Progress = Callable[[int], None]


@dataclass
class UploadPlan:
    """What goes up for one local path: its files (with their path under it), its directories, its size."""

    local: Path
    is_dir: bool
    files: list[tuple[Path, str]] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    #: Files with an executable bit and their permission bits (set after a directory upload).
    executables: list[tuple[str, int]] = field(default_factory=list)
    #: The permission bits of a single file.
    mode: int = 0o644
    size: int = 0

    @property
    def name(self) -> str:
        return self.local.resolve().name

    def describe(self) -> str:
        """`report.pdf` or `site/ (12 files)`."""
        if not self.is_dir:
            return self.name
        return f"{self.name}/ ({len(self.files)} file{'s' if len(self.files) != 1 else ''})"


def plan(local: Path) -> UploadPlan:
    """Read what uploading `local` takes (blocking: call it off the event loop for big trees). Symlinks to
    files are sent as their content; symlinked directories are not entered; other special files are skipped.
    Raises OSError when `local` cannot be read."""
    info = local.stat()
    if not stat.S_ISDIR(info.st_mode):
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{local}: not a regular file or directory")
        return UploadPlan(local, False, mode=stat.S_IMODE(info.st_mode), size=info.st_size)
    found = UploadPlan(local, True)
    for directory, subdirs, names in os.walk(local, onerror=_raise):
        subdirs.sort()
        relative_dir = Path(directory).relative_to(local).as_posix()
        found.directories.append("" if relative_dir == "." else relative_dir)
        for name in sorted(names):
            path = Path(directory) / name
            try:
                entry = path.stat()
            except OSError:
                continue  # a dangling link
            if not stat.S_ISREG(entry.st_mode):
                continue
            relative = path.relative_to(local).as_posix()
            found.files.append((path, relative))
            found.size += entry.st_size
            if entry.st_mode & EXECUTABLE_BITS:
                found.executables.append((relative, stat.S_IMODE(entry.st_mode)))
    return found


def _raise(error: OSError) -> None:
    raise error


async def destination(fs: Files, session: str, name: str, remote: str) -> str:
    """Where an upload named `name` lands: `remote` itself, or inside it when it ends with '/' or is a
    directory on the instance (as `cp` does)."""
    if remote.endswith("/"):
        return posixpath.join(remote, name)
    try:
        info = await fs.file_info(session, remote)
    except NotFound:
        return remote
    return posixpath.join(remote, name) if info.is_dir else remote


async def upload(fs: Files, session: str, what: UploadPlan, target: str, progress: Progress | None = None) -> None:
    """Upload `what` to the absolute path `target` (a file replaces one there; parents are made)."""
    if not what.is_dir:
        await fs.write_file(session, target, what.local, mode=format(what.mode, "o"), progress=progress)
        return
    await fs.create_directory(session, target)
    if what.files:
        files = [(path, posixpath.join(target, relative)) for path, relative in what.files]
        await fs.upload(session, files, progress=progress)
    for relative in what.directories:
        if relative:  # empty ones too: the upload only makes the parents of files
            await fs.create_directory(session, posixpath.join(target, relative))
    for relative, mode in what.executables:
        await fs.set_file_permissions(session, posixpath.join(target, relative), format(mode, "o"))
