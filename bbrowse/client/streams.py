"""`Stream`: what every streaming method returns.

An async iterator that is also an async context manager. Entering the block opens the connection
and checks the status, so an error (404, 401...) is raised at `async with` and, for a followed log,
nothing appended after that point is missed; leaving the block closes the connection at once even
when the loop stops early:

    async with client.logs.stream(sid, path="/var/log/x.log") as events:
        async for event in events:
            ...
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Opened:
    """Yielded once by a stream source when its connection is open and its status was good; with the body's
    length when the response said it (`Stream.content_length`: a download's progress knows its total)."""

    __slots__ = ("content_length",)

    def __init__(self, content_length: int | None = None) -> None:
        self.content_length = content_length


OPENED: Any = Opened()


def opened(content_length: int | None) -> Any:
    """An `Opened` marker with the body's length (typed `Any` as `OPENED` is: sources yield it among their items)."""
    return Opened(content_length)


class Stream(Generic[T]):
    """One streamed response, used as the module's docstring shows.

    Plain `async for` works too: the connection opens on the first iteration and closes when the
    iteration ends or the stream is garbage-collected. A source is an async generator that yields
    `OPENED` once, right after the response headers arrived; the marker never reaches the caller.
    """

    __slots__ = ("_exhausted", "_opened", "_source", "content_length")

    def __init__(self, source: AsyncGenerator[T, None]) -> None:
        self._source = source
        self._opened = False
        self._exhausted = False
        #: The body's length in bytes once open, when the response gave it.
        self.content_length: int | None = None

    async def open(self) -> Stream[T]:
        """Connect now and raise any error status; idempotent."""
        if not self._opened:
            self._opened = True
            try:
                marker = await self._source.__anext__()
            except StopAsyncIteration:
                self._exhausted = True
                return self
            if not isinstance(marker, Opened):
                raise RuntimeError("stream source must yield OPENED first")
            self.content_length = marker.content_length
        return self

    def __aiter__(self) -> Stream[T]:
        return self

    async def __anext__(self) -> T:
        if not self._opened:
            await self.open()
        if self._exhausted:
            raise StopAsyncIteration
        return await self._source.__anext__()

    async def aclose(self) -> None:
        await self._source.aclose()

    async def __aenter__(self) -> Stream[T]:
        try:
            return await self.open()
        except BaseException:
            await self.aclose()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
