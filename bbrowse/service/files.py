"""The instance's filesystem as the files and logs areas see it: path checks, FileInfo, listings, reads.

Paths are absolute paths on this machine, not jailed to the session's directory: the cloud service
answers for the whole VM its API runs on, and the local service does the same for the machine it
runs on (as the user it runs as; the operating system's permissions are the only fence).

Every `OSError` becomes one of the contract's errors here (404 missing, 400 the wrong kind of file
or a bad path, 403 `forbidden` when permission is denied), so the routes never answer 500 for a
file the user named. Nothing here ever opens a FIFO, socket or device: the kind is checked with
`stat` first, and the open itself is non-blocking and re-checked with `fstat`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TypeVar

from bbrowse.service.errors import ServiceError, bad_request, forbidden, not_found
from bbrowse.service.sandbox import sandbox_of
from bbrowse.wire import ErrorDetail, FileInfo

log = logging.getLogger("bbrowse.files")

#: Size of one read of `read_file`: big enough for throughput, small enough that a 500 MB file starts at once.
CHUNK_BYTES = 256 * 1024

T = TypeVar("T")


#: The sandbox whose filesystem this request's file calls see (see `inside`); None: the host's.
_sandbox: ContextVar[Any] = ContextVar("bbrowse_files_sandbox", default=None)


def inside(session: Any) -> None:
    """From here on in this request, `run_blocking` calls run where the session's processes are: in its
    sandbox (paths, symlinks included, resolve inside it; see `sandbox.Sandbox.run`), else on the host."""
    _sandbox.set(sandbox_of(session))


def current_sandbox() -> Any:
    """The sandbox `inside` chose for this request's file calls, or None (for a thread of a call's own)."""
    return _sandbox.get()


@contextlib.contextmanager
def on_host() -> Iterator[None]:
    """`run_blocking` calls in this block see the host (the service's own files: the upload spool)."""
    token = _sandbox.set(None)
    try:
        yield
    finally:
        _sandbox.reset(token)


async def run_blocking(func: Callable[..., T], *args: object) -> T:
    """Run a blocking call in a worker thread; if the caller is cancelled, wait for the call to finish first.

    Waiting matters for reads: the file descriptor a cancelled read still uses must not be closed
    (and its number reused) under the thread, which `asyncio.to_thread` alone would allow. After
    `inside(session)` the thread is one of the session's sandbox.
    """
    sandbox = _sandbox.get()
    if sandbox is not None:
        future = sandbox.submit(func, *args)
    else:
        future = asyncio.get_running_loop().run_in_executor(None, func, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await future
        raise


def field_error(field: str, problem: str) -> ServiceError:
    """400 `bad_request` whose message and single detail both start with the field's name."""
    message = f"{field}: {problem}"
    return ServiceError(400, "bad_request", message, [ErrorDetail(code="invalid_input", message=message)])


def require_absolute(path: str, field: str = "path") -> str:
    """The path as given, minus trailing slashes; 400 naming `field` unless it is absolute and usable."""
    if not path.startswith("/"):
        raise field_error(field, f"must be an absolute path (start with /), got {path!r}")
    if "\x00" in path:
        raise field_error(field, "must not contain a NUL byte")
    return path.rstrip("/") or "/"


def os_error(exc: OSError, path: str, field: str = "path") -> ServiceError:
    """The contract error for an OSError on `path`."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return not_found(f"no such file or directory: {path}")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return forbidden(f"permission denied: {path}")
    return bad_request(f"cannot access {path}: {reason}", field)


def _mode_string(st: os.stat_result) -> str:
    return stat.filemode(st.st_mode)


#: Go's `FileMode.String()` letters (`dalTLDpSugct?`), as Linux stat bits map to them in `os.Stat`.
_GO_TYPE_LETTERS = (
    (lambda m: stat.S_ISDIR(m), "d"),
    (lambda m: stat.S_ISLNK(m), "L"),
    (lambda m: stat.S_ISBLK(m) or stat.S_ISCHR(m), "D"),
    (lambda m: stat.S_ISFIFO(m), "p"),
    (lambda m: stat.S_ISSOCK(m), "S"),
    (lambda m: bool(m & stat.S_ISUID), "u"),
    (lambda m: bool(m & stat.S_ISGID), "g"),
    (lambda m: stat.S_ISCHR(m), "c"),
    (lambda m: bool(m & stat.S_ISVTX), "t"),
)


def go_mode_string(mode: int) -> str:
    """`mode` as Kernel's VM writes it (Go's `FileMode.String()`): `dtrwxrwxrwx`, `urwxr-xr-x`, `Lrwxrwxrwx`."""
    kind = "".join(letter for test, letter in _GO_TYPE_LETTERS if test(mode)) or "-"
    return kind + "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def info_from_stat(path: str, st: os.stat_result, go_mode: bool = False) -> FileInfo:
    is_dir = stat.S_ISDIR(st.st_mode)
    return FileInfo(
        name=os.path.basename(path) or path,
        path=path,
        size_bytes=0 if is_dir else st.st_size,
        is_dir=is_dir,
        mod_time=datetime.fromtimestamp(st.st_mtime, UTC),
        mode=go_mode_string(st.st_mode) if go_mode else _mode_string(st),
    )


def _stat_following_links(path: str) -> os.stat_result:
    """The target's stat for a symlink; the link's own for a broken one (so listings never fail on it)."""
    try:
        return os.stat(path)
    except OSError:
        st = os.lstat(path)  # raises again when the path itself is missing
        if not stat.S_ISLNK(st.st_mode):
            raise
        return st


def file_info(path: str, go_mode: bool = False) -> FileInfo:
    """FileInfo of `path` (a symlink reports its target's kind, size and mode under its own name)."""
    try:
        return info_from_stat(path, _stat_following_links(path), go_mode)
    except OSError as exc:
        raise os_error(exc, path) from None


def require_directory(path: str, not_a_directory: str) -> None:
    """Return if `path` is a directory; else 404/403 as `os_error` says, or 400 `not_a_directory` on `path`."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise os_error(exc, path) from None
    if not stat.S_ISDIR(st.st_mode):
        raise bad_request(not_a_directory, "path")


def list_directory(path: str) -> list[FileInfo]:
    """The entries of a directory, directories first, then by name; entries that vanish meanwhile are skipped."""
    require_directory(path, f"not a directory: {path}")
    entries: list[FileInfo] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                child = entry.path if path != "/" else "/" + entry.name
                try:
                    entries.append(info_from_stat(child, _stat_following_links(child)))
                except OSError:
                    continue  # removed between readdir and stat (e.g. /proc), or unreadable
    except OSError as exc:
        raise os_error(exc, path) from None
    entries.sort(key=lambda info: (not info.is_dir, info.name))
    return entries


def list_directory_as_kernel_vm(path: str) -> list[FileInfo] | None:
    """Kernel's VM (`fs.go` ListFiles): entries lstat'd (a symlink is itself: `is_dir` false, mode `L...`),
    by name as `os.ReadDir` sorts them, Go mode strings, and None (JSON null) for an empty directory."""
    require_directory(path, f"not a directory: {path}")
    entries: list[FileInfo] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                child = entry.path if path != "/" else "/" + entry.name
                try:
                    entries.append(info_from_stat(child, os.lstat(child), go_mode=True))
                except OSError:
                    continue
    except OSError as exc:
        raise os_error(exc, path) from None
    entries.sort(key=lambda info: info.name.encode("utf-8", "surrogateescape"))
    return entries or None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular_file(path: str, field: str = "path") -> tuple[io.FileIO, os.stat_result]:
    """Open a regular file for reading without ever blocking; 404/400/403 otherwise.

    The kind is checked with `stat` before opening (a FIFO is never opened), the open is
    `O_NONBLOCK` in case the path is swapped for a FIFO in between, and `fstat` confirms what was
    opened. The `FileIO` owns the descriptor: it is closed by `close()` or, at the latest, when dropped.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise os_error(exc, path, field) from None
    if not stat.S_ISREG(st.st_mode):
        raise bad_request(f"{path} is {_kind(st.st_mode)}, not a regular file", field)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise os_error(exc, path, field) from None
    file = io.FileIO(fd, "rb", closefd=True)
    try:
        st = os.fstat(fd)
    except OSError as exc:
        file.close()
        raise os_error(exc, path, field) from None
    if not stat.S_ISREG(st.st_mode):
        file.close()
        raise bad_request(f"{path} is {_kind(st.st_mode)}, not a regular file", field)
    return file, st


def pread(fd: int, size: int, offset: int) -> bytes:
    """`os.pread` where "no data right now" (a pseudo-file opened non-blocking) reads as end of file."""
    try:
        return os.pread(fd, size, offset)
    except BlockingIOError:
        return b""


async def iter_file_chunks(file: io.FileIO, length: int | None, path: str) -> AsyncIterator[bytes]:
    """The file's bytes in CHUNK_BYTES pieces, read in a worker thread; closes the file at the end.

    `length` is the size announced as Content-Length: exactly that many bytes are sent even if
    the file grows meanwhile. If it shrinks, the body ends short and the server aborts the
    connection, so the client sees an incomplete download rather than a silently short file.
    None (pseudo-files such as /proc entries report size 0) reads to EOF.
    """
    try:
        fd = file.fileno()
        offset = 0
        while length is None or offset < length:
            want = CHUNK_BYTES if length is None else min(CHUNK_BYTES, length - offset)
            chunk = await run_blocking(pread, fd, want, offset)
            if not chunk:
                if length is not None:
                    log.warning("%s shrank to %d bytes while %d were being sent: download aborted",
                                path, offset, length)
                return
            offset += len(chunk)
            yield chunk
    finally:
        file.close()
