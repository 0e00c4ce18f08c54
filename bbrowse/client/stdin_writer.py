"""`StdinWriter`: keystrokes to a process in order, coalesced while a write is in flight.

Each `stdin` call is one HTTP request on a pooled connection; two calls fired concurrently can take
two connections and arrive out of order, which scrambles typing. A writer sends one request at a time
and joins whatever was typed meanwhile into the next request, so order is kept and a burst (a paste,
key repeat) costs a few requests instead of one per byte. `write` never blocks on the network.

    writer = client.processes.stdin_writer(sid, pid)
    writer.write(b"l"); writer.write(b"s\\r")
    await writer.drain()           # everything written so far has reached the process
    await writer.aclose()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

#: Bytes joined into one request at most (the service accepts far more; this bounds one JSON body).
MAX_REQUEST_BYTES = 1024 * 1024

Send = Callable[[bytes], Awaitable[object]]


class StdinWriter:
    def __init__(self, send: Send) -> None:
        self._send = send
        self._pending = bytearray()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._error: BaseException | None = None
        self._closed = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bbrowse-stdin-writer")

    def write(self, data: bytes) -> None:
        """Queue `data`; raises the error of an earlier failed send (then the writer is done)."""
        self._raise_error()
        if self._closed:
            raise RuntimeError("stdin writer is closed")
        if data:
            self._pending += data
            self._idle.clear()
            self._wakeup.set()

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
                chunk = bytes(self._pending[:MAX_REQUEST_BYTES])
                del self._pending[:MAX_REQUEST_BYTES]
                await self._send(chunk)
        except Exception as exc:  # kept and raised to the caller on its next write/drain
            self._error = exc
            self._pending.clear()
            self._idle.set()
