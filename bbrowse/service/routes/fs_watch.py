"""`/browsers/{id_or_name}/fs/watch`: start a directory watch, stream its events (SSE), stop it.

Served by the session's VM endpoint too. `POST fs/watch` answers 201 `{watch_id}`; `GET
fs/watch/{watch_id}/events` is an SSE stream of `FileSystemEvent`s (`data: {"type":"CREATE",...}`)
that ends when the watch does; `DELETE fs/watch/{watch_id}` stops it (204). See `fs_watch`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from starlette.responses import StreamingResponse

from bbrowse.service.files import require_absolute
from bbrowse.service.fs_watch import WatchManager
from bbrowse.service.openapi import errors
from bbrowse.service.sse import encode_event, sse_response
from bbrowse.service.state import ActiveSession, State
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire.fs import FileSystemEvent, WatchStartRequest, WatchStartResult

PREFIX = "/browsers/{id_or_name}/fs/watch"

#: Unknown or ended session, unknown watch (404/410).
router = vm_served(APIRouter(tags=["fs"], responses=errors(404, 410)))


async def _manager(state: State) -> WatchManager:
    return state.watches


Manager = Annotated[WatchManager, Depends(_manager)]


@router.post(PREFIX, status_code=201, response_model=WatchStartResult, responses=errors(400, 403, 409))
async def start_watch(session: ActiveSession, manager: Manager, body: WatchStartRequest) -> WatchStartResult:
    """Watch a directory (and, with `recursive`, everything below it) for changes (in the session's sandbox)."""
    watch = manager.start(session, require_absolute(body.path), body.recursive)
    return WatchStartResult(watch_id=watch.watch_id)


@router.get(
    PREFIX + "/{watch_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {"schema": FileSystemEvent.model_json_schema()}},
                     "description": "SSE of filesystem events; ends when the watch ends"}},
)
async def watch_events(
    session: ActiveSession, manager: Manager, watch_id: str, state: State
) -> StreamingResponse:
    """The watch's events as they happen (those since it started first). A new stream of the same
    watch takes over from the previous one, which ends. In --kernel-compat, headers come with the first event."""
    watch = manager.get(session, watch_id)

    async def events() -> AsyncIterator[bytes]:
        with session.in_use():
            async for event in watch.stream():
                yield encode_event(event)

    return sse_response(events(), kernel_vm=state.config.kernel_compat)


@router.delete(PREFIX + "/{watch_id}", status_code=204, response_class=Response,
               responses={204: {"description": "Stopped; its event stream ends"}})
async def stop_watch(session: ActiveSession, manager: Manager, watch_id: str) -> Response:
    manager.stop(session, watch_id)
    return Response(status_code=204)
