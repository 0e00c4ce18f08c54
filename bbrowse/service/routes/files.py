"""`/browsers/{id_or_name}/fs/...`: read_file (streamed), list_files, file_info.

Every check that can fail (relative path, missing file, wrong kind, permission) runs before the
response starts, so errors arrive in the contract's shapes and never in the middle of a body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import StreamingResponse

from bbrowse.service import files
from bbrowse.service.openapi import errors
from bbrowse.service.sessions import Session
from bbrowse.service.state import ActiveSession, State
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire import FileInfo

#: Unknown or ended session (404/410), missing file (404), unreadable (403), wrong kind or bad path (400).
router = vm_served(APIRouter(tags=["fs"], responses=errors(400, 403, 404, 410)))

#: Required; the pattern is documented, and checked by `files.require_absolute` for a message that says why.
PathQuery = Annotated[
    str, Query(description="Absolute path on the instance.", json_schema_extra={"pattern": "^/.*"})
]


async def _session_activity(session: Session, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """A long download is activity: the session stays open while it runs."""
    with session.in_use():
        async for chunk in chunks:
            yield chunk


@router.get(
    "/browsers/{id_or_name}/fs/read_file",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def read_file(session: ActiveSession, path: PathQuery) -> StreamingResponse:
    """The file's raw bytes, streamed in chunks with a Content-Length (chunked for size-0 pseudo-files)."""
    files.inside(session)  # paths are the sandbox's
    path = files.require_absolute(path)
    file, st = await files.run_blocking(files.open_regular_file, path)
    length = st.st_size or None
    headers = {"Content-Length": str(length)} if length is not None else {}
    body = _session_activity(session, files.iter_file_chunks(file, length, path))
    return StreamingResponse(body, media_type="application/octet-stream", headers=headers)


@router.get("/browsers/{id_or_name}/fs/list_files", response_model=list[FileInfo] | None)
async def list_files(session: ActiveSession, path: PathQuery, state: State) -> list[FileInfo] | None:
    """The directory's entries, directories first, then by name; symlinks show their target's kind.

    In --kernel-compat as Kernel's VM lists them: by name, symlinks lstat'd, Go modes, null when empty.
    """
    files.inside(session)  # paths are the sandbox's
    if state.config.kernel_compat:
        return await files.run_blocking(files.list_directory_as_kernel_vm, files.require_absolute(path))
    return await files.run_blocking(files.list_directory, files.require_absolute(path))


@router.get("/browsers/{id_or_name}/fs/file_info", response_model=FileInfo)
async def file_info(session: ActiveSession, path: PathQuery, state: State) -> FileInfo:
    """In --kernel-compat the mode is Go's `FileMode.String()`, as Kernel's VM writes it."""
    files.inside(session)  # paths are the sandbox's
    return await files.run_blocking(files.file_info, files.require_absolute(path), state.config.kernel_compat)
