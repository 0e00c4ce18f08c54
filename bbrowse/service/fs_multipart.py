"""A streaming `multipart/form-data` reader: parts come out as they arrive, bodies in chunks.

The uploads (`fs/upload`, `fs/upload_zip`) may be gigabytes, so no part is ever held whole: a
part's body is handed on chunk by chunk as the request body arrives, holding back only the few
bytes that could be the start of the next boundary. Only small text fields (`dest_path`) are read
whole, up to a limit.

Any malformed input (no boundary, a part without a name, headers too long, a body that ends
before the closing boundary) raises `MultipartError`, which the routes answer with 400.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.message import Message

#: Bound on one part's header block.
MAX_HEADER_BYTES = 16 * 1024
#: Bound on a text field read whole.
MAX_FIELD_BYTES = 64 * 1024
#: Body bytes handed on at once at most (a big network read is split, so writes stay regular).
MAX_CHUNK_BYTES = 1024 * 1024


class MultipartError(ValueError):
    """The request body is not the multipart form it claims to be."""


def boundary_of(content_type: str | None) -> bytes:
    """The boundary of a `multipart/form-data; boundary=...` content type; MultipartError otherwise."""
    message = Message()
    message["content-type"] = content_type or ""
    if message.get_content_type() != "multipart/form-data":
        raise MultipartError(f"expected a multipart/form-data body, got {content_type or 'no Content-Type'!r}")
    boundary = message.get_param("boundary")
    if not isinstance(boundary, str) or not boundary or len(boundary) > 200:
        raise MultipartError("the multipart/form-data Content-Type has no usable boundary")
    return boundary.encode("latin-1")


@dataclass
class Part:
    name: str
    filename: str | None
    content_type: str | None


def _parse_headers(block: bytes) -> Part:
    message = Message()
    for line in block.decode("utf-8", errors="replace").split("\r\n"):
        if not line:
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise MultipartError(f"malformed part header {line[:80]!r}")
        message[key.strip()] = value.strip()
    disposition = message.get("content-disposition")
    if disposition is None:
        raise MultipartError("a part has no Content-Disposition header")
    probe = Message()
    probe["content-disposition"] = disposition
    name = probe.get_param("name", header="content-disposition")
    filename = probe.get_param("filename", header="content-disposition")
    if not isinstance(name, str) or not name:
        raise MultipartError("a part has no field name")
    return Part(name=name, filename=filename if isinstance(filename, str) else None,
                content_type=message.get("content-type"))


class MultipartReader:
    """Reads parts one at a time: `await next_part()`, then its body with `body()` (or `text()`)."""

    def __init__(self, chunks: AsyncIterator[bytes], boundary: bytes) -> None:
        self._chunks = chunks.__aiter__()
        self._buffer = bytearray()
        self._eof = False
        self._dash_boundary = b"--" + boundary
        self._delimiter = b"\r\n--" + boundary
        self._started = False
        self._finished = False
        self._in_body = False

    async def _fill(self) -> bool:
        if self._eof:
            return False
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def _start(self) -> None:
        """Skip the preamble up to the first boundary line."""
        while True:
            at = self._buffer.find(self._dash_boundary)
            if at >= 0:
                del self._buffer[: at + len(self._dash_boundary)]
                self._started = True
                return
            if len(self._buffer) > MAX_HEADER_BYTES:
                raise MultipartError("no multipart boundary at the start of the body")
            if not await self._fill():
                raise MultipartError("the body holds no multipart boundary")

    async def _after_boundary(self) -> bool:
        """After a boundary: True when a part follows, False for the closing `--`."""
        while len(self._buffer) < 2:
            if not await self._fill():
                raise MultipartError("the body ended right after a boundary")
        if self._buffer[:2] == b"--":
            self._finished = True
            return False
        # Transport padding (spaces, tabs) may precede the line break.
        while True:
            end = self._buffer.find(b"\r\n")
            if end >= 0:
                if self._buffer[:end].strip(b" \t"):
                    raise MultipartError("unexpected bytes after a multipart boundary")
                del self._buffer[: end + 2]
                return True
            if len(self._buffer) > 1024 or not await self._fill():
                raise MultipartError("malformed multipart boundary line")

    async def next_part(self) -> Part | None:
        """The next part's headers (its unread body is skipped first), or None after the last one."""
        if self._in_body:
            async for _ in self.body():
                pass
        if self._finished:
            return None
        if not self._started:
            await self._start()
        if not await self._after_boundary():
            return None
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end >= 0:
                block = bytes(self._buffer[:end])
                del self._buffer[: end + 4]
                break
            if self._buffer.startswith(b"\r\n"):  # a part with no headers at all
                raise MultipartError("a part has no Content-Disposition header")
            if len(self._buffer) > MAX_HEADER_BYTES:
                raise MultipartError(f"a part's headers exceed {MAX_HEADER_BYTES} bytes")
            if not await self._fill():
                raise MultipartError("the body ended inside a part's headers")
        self._in_body = True
        return _parse_headers(block)

    async def body(self) -> AsyncIterator[bytes]:
        """The current part's body in chunks, up to (not including) the next boundary."""
        if not self._in_body:
            return
        keep = len(self._delimiter) - 1
        while True:
            at = self._buffer.find(self._delimiter)
            if at >= 0:
                if at:
                    yield bytes(self._buffer[:at])
                del self._buffer[: at + len(self._delimiter)]
                self._in_body = False
                return
            if len(self._buffer) > keep:
                cut = min(len(self._buffer) - keep, MAX_CHUNK_BYTES)
                yield bytes(self._buffer[:cut])
                del self._buffer[:cut]
                if len(self._buffer) > keep:
                    continue
            if not await self._fill():
                raise MultipartError("the body ended before the closing multipart boundary")

    async def text(self, field: str, limit: int = MAX_FIELD_BYTES) -> str:
        """The current part's body as UTF-8 text, refused past `limit` bytes."""
        data = bytearray()
        async for chunk in self.body():
            data += chunk
            if len(data) > limit:
                raise MultipartError(f"{field}: longer than {limit} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise MultipartError(f"{field}: not UTF-8 text") from None
