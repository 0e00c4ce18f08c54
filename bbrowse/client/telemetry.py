"""Telemetry of a session: pages of recorded events, and the live stream with resume by seq.

    page = await client.telemetry.events(sid, category=["console"], since="10m")
    async with client.telemetry.follow(sid, replay_all=True) as events:
        async for envelope in events: ...      # reconnects after a dropped connection, no gap, no duplicate
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bbrowse.client.bodies import body
from bbrowse.client.decode import json_body, validate
from bbrowse.client.errors import ConnectionLost, IncompleteStream, ProtocolError, ServerError, snippet
from bbrowse.client.retry import reconnect_delay
from bbrowse.client.sse import check_event_stream
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import Browser
from bbrowse.wire.telemetry import BrowserUpdateRequest, TelemetryEnvelope, TelemetryRequest

#: Reconnects in a row without an event in between before `follow` gives up.
RECONNECT_ATTEMPTS = 30


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
        return Stream(self._stream(id_or_name, replay_all, types, last_event_id, None))

    def follow(self, id_or_name: str, *, replay_all: bool = False, types: Sequence[str] = (),
               after: int | None = None) -> Stream[TelemetryEnvelope]:
        """The live stream, reconnecting with `Last-Event-ID` after a dropped connection (no gap, no
        duplicate), until the session ends; `ConnectionLost` after `RECONNECT_ATTEMPTS` failed reconnects."""
        return Stream(self._follow(id_or_name, replay_all, types, after))

    async def _follow(self, id_or_name: str, replay_all: bool, types: Sequence[str],
                      after: int | None) -> AsyncGenerator[TelemetryEnvelope, None]:
        position = [after]  # the last id seen, id-only frames included
        failures = 0
        opened = False
        while True:
            source = self._stream(id_or_name, replay_all and position[0] is None, types, position[0], position)
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

    async def _stream(self, id_or_name: str, replay_all: bool, types: Sequence[str], last_event_id: int | None,
                      position: list[int | None] | None) -> AsyncGenerator[TelemetryEnvelope, None]:
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
            async for event_id, payload in iter_sse_frames(response, what):
                if position is not None and event_id is not None:
                    position[0] = event_id
                if payload is not None:
                    yield validate(TelemetryEnvelope, payload, "telemetry event")


async def iter_sse_frames(response: httpx.Response, what: str) -> AsyncIterator[tuple[int | None, object | None]]:
    """(id, JSON data) of each frame; data None for an id-only frame. Comments are skipped."""
    check_event_stream(response, what)
    event_id: int | None = None
    data: list[str] = []
    pending = False
    try:
        async for line in response.aiter_lines():
            if not line:
                if pending:
                    payload = None
                    if data:
                        try:
                            payload = json.loads("\n".join(data))
                        except ValueError:
                            raise ProtocolError(f"{what}: event data is not JSON: "
                                                f"{snippet(chr(10).join(data).encode())!r}") from None
                    yield event_id, payload
                data, pending = [], False
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "id":
                try:
                    event_id = int(value)
                except ValueError:
                    raise ProtocolError(f"{what}: an id that is not a seq: {value!r:.80}") from None
            elif field not in ("event", "retry"):
                raise ProtocolError(f"{what}: not a server-sent event line: {line!r:.80}")
            pending = True
    except httpx.TransportError as exc:
        raise ConnectionLost(f"{what}: connection lost mid-stream ({exc or type(exc).__name__})") from exc
    if pending:
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
