"""`/browsers/{id_or_name}/logs/...`: the log stream (SSE) and, as a bbrowse extension, the supervisor names.

The stream's file is resolved and opened before the response starts, so a missing parameter is a
400 naming it and an unknown path or supervisor name is a 404, never an error inside the stream.
While the stream is open the session counts as in use; when the client goes away the follower is
cancelled and its file closed.

With `--kernel-compat`, `source=supervisor` behaves as in Kernel's VM, which does not implement it: one
event saying `logs source not available`, then the stream ends (supervised programs log to files there).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import StreamingResponse

from bbrowse.service import files, supervisor
from bbrowse.service.logs import LogFollower, encode_log_events, utc_timestamp
from bbrowse.service.openapi import errors
from bbrowse.service.sessions import Session
from bbrowse.service.sse import sse_response
from bbrowse.service.state import ActiveSession, service_state
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire import LOGS_SOURCE_NOT_AVAILABLE, LogSource

router = vm_served(APIRouter(tags=["logs"], responses=errors(404, 410)))

#: Upper bound of the `tail` extension (it is streamed, but a bound keeps a typo from scanning forever).
TAIL_MAX = 1_000_000


async def _events(session: Session, follower: LogFollower) -> AsyncIterator[bytes]:
    with session.in_use():
        async for lines in follower.batches():
            yield encode_log_events(lines, utc_timestamp())


@router.get(
    "/browsers/{id_or_name}/logs/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **errors(400, 403)},
)
async def stream_logs(
    request: Request,
    session: ActiveSession,
    source: LogSource,
    path: Annotated[
        str | None,
        Query(
            description="Absolute path of the file; required when source=path.", json_schema_extra={"pattern": "^/.*"}
        ),
    ] = None,
    supervisor_process: Annotated[
        str | None, Query(description="Supervised program name; required when source=supervisor.")
    ] = None,
    follow: Annotated[bool, Query(description="true: only lines appended from now on; false: existing lines.")] = True,
    tail: Annotated[
        int, Query(ge=0, le=TAIL_MAX, description="bbrowse extension: send the last N existing lines first.")
    ] = 0,
) -> StreamingResponse:
    """SSE of LogEvent, one event per line; see `bbrowse.service.logs` for truncation, rotation, partial lines.

    `follow=false` sends the existing lines (the last `tail` ones if given) and ends; `follow=true`
    starts at the end (after the last `tail` lines if given) and streams lines as they are appended.
    """
    if source is LogSource.SUPERVISOR and service_state(request).config.kernel_compat:
        return sse_response(_source_not_available())
    if source is LogSource.PATH:
        if not path:
            raise files.field_error("path", "required when source=path")
        log_path = files.require_absolute(path)
        files.inside(session)  # a path of the session's sandbox
    else:
        if not supervisor_process:
            raise files.field_error("supervisor_process", "required when source=supervisor")
        service_log = service_state(request).config.service_log
        log_path = str(supervisor.supervisor_log_path(session, service_log, supervisor_process))
    file, st = await files.run_blocking(files.open_regular_file, log_path)
    follower = LogFollower(log_path, file, st.st_size, follow=follow, tail=tail, alive=lambda: session.active)
    return sse_response(_events(session, follower))


async def _source_not_available() -> AsyncIterator[bytes]:
    yield encode_log_events([LOGS_SOURCE_NOT_AVAILABLE], utc_timestamp())


@router.get("/browsers/{id_or_name}/logs/supervisors", response_model=list[str])
async def list_supervisors(session: ActiveSession) -> list[str]:
    """bbrowse extension: the names `source=supervisor` accepts for this session (`bbrowse` always first)."""
    return supervisor.supervisor_names(session)
