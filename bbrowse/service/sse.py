"""Server-sent events as the contract frames them: `data: <compact JSON>\\n\\n`, `: ping` heartbeats.

Events are pre-encoded bytes so hot streams (process output) can build them without a JSON
round trip; `encode_event` is the general path for a model.

`with_heartbeat` runs the source in one task feeding a small queue, and the response side joins
whatever is queued into one body write: no task or timer is created per event, and a burst of
small events leaves in few `send` calls. One watchdog task queues a ping after `interval` seconds
of quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from pydantic import BaseModel
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

HEARTBEAT_SECONDS = 15.0
PING = b": ping\n\n"
#: Events queued ahead of the client; the source waits (back-pressure) beyond this.
QUEUE_EVENTS = 64
#: At most this many bytes are joined into one body write.
JOIN_BYTES = 1 << 20

SSE_HEADERS = {
    "X-SSE-Content-Type": "application/json",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}

_END = object()


def encode_event(model: BaseModel) -> bytes:
    return b"data: " + model.model_dump_json(exclude_none=True).encode() + b"\n\n"


async def with_heartbeat(events: AsyncIterator[bytes], interval: float = HEARTBEAT_SECONDS) -> AsyncIterator[bytes]:
    """Yield `events` (joined when several are waiting), with a comment ping after `interval` s of quiet."""
    queue: asyncio.Queue = asyncio.Queue(QUEUE_EVENTS)

    async def produce() -> None:
        try:
            async for item in events:
                await queue.put(item)
        except Exception as error:  # handed to the consumer, which re-raises it
            await queue.put(error)
            return
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        await queue.put(_END)

    loop = asyncio.get_running_loop()
    last_sent = loop.time()

    async def watchdog() -> None:
        while True:
            quiet = loop.time() - last_sent
            if quiet >= interval and queue.empty():
                await queue.put(PING)
                quiet = 0.0
            await asyncio.sleep(max(interval - quiet, 0.01))

    producer = asyncio.create_task(produce(), name="sse-producer")
    pinger = asyncio.create_task(watchdog(), name="sse-heartbeat")
    try:
        while True:
            item = await queue.get()
            last_sent = loop.time()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            if queue.empty():
                yield item
                continue
            parts = [item]
            size = len(item)
            finished: object = None  # _END or an exception met while joining
            while not queue.empty() and size < JOIN_BYTES:
                nxt = queue.get_nowait()
                if nxt is _END or isinstance(nxt, Exception):
                    finished = nxt
                    break
                parts.append(nxt)
                size += len(nxt)
            yield b"".join(parts)
            if finished is _END:
                return
            if isinstance(finished, Exception):
                raise finished
    finally:
        for task in (pinger, producer):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def sse_response(
    events: AsyncIterator[bytes], heartbeat: float = HEARTBEAT_SECONDS, kernel_vm: bool = False
) -> StreamingResponse:
    """The stream; `kernel_vm` (--kernel-compat): as Kernel's VM sends it, see `KernelVmSseResponse`."""
    if kernel_vm:
        return KernelVmSseResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
    return StreamingResponse(
        with_heartbeat(events, heartbeat), media_type="text/event-stream", headers=SSE_HEADERS
    )


class KernelVmSseResponse(StreamingResponse):
    """Kernel's VM (`oapi.go`): `WriteHeader(200)` without a flush, then a blocking read of the events.

    Go's `net/http` sends the status and headers with the first body write, so a client sees nothing,
    headers included, until the first event (or the end of a stream that has none); no heartbeat.
    The client leaving is noticed while the stream waits (Go's request context), whatever the ASGI version.
    """

    async def stream_response(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        started = False
        async for chunk in self.body_iterator:
            if not chunk:
                continue
            if not started:
                await send(start)
                started = True
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not started:
            await send(start)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = asyncio.ensure_future(self.stream_response(send))
        listening = asyncio.ensure_future(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait((streaming, listening), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, listening):
                task.cancel()
            await asyncio.gather(streaming, listening, return_exceptions=True)
        error = None if streaming.cancelled() else streaming.exception()
        if error is not None and not isinstance(error, OSError):  # OSError: the client has gone
            raise error
