"""Server-sent events as the contract frames them: `data: <compact JSON>\\n\\n`, `: ping` heartbeats.

Events are pre-encoded bytes so hot streams (process output) can build them without a JSON
round trip; `encode_event` is the general path for a model.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from pydantic import BaseModel
from starlette.responses import StreamingResponse

HEARTBEAT_SECONDS = 15.0
PING = b": ping\n\n"

SSE_HEADERS = {
    "X-SSE-Content-Type": "application/json",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def encode_event(model: BaseModel) -> bytes:
    return b"data: " + model.model_dump_json(exclude_none=True).encode() + b"\n\n"


async def with_heartbeat(events: AsyncIterator[bytes], interval: float = HEARTBEAT_SECONDS) -> AsyncIterator[bytes]:
    """Yield `events`, inserting a comment ping whenever the source is quiet for `interval` seconds.

    The pending `__anext__` is never cancelled by a ping, so no event is lost.
    """
    iterator = aiter(events)
    pending: asyncio.Future | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield PING
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                pending = None
                return
            pending = None
            yield item
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def sse_response(events: AsyncIterator[bytes], heartbeat: float = HEARTBEAT_SECONDS) -> StreamingResponse:
    return StreamingResponse(
        with_heartbeat(events, heartbeat), media_type="text/event-stream", headers=SSE_HEADERS
    )
