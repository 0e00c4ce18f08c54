"""The output of one process, broadcast to every reader, with a backlog for readers who come late.

Chunks live in one ordered log and each subscriber is a cursor into it, so a chunk is stored (and
base64-encoded into its SSE frame) once however many read it. The process is never slowed by its
readers. Output is kept from the start until the first subscriber comes (FIRST_READER_BYTES, at most
FIRST_READER_SECONDS), so spawn-then-connect loses nothing; later subscribers start BACKLOG_BYTES
behind. A reader more than MAX_LAG_BYTES behind loses its oldest undelivered chunks (counted in
`Subscriber.dropped_chunks`) rather than its connection, which bounds memory per process at about
MAX_LAG_BYTES. An exited process keeps its log, so a late subscriber still gets the end and the exit.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

# SIMD base64, ~40x the stdlib's speed: the largest cost of streaming output (a dependency, as for wire).
from pybase64 import b64encode as _b64encode

log = logging.getLogger("bbrowse.processes")

STDOUT = 0
STDERR = 1

#: What a late subscriber receives of the output written before it connected.
BACKLOG_BYTES = 1 << 20
#: Output kept from the start for the first subscriber, if it comes soon enough.
FIRST_READER_BYTES = 16 << 20
FIRST_READER_SECONDS = 30.0
#: How far one subscriber may lag behind the newest output before its oldest data is dropped.
MAX_LAG_BYTES = 128 << 20
#: Upper bound of one batch handed to a subscriber (one SSE write, one WebSocket frame).
MAX_BATCH_BYTES = 512 << 10

_SSE_PREFIX = (b'data: {"stream":"stdout","data_b64":"', b'data: {"stream":"stderr","data_b64":"')
_SSE_SUFFIX = b'"}\n\n'


def sse_exit_frame(exit_code: int) -> bytes:
    return b'data: {"event":"exit","exit_code":%d}\n\n' % exit_code


class Chunk:
    """One read from the process: which stream, the bytes, and (lazily) its SSE frame."""

    __slots__ = ("_sse", "data", "stream")

    def __init__(self, stream: int, data: bytes) -> None:
        self.stream = stream
        self.data = data
        self._sse: bytes | None = None

    def sse(self) -> bytes:
        frame = self._sse
        if frame is None:
            frame = _SSE_PREFIX[self.stream] + _b64encode(self.data) + _SSE_SUFFIX
            self._sse = frame
        return frame

    def raw(self) -> bytes:
        return self.data


class Subscriber:
    __slots__ = ("cursor", "dropped_chunks", "waiter")

    def __init__(self, cursor: int) -> None:
        self.cursor = cursor
        self.dropped_chunks = 0
        self.waiter: asyncio.Future | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class OutputLog:
    def __init__(
        self, backlog_bytes: int = BACKLOG_BYTES, max_lag_bytes: int = MAX_LAG_BYTES, hold_first: bool = True
    ) -> None:
        """`backlog_bytes=0, hold_first=False`: nothing kept for a reader who is not there (Kernel's VM)."""
        self.backlog_bytes = backlog_bytes
        self.max_lag_bytes = max(max_lag_bytes, backlog_bytes)
        self._chunks: deque[Chunk] = deque()
        self._first_seq = 0  # sequence number of self._chunks[0]
        self._retained = 0  # bytes of data in self._chunks
        self._subscribers: set[Subscriber] = set()
        self.total_bytes = 0
        self.exit_code: int | None = None
        #: Everything is kept for the first subscriber until this monotonic time (None: no longer).
        self._hold_until: float | None = time.monotonic() + FIRST_READER_SECONDS if hold_first else None

    @property
    def finished(self) -> bool:
        return self.exit_code is not None

    @property
    def _next_seq(self) -> int:
        return self._first_seq + len(self._chunks)

    # producer side ------------------------------------------------------------

    def append(self, stream: int, data: bytes) -> None:
        self._chunks.append(Chunk(stream, data))
        self._retained += len(data)
        self.total_bytes += len(data)
        self._trim()
        for sub in self._subscribers:
            sub.wake()

    def finish(self, exit_code: int) -> None:
        """The process has exited and all its output is in: subscribers drain, then get the exit."""
        if self.exit_code is not None:
            return
        self.exit_code = exit_code
        for sub in self._subscribers:
            sub.wake()

    def _trim(self) -> None:
        chunks = self._chunks
        if not chunks:
            return
        if self._hold_until is not None:
            if self._retained <= FIRST_READER_BYTES and time.monotonic() < self._hold_until:
                return
            self._hold_until = None  # too much, or too late: from now on only the backlog is kept
        oldest_needed = min((s.cursor for s in self._subscribers), default=self._next_seq)
        while chunks:
            first = chunks[0]
            rest = self._retained - len(first.data)
            needed_for_backlog = rest < self.backlog_bytes
            needed_by_reader = self._first_seq >= oldest_needed
            if (needed_for_backlog or needed_by_reader) and self._retained <= self.max_lag_bytes:
                break
            chunks.popleft()
            self._first_seq += 1
            self._retained = rest

    def _backlog_start(self) -> int:
        """Sequence number from which the last `backlog_bytes` of output (whole chunks) begin."""
        seq, total = self._next_seq, 0
        for chunk in reversed(self._chunks):
            if total >= self.backlog_bytes:
                break
            total += len(chunk.data)
            seq -= 1
        return seq

    # consumer side ------------------------------------------------------------

    async def follow(
        self,
        render: Callable[[Chunk], bytes],
        max_batch: int = MAX_BATCH_BYTES,
        on_subscribed: Callable[[], None] | None = None,
    ) -> AsyncIterator[bytes]:
        """Batches of rendered chunks from the backlog on, until the process has exited and all is sent.

        `render` is `Chunk.sse` for the SSE stream or `Chunk.raw` for attach. The caller sends the
        exit itself once this ends (`self.exit_code`). `on_subscribed` runs once this reader is in
        place, before it waits for anything (an attach starts reading the PTY there, so no chunk can
        arrive before its reader).
        """
        if self._hold_until is not None:  # the first subscriber: everything since the start
            self._hold_until = None
            sub = Subscriber(self._first_seq)
        else:
            sub = Subscriber(self._backlog_start())
        self._subscribers.add(sub)
        loop = asyncio.get_running_loop()
        try:
            if on_subscribed is not None:
                on_subscribed()
            while True:
                if sub.cursor < self._first_seq:
                    skipped = self._first_seq - sub.cursor
                    sub.dropped_chunks += skipped
                    log.warning("slow reader fell %d chunks behind; its oldest output was dropped", skipped)
                    sub.cursor = self._first_seq
                if sub.cursor < self._next_seq:
                    parts, size = [], 0
                    start = sub.cursor - self._first_seq
                    for chunk in itertools.islice(self._chunks, start, None):
                        piece = render(chunk)
                        parts.append(piece)
                        size += len(piece)
                        if size >= max_batch:
                            break
                    sub.cursor += len(parts)
                    yield parts[0] if len(parts) == 1 else b"".join(parts)
                    continue
                if self.finished:
                    return
                sub.waiter = loop.create_future()
                try:
                    await sub.waiter
                finally:
                    sub.waiter = None
        finally:
            self._subscribers.discard(sub)
            self._trim()
