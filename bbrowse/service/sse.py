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


def sse_response(events: AsyncIterator[bytes], heartbeat: float = HEARTBEAT_SECONDS) -> StreamingResponse:
    return StreamingResponse(
        with_heartbeat(events, heartbeat), media_type="text/event-stream", headers=SSE_HEADERS
    )
