"""`/browsers/{id_or_name}/fs/...`: read_file (streamed), list_files, file_info.

Every check that can fail (relative path, missing file, wrong kind, permission) runs before the
response starts, so errors arrive in the contract's shapes and never in the middle of a body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.responses import StreamingResponse

from bbrowse.service import files
from bbrowse.service.sessions import Session
from bbrowse.service.state import active_session
from bbrowse.wire import FileInfo

router = APIRouter(tags=["fs"])

#: Optional at the FastAPI level only so that a missing `path` is reported by name (the generic validation
#: handler drops a query field called "path" from its details, mistaking it for the location prefix).
PathQuery = Annotated[str | None, Query(description="Absolute path on the instance (must match ^/.*); required.")]


def _required_path(path: str | None) -> str:
    if path is None:
        raise files.field_error("path", "field required")
    return files.require_absolute(path)


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
async def read_file(session: Annotated[Session, Depends(active_session)], path: PathQuery = None) -> StreamingResponse:
    """The file's raw bytes, streamed in chunks with a Content-Length (chunked for size-0 pseudo-files)."""
    path = _required_path(path)
    file, st = await files.run_blocking(files.open_regular_file, path)
    length = st.st_size or None
    headers = {"Content-Length": str(length)} if length is not None else {}
    body = _session_activity(session, files.iter_file_chunks(file, length, path))
    return StreamingResponse(body, media_type="application/octet-stream", headers=headers)


@router.get("/browsers/{id_or_name}/fs/list_files", response_model=list[FileInfo])
async def list_files(session: Annotated[Session, Depends(active_session)], path: PathQuery = None) -> list[FileInfo]:
    """The directory's entries, directories first, then by name; symlinks show their target's kind."""
    return await files.run_blocking(files.list_directory, _required_path(path))


@router.get("/browsers/{id_or_name}/fs/file_info", response_model=FileInfo)
async def file_info(session: Annotated[Session, Depends(active_session)], path: PathQuery = None) -> FileInfo:
    return await files.run_blocking(files.file_info, _required_path(path))
