"""A strict reader of the contract's server-sent events.

The stream is opened by `Transport.open_stream` (to the session's VM when its route is known). A
lenient parser such as httpx-sse's `aiter_sse` silently drops what it does not understand and a
half-sent event at the end, so a broken service would look like a quiet one. This reader splits
bytes into lines itself and raises instead: `ProtocolError` for a line that is not
SSE or data that is not JSON, `IncompleteStream` for a stream that stops in the middle of an event.
Comment lines (`: ping` heartbeats), `event:`, `id:` and `retry:` lines are accepted and ignored.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx

from bbrowse.client.errors import ConnectionLost, IncompleteStream, ProtocolError, snippet

#: A single SSE line longer than this is treated as garbage rather than buffered forever.
MAX_LINE_BYTES = 16 * 1024 * 1024
_KNOWN_FIELDS = (b"event", b"id", b"retry")  # a tuple: lines are bytearrays (unhashable)


def check_event_stream(response: httpx.Response, what: str) -> None:
    content_type = response.headers.get("content-type", "").partition(";")[0].strip()
    if content_type != "text/event-stream":
        raise ProtocolError(f"{what}: expected an event stream, got content type {content_type or 'none'!r}")


async def iter_sse_json(response: httpx.Response, what: str) -> AsyncIterator[object]:
    """The JSON payload of each event of `response`, in order, until the service ends the stream."""
    check_event_stream(response, what)
    buffer = bytearray()
    data: list[bytearray] = []  # pieces of `buffer`
    in_event = False
    try:
        async for chunk in response.aiter_bytes():
            buffer += chunk
            if b"\n" not in chunk:
                if len(buffer) > MAX_LINE_BYTES:
                    raise ProtocolError(f"{what}: an SSE line longer than {MAX_LINE_BYTES} bytes")
                continue
            lines = buffer.split(b"\n")
            buffer = lines.pop()
            for line in lines:
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    if data:
                        yield _decode(b"\n".join(data), what)
                        data = []
                    in_event = False
                    continue
                if line[0] == 0x3A:  # ':' a comment, e.g. the `: ping` heartbeat
                    continue
                field, _, value = line.partition(b":")
                if field == b"data":
                    data.append(value[1:] if value.startswith(b" ") else value)
                elif field not in _KNOWN_FIELDS:
                    raise ProtocolError(f"{what}: not a server-sent event line: {snippet(bytes(line))!r}")
                in_event = True
    except httpx.TransportError as exc:
        raise ConnectionLost(f"{what}: connection lost mid-stream ({exc or type(exc).__name__})") from exc
    if data or in_event or buffer.strip():
        pending = b"\n".join([*data, bytes(buffer)]) if data else bytes(buffer)
        raise IncompleteStream(f"{what}: the stream ended in the middle of an event: {snippet(pending)!r}")


def _decode(payload: bytes, what: str) -> object:
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(f"{what}: event data is not JSON: {snippet(payload)!r}") from None
