"""Following a log file: its existing lines, then new ones as they are appended, across truncation and rotation.

A polling follower (why not inotify: docs/decisions.md) that reads again at once while data comes and
sleeps POLL_SECONDS between `stat` checks when the file is idle. Lines are timestamped with the time
they were read, UTC. What a reader sees at a partial line, a truncation or a rotation: `LogFollower`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from json.encoder import encode_basestring  # the C escaper behind json.dumps(ensure_ascii=False)

from bbrowse.service.errors import ServiceError
from bbrowse.service.files import open_regular_file, pread, run_blocking

#: Sleep between checks while the file is idle.
POLL_SECONDS = 0.05
#: Largest single read; one read becomes one batch of events.
READ_BYTES = 1 << 20
#: A line longer than this is sent in pieces of this size (bounds memory per stream).
MAX_LINE_BYTES = 1 << 20
#: How long a partial last line waits for its newline before it is sent as it is.
PARTIAL_LINE_FLUSH_SECONDS = 1.0
#: Block size when scanning backwards for `tail`.
_TAIL_BLOCK = 64 * 1024


def utc_timestamp() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ}"


def encode_log_events(lines: list[str], timestamp: str) -> bytes:
    """SSE frames of LogEvent `{"event":"log","message":...,"timestamp":...}`, one per line, as one chunk.

    Built by hand (the same compact JSON `LogEvent.model_dump_json` gives) because this is the hot
    path: a model per line would cap the stream well below the rate a busy log is written at.
    """
    if not lines:
        return b""
    head = 'data: {"event":"log","message":'
    tail = ',"timestamp":"' + timestamp + '"}\n\n'
    return (head + (tail + head).join(map(encode_basestring, lines)) + tail).encode("utf-8")


class LineSplitter:
    """Bytes in, complete lines out; the unterminated rest is held in `pending`."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[str]:
        buf = self.pending + data if self.pending else data
        cut = buf.rfind(b"\n")
        if cut < 0:
            self.pending = buf
            return self.flush() if len(buf) > MAX_LINE_BYTES else []
        self.pending = buf[cut + 1 :]
        complete = buf[:cut]
        lines = complete.decode("utf-8", "replace").split("\n")
        if b"\r" in complete:
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        if len(self.pending) > MAX_LINE_BYTES:
            lines.extend(self.flush())
        return lines

    def flush(self) -> list[str]:
        """The held partial line as a line of its own (nothing if none is held)."""
        if not self.pending:
            return []
        rest, self.pending = self.pending, b""
        return [rest[i : i + MAX_LINE_BYTES].decode("utf-8", "replace") for i in range(0, len(rest), MAX_LINE_BYTES)]


def tail_offset(fd: int, size: int, count: int) -> int:
    """The offset where the last `count` lines of the first `size` bytes start (a final partial line counts).

    Scans backwards block by block, so memory stays bounded however long the file is.
    """
    if count <= 0:
        return size
    found = 0
    end = size
    while end > 0:
        start = max(0, end - _TAIL_BLOCK)
        block = pread(fd, end - start, start)
        if len(block) != end - start:
            return 0  # the file shrank under us: send it from the start
        stop = len(block)
        while (cut := block.rfind(b"\n", 0, stop)) >= 0:
            stop = cut
            if start + cut == size - 1:
                continue  # the newline that ends the last line
            found += 1
            if found == count:
                return start + cut + 1
        end = start
    return 0


def _cancelling() -> bool:
    """Whether the running task itself is being cancelled (not a read it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class LogFollower:
    """Batches of lines from one log file.

    - a line ends at `\\n` (a `\\r` before it is stripped too), decoded as UTF-8 with replacement;
    - a partial last line waits for its newline, but is sent alone after PARTIAL_LINE_FLUSH_SECONDS
      without new data (a prompt shows up), at truncation or rotation, at the end of a no-follow stream,
      or past MAX_LINE_BYTES;
    - a file shrinking below the read offset is read again from its start; a path that names another
      file (rotation) has the old file drained first, then the new one read from its start.

    Owns `file` (already opened with `files.open_regular_file`, so a missing file was a 404
    before any stream started) and closes it, and any file it rotates to, when iteration ends.
    """

    def __init__(
        self,
        path: str,
        file: io.FileIO,
        size: int,
        *,
        follow: bool,
        tail: int = 0,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.path = path
        self.file = file
        self.size = size
        self.follow = follow
        self.tail = tail
        #: Checked while idle: following ends when it turns false (e.g. the session ended).
        self.alive = alive
        self._splitter = LineSplitter()

    async def batches(self) -> AsyncIterator[list[str]]:
        try:
            if self.tail:
                start = await run_blocking(tail_offset, self.file.fileno(), self.size, self.tail)
            else:
                start = self.size if self.follow else 0
            if self.follow:
                async for lines in self._follow(start):
                    yield lines
            else:
                async for lines in self._existing(start):
                    yield lines
        except (ServiceError, RuntimeError, asyncio.CancelledError):
            # A session that ends during a read takes its sandbox's threads with it (410, a shut-down executor,
            # a cancelled read): that is the stream's end, as the idle check says it. Anything else, or this
            # stream's own cancellation, goes on up.
            if self.alive() or _cancelling():
                raise
        finally:
            self.file.close()

    async def _existing(self, pos: int) -> AsyncIterator[list[str]]:
        """Lines up to the size the file had when the stream opened (to EOF for size-0 pseudo-files)."""
        end = self.size or None
        fd = self.file.fileno()
        while end is None or pos < end:
            want = READ_BYTES if end is None else min(READ_BYTES, end - pos)
            data = await run_blocking(pread, fd, want, pos)
            if not data:
                break
            pos += len(data)
            if lines := self._splitter.feed(data):
                yield lines
        if lines := self._splitter.flush():
            yield lines

    async def _follow(self, pos: int) -> AsyncIterator[list[str]]:
        last_data = time.monotonic()
        while True:
            fd = self.file.fileno()
            size = os.fstat(fd).st_size
            if size > pos:
                data = await run_blocking(pread, fd, READ_BYTES, pos)
                if data:
                    pos += len(data)
                    last_data = time.monotonic()
                    if lines := self._splitter.feed(data):
                        yield lines
                    continue
            if size < pos:  # truncated: what is held belonged to the old content
                pos = 0
                if lines := self._splitter.flush():
                    yield lines
                continue
            # In a worker thread: it stats and opens the path where it is (a session's sandbox, see `files.inside`).
            replacement = await run_blocking(self._replacement)
            if replacement is not None:
                async for lines in self._drain(pos):
                    yield lines
                self.file.close()
                self.file, pos = replacement, 0
                if lines := self._splitter.flush():
                    yield lines
                continue
            if not self.alive():
                return
            if self._splitter.pending and time.monotonic() - last_data >= PARTIAL_LINE_FLUSH_SECONDS:
                yield self._splitter.flush()
            await asyncio.sleep(POLL_SECONDS)

    async def _drain(self, pos: int) -> AsyncIterator[list[str]]:
        """What was appended to the current file before its writer moved on."""
        fd = self.file.fileno()
        while data := await run_blocking(pread, fd, READ_BYTES, pos):
            pos += len(data)
            if lines := self._splitter.feed(data):
                yield lines

    def _replacement(self) -> io.FileIO | None:
        """The new file at `path` if the path now names a different file than the one being read."""
        try:
            current = os.fstat(self.file.fileno())
            named = os.stat(self.path)
        except OSError:
            return None  # path missing for now: keep following the old file
        if (named.st_dev, named.st_ino) == (current.st_dev, current.st_ino):
            return None
        with contextlib.suppress(ServiceError, OSError):
            new_file, _ = open_regular_file(self.path)
            return new_file
        return None
