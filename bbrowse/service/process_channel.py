"""Kernel's VM's `outCh` for one process (`--kernel-compat`): one bounded queue every stream reader takes from.

In Kernel's in-VM server (`process.go`) a process has one Go channel of 256 events; its pipe readers send
each 4 KiB read into it and every `stdout/stream` handler receives from it, so concurrent readers split
the output between them, and with no reader the pipe readers block once it is full (then the program,
once the pipe's own buffer is full too). At the exit the exit event is sent into it, then `doneCh` is
closed; each handler's `select` then picks `doneCh` or a queued event at random. `SharedChannel` takes
the harsh branch every time, so tests are deterministic.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

from bbrowse.service.process_output import Chunk, sse_exit_frame

#: Go's `make(chan oapi.ProcessStreamEvent, 256)`.
CHANNEL_EVENTS = 256
#: Go's pipe readers read 4096 bytes at a time: one event each.
GO_READ_BYTES = 4096


class SharedChannel:
    """The channel, with Go's harsh branch taken every time:

    - an event goes straight to a reader waiting on the empty queue (Go hands a send to a waiting receiver);
    - once the process has finished, a reader stops at its next take, whatever is still queued: the exit
      event reaches only a reader that was waiting when it came, and a stream opened after the exit gets
      nothing;
    - when the queue is full at the exit, the exit event waits for room (Go's waiter blocks on its send)
      and the process counts as finished only once it is queued.
    """

    def __init__(self, on_full: Callable[[], None], on_room: Callable[[], None]) -> None:
        self._queue: deque[bytes] = deque()
        self._waiters: deque[asyncio.Future[bytes | None]] = deque()
        self._on_full = on_full
        self._on_room = on_room
        self._pending_exit: bytes | None = None
        #: `doneCh` closed: the exit event is in (or handed over) and readers stop at their next take.
        self.done = False

    def room(self) -> int:
        return max(CHANNEL_EVENTS - len(self._queue), 0)

    def put(self, stream: int, data: bytes) -> None:
        """A pipe read, as Go's readers send it: one event per 4 KiB."""
        for start in range(0, len(data), GO_READ_BYTES):
            self._send(Chunk(stream, data[start:start + GO_READ_BYTES]).sse())
        if len(self._queue) >= CHANNEL_EVENTS:
            self._on_full()

    def finish(self, exit_code: int) -> None:
        frame = sse_exit_frame(exit_code)
        if len(self._queue) >= CHANNEL_EVENTS and not self._waiters:
            self._pending_exit = frame
            return
        self._send(frame)
        self._close()

    def _close(self) -> None:
        """`close(doneCh)`: every reader still waiting stops."""
        self.done = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _send(self, frame: bytes) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(frame)
                return
        self._queue.append(frame)

    async def _take(self) -> bytes | None:
        if self.done:
            return None
        if self._queue:
            frame = self._queue.popleft()
            if self._pending_exit is not None:
                self._queue.append(self._pending_exit)
                self._pending_exit = None
                self._close()
            elif len(self._queue) < CHANNEL_EVENTS:
                self._on_room()
            return frame
        waiter: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            if not waiter.done():
                waiter.cancel()
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass

    async def frames(self) -> AsyncIterator[bytes]:
        """One `stdout/stream` reader: the SSE frames it takes, until the process is done."""
        while (frame := await self._take()) is not None:
            yield frame
