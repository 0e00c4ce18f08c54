"""The session's filesystem: read a file as a stream of chunks, list a directory, stat a path."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from bbrowse.client.decode import model, model_list
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, iter_body, segment
from bbrowse.wire import FileInfo

CHUNK_BYTES = 64 * 1024


class Files:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def read_file(self, id_or_name: str, path: str, *, chunk_size: int | None = CHUNK_BYTES) -> Stream[bytes]:
        """The file's bytes in chunks as they arrive; the whole file is never held in memory.

        Errors (404 no such file, 400 a directory or relative path) are raised on `async with` or the first iteration.
        """
        return Stream(self._read(id_or_name, path, chunk_size))

    async def _read(self, id_or_name: str, path: str, chunk_size: int | None) -> AsyncGenerator[bytes, None]:
        route = f"/browsers/{segment(id_or_name)}/fs/read_file"
        async with self._t.open_stream("GET", route, params={"path": path}) as response:
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
        response = await self._t.request(
            "GET", f"/browsers/{segment(id_or_name)}/fs/list_files", params={"path": path}, idempotent=True,
        )
        return model_list(FileInfo, response, f"list_files {path}")

    async def file_info(self, id_or_name: str, path: str) -> FileInfo:
        response = await self._t.request(
            "GET", f"/browsers/{segment(id_or_name)}/fs/file_info", params={"path": path}, idempotent=True,
        )
        return model(FileInfo, response, f"file_info {path}")
