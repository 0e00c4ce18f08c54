"""The session's filesystem: read, list and stat; write, upload, zip in and out, mkdir, delete, move,
chmod; and watch a directory for changes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bbrowse.client.bodies import body, given
from bbrowse.client.decode import model, model_list, validate
from bbrowse.client.errors import ClientError
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, iter_body, segment
from bbrowse.wire import FileInfo
from bbrowse.wire.fs import (
    UPLOAD_DEST_FIELD,
    UPLOAD_FILE_FIELD,
    ZIP_DEST_FIELD,
    ZIP_FILE_FIELD,
    CreateDirectoryRequest,
    DeletePathRequest,
    FileSystemEvent,
    MovePathRequest,
    SetFilePermissionsRequest,
    WatchStartRequest,
    WatchStartResult,
)

CHUNK_BYTES = 64 * 1024


class Files:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def read_file(self, id_or_name: str, path: str, *, chunk_size: int | None = CHUNK_BYTES,
                  receive_buffer: int | None = None) -> Stream[bytes]:
        """The file's bytes in chunks as they arrive; the whole file is never held in memory.

        The contract has no byte ranges: the service sends the whole file as fast as the link takes it. To
        read only the start, close the stream early and pass a small `receive_buffer` (bytes): the read then
        has a connection of its own whose window bounds what is sent past the close.
        Errors (404 no such file, 400 a directory or relative path) are raised on `async with` or the first iteration.
        """
        return Stream(self._read(id_or_name, path, chunk_size, receive_buffer))

    async def _read(self, id_or_name: str, path: str, chunk_size: int | None,
                    receive_buffer: int | None) -> AsyncGenerator[bytes, None]:
        route = f"/browsers/{segment(id_or_name)}/fs/read_file"
        async with self._t.open_stream("GET", route, params={"path": path},
                                       receive_buffer=receive_buffer) as response:
            yield OPENED
            async for chunk in iter_body(response, f"read_file {path}", chunk_size):
                yield chunk

    async def read_bytes(self, id_or_name: str, path: str, *, limit: int | None = None) -> bytes:
        """Convenience for small files: the whole content, or a `ValueError` past `limit` bytes."""
        parts, size = [], 0
        async with self.read_file(id_or_name, path) as chunks:
            async for chunk in chunks:
                size += len(chunk)
                if limit is not None and size > limit:
                    raise ValueError(f"{path} is larger than {limit} bytes")
                parts.append(chunk)
        return b"".join(parts)

    async def list_files(self, id_or_name: str, path: str) -> list[FileInfo]:
        """The directory's entries. Kernel's VM answers `null` for an empty directory, lstats symlinks
        (`is_dir` false, mode `L...`) and writes modes as Go does (`dtrwxrwxrwx`): see `modes.py`."""
        response = await self._t.request(
            "GET", f"/browsers/{segment(id_or_name)}/fs/list_files", params={"path": path}, idempotent=True,
        )
        if response.content.strip() == b"null":
            return []
        return model_list(FileInfo, response, f"list_files {path}")

    async def file_info(self, id_or_name: str, path: str) -> FileInfo:
        response = await self._t.request(
            "GET", f"/browsers/{segment(id_or_name)}/fs/file_info", params={"path": path}, idempotent=True,
        )
        return model(FileInfo, response, f"file_info {path}")

    # the write side (the official SDK's `browsers.fs.*`) --------------------------------------
    #
    # Uploads stream from local files (or any async iterable of bytes) and downloads stream to the
    # caller: a 1 GB transfer never sits in memory. `progress(done_bytes)` is called as bytes go by.
    # Errors: `BadRequest` (relative path, bad mode, unsafe zip entry; `details` names the field),
    # `NotFound`, `Conflict` (something in the way, e.g. `move` onto an existing path), `Forbidden`.

    def _route(self, id_or_name: str, op: str) -> str:
        return f"/browsers/{segment(id_or_name)}/fs/{op}"

    async def write_file(
        self,
        id_or_name: str,
        path: str,
        content: bytes | str | os.PathLike[str] | AsyncIterable[bytes],
        *,
        mode: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Create or replace the file at `path` (parents are made). `content` is the bytes themselves, a
        local file's path (`str` or `Path`), or an async iterable of chunks. `mode` is octal ("644")."""
        params = {"path": path}
        if mode is not None:
            params["mode"] = mode
        source, length = _source(content, progress)
        headers = {"Content-Type": "application/octet-stream"}
        if length is not None:
            headers["Content-Length"] = str(length)
        await self._t.request("PUT", self._route(id_or_name, "write_file"), params=params, content=source,
                              headers=headers, idempotent=isinstance(source, bytes), ok=(200, 201),
                              timeout=self._t.stream_timeout)

    async def upload(
        self,
        id_or_name: str,
        files: Sequence[tuple[bytes | str | os.PathLike[str], str]],
        *,
        progress: Progress | None = None,
    ) -> None:
        """Write several files in one request: `(content, dest_path)` pairs, content as for `write_file`.

        All of them are put in place, or (on any error) none."""
        parts: list[_FormPart] = []
        for index, (_content, dest) in enumerate(files):
            parts.append(_FormPart(UPLOAD_DEST_FIELD.format(index=index), None, dest.encode()))
        shared = _Counter(progress)
        for index, (content, _dest) in enumerate(files):
            parts.append(_FormPart(UPLOAD_FILE_FIELD.format(index=index), _filename(content, index), content, shared))
        await self._multipart(id_or_name, "upload", parts)

    async def upload_zip(
        self,
        id_or_name: str,
        archive: bytes | str | os.PathLike[str],
        dest_path: str,
        *,
        progress: Progress | None = None,
    ) -> None:
        """Extract a zip archive (bytes or a local .zip) into `dest_path`, made if missing. An archive with
        an entry escaping the destination is refused whole (`BadRequest`), nothing extracted."""
        parts = [_FormPart(ZIP_DEST_FIELD, None, dest_path.encode()),
                 _FormPart(ZIP_FILE_FIELD, _filename(archive, 0, ".zip"), archive, _Counter(progress))]
        await self._multipart(id_or_name, "upload_zip", parts)

    async def _multipart(self, id_or_name: str, op: str, parts: list[_FormPart]) -> None:
        boundary = f"bbrowse-{secrets.token_hex(12)}"
        length = _form_length(parts, boundary)
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(length)}
        await self._t.request("POST", self._route(id_or_name, op), content=_form_body(parts, boundary),
                              headers=headers, idempotent=False, ok=(200, 201), timeout=self._t.stream_timeout)

    async def create_directory(self, id_or_name: str, path: str, *, mode: str | None = None) -> None:
        """`mkdir -p path` (default mode 755); an existing directory is fine, a file in the way is `Conflict`."""
        request = CreateDirectoryRequest.model_construct(path=path, mode=mode)
        await self._t.request("PUT", self._route(id_or_name, "create_directory"), json=body(request),
                              idempotent=True, ok=(200, 201))

    async def delete_file(self, id_or_name: str, path: str) -> None:
        """Remove a file (a symlink itself); a directory is `BadRequest` (use `delete_directory`)."""
        request = DeletePathRequest.model_construct(path=path)
        await self._t.request("PUT", self._route(id_or_name, "delete_file"), json=body(request), idempotent=False)

    async def delete_directory(self, id_or_name: str, path: str) -> None:
        """Remove a directory and everything in it."""
        request = DeletePathRequest.model_construct(path=path)
        await self._t.request("PUT", self._route(id_or_name, "delete_directory"), json=body(request),
                              idempotent=False, timeout=self._t.stream_timeout)

    async def move(self, id_or_name: str, src_path: str, dest_path: str, *, overwrite: bool = False) -> None:
        """Rename or move; an existing `dest_path` is `Conflict` unless `overwrite` (a bbrowse serve extension,
        sent only when true)."""
        request = given(MovePathRequest, src_path=src_path, dest_path=dest_path, overwrite=overwrite or None)
        await self._t.request("PUT", self._route(id_or_name, "move"), json=body(request), idempotent=False,
                              timeout=self._t.stream_timeout)

    async def set_file_permissions(
        self, id_or_name: str, path: str, mode: str, *, owner: str | None = None, group: str | None = None,
    ) -> None:
        """chmod to the octal `mode` ("755"); chown to `owner` / `group` (names or ids) when given."""
        request = SetFilePermissionsRequest.model_construct(path=path, mode=mode, owner=owner, group=group)
        await self._t.request("PUT", self._route(id_or_name, "set_file_permissions"), json=body(request),
                              idempotent=True)

    def download_dir_zip(self, id_or_name: str, path: str, *, chunk_size: int | None = CHUNK_BYTES) -> Stream[bytes]:
        """A zip of the directory (recursively; symlinks kept as links), in chunks as the service makes it."""
        return Stream(self._zip(id_or_name, path, chunk_size))

    async def _zip(self, id_or_name: str, path: str, chunk_size: int | None) -> AsyncGenerator[bytes, None]:
        async with self._t.open_stream("GET", self._route(id_or_name, "download_dir_zip"),
                                       params={"path": path}) as response:
            yield OPENED
            async for chunk in iter_body(response, f"download_dir_zip {path}", chunk_size):
                yield chunk

    # watches --------------------------------------------------------------------------------

    async def start_watch(self, id_or_name: str, path: str, *, recursive: bool = False) -> str:
        """Start watching a directory; the watch id for `watch_events` and `stop_watch`."""
        response = await self._t.request("POST", self._route(id_or_name, "watch"),
                                         json=body(WatchStartRequest.model_construct(path=path, recursive=recursive)),
                                         idempotent=False, ok=(200, 201))
        return model(WatchStartResult, response, f"watch {path}").watch_id

    def watch_events(self, id_or_name: str, watch_id: str) -> Stream[FileSystemEvent]:
        """The watch's events (CREATE, WRITE, DELETE, RENAME) as they happen, until it is stopped."""
        return Stream(self._watch_events(id_or_name, watch_id))

    async def _watch_events(self, id_or_name: str, watch_id: str) -> AsyncGenerator[FileSystemEvent, None]:
        what = f"watch {watch_id}"
        async with self._t.open_stream("GET", self._route(id_or_name, f"watch/{segment(watch_id)}/events"),
                                       sse=True) as response:
            yield OPENED
            async for payload in iter_sse_json(response, what):
                yield validate(FileSystemEvent, payload, what)

    async def stop_watch(self, id_or_name: str, watch_id: str) -> None:
        await self._t.request("DELETE", self._route(id_or_name, f"watch/{segment(watch_id)}"), idempotent=True,
                              ok=(200, 204))

    def watch(self, id_or_name: str, path: str, *, recursive: bool = False) -> Stream[FileSystemEvent]:
        """Start a watch, stream its events, and stop it when the stream is closed:

            async with client.fs.watch(sid, "/home/me", recursive=True) as events:
                async for event in events: ...
        """
        return Stream(self._watch(id_or_name, path, recursive))

    async def _watch(self, id_or_name: str, path: str, recursive: bool) -> AsyncGenerator[FileSystemEvent, None]:
        watch_id = await self.start_watch(id_or_name, path, recursive=recursive)
        try:
            async with self.watch_events(id_or_name, watch_id) as events:
                yield OPENED
                async for event in events:
                    yield event
        finally:
            with contextlib.suppress(ClientError):
                await asyncio.shield(self.stop_watch(id_or_name, watch_id))


# uploads: sources and the multipart body -------------------------------------------------------

Progress = Callable[[int], None]
#: Bytes read from a local file at once while uploading.
UPLOAD_CHUNK_BYTES = 1024 * 1024


class _Counter:
    """Bytes of file content sent so far, across the parts of one request."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.done = 0

    def add(self, size: int) -> None:
        self.done += size
        if self.progress is not None:
            self.progress(self.done)


def _source(content: bytes | str | os.PathLike[str] | AsyncIterable[bytes],
            progress: Progress | None) -> tuple[bytes | AsyncIterable[bytes], int | None]:
    """A request body for `content` and its length when known."""
    if isinstance(content, bytes | bytearray | memoryview):
        data = bytes(content)
        if progress is not None:
            progress(len(data))
        return data, len(data)
    if isinstance(content, str | os.PathLike):
        path = Path(content)
        return _file_chunks(path, _Counter(progress)), path.stat().st_size
    return _counted(content, _Counter(progress)), None


async def _file_chunks(path: Path, counter: _Counter) -> AsyncIterator[bytes]:
    file = await asyncio.to_thread(open, path, "rb")
    try:
        while chunk := await asyncio.to_thread(file.read, UPLOAD_CHUNK_BYTES):
            counter.add(len(chunk))
            yield chunk
    finally:
        file.close()


async def _counted(chunks: AsyncIterable[bytes], counter: _Counter) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        counter.add(len(chunk))
        yield chunk


@dataclass
class _FormPart:
    name: str
    filename: str | None
    content: bytes | str | os.PathLike[str]
    counter: _Counter | None = None

    def header(self, boundary: str) -> bytes:
        disposition = f'form-data; name="{self.name}"'
        lines = [f"--{boundary}"]
        if self.filename is not None:
            disposition += f'; filename="{_quote(self.filename)}"'
            lines += [f"Content-Disposition: {disposition}", "Content-Type: application/octet-stream"]
        else:
            lines.append(f"Content-Disposition: {disposition}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def size(self) -> int:
        if isinstance(self.content, bytes):
            return len(self.content)
        return Path(self.content).stat().st_size

    async def chunks(self) -> AsyncIterator[bytes]:
        counter = self.counter or _Counter(None)
        if isinstance(self.content, bytes):
            if self.counter is not None:
                counter.add(len(self.content))
            yield self.content
            return
        async for chunk in _file_chunks(Path(self.content), counter):
            yield chunk


def _quote(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', "%22").replace("\r", " ").replace("\n", " ")


def _filename(content: bytes | str | os.PathLike[str], index: int, suffix: str = "") -> str:
    if isinstance(content, bytes):
        return f"file{index}{suffix}"
    return Path(content).name


def _form_length(parts: list[_FormPart], boundary: str) -> int:
    closing = len(f"--{boundary}--\r\n")
    return sum(len(p.header(boundary)) + p.size() + 2 for p in parts) + closing


async def _form_body(parts: list[_FormPart], boundary: str) -> AsyncIterator[bytes]:
    for part in parts:
        yield part.header(boundary)
        async for chunk in part.chunks():
            yield chunk
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()
