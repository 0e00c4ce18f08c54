"""Directory watches: `fs/watch` starts one, its SSE stream carries the changes, DELETE stops it.

Each watch is one inotify instance read by the event loop, so a change is on the stream within
milliseconds. Events are named as Kernel's server (fsnotify) names them: CREATE (also a name moved
in), WRITE, DELETE, RENAME (a move's old name; the new one comes as a CREATE); `is_dir` comes from the
kernel's event. A recursive watch adds every directory below the root and each one made later, and
reports what a new directory already holds as CREATE events, so nothing made there goes unseen.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import ctypes.util
import errno
import logging
import os
import secrets
import string
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from bbrowse.service.errors import ServiceError, bad_request, conflict, not_found
from bbrowse.service.files import os_error, require_directory
from bbrowse.service.fs_write import pseudo_mount_points
from bbrowse.service.sandbox import sandbox_of
from bbrowse.service.sessions import Session
from bbrowse.wire.fs import FileSystemEvent

log = logging.getLogger("bbrowse.files")

IN_MODIFY = 0x002
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
WATCH_MASK = IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_HEADER = struct.Struct("iIII")

#: Events kept for a reader at most; older ones are dropped (and counted) past this.
QUEUE_EVENTS = 10_000
#: Watches one session may hold at once.
MAX_WATCHES = 64
_ID_ALPHABET = string.ascii_lowercase + string.digits


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


_LIBC: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        _LIBC = _libc()
    return _LIBC


@dataclass
class Watch:
    """One watch. Events wait in a bounded queue (the oldest dropped and logged when full) until the one
    reader takes them; a new stream takes over from the previous one, so a client that lost its
    connection reopens it. The watch ends when stopped, with its session, or when the watched directory
    goes (a last DELETE)."""

    watch_id: str
    root: str
    recursive: bool
    fd: int
    loop: asyncio.AbstractEventLoop
    paths: dict[int, str] = field(default_factory=dict)
    events: collections.deque[FileSystemEvent] = field(default_factory=lambda: collections.deque(maxlen=QUEUE_EVENTS))
    dropped: int = 0
    #: Pseudo filesystems (/proc, /sys) a recursive watch does not descend into.
    skip: frozenset[str] = frozenset()
    #: Runs a path call where the session's files are: in its sandbox (`Sandbox.call`), else here.
    where: Callable = field(default=lambda func, *args: func(*args))
    closed: bool = False
    #: Which reader has the events: a new reader takes over, and the previous one's stream ends.
    reader: int = 0
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)

    # inotify ------------------------------------------------------------------

    def add(self, path: str, report_contents: bool) -> None:
        """Watch `path` (and, when recursive, the directories below it)."""
        self.where(self._add, path, report_contents)

    def _add(self, path: str, report_contents: bool) -> None:
        if path in self.skip:
            return
        wd = libc().inotify_add_watch(self.fd, os.fsencode(path), WATCH_MASK | IN_ONLYDIR)
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOENT, errno.ENOTDIR):
                return  # gone or replaced by a file meanwhile
            if code == errno.ENOSPC:
                log.warning("watch %s: inotify watch limit reached; %s is not watched", self.watch_id, path)
                return
            raise OSError(code, os.strerror(code), path)
        self.paths[wd] = path
        if not self.recursive and not report_contents:
            return
        try:
            with os.scandir(path) as it:
                children = list(it)
        except OSError:
            return
        for child in children:
            is_dir = child.is_dir(follow_symlinks=False)
            if report_contents:
                self._push(FileSystemEvent(type="CREATE", path=child.path, name=child.name, is_dir=is_dir))
            if is_dir and self.recursive:
                self._add(child.path, report_contents)

    def on_readable(self) -> None:
        try:
            data = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return
        except OSError as exc:
            log.warning("watch %s: reading inotify failed: %s", self.watch_id, exc)
            self.close()
            return
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            raw = data[offset + _HEADER.size: offset + _HEADER.size + length].rstrip(b"\0")
            offset += _HEADER.size + length
            self._handle(wd, mask, os.fsdecode(raw))
        self.wakeup.set()

    def _handle(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:
            log.warning("watch %s: the kernel's event queue overflowed; some changes were not reported", self.watch_id)
            return
        directory = self.paths.get(wd)
        if directory is None:
            return
        if mask & IN_IGNORED:
            self.paths.pop(wd, None)
            return
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            if directory == self.root:
                self._push(FileSystemEvent(type="DELETE" if mask & IN_DELETE_SELF else "RENAME", path=self.root,
                                           name=os.path.basename(self.root) or "/", is_dir=True))
                self.close()
            return
        path = os.path.join(directory, name)
        is_dir = bool(mask & IN_ISDIR)
        if mask & (IN_CREATE | IN_MOVED_TO):
            self._push(FileSystemEvent(type="CREATE", path=path, name=name, is_dir=is_dir))
            if is_dir and self.recursive:
                self.add(path, report_contents=True)
        elif mask & IN_MODIFY:
            self._push(FileSystemEvent(type="WRITE", path=path, name=name, is_dir=is_dir))
        elif mask & IN_DELETE:
            self._push(FileSystemEvent(type="DELETE", path=path, name=name, is_dir=is_dir))
        elif mask & IN_MOVED_FROM:
            self._push(FileSystemEvent(type="RENAME", path=path, name=name, is_dir=is_dir))
            if is_dir:  # its watches now describe paths that no longer exist
                prefix = path + "/"
                for stale, watched in list(self.paths.items()):
                    if watched == path or watched.startswith(prefix):
                        libc().inotify_rm_watch(self.fd, stale)
                        self.paths.pop(stale, None)

    def _push(self, event: FileSystemEvent) -> None:
        if len(self.events) == self.events.maxlen:
            self.dropped += 1
            if self.dropped in (1, 100, 10_000) or self.dropped % 100_000 == 0:
                log.warning("watch %s: nobody reads its events; %d dropped so far", self.watch_id, self.dropped)
        self.events.append(event)
        self.wakeup.set()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.wakeup.set()

    # reading ------------------------------------------------------------------

    async def stream(self) -> AsyncIterator[FileSystemEvent]:
        """Events as they come, until the watch ends or another reader takes over."""
        self.reader += 1
        me = self.reader
        self.wakeup.set()  # a previous reader wakes up, sees it was replaced, and ends
        while True:
            await asyncio.sleep(0)
            if self.reader != me:
                return
            while self.events:
                yield self.events.popleft()
                if self.reader != me:
                    return
            if self.closed:
                return
            self.wakeup.clear()
            if self.events or self.closed:
                continue
            await self.wakeup.wait()


class WatchManager:
    """Every session's watches, by id; ended with their session."""

    def _watches(self, session: Session) -> dict[str, Watch]:
        return session.watches

    def start(self, session: Session, path: str, recursive: bool) -> Watch:
        sandbox = sandbox_of(session)
        where = sandbox.call if sandbox is not None else (lambda func, *args: func(*args))
        where(require_directory, path, f"{path} is not a directory (a watch follows a directory)")
        if recursive and path == "/":
            raise bad_request("refusing to watch the whole machine (/) recursively; name a directory in it", "path")
        watches = self._watches(session)
        if sum(not w.closed for w in watches.values()) >= MAX_WATCHES:
            raise conflict(f"this session already has {MAX_WATCHES} watches; stop one first")
        fd = libc().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise ServiceError(500, "internal_error", f"cannot watch files: {os.strerror(code)}")
        loop = asyncio.get_running_loop()
        watch_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(24))
        watch = Watch(watch_id=watch_id, root=path, recursive=recursive, fd=fd, loop=loop,
                      skip=pseudo_mount_points() - {path} if recursive else frozenset(), where=where)
        try:
            watch.add(path, report_contents=False)
        except OSError as exc:
            os.close(fd)
            raise os_error(exc, path) from None
        loop.add_reader(fd, watch.on_readable)
        watches[watch_id] = watch
        log.info("watch %s: %s%s for session %s", watch_id, path, " (recursive)" if recursive else "",
                 session.session_id)
        return watch

    def get(self, session: Session, watch_id: str) -> Watch:
        watch = self._watches(session).get(watch_id)
        if watch is None:
            raise not_found(f"no watch {watch_id!r} in this session")
        return watch

    def stop(self, session: Session, watch_id: str) -> None:
        watch = self._watches(session).pop(watch_id, None)
        if watch is None:
            raise not_found(f"no watch {watch_id!r} in this session")
        watch.close()

    async def on_delete(self, session: Session) -> None:
        for watch in self._watches(session).values():
            watch.close()
        self._watches(session).clear()
