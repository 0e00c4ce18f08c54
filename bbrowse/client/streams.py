"""`Stream`: what every streaming method returns.

An async iterator that can also be used as an async context manager, so leaving the block closes
the HTTP connection at once even when the loop stops early:

    async with client.processes.stdout_stream(sid, pid) as events:
        async for event in events:
            ...

Plain `async for` works too; the connection is then closed when the iteration ends or the stream is
garbage-collected.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Generic, TypeVar

T = TypeVar("T")


class Stream(Generic[T]):
    __slots__ = ("_source",)

    def __init__(self, source: AsyncGenerator[T, None]) -> None:
        self._source = source

    def __aiter__(self) -> Stream[T]:
        return self

    async def __anext__(self) -> T:
        return await self._source.__anext__()

    async def aclose(self) -> None:
        await self._source.aclose()

    async def __aenter__(self) -> Stream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
