"""`/browsers/{id}/telemetry/...` and `PATCH /browsers/{id}`: what a session recorded about its browser.

- `GET telemetry/events`: a page of envelopes `{seq, event}` in a window (`since`, `until`: RFC 3339 or a
  duration such as `5m` meaning that long ago; `since` defaults to 5m), filtered by `category` and `type`,
  `order` asc (from `since` or the `offset` cursor) or desc (newest first, ending at the cursor); paging
  headers `X-Has-More` / `X-Next-Offset` (the cursor is opaque: the next seq to read).
- `GET telemetry/stream`: SSE, one frame per event, `id:` = seq; `Last-Event-ID` resumes after that seq,
  `replay=all` starts from the oldest kept, otherwise only new events; `type` filters (repeated or
  comma-separated), a skipped event still moves the id on (an id-only frame); `: ping` keepalives; the
  stream ends once the session has ended and every event was sent. Served under the VM endpoint too.
- `PATCH /browsers/{id}`: `telemetry` settings (Kernel's semantics, see `wire.telemetry`).
Deleted sessions answer from their kept file until retention removes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.responses import StreamingResponse

from bbrowse.service.errors import bad_request
from bbrowse.service.openapi import errors
from bbrowse.service.routes.sessions import browser_object
from bbrowse.service.sessions import Session
from bbrowse.service.sse import sse_response
from bbrowse.service.state import ActiveSession, AnySession
from bbrowse.service.telemetry import Stored, TelemetryLog, TelemetryManager, now_us
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire import Browser
from bbrowse.wire.telemetry import (
    CATEGORIES,
    EVENTS_LIMIT_DEFAULT,
    EVENTS_LIMIT_MAX,
    BrowserUpdateRequest,
    TelemetryEnvelope,
    duration_seconds,
)

router = APIRouter(tags=["telemetry"], responses=errors(404))
stream_router = vm_served(APIRouter(tags=["telemetry"], responses=errors(404)))

DEFAULT_SINCE = "5m"
#: Events scanned for one filtered page at most; past this the page may come back short with X-Has-More.
SCAN_MAX = 100_000
#: How long the stream waits for an event before looking again (the heartbeat is the SSE layer's).
STREAM_WAIT_SECONDS = 5.0


def manager(request: Request) -> TelemetryManager:
    telemetry: TelemetryManager = request.app.state.telemetry
    return telemetry


def parse_time(value: str, field: str) -> int:
    """RFC 3339 or a duration ago, as Unix microseconds; 400 naming `field` otherwise."""
    seconds = duration_seconds(value)
    if seconds is not None:
        return now_us() - int(seconds * 1_000_000)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise bad_request(f"expected an RFC 3339 time or a duration such as 5m, got {value!r}", field=field) from None
    if parsed.tzinfo is None:
        raise bad_request(f"an RFC 3339 time needs a time zone (e.g. Z), got {value!r}", field=field)
    return int(parsed.timestamp() * 1_000_000)


def _types(values: list[str] | None) -> frozenset[str]:
    return frozenset(t.strip() for value in values or () for t in value.split(",") if t.strip())


@router.patch("/browsers/{id_or_name}", response_model=Browser, response_model_exclude_none=True,
              responses=errors(400, 410))
async def update_browser(
    request: Request, session: ActiveSession, body: BrowserUpdateRequest | None = None
) -> Browser:
    """Update a session; bbrowse serve applies `telemetry` (other fields of Kernel's update are ignored)."""
    if body is not None and body.telemetry is not None:
        await manager(request).update(session, body.telemetry)
    return browser_object(request, session)


@router.get("/browsers/{id_or_name}/telemetry/events", response_model=list[TelemetryEnvelope],
            responses=errors(400))
async def telemetry_events(
    request: Request,
    response: Response,
    session: AnySession,
    category: Annotated[list[str] | None, Query()] = None,
    type: Annotated[list[str] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=EVENTS_LIMIT_MAX)] = EVENTS_LIMIT_DEFAULT,
    offset: Annotated[int | None, Query(ge=0)] = None,
    order: str = "asc",
    since: str | None = None,
    until: str | None = None,
) -> Response:
    if order not in ("asc", "desc"):
        raise bad_request(f"expected asc or desc, got {order!r}", field="order")
    if order == "desc" and since is not None:
        raise bad_request("since cannot be combined with order=desc", field="since")
    categories = frozenset(category or ())
    unknown = sorted(categories - set(CATEGORIES))
    if unknown:
        raise bad_request(f"unknown category {unknown[0]!r} (one of {', '.join(CATEGORIES)})", field="category")
    types = _types(type)
    until_us = parse_time(until, "until") if until is not None else None
    since_us = parse_time(since or DEFAULT_SINCE, "since")
    telemetry = manager(request).log_of(session)

    def matches(stored: Stored) -> bool:
        return (not categories or stored[2] in categories) and (not types or stored[3] in types)

    page, has_more, next_offset = (_asc if order == "asc" else _desc)(
        telemetry, matches, limit, offset, since_us, until_us)
    response.headers["X-Has-More"] = "true" if has_more else "false"
    response.headers["X-Next-Offset"] = str(next_offset)
    body = b"[" + b",".join(stored[4] for stored in page) + b"]"
    return Response(body, media_type="application/json", headers=dict(response.headers))


def _asc(telemetry: TelemetryLog, matches, limit: int, offset: int | None, since_us: int,
         until_us: int | None) -> tuple[list[Stored], bool, int]:
    events = telemetry.events
    start = telemetry.index_of(offset) if offset is not None else telemetry.first_index_at(since_us)
    page: list[Stored] = []
    index = start
    end = min(len(events), start + SCAN_MAX)
    while index < end and len(page) < limit:
        stored = events[index]
        if until_us is not None and stored[1] >= until_us:
            return page, False, 0
        if matches(stored):
            page.append(stored)
        index += 1
    more = index < len(events) and (until_us is None or events[index][1] < until_us)
    next_seq = events[index][0] if index < len(events) else telemetry.seq + 1
    return page, more, next_seq if more else 0


def _desc(telemetry: TelemetryLog, matches, limit: int, offset: int | None, since_us: int,
          until_us: int | None) -> tuple[list[Stored], bool, int]:
    events = telemetry.events
    if offset is not None:
        index = telemetry.index_of(offset) - 1
    elif until_us is not None:
        index = telemetry.first_index_at(until_us) - 1
    else:
        index = len(events) - 1
    page: list[Stored] = []
    stop = max(index - SCAN_MAX, -1)
    while index > stop and len(page) < limit:
        if matches(events[index]):
            page.append(events[index])
        index -= 1
    more = index >= 0
    return page, more, events[index + 1][0] if more else 0


@stream_router.get(
    "/browsers/{id_or_name}/telemetry/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **errors(400)},
)
async def telemetry_stream(
    request: Request,
    session: AnySession,
    replay: str | None = None,
    type: Annotated[list[str] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    telemetry = manager(request).log_of(session)
    if last_event_id is not None and last_event_id.strip():
        try:
            after = int(last_event_id)
        except ValueError:
            raise bad_request(f"expected an event's seq, got {last_event_id!r}", field="Last-Event-ID") from None
        if after < 0:
            raise bad_request("expected a seq of 0 or more", field="Last-Event-ID")
    elif replay == "all":
        after = 0
    else:
        after = telemetry.seq
    return sse_response(_frames(session, telemetry, after, _types(type)))


async def _frames(session: Session, telemetry: TelemetryLog, after: int,
                  types: frozenset[str]) -> AsyncIterator[bytes]:
    if after > 0:
        yield b"id: %d\n\n" % after  # where this stream starts: a reconnect before any event resumes here
    while True:
        batch = telemetry.after(after)
        if batch:
            parts: list[bytes] = []
            skipped = False
            for seq, _ts, _category, type_, line in batch:
                if types and type_ not in types:
                    skipped = True
                    continue
                skipped = False
                parts.append(b"id: %d\ndata: %s\n\n" % (seq, line))
            after = batch[-1][0]
            if skipped:
                parts.append(b"id: %d\n\n" % after)
            yield b"".join(parts)
            continue
        if telemetry.closed or not session.active:
            return
        await telemetry.wait(after, STREAM_WAIT_SECONDS)

