"""Zip archives in and out of the instance: `upload_zip` extraction and `download_dir_zip` streaming.

Extraction checks the whole archive before writing anything, so a refused archive leaves no trace
(`extract_zip`). A directory is zipped as it is read and sent as it is produced, so a large directory
never sits in memory or on disk, and everything that can fail is checked before the first byte is sent
(`collect`, `zip_stream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import posixpath
import re
import secrets
import shutil
import stat
import threading
import time
import zipfile
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import BinaryIO

from bbrowse.service.errors import ServiceError, bad_request, conflict, forbidden
from bbrowse.service.files import current_sandbox, field_error, require_directory
from bbrowse.service.fs_write import (
    DEFAULT_DIR_MODE,
    DEFAULT_FILE_MODE,
    STAGED_SUFFIX,
    make_parents,
    pseudo_mount_points,
    write_error,
)

log = logging.getLogger("bbrowse.files")

#: Bytes copied at once while extracting, and gathered before the archive stream hands a chunk on.
COPY_BYTES = 1024 * 1024
#: Chunks of the archive waiting for the network at most (back-pressure on the zipping thread).
QUEUE_CHUNKS = 8
#: Bytes of a file compressed to judge whether deflating it is worth the time.
SAMPLE_BYTES = 64 * 1024
#: Deflate a file when its sample shrinks below this fraction.
DEFLATE_BELOW = 0.9
_DRIVE = re.compile(r"^[A-Za-z]:")


# extraction ---------------------------------------------------------------------------------


@dataclass
class Entry:
    info: zipfile.ZipInfo
    parts: tuple[str, ...]
    kind: str  # "dir", "file" or "link"
    link_target: str = ""


def _zip_refused(message: str) -> ServiceError:
    return field_error("zip_file", f"{message}; nothing was extracted")


def _entry_parts(name: str) -> tuple[str, ...]:
    """The path components of an entry, or 400 when the name is absolute or climbs out."""
    if "\x00" in name:
        raise _zip_refused(f"entry {name!r} has a NUL byte in its name")
    normal = name.replace("\\", "/")
    if normal.startswith("/") or _DRIVE.match(normal):
        raise _zip_refused(f"entry {name!r} has an absolute path")
    parts = tuple(p for p in normal.split("/") if p not in ("", "."))
    if ".." in parts:
        raise _zip_refused(f"entry {name!r} climbs out of the destination with ..")
    return parts


def _plan(archive: zipfile.ZipFile) -> list[Entry]:
    entries: list[Entry] = []
    for info in archive.infolist():
        parts = _entry_parts(info.filename)
        if not parts:
            continue  # the archive's root itself ("./")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            target = archive.read(info).decode("utf-8", errors="replace")
            if target.startswith("/") or "\x00" in target:
                raise _zip_refused(f"entry {info.filename!r} is a link to an absolute path ({target})")
            resolved = posixpath.normpath(posixpath.join(*parts[:-1], target) if len(parts) > 1 else target)
            if resolved == ".." or resolved.startswith("../"):
                raise _zip_refused(f"entry {info.filename!r} is a link pointing out of the destination ({target})")
            entries.append(Entry(info, parts, "link", target))
        elif info.is_dir():
            entries.append(Entry(info, parts, "dir"))
        else:
            entries.append(Entry(info, parts, "file"))
    return entries


def _inside(real_root: str, path: str) -> bool:
    return path == real_root or path.startswith(real_root.rstrip("/") + "/")


def _check_against_disk(dest: str, entries: list[Entry]) -> None:
    """409 where an entry meets an existing thing of the other kind; 400 where it would escape by a link."""
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise conflict(f"dest_path: {dest} exists and is not a directory")
    real_root = os.path.realpath(dest)
    dirs_of_archive = {e.parts[:i] for e in entries for i in range(1, len(e.parts))}
    dirs_of_archive |= {e.parts for e in entries if e.kind == "dir"}
    for entry in entries:
        target = os.path.join(dest, *entry.parts)
        if not _inside(real_root, os.path.realpath(os.path.dirname(target))):
            raise _zip_refused(f"entry {entry.info.filename!r} would be written through a link leading out of "
                               f"{dest}")
        if entry.kind == "dir":
            if os.path.lexists(target) and not os.path.isdir(target):
                raise conflict(f"zip_file: entry {entry.info.filename!r} is a directory but {target} is a file; "
                               "nothing was extracted")
        elif os.path.isdir(target) and not os.path.islink(target):
            raise conflict(f"zip_file: entry {entry.info.filename!r} is a file but {target} is a directory; "
                           "nothing was extracted")
    for parts in dirs_of_archive:
        target = os.path.join(dest, *parts)
        if os.path.lexists(target) and not os.path.isdir(target):
            raise conflict(f"zip_file: the archive needs a directory at {target}, which is a file; "
                           "nothing was extracted")


def extract_zip(zip_path: str | BinaryIO, dest: str) -> int:
    """Check, then extract the archive at `zip_path` (or open file) into `dest` (made if missing); the entries
    written.

    Every entry must land inside `dest` (no absolute name, no `..` that climbs out, no symbolic link
    pointing out, nothing written through an existing link that leads out), no entry may need a file where
    a directory is (or the reverse), and the disk must have room. Files are then extracted one at a time,
    each through a temporary file replaced into place, in 1 MiB reads.

    Blocking: call through `run_blocking`.
    """
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise field_error("zip_file", f"not a readable zip archive ({exc})") from None
    with archive:
        try:
            entries = _plan(archive)
        except (zipfile.BadZipFile, ValueError, NotImplementedError, RuntimeError) as exc:
            raise field_error("zip_file", f"cannot read the archive: {exc}") from None
        _check_against_disk(dest, entries)
        needed = sum(e.info.file_size for e in entries if e.kind == "file")
        probe = dest
        while not os.path.exists(probe):
            probe = os.path.dirname(probe) or "/"
        free = shutil.disk_usage(probe).free
        if needed > free:
            raise field_error("zip_file", f"extracting needs {needed} bytes but only {free} are free; "
                                          "nothing was extracted")
        make_parents(dest, "dest_path")
        for entry in entries:
            _extract_entry(archive, entry, os.path.join(dest, *entry.parts))
    return len(entries)


def _entry_mode(entry: Entry, default: int) -> int:
    mode = stat.S_IMODE(entry.info.external_attr >> 16) & 0o777  # never set-user-ID and the like
    return mode or default


def _extract_entry(archive: zipfile.ZipFile, entry: Entry, target: str) -> None:
    if entry.kind == "dir":
        make_parents(target, "dest_path")
        return
    directory = os.path.dirname(target)
    make_parents(directory, "dest_path")
    temp = os.path.join(directory, f".{os.path.basename(target)}.{secrets.token_hex(4)}{STAGED_SUFFIX}")
    try:
        if entry.kind == "link":
            os.symlink(entry.link_target, temp)
        else:
            with archive.open(entry.info) as source, open(temp, "xb") as sink:
                shutil.copyfileobj(source, sink, COPY_BYTES)
                os.fchmod(sink.fileno(), _entry_mode(entry, DEFAULT_FILE_MODE))
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise write_error(exc, target, "dest_path") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise field_error("zip_file", f"entry {entry.info.filename!r} is damaged ({exc}); the entries before it "
                                      "were extracted") from None


# archiving ----------------------------------------------------------------------------------


@dataclass
class Item:
    path: str
    arcname: str
    st: os.stat_result


def collect(root: str) -> list[Item]:
    """Every entry under `root` (not following links), checked readable; blocking. Pseudo filesystems
    mounted inside it (/proc, /sys) are left out, and `/` itself is refused.

    404 missing, 400 not a directory, 403 when something in it cannot be read.
    """
    require_directory(root, f"{root} is not a directory")
    if root == "/":
        raise bad_request("refusing to zip the whole machine (/); name a directory in it", "path")
    pseudo = pseudo_mount_points() - {root}
    items: list[Item] = []
    unreadable: list[str] = []

    def walk(directory: str, prefix: str) -> None:
        if not os.access(directory, os.R_OK | os.X_OK):
            unreadable.append(directory)
            return
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError:
            unreadable.append(directory)
            return
        for child in children:
            try:
                child_st = child.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished meanwhile
            arcname = prefix + child.name
            if child.path in pseudo:
                continue  # /proc, /sys and the like hold no data to archive
            if stat.S_ISDIR(child_st.st_mode):
                items.append(Item(child.path, arcname + "/", child_st))
                walk(child.path, arcname + "/")
            elif stat.S_ISREG(child_st.st_mode) or stat.S_ISLNK(child_st.st_mode):
                if stat.S_ISREG(child_st.st_mode) and not os.access(child.path, os.R_OK):
                    unreadable.append(child.path)
                items.append(Item(child.path, arcname, child_st))
            # FIFOs, sockets and devices are left out: they hold no data to archive.

    walk(root, "")
    if unreadable:
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise forbidden(f"permission denied reading {unreadable[0]}{more}")
    return items


class _ReaderGoneError(Exception):
    """The client went away: the zipping thread stops."""


class _Handoff:
    """Chunks from the zipping thread to the event loop, at most QUEUE_CHUNKS waiting (back-pressure)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: asyncio.Queue = asyncio.Queue()
        self.room = threading.Semaphore(QUEUE_CHUNKS)
        self.stop = threading.Event()

    def put(self, item: object) -> None:
        """From the thread: wait for room, then hand `item` over; `_ReaderGoneError` once the reader is gone."""
        while not self.room.acquire(timeout=0.5):
            if self.stop.is_set():
                raise _ReaderGoneError
        if self.stop.is_set():
            raise _ReaderGoneError
        try:
            self.loop.call_soon_threadsafe(self.ready.put_nowait, item)
        except RuntimeError:  # the loop is closed: the service is stopping
            raise _ReaderGoneError from None

    async def get(self) -> object:
        item = await self.ready.get()
        self.room.release()
        return item


class _QueueWriter:
    """The archive's file object: gathers bytes and hands them on in COPY_BYTES chunks."""

    def __init__(self, handoff: _Handoff) -> None:
        self.handoff = handoff
        self.buffer = bytearray()
        self.position = 0

    def write(self, data: bytes) -> int:
        self.buffer += data
        self.position += len(data)
        if len(self.buffer) >= COPY_BYTES:
            self.flush()
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        if self.buffer:
            self.handoff.put(bytes(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        """Nothing to release: zipfile never closes a file object it was given (it asks for the method)."""


def _method_for(path: str, size: int) -> tuple[int, int | None]:
    """Stored for incompressible data (or empty files), deflated at level 1 otherwise."""
    if size == 0:
        return zipfile.ZIP_STORED, None
    try:
        with open(path, "rb") as file:
            sample = file.read(SAMPLE_BYTES)
    except OSError:
        return zipfile.ZIP_STORED, None
    if sample and len(zlib.compress(sample, 1)) < len(sample) * DEFLATE_BELOW:
        return zipfile.ZIP_DEFLATED, 1
    return zipfile.ZIP_STORED, None


def _write_archive(items: list[Item], writer: _QueueWriter) -> None:
    with zipfile.ZipFile(writer, "w", allowZip64=True, strict_timestamps=False) as archive:
        for item in items:
            try:
                if item.arcname.endswith("/"):
                    info = zipfile.ZipInfo.from_file(item.path, item.arcname, strict_timestamps=False)
                    archive.writestr(info, b"")
                elif stat.S_ISLNK(item.st.st_mode):
                    info = zipfile.ZipInfo(item.arcname, _date_time(item.st))
                    info.external_attr = (stat.S_IFLNK | 0o777) << 16
                    archive.writestr(info, os.readlink(item.path))
                else:
                    _write_file(archive, item)
            except FileNotFoundError:
                log.info("zip: %s vanished while being archived; left out", item.path)
            except PermissionError:
                log.warning("zip: %s became unreadable while being archived; left out", item.path)
    writer.flush()


def _date_time(st: os.stat_result) -> tuple[int, int, int, int, int, int]:
    stamp = time.localtime(st.st_mtime)
    return max(1980, stamp.tm_year), stamp.tm_mon, stamp.tm_mday, stamp.tm_hour, stamp.tm_min, stamp.tm_sec


def _write_file(archive: zipfile.ZipFile, item: Item) -> None:
    with open(item.path, "rb") as source:
        st = os.fstat(source.fileno())
        info = zipfile.ZipInfo.from_file(item.path, item.arcname, strict_timestamps=False)
        info.file_size = st.st_size
        info.compress_type, level = _method_for(item.path, st.st_size)
        if level is not None:
            info._compresslevel = level  # type: ignore[attr-defined]  # zipfile reads the level from here (3.11)
        with archive.open(info, "w", force_zip64=st.st_size > 0x7FFFFFFF) as sink:
            shutil.copyfileobj(source, sink, COPY_BYTES)


async def zip_stream(items: list[Item]) -> AsyncIterator[bytes]:
    """The archive of `items`, produced by a dedicated thread as the client reads it: the thread writes into
    a bounded queue the response drains. Incompressible files are stored, the rest deflated at the fastest
    level: the archive comes out at close to disk speed."""
    handoff = _Handoff(asyncio.get_running_loop())
    done = object()
    failure: list[BaseException] = []
    sandbox = current_sandbox()

    def run() -> None:
        writer = _QueueWriter(handoff)
        try:
            if sandbox is not None:  # the paths are the session's: this thread sees its sandbox
                sandbox.enter_thread()
            _write_archive(items, writer)
        except _ReaderGoneError:
            return
        except BaseException as exc:  # handed to the response, which then ends the body early
            failure.append(exc)
        with contextlib.suppress(_ReaderGoneError):
            handoff.put(done)

    threading.Thread(target=run, name="bbrowse-zip", daemon=True).start()
    try:
        while True:
            item = await handoff.get()
            if item is done:
                break
            assert isinstance(item, bytes)
            yield item
        if failure:
            log.error("zip of %d entries failed: %r", len(items), failure[0])
            raise failure[0]
    finally:
        handoff.stop.set()  # a thread still zipping stops at its next chunk (within half a second)


__all__ = ["DEFAULT_DIR_MODE", "collect", "extract_zip", "zip_stream"]
