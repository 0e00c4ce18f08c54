"""`/browsers/{id_or_name}/logs/...`: the log stream (SSE) and, as a bbrowse extension, the supervisor names.

The stream's file is resolved and opened before the response starts, so a missing parameter is a
400 naming it and an unknown path or supervisor name is a 404, never an error inside the stream.
While the stream is open the session counts as in use; when the client goes away the follower is
cancelled and its file closed.

With `--kernel-compat` the stream is Kernel's VM's (`logs.go`): `source=supervisor`, or a `path` that is
absent or relative, is one event `logs source not available` and a file it cannot open one event
`failed to open log path`, then the stream ends (no 400/404); otherwise the file is polled every 50 ms
until the client leaves, `follow=false` included (from the start instead of the end); a line is sent
only once its newline has come (a partial last line never is) and empty lines are skipped.
"""

from __future__ import annotations

import asyncio
import os
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
    if service_state(request).config.kernel_compat:
        if source is LogSource.PATH and path and path.startswith("/"):
            files.inside(session)  # a path of the session's sandbox
            return sse_response(_kernel_vm_lines(path, follow), kernel_vm=True)
        return sse_response(_one_event(LOGS_SOURCE_NOT_AVAILABLE), kernel_vm=True)
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


async def _one_event(message: str) -> AsyncIterator[bytes]:
    yield encode_log_events([message], utc_timestamp())


#: Kernel's VM polls the file this often (`logs.go`'s ticker).
KERNEL_POLL_SECONDS = 0.05
KERNEL_READ_BYTES = 16 * 1024


async def _kernel_vm_lines(path: str, follow: bool) -> AsyncIterator[bytes]:
    """`logs.go`'s loop: complete non-empty lines, forever (the client leaving ends it)."""
    try:
        fd = await files.run_blocking(os.open, path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        yield encode_log_events([KERNEL_FAILED_TO_OPEN], utc_timestamp())
        return
    try:
        offset = os.fstat(fd).st_size if follow else 0
        remainder = b""
        while True:
            await asyncio.sleep(KERNEL_POLL_SECONDS)
            size = os.fstat(fd).st_size
            offset = min(offset, size)
            lines: list[str] = []
            while offset < size:
                data = await files.run_blocking(os.pread, fd, min(KERNEL_READ_BYTES, size - offset), offset)
                if not data:
                    break
                offset += len(data)
                *complete, remainder = (remainder + data).split(b"\n")
                lines += [line.decode(errors="replace") for line in complete if line]
            if lines:
                yield encode_log_events(lines, utc_timestamp())
    finally:
        os.close(fd)


#: Kernel's VM's one event for a `path` it cannot open (`logs.go`).
KERNEL_FAILED_TO_OPEN = "failed to open log path"


@router.get("/browsers/{id_or_name}/logs/supervisors", response_model=list[str])
async def list_supervisors(session: ActiveSession) -> list[str]:
    """bbrowse extension: the names `source=supervisor` accepts for this session (`bbrowse` always first)."""
    return supervisor.supervisor_names(session)
