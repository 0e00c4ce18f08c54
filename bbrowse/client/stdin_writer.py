"""`StdinWriter`: keystrokes to a process in order, coalesced while a write is in flight.

Each `stdin` call is one HTTP request on a pooled connection; two calls fired concurrently can take
two connections and arrive out of order, which scrambles typing. A writer sends one request at a time
and joins whatever was typed meanwhile into the next, so order is kept and a burst (a paste, key
repeat) costs a few requests instead of one per byte. `write` never blocks on the network.

    writer = client.processes.stdin_writer(sid, pid)
    writer.write(b"l"); writer.write(b"s\\r")
    await writer.drain()           # everything written so far has reached the process
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

#: Bytes joined into one request at most (the service accepts far more; this bounds one JSON body).
MAX_REQUEST_BYTES = 1024 * 1024

Send = Callable[[bytes], Awaitable[object]]
OnError = Callable[[Exception], object]


class StdinWriter:
    """One process's stdin, written in order (see the module's docstring); `aclose` when done.

    A failed send stops the writer: its error is raised by the next `write`, `drain`, `aclose` or
    `wait_closed` (`bbrowse shell` ends the session on it). Given `on_error`, the writer reports the error
    there instead and goes on with what was typed after the lost bytes (a terminal pane keeps working
    after a hiccup and shows the error).
    """

    def __init__(self, send: Send, *, on_error: OnError | None = None,
                 max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        self._send = send
        self._on_error = on_error
        self._max_request_bytes = max_request_bytes
        self._pending = bytearray()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._error: BaseException | None = None
        self._closed = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bbrowse-stdin-writer")

    @property
    def pending(self) -> int:
        """Bytes written but not yet handed to a send (a reader can wait in `drain` when this grows)."""
        return len(self._pending)

    @property
    def stopped(self) -> bool:
        """True once `write` takes nothing more: closed, aborted, or a send failed."""
        return self._closed or self._error is not None

    def write(self, data: bytes) -> None:
        """Queue `data`; raises the error of an earlier failed send (then the writer is done)."""
        self._raise_error()
        if self._closed:
            raise RuntimeError("stdin writer is closed")
        if data:
            self._pending += data
            self._idle.clear()
            self._wakeup.set()

    def discard(self) -> None:
        """Drop what is queued and not sent yet; a send in flight goes on (a new program must not get
        the keys typed for the one before it)."""
        self._pending.clear()

    async def drain(self) -> None:
        """Wait until everything queued has been accepted by the service."""
        idle = asyncio.ensure_future(self._idle.wait())
        try:
            await asyncio.wait({idle, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
        self._raise_error()

    async def aclose(self) -> None:
        """Send what is queued, then stop."""
        if not self._closed:
            self._closed = True
            self._wakeup.set()
            await asyncio.wait({self._task})
        self._raise_error()

    async def wait_closed(self) -> None:
        """Wait until the writer stops: closed and everything sent, aborted, or a send failed (its error
        is raised here), so a caller can watch the writer without writing to it."""
        await asyncio.wait({self._task})
        self._raise_error()

    def abort(self) -> None:
        """Stop now: what is queued is dropped and a send in flight is cancelled (the pane or the
        session it typed into is gone)."""
        self._closed = True
        self._pending.clear()
        self._idle.set()
        self._task.cancel()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    async def _run(self) -> None:
        try:
            while True:
                if not self._pending:
                    self._idle.set()
                    if self._closed:
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                chunk = bytes(self._pending[: self._max_request_bytes])
                del self._pending[: self._max_request_bytes]
                try:
                    await self._send(chunk)
                except Exception as exc:
                    if self._on_error is None:
                        raise
                    self._on_error(exc)  # those bytes are lost; what was typed after them still goes
        except Exception as exc:  # kept and raised to the caller on its next write/drain
            self._error = exc
            self._pending.clear()
            self._idle.set()
