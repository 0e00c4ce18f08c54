"""Telemetry of a session: pages of recorded events, and the live stream with resume by seq.

    page = await client.telemetry.events(sid, category=["console"], since="10m")
    async with client.telemetry.follow(sid, replay_all=True) as events:
        async for envelope in events: ...      # reconnects after a dropped connection, no gap, no duplicate

`follow_raw` is the same stream for a reader that keeps many events but looks at few (the app's Events tab):
each network read as one list of `RawEvent`s (seq and JSON), validated only when first looked at, so a page
making 10,000 events a second costs a few microseconds per event rather than a JSON parse and a validation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from bbrowse.client.bodies import body
from bbrowse.client.decode import json_body, validate
from bbrowse.client.errors import ConnectionLost, IncompleteStream, ProtocolError, ServerError, snippet
from bbrowse.client.retry import reconnect_delay
from bbrowse.client.sse import check_event_stream
from bbrowse.client.streams import OPENED, Opened, Stream
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import Browser
from bbrowse.wire.telemetry import BrowserUpdateRequest, TelemetryEnvelope, TelemetryEvent, TelemetryRequest

#: Reconnects in a row without an event in between before `follow` gives up.
RECONNECT_ATTEMPTS = 30
#: A frame (an event's lines) longer than this is garbage rather than something to buffer forever.
MAX_FRAME_BYTES = 16 * 1024 * 1024
_FIELDS = (b"event", b"retry")
#: One server-sent event: its id (the last one given) and its data (None for an id-only frame).
SseFrame = tuple[int | None, bytes | None]


def parse_envelope(raw: bytes) -> TelemetryEnvelope:
    """One event's JSON as a `TelemetryEnvelope`; `ProtocolError` when it is not one."""
    try:
        return TelemetryEnvelope.model_validate_json(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:3])
        raise ProtocolError(f"telemetry event: unexpected TelemetryEnvelope shape ({problems}): "
                            f"{snippet(raw)!r}") from None


class RawEvent:
    """An event as the stream sent it: its seq (the SSE id) and its JSON, validated when first asked for."""

    __slots__ = ("_envelope", "raw", "seq")

    def __init__(self, seq: int, raw: bytes) -> None:
        self.seq = seq
        self.raw = raw
        self._envelope: TelemetryEnvelope | None = None

    @property
    def envelope(self) -> TelemetryEnvelope:
        """The validated event, kept once made; `ProtocolError` when the JSON is not an event."""
        if self._envelope is None:
            self._envelope = self.parse()
        return self._envelope

    @property
    def event(self) -> TelemetryEvent:
        return self.envelope.event

    def parse(self) -> TelemetryEnvelope:
        """The validated event, made anew and not kept (for a reader that looks at each event once)."""
        return self._envelope or parse_envelope(self.raw)

    def __repr__(self) -> str:
        return f"RawEvent(seq={self.seq}, {snippet(self.raw)!r})"


@dataclass
class TelemetryPage:
    events: list[TelemetryEnvelope]
    has_more: bool
    next_offset: int


class Telemetry:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _path(self, id_or_name: str, tail: str) -> str:
        return f"/browsers/{segment(id_or_name)}/telemetry/{tail}"

    async def configure(self, id_or_name: str, request: TelemetryRequest) -> Browser:
        """`PATCH /browsers/{id}` with new telemetry settings; the updated Browser."""
        update = BrowserUpdateRequest.model_construct(telemetry=request)
        response = await self._t.request("PATCH", f"/browsers/{segment(id_or_name)}", json=body(update),
                                         idempotent=True)
        return validate(Browser, json_body(response, "update browser"), "update browser")

    async def events(
        self, id_or_name: str, *, category: Sequence[str] = (), type: Sequence[str] = (),
        since: str | None = None, until: str | None = None, limit: int | None = None,
        offset: int | None = None, order: str | None = None,
    ) -> TelemetryPage:
        """One page of recorded events (`since` is RFC 3339 or a duration such as `5m`; the service's default 5m)."""
        params: dict[str, Any] = {"category": list(category), "type": list(type)}
        for key, value in (("since", since), ("until", until), ("limit", limit), ("offset", offset),
                           ("order", order)):
            if value is not None:
                params[key] = value
        response = await self._t.request("GET", self._path(id_or_name, "events"), params=params, idempotent=True)
        data = json_body(response, "telemetry events")
        if not isinstance(data, list):
            raise ProtocolError(f"telemetry events: expected an array, got {data!r:.200}")
        events = [validate(TelemetryEnvelope, item, "telemetry event") for item in data]
        has_more = response.headers.get("x-has-more", "false").lower() == "true"
        try:
            next_offset = int(response.headers.get("x-next-offset", "0"))
        except ValueError:
            next_offset = 0
        return TelemetryPage(events, has_more, next_offset)

    async def all_events(self, id_or_name: str, *, since: str, category: Sequence[str] = (),
                         type: Sequence[str] = (), page_size: int = 1000) -> AsyncIterator[TelemetryEnvelope]:
        """Every recorded event since `since`, oldest first, page after page."""
        offset: int | None = None
        while True:
            page = await self.events(id_or_name, category=category, type=type, since=since, limit=page_size,
                                     offset=offset)
            for envelope in page.events:
                yield envelope
            if not page.has_more:
                return
            offset = page.next_offset

    def stream(self, id_or_name: str, *, replay_all: bool = False, types: Sequence[str] = (),
               last_event_id: int | None = None) -> Stream[TelemetryEnvelope]:
        """The live stream, once: from `last_event_id` (exclusive), the oldest kept (`replay_all`), or now."""
        return Stream(_validated(self._batches(id_or_name, replay_all, types, last_event_id, None)))

    def follow(self, id_or_name: str, *, replay_all: bool = False, types: Sequence[str] = (),
               after: int | None = None) -> Stream[TelemetryEnvelope]:
        """The live stream, reconnecting with `Last-Event-ID` after a dropped connection (no gap, no
        duplicate), until the session ends; `ConnectionLost` after `RECONNECT_ATTEMPTS` failed reconnects."""
        return Stream(_validated(self._follow(id_or_name, replay_all, types, after)))

    def follow_raw(self, id_or_name: str, *, replay_all: bool = False, types: Sequence[str] = (),
                   after: int | None = None) -> Stream[list[RawEvent]]:
        """`follow`, as a list of `RawEvent`s per network read (never empty); see the module docstring."""
        return Stream(self._follow(id_or_name, replay_all, types, after))

    async def _follow(self, id_or_name: str, replay_all: bool, types: Sequence[str],
                      after: int | None) -> AsyncGenerator[list[RawEvent], None]:
        position = [after]  # the last id seen, id-only frames included
        failures = 0
        opened = False
        while True:
            source = self._batches(id_or_name, replay_all and position[0] is None, types, position[0], position)
            try:
                async for item in source:
                    if item is OPENED:
                        if not opened:
                            opened = True
                            yield OPENED
                        continue
                    failures = 0
                    yield item
                return  # the service ended the stream: the session has ended
            except (ConnectionLost, IncompleteStream, ServerError) as error:
                if not opened:
                    raise
                failures += 1
                if failures > RECONNECT_ATTEMPTS:
                    raise ConnectionLost(f"telemetry stream: gave up after {failures - 1} reconnects: {error}") \
                        from error
                await asyncio.sleep(reconnect_delay(failures - 1))  # the one backoff of every stream
            finally:
                await source.aclose()

    async def _batches(self, id_or_name: str, replay_all: bool, types: Sequence[str], last_event_id: int | None,
                       position: list[int | None] | None) -> AsyncGenerator[list[RawEvent], None]:
        params: dict[str, Any] = {}
        if replay_all:
            params["replay"] = "all"
        if types:
            params["type"] = list(types)
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else None
        what = "telemetry stream"
        async with self._t.open_stream("GET", self._path(id_or_name, "stream"), params=params, sse=True,
                                       headers=headers) as response:
            yield OPENED
            last_id = last_event_id
            async for frames in iter_sse_batches(response, what):
                batch: list[RawEvent] = []
                for event_id, data in frames:
                    if event_id is not None:
                        last_id = event_id
                    if data is None:
                        continue
                    if event_id is None:  # a frame without an id: its seq is in its JSON
                        event_id = parse_envelope(data).seq
                    batch.append(RawEvent(event_id, data))
                if position is not None:
                    position[0] = last_id
                if batch:
                    yield batch


async def _validated(batches: AsyncGenerator[list[RawEvent], None]) -> AsyncGenerator[TelemetryEnvelope, None]:
    """Each event of each batch, validated (a `ProtocolError` at the first that is not an event)."""
    try:
        async for batch in batches:
            if isinstance(batch, Opened):
                yield OPENED
                continue
            for raw in batch:
                yield raw.envelope
    finally:
        await batches.aclose()


async def iter_sse_batches(response: httpx.Response, what: str) -> AsyncIterator[list[SseFrame]]:
    """(id, data) of the frames each network read completed, data None for an id-only frame; comments skipped.

    Strict as `client.sse` is: a line that is not SSE, an id that is not a seq, a stream that stops in the
    middle of an event raise. Frames are split with bytes methods, a read at a time, not a line at a time.
    """
    check_event_stream(response, what)
    buffer = b""
    event_id: int | None = None  # SSE: the last id holds for the frames after it
    try:
        async for chunk in response.aiter_bytes():
            buffer += chunk
            if b"\r" in buffer:
                buffer = buffer.replace(b"\r\n", b"\n")
            end = buffer.rfind(b"\n\n")
            if end < 0:
                if len(buffer) > MAX_FRAME_BYTES:
                    raise ProtocolError(f"{what}: an SSE event longer than {MAX_FRAME_BYTES} bytes")
                continue
            complete, buffer = buffer[:end], buffer[end + 2:]
            frames: list[SseFrame] = []
            for frame in complete.split(b"\n\n"):
                data: list[bytes] = []
                fields = False
                for line in frame.split(b"\n"):
                    if not line or line[0] == 0x3A:  # ':' a comment, e.g. the `: ping` heartbeat
                        continue
                    fields = True
                    field, _, value = line.partition(b":")
                    if value[:1] == b" ":
                        value = value[1:]
                    if field == b"data":
                        data.append(value)
                    elif field == b"id":
                        try:
                            event_id = int(value)
                        except ValueError:
                            raise ProtocolError(f"{what}: an id that is not a seq: {snippet(value)!r}") from None
                    elif field not in _FIELDS:
                        raise ProtocolError(f"{what}: not a server-sent event line: {snippet(line)!r}")
                if fields:
                    frames.append((event_id, b"\n".join(data) if data else None))
            if frames:
                yield frames
    except httpx.TransportError as exc:
        raise ConnectionLost(f"{what}: connection lost mid-stream ({exc or type(exc).__name__})") from exc
    if any(line and line[0] != 0x3A for line in buffer.split(b"\n")):  # a field with no blank line after it
        raise IncompleteStream(f"{what}: the stream ended in the middle of an event")


def summary(envelope: TelemetryEnvelope) -> str:
    """One line that says what happened, as a person reads a console or a network log."""
    event = envelope.event
    data = event.data or {}

    def get(key: str, default: str = "") -> str:
        value = data.get(key)
        return default if value is None else str(value)

    kind = event.type
    if kind == "console_log":
        return f"{get('level', 'log')}: {get('text')}"
    if kind == "console_error":
        where = f" ({get('source_url')}:{get('line')})" if data.get("source_url") else ""
        return get("text") + where
    if kind == "network_request":
        return f"{get('method')} {get('url')}"
    if kind == "network_response":
        return f"{get('status')} {get('method')} {get('url')}".replace("  ", " ")
    if kind == "network_loading_failed":
        return f"{get('error_text')} {get('url')}"
    if kind in ("api_call", "platform_api_call"):
        return f"{get('operation_id')} → {get('status')} ({float(data.get('duration_ms') or 0):.0f} ms)"
    if kind in ("cdp_connect", "cdp_disconnect"):
        tail = f" {get('reason')}, {get('message_count')} messages" if kind == "cdp_disconnect" else ""
        return f"connection {get('connection_id')}{tail}"
    if kind in ("live_view_connect", "live_view_disconnect"):
        tail = f" after {float(data.get('duration_ms') or 0) / 1000:.1f} s" if kind == "live_view_disconnect" else ""
        return f"live view {get('session_id')}{tail}"
    if kind == "service_crashed":
        return f"{get('service_name')} died ({get('phase')}) {get('reason')}".strip()
    if "url" in data:
        return get("url")
    return json.dumps(data, separators=(",", ":"))[:200] if data else ""


def is_error(envelope: TelemetryEnvelope) -> bool:
    """Whether a person looking for what went wrong wants to see this one first."""
    event = envelope.event
    data = event.data or {}
    if event.type in ("console_error", "network_loading_failed", "page_crashed", "service_crashed",
                      "system_oom_kill", "monitor_disconnected"):
        return True
    status = data.get("status")
    if event.type == "network_response" and isinstance(status, int) and status >= 400:
        return True
    return event.type.endswith("api_call") and isinstance(status, int) and status >= 500
