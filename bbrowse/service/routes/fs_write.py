"""The write side of `/browsers/{id_or_name}/fs/...`: write_file, upload, upload_zip, create_directory,
delete_file, delete_directory, move, set_file_permissions, and download_dir_zip.

Served by the session's VM endpoint too. Statuses are the cloud's: 201 for what creates (write_file,
upload, upload_zip, create_directory), 200 for the rest, all with an empty body. Request bodies are
streamed in and archives streamed out (see `fs_write`, `fs_multipart`, `fs_zip`): a 1 GB upload or zip
never sits in memory. Every check that can fail runs before a file is written or a download starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse

from bbrowse.service import fs_write, fs_zip
from bbrowse.service.errors import bad_request
from bbrowse.service.files import field_error, inside, on_host, require_absolute, run_blocking
from bbrowse.service.fs_multipart import MultipartError, MultipartReader, boundary_of
from bbrowse.service.openapi import OpenApiResponses, errors
from bbrowse.service.state import ActiveSession, State, service_state
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire.fs import (
    OCTAL_MODE_PATTERN,
    UPLOAD_DEST_FIELD,
    UPLOAD_FILE_FIELD,
    ZIP_DEST_FIELD,
    ZIP_FILE_FIELD,
    CreateDirectoryRequest,
    DeletePathRequest,
    MovePathRequest,
    SetFilePermissionsRequest,
)

PREFIX = "/browsers/{id_or_name}/fs"

#: Unknown or ended session (404/410); bad input (400); missing (404); not allowed (403); in the way (409).
router = vm_served(APIRouter(tags=["fs"], responses=errors(400, 403, 404, 409, 410)))

CREATED: OpenApiResponses = {201: {"description": "Done (empty body)", "content": None}}
DONE: OpenApiResponses = {200: {"description": "Done (empty body)", "content": None}}
PathQuery = Annotated[str, Query(description="Absolute path on the instance.", json_schema_extra={"pattern": "^/.*"})]


async def _spool(state: State) -> Path:
    return state.upload_spool


def _done(status: int) -> Response:
    return Response(status_code=status)


async def _body(request: Request) -> AsyncIterator[bytes]:
    """The request body as it arrives; a client that hangs up mid-way ends the request quietly."""
    try:
        async for chunk in request.stream():
            if chunk:
                yield chunk
    except ClientDisconnect:
        raise bad_request("the client closed the connection before the whole body arrived") from None


def _reader(request: Request) -> MultipartReader:
    try:
        boundary = boundary_of(request.headers.get("content-type"))
    except MultipartError as exc:
        raise bad_request(str(exc), "body") from None
    return MultipartReader(_body(request), boundary)


# write_file, upload, upload_zip ------------------------------------------------------------------

#: Not required: an empty body is an empty file (`write_file` of b"" is a real request, as with `: > file`).
RAW_BODY = {"requestBody": {"required": False, "content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}


@router.put(
    PREFIX + "/write_file", status_code=201, response_class=Response, responses=CREATED, openapi_extra=RAW_BODY,
)
async def write_file(
    session: ActiveSession,
    request: Request,
    path: PathQuery,
    mode: Annotated[str | None, Query(description="Octal mode, e.g. 644 (default: 644, or the replaced file's).",
                                      json_schema_extra={"pattern": OCTAL_MODE_PATTERN})] = None,
) -> Response:
    """Create or replace a file with the request body (raw bytes), making its parent directories."""
    inside(session)  # paths are the sandbox's
    path = require_absolute(path)
    file_mode = fs_write.parse_mode(mode)
    with session.in_use():
        await fs_write.write_file(path, file_mode, _body(request))
    return _done(201)


UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {"files": {"type": "array", "items": {
        "type": "object", "required": ["file", "dest_path"],
        "properties": {"file": {"type": "string", "format": "binary"},
                       "dest_path": {"type": "string", "pattern": "^/.*"}}}}},
    "description": "Fields `files[<i>][file]` (the bytes) and `files[<i>][dest_path]` (absolute path) per file.",
}}}}}

_UPLOAD_NAME = re.compile(r"^files(?:\[(\d+)\]|\.(\d+))?(?:\[(\w+)\]|\.(\w+))$")


def _upload_field(name: str) -> tuple[int, str]:
    """`files[0][file]`, `files[0].file`, `files.0.file`, or plain `file` / `dest_path`: (index, field)."""
    if name in ("file", "dest_path"):
        return 0, name
    match = _UPLOAD_NAME.match(name)
    if match:
        index = int(match.group(1) or match.group(2) or 0)
        kind = match.group(3) or match.group(4)
        if kind in ("file", "dest_path") and index < 100_000:
            return index, kind
    raise field_error(name, "unknown form field (expected files[<i>][file] and files[<i>][dest_path])")


@router.post(PREFIX + "/upload", status_code=201, response_class=Response, responses=CREATED,
             openapi_extra=UPLOAD_BODY)
async def upload(session: ActiveSession, request: Request) -> Response:
    """Write one or more files from a multipart form; all of them are put in place, or none.

    Each file is streamed into a temporary file beside its destination as it arrives; only when
    the whole form has been read and every file has its `dest_path` are they moved into place.
    """
    inside(session)  # paths are the sandbox's
    reader = _reader(request)
    dests: dict[int, str] = {}
    staged: dict[int, fs_write.StagedFile] = {}
    spooled: dict[int, fs_write.StagedFile] = {}  # a file whose dest_path had not arrived yet
    committed = False
    try:
        with session.in_use():
            while (part := await reader.next_part()) is not None:
                index, kind = _upload_field(part.name)
                field = (UPLOAD_DEST_FIELD if kind == "dest_path" else UPLOAD_FILE_FIELD).format(index=index)
                if kind == "dest_path":
                    dest = require_absolute((await reader.text(field)).strip(), field)
                    if index in dests:
                        raise field_error(field, "given twice")
                    dests[index] = dest
                    continue
                if index in staged or index in spooled:
                    raise field_error(field, "given twice")
                if index in dests:
                    target = await fs_write.stage(dests[index], None, UPLOAD_DEST_FIELD.format(index=index))
                    staged[index] = target
                else:
                    with on_host():  # the spool is the service's, not the session's
                        target = await fs_write.stage(_spool_path(request), None, field)
                    spooled[index] = target
                await fs_write.write_chunks(target, reader.body())
            for index in sorted(set(dests) | set(staged) | set(spooled)):
                if index not in dests:
                    raise field_error(UPLOAD_DEST_FIELD.format(index=index), "missing: where should this file go?")
                if index not in staged and index not in spooled:
                    raise field_error(UPLOAD_FILE_FIELD.format(index=index), "missing: the file's bytes were not sent")
            if not dests:
                raise field_error("files", "no file was given")
            for index, spool_file in list(spooled.items()):
                staged[index] = await _respool(spool_file, dests[index], UPLOAD_DEST_FIELD.format(index=index))
                del spooled[index]
            for index in sorted(staged):
                await run_blocking(staged[index].commit)
            committed = True
    except MultipartError as exc:
        raise bad_request(str(exc), "body") from None
    finally:
        if not committed:
            for target in [*staged.values(), *spooled.values()]:
                with contextlib.suppress(Exception):
                    await run_blocking(target.discard)
    return _done(201)


def _spool_path(request: Request) -> str:
    spool = service_state(request).upload_spool
    return str(spool / f"upload-{secrets.token_hex(8)}")


async def _respool(spooled: fs_write.StagedFile, dest: str, field: str) -> fs_write.StagedFile:
    """Move a file received before its dest_path next to its destination (copying across filesystems)."""
    target = await fs_write.stage(dest, None, field)
    try:
        with on_host():
            await run_blocking(os.close, spooled.fd)
            spooled.fd = -1
            source = await run_blocking(os.open, spooled.temp, os.O_RDONLY | os.O_CLOEXEC)
        # Copied through descriptors: the spool is on the host, the destination maybe in a sandbox.
        await run_blocking(_replace_or_copy, source, spooled.temp, target)
    except BaseException:
        await run_blocking(target.discard)
        raise
    finally:
        with on_host():
            await run_blocking(spooled.discard)
    return target


def _replace_or_copy(source_fd: int, source: str, target: fs_write.StagedFile) -> None:
    """Move the spooled file into place (a rename when both are on the host's filesystem), else copy it."""
    with open(source_fd, "rb") as src:
        with contextlib.suppress(OSError):
            if os.stat(source).st_ino == os.fstat(src.fileno()).st_ino:  # the spool is seen from here
                os.replace(source, target.temp)
                os.close(target.fd)
                target.fd = os.open(target.temp, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
                return
        while chunk := src.read(fs_write.FLUSH_BYTES):
            target.write(chunk)


ZIP_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": [ZIP_FILE_FIELD, ZIP_DEST_FIELD],
    "properties": {ZIP_FILE_FIELD: {"type": "string", "format": "binary"},
                   ZIP_DEST_FIELD: {"type": "string", "pattern": "^/.*"}}}}}}}


@router.post(PREFIX + "/upload_zip", status_code=201, response_class=Response, responses=CREATED,
             openapi_extra=ZIP_BODY)
async def upload_zip(session: ActiveSession, request: Request, spool: Annotated[Path, Depends(_spool)]) -> Response:
    """Extract a zip archive into `dest_path` (made if missing). The archive is checked whole first:
    an entry escaping the destination (`../`, an absolute name, a link leading out) refuses it all."""
    inside(session)  # paths are the sandbox's
    reader = _reader(request)
    dest: str | None = None
    zip_path: str | None = None
    try:
        with session.in_use():
            while (part := await reader.next_part()) is not None:
                if part.name == ZIP_DEST_FIELD:
                    dest = require_absolute((await reader.text(ZIP_DEST_FIELD)).strip(), ZIP_DEST_FIELD)
                elif part.name == ZIP_FILE_FIELD:
                    if zip_path is not None:
                        raise field_error(ZIP_FILE_FIELD, "given twice")
                    zip_path = str(spool / f"upload-{secrets.token_hex(8)}.zip")
                    with on_host():  # the spool is the service's, not the session's
                        spooled = await fs_write.stage(zip_path, 0o600, ZIP_FILE_FIELD)
                        try:
                            await fs_write.write_chunks(spooled, reader.body())
                            await run_blocking(spooled.commit)
                        except BaseException:
                            await run_blocking(spooled.discard)
                            raise
                else:
                    raise field_error(part.name, f"unknown form field (expected {ZIP_FILE_FIELD} and {ZIP_DEST_FIELD})")
            if dest is None:
                raise field_error(ZIP_DEST_FIELD, "missing: where should the archive be extracted?")
            if zip_path is None:
                raise field_error(ZIP_FILE_FIELD, "missing: the archive was not sent")
            with on_host():  # opened on the host, extracted where the session's files are
                archive = await run_blocking(open, zip_path, "rb")
            with archive:
                await run_blocking(fs_zip.extract_zip, archive, dest)
    except MultipartError as exc:
        raise bad_request(str(exc), "body") from None
    finally:
        if zip_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(zip_path)
    return _done(201)


# directories, deletes, moves, permissions ------------------------------------------------------


@router.put(PREFIX + "/create_directory", status_code=201, response_class=Response, responses=CREATED)
async def create_directory(session: ActiveSession, body: CreateDirectoryRequest) -> Response:
    """`mkdir -p` with the mode asked for (default 755); an existing directory is fine, a file there is 409."""
    inside(session)  # paths are the sandbox's
    path = require_absolute(body.path)
    await run_blocking(fs_write.create_directory, path, fs_write.parse_mode(body.mode))
    return _done(201)


@router.put(PREFIX + "/delete_file", response_class=Response, responses=DONE)
async def delete_file(session: ActiveSession, body: DeletePathRequest) -> Response:
    """Remove a file (a symlink itself, not what it points to); a directory is 400 (use delete_directory)."""
    inside(session)  # paths are the sandbox's
    await run_blocking(fs_write.delete_file, require_absolute(body.path))
    return _done(200)


@router.put(PREFIX + "/delete_directory", response_class=Response, responses={**DONE, **errors(500)})
async def delete_directory(session: ActiveSession, body: DeletePathRequest) -> Response:
    """Remove a directory and everything in it."""
    inside(session)  # paths are the sandbox's
    await run_blocking(fs_write.delete_directory, require_absolute(body.path))
    return _done(200)


@router.put(PREFIX + "/move", response_class=Response, responses=DONE)
async def move(session: ActiveSession, body: MovePathRequest) -> Response:
    """Rename or move a file or directory; an existing `dest_path` is 409 unless `overwrite` is true."""
    inside(session)  # paths are the sandbox's
    src = require_absolute(body.src_path, "src_path")
    dest = require_absolute(body.dest_path, "dest_path")
    await run_blocking(fs_write.move, src, dest, body.overwrite)
    return _done(200)


@router.put(PREFIX + "/set_file_permissions", response_class=Response, responses=DONE)
async def set_file_permissions(session: ActiveSession, body: SetFilePermissionsRequest) -> Response:
    """chmod to `mode` (octal), and chown to `owner` / `group` (names or ids) when given."""
    inside(session)  # paths are the sandbox's
    path = require_absolute(body.path)
    mode = fs_write.parse_mode(body.mode)
    assert mode is not None
    await run_blocking(fs_write.set_permissions, path, mode, body.owner, body.group)
    return _done(200)


# download_dir_zip -------------------------------------------------------------------------------


@router.get(
    PREFIX + "/download_dir_zip",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}, "description": "A zip of the directory, streamed"}},
)
async def download_dir_zip(session: ActiveSession, path: PathQuery) -> StreamingResponse:
    """The directory (recursively, links kept as links) as a zip archive, streamed as it is made."""
    inside(session)  # paths are the sandbox's
    path = require_absolute(path)
    items = await run_blocking(fs_zip.collect, path)
    name = os.path.basename(path) or "root"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

    async def body() -> AsyncIterator[bytes]:
        with session.in_use():
            async for chunk in fs_zip.zip_stream(items):
                yield chunk

    return StreamingResponse(body(), media_type="application/zip",
                             headers={"Content-Disposition": f'attachment; filename="{safe}.zip"'})

