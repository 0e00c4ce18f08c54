"""The write side of the instance's filesystem: write, upload, mkdir, delete, move, chmod/chown.

Semantics follow the cloud's in-VM server (parents are created for a written file, an existing file is
replaced, `create_directory` is `mkdir -p`), with checks that make mistakes visible: a bad path or mode
is 400 naming the field before anything is touched; missing is 404; a permission the service lacks is
403; 409 where an existing thing is in the way (a directory where a file is to be written, a file where
a directory is needed, a `move` onto an existing path without `overwrite`). A written file never appears
half-written (`StagedFile`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import grp
import logging
import os
import pwd
import re
import secrets
import shutil
import stat
from collections.abc import AsyncIterator

from bbrowse.service.errors import ServiceError, conflict, not_found
from bbrowse.service.files import field_error, os_error, require_absolute, run_blocking

log = logging.getLogger("bbrowse.files")

#: Bytes gathered from the network before one write to disk.
FLUSH_BYTES = 1024 * 1024
DEFAULT_FILE_MODE = 0o644
DEFAULT_DIR_MODE = 0o755
_OCTAL = re.compile(r"^[0-7]{3,4}$")
STAGED_SUFFIX = ".bbrowse-part"


def parse_mode(value: str | None, field: str = "mode") -> int | None:
    """An octal mode string ("644", "0755") as a number; 400 naming `field` for anything else."""
    if value is None:
        return None
    if not _OCTAL.match(value):
        raise field_error(field, f"must be an octal mode of 3 or 4 digits 0-7 (like 644 or 0755), got {value!r}")
    return int(value, 8)


def write_error(exc: OSError, path: str, field: str = "path") -> ServiceError:
    """The contract error for a failed write-side operation on `path`."""
    if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
        return conflict(f"{field}: {path} already exists")
    if exc.errno == errno.EISDIR:
        return conflict(f"{field}: {path} is a directory")
    if exc.errno == errno.ENOTDIR:
        return conflict(f"{field}: a part of {path} is a file, not a directory")
    if exc.errno == errno.ENOSPC:
        return ServiceError(500, "internal_error", f"no space left on the device writing {path}")
    if exc.errno == errno.EROFS:
        return field_error(field, f"{path} is on a read-only filesystem")
    return os_error(exc, path, field)


def make_parents(directory: str, field: str) -> list[str]:
    """`mkdir -p directory`; the directories it created, outermost first (so they can be undone)."""
    missing: list[str] = []
    current = directory
    while True:
        try:
            st = os.stat(current)
        except FileNotFoundError:
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
            continue
        except OSError as exc:
            raise write_error(exc, current, field) from None
        if not stat.S_ISDIR(st.st_mode):
            raise conflict(f"{field}: {current} is a file, not a directory")
        break
    created: list[str] = []
    for path in reversed(missing):
        try:
            os.mkdir(path, DEFAULT_DIR_MODE)
            created.append(path)
        except FileExistsError:
            if not os.path.isdir(path):
                raise conflict(f"{field}: {path} is a file, not a directory") from None
        except OSError as exc:
            remove_dirs(created)
            raise write_error(exc, path, field) from None
    return created


def remove_dirs(created: list[str]) -> None:
    """Undo `make_parents`: remove the directories it made, innermost first, if still empty."""
    for path in reversed(created):
        with contextlib.suppress(OSError):
            os.rmdir(path)


class StagedFile:
    """A file being written next to its destination; `commit` puts it in place, `discard` removes it.

    Bytes go to a hidden temporary file, which replaces the destination only once complete; a failed or
    abandoned upload removes it again, along with any directories made for it. Writes are batched
    (`FLUSH_BYTES`) and run in a worker thread while the next batch arrives from the network.

    Blocking methods: call them through `run_blocking`.
    """

    def __init__(self, dest: str, mode: int | None, field: str) -> None:
        self.field = field
        self.dest = self._target(dest)
        self.created_dirs = make_parents(os.path.dirname(self.dest) or "/", field)
        existing_mode = None
        try:
            st = os.stat(self.dest)
            if stat.S_ISDIR(st.st_mode):
                raise conflict(f"{field}: {self.dest} is a directory")
            if not stat.S_ISREG(st.st_mode):  # a device, FIFO or socket is never replaced by a file
                raise field_error(field, f"{self.dest} is not a regular file")
            existing_mode = stat.S_IMODE(st.st_mode)
        except FileNotFoundError:
            pass
        except OSError as exc:
            self._undo_dirs()
            raise write_error(exc, self.dest, field) from None
        except ServiceError:
            self._undo_dirs()
            raise
        self.mode = mode if mode is not None else (existing_mode if existing_mode is not None else DEFAULT_FILE_MODE)
        base = os.path.basename(self.dest)
        self.temp = os.path.join(os.path.dirname(self.dest), f".{base}.{secrets.token_hex(4)}{STAGED_SUFFIX}")
        try:
            self.fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            self._undo_dirs()
            raise write_error(exc, self.dest, field) from None
        self.size = 0

    @staticmethod
    def _target(dest: str) -> str:
        """Writing to a symlink writes the file it points to (as opening it for writing would)."""
        if os.path.islink(dest):
            return os.path.realpath(dest)
        return dest

    def _undo_dirs(self) -> None:
        remove_dirs(getattr(self, "created_dirs", []))

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
        except OSError as exc:
            raise write_error(exc, self.dest, self.field) from None
        self.size += len(data)

    def commit(self) -> None:
        try:
            os.fchmod(self.fd, self.mode)
            os.close(self.fd)
            self.fd = -1
            os.replace(self.temp, self.dest)
        except OSError as exc:
            self.discard()
            raise write_error(exc, self.dest, self.field) from None

    def discard(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        with contextlib.suppress(OSError):
            os.unlink(self.temp)
        self._undo_dirs()


async def stage(dest: str, mode: int | None, field: str) -> StagedFile:
    return await run_blocking(StagedFile, dest, mode, field)


async def write_chunks(staged: StagedFile, chunks: AsyncIterator[bytes]) -> int:
    """Copy `chunks` into `staged`, one batched write in flight while the next batch arrives."""
    pending: list[bytes] = []
    size = 0
    in_flight: asyncio.Future[None] | None = None
    try:
        async for chunk in chunks:
            pending.append(chunk)
            size += len(chunk)
            if size >= FLUSH_BYTES:
                if in_flight is not None:
                    await in_flight
                in_flight = asyncio.ensure_future(run_blocking(staged.write, b"".join(pending)))
                pending, size = [], 0
        if in_flight is not None:
            await in_flight
            in_flight = None
        if pending:
            await run_blocking(staged.write, b"".join(pending))
    finally:
        if in_flight is not None and not in_flight.done():
            with contextlib.suppress(BaseException):
                await in_flight
    return staged.size


async def write_file(dest: str, mode: int | None, chunks: AsyncIterator[bytes], field: str = "path") -> int:
    """Write a whole file from `chunks`; it appears complete or not at all."""
    staged = await stage(require_absolute(dest, field), mode, field)
    try:
        size = await write_chunks(staged, chunks)
        await run_blocking(staged.commit)
    except BaseException:
        await asyncio.shield(run_blocking(staged.discard))
        raise
    return size


# directories, deletes, moves, permissions (blocking: call through run_blocking) ---------------


def guard(path: str, field: str, action: str) -> None:
    """400 for changing `/` itself or a directory right under it (/usr, /etc...): a mistake on the
    machine the service runs on, never something a session needs."""
    if path == "/" or (path.count("/") == 1 and os.path.isdir(path) and not os.path.islink(path)):
        raise field_error(field, f"refusing to {action} {path}: it is / or a top-level directory of the machine")


#: Filesystems whose files are views of the kernel, not data: a zip or a recursive watch skips them.
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "bpf",
    "mqueue", "hugetlbfs", "fusectl", "configfs", "pstore", "autofs", "binfmt_misc", "efivarfs", "nsfs",
})


def pseudo_mount_points() -> frozenset[str]:
    """Where pseudo filesystems (/proc, /sys, /dev...) are mounted on this machine."""
    points: set[str] = set()
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 3 and fields[2] in PSEUDO_FILESYSTEMS:
                    points.add(fields[1].replace("\\040", " "))
    except OSError:
        pass
    return frozenset(points)


def create_directory(path: str, mode: int | None) -> bool:
    """`mkdir -p`; True when the directory was created, False when it was already there."""
    created = make_parents(path, "path")
    if not created:
        return False
    want = mode if mode is not None else DEFAULT_DIR_MODE
    try:
        os.chmod(path, want)  # exactly the mode asked for, whatever the umask
    except OSError as exc:
        raise write_error(exc, path) from None
    return True


def delete_file(path: str) -> None:
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise write_error(exc, path) from None
    if stat.S_ISDIR(st.st_mode):
        raise field_error("path", f"{path} is a directory; use delete_directory")
    try:
        os.unlink(path)
    except OSError as exc:
        raise write_error(exc, path) from None


def delete_directory(path: str) -> None:
    guard(path, "path", "delete")
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise write_error(exc, path) from None
    if not stat.S_ISDIR(st.st_mode):
        raise field_error("path", f"{path} is not a directory; use delete_file")
    failures: list[OSError] = []

    def on_error(_function: object, failed: str, exc_info: tuple) -> None:
        exc = exc_info[1]
        if isinstance(exc, FileNotFoundError):
            return  # removed meanwhile: the goal is reached
        failures.append(exc if isinstance(exc, OSError) else OSError(str(exc)))

    shutil.rmtree(path, onerror=on_error)
    if failures:
        first = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        message = f"could not delete all of {path}: {first.filename or path}: {first.strerror or first}{more}"
        if first.errno in (errno.EACCES, errno.EPERM):
            raise ServiceError(403, "forbidden", message)
        raise ServiceError(500, "internal_error", message)


def move(src: str, dest: str, overwrite: bool) -> None:
    guard(src, "src_path", "move")
    guard(dest, "dest_path", "replace")
    try:
        src_st = os.lstat(src)
    except OSError as exc:
        raise write_error(exc, src, "src_path") from None
    parent = os.path.dirname(dest) or "/"
    if not os.path.isdir(parent):
        if os.path.exists(parent):
            raise conflict(f"dest_path: {parent} is a file, not a directory")
        raise not_found(f"dest_path: no such directory: {parent}")
    if src == dest:
        return
    if stat.S_ISDIR(src_st.st_mode) and (dest + "/").startswith(src.rstrip("/") + "/"):
        raise field_error("dest_path", f"cannot move the directory {src} into itself ({dest})")
    if os.path.lexists(dest):
        if not overwrite:
            raise conflict(f"dest_path: {dest} already exists (set overwrite to replace it)")
        dest_is_dir = os.path.isdir(dest) and not os.path.islink(dest)
        if dest_is_dir != stat.S_ISDIR(src_st.st_mode):
            kind = "a directory" if dest_is_dir else "a file"
            raise conflict(f"dest_path: {dest} is {kind}; it can only be replaced by one")
    try:
        os.replace(src, dest)
    except OSError as exc:
        if exc.errno == errno.EXDEV:  # another filesystem: copy, then remove the original
            _move_across(src, dest, stat.S_ISDIR(src_st.st_mode))
            return
        raise write_error(exc, dest, "dest_path") from None


def _move_across(src: str, dest: str, is_dir: bool) -> None:
    try:
        if is_dir:
            if os.path.isdir(dest):
                os.rmdir(dest)  # overwrite of an empty directory (a full one fails here with 409)
            shutil.copytree(src, dest, symlinks=True)
            shutil.rmtree(src)
        else:
            shutil.move(src, dest)
    except OSError as exc:
        raise write_error(exc, dest, "dest_path") from None


def _user_id(value: str) -> int:
    if value.isdigit():
        return int(value)
    try:
        return pwd.getpwnam(value).pw_uid
    except KeyError:
        raise field_error("owner", f"no such user: {value!r}") from None


def _group_id(value: str) -> int:
    if value.isdigit():
        return int(value)
    try:
        return grp.getgrnam(value).gr_gid
    except KeyError:
        raise field_error("group", f"no such group: {value!r}") from None


def set_permissions(path: str, mode: int, owner: str | None, group: str | None) -> None:
    """chmod (following a symlink, as chmod does), then chown when an owner or group is given."""
    guard(path, "path", "change the permissions of")
    uid = _user_id(owner) if owner is not None else -1
    gid = _group_id(group) if group is not None else -1
    try:
        os.chmod(path, mode)
        if uid != -1 or gid != -1:
            os.chown(path, uid, gid)
    except OSError as exc:
        raise write_error(exc, path) from None
