"""Log streams: a file on the instance (`source=path`) or a supervised program (`source=supervisor`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from bbrowse.client.decode import json_body, validate
from bbrowse.client.errors import ProtocolError
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import LogEvent, LogSource

#: A one-shot read of a supervised program's log ends after this long without an event.
QUIET_SECONDS = 2.0


class Logs:
    def __init__(self, transport: Transport, read_file: Callable[[str, str], AsyncIterator[bytes]] | None = None) \
            -> None:
        self._t = transport
        self._read_file = read_file

    async def existing(
        self,
        id_or_name: str,
        *,
        source: LogSource | str = LogSource.PATH,
        path: str | None = None,
        supervisor_process: str | None = None,
        tail: int | None = None,
    ) -> AsyncIterator[LogEvent]:
        """The lines the log has now, then the end, on any service: a one-shot read.

        Kernel's VM never ends a `follow=false` stream (it polls the file until the client leaves) and
        keeps a partial last line back, so a file (`source=path`) is read with `read_file` and split into
        lines here, all of them, each stamped with the time it was read. A supervised program's log is
        streamed with `follow=false` and ends when the service ends it or after `QUIET_SECONDS` without
        an event. `tail` keeps the last `tail` lines."""
        if str(source) == LogSource.PATH and path is not None and self._read_file is not None:
            lines = self._file_lines(id_or_name, path)
        else:
            lines = self._quiet_end(self.stream(id_or_name, source=source, path=path,
                                                supervisor_process=supervisor_process, follow=False, tail=tail))
        if tail is None:
            async for event in lines:
                yield event
            return
        kept: collections.deque[LogEvent] = collections.deque(maxlen=tail)
        async for event in lines:
            kept.append(event)
        for event in kept:
            yield event

    async def _file_lines(self, id_or_name: str, path: str) -> AsyncIterator[LogEvent]:
        assert self._read_file is not None  # checked by `existing`
        pending = b""
        async for chunk in self._read_file(id_or_name, path):
            pending += chunk
            *whole, pending = pending.split(b"\n")
            now = datetime.now(UTC)
            for line in whole:
                yield LogEvent(message=line.decode("utf-8", "surrogateescape"), timestamp=now)
        if pending:
            yield LogEvent(message=pending.decode("utf-8", "surrogateescape"), timestamp=datetime.now(UTC))

    @staticmethod
    async def _quiet_end(stream: Stream[LogEvent]) -> AsyncIterator[LogEvent]:
        async with contextlib.aclosing(stream):
            events = aiter(stream)
            while True:
                try:
                    event = await asyncio.wait_for(anext(events), QUIET_SECONDS)
                except (StopAsyncIteration, TimeoutError):
                    return
                yield event

    def stream(
        self,
        id_or_name: str,
        *,
        source: LogSource | str = LogSource.PATH,
        path: str | None = None,
        supervisor_process: str | None = None,
        follow: bool = True,
        tail: int | None = None,
    ) -> Stream[LogEvent]:
        """One `LogEvent` per line. With `follow=False` the iteration ends after the existing lines;
        with `follow=True` it starts at the end of the log and runs until closed. Unknown path or name:
        `NotFound` on `async with` or the first iteration. `tail` (a bbrowse serve extension, not sent
        unless given) first sends the last `tail` existing lines."""
        params: dict[str, Any] = {"source": str(source), "follow": "true" if follow else "false"}
        if tail is not None:
            params["tail"] = tail
        if path is not None:
            params["path"] = path
        if supervisor_process is not None:
            params["supervisor_process"] = supervisor_process
        return Stream(self._events(id_or_name, params))

    async def _events(self, id_or_name: str, params: dict[str, Any]) -> AsyncGenerator[LogEvent, None]:
        what = f"log stream {params.get('path') or params.get('supervisor_process') or ''}".strip()
        route = f"/browsers/{segment(id_or_name)}/logs/stream"
        async with self._t.open_stream("GET", route, params=params, sse=True) as response:
            yield OPENED
            async for payload in iter_sse_json(response, what):
                yield validate(LogEvent, payload, what)

    async def supervisors(self, id_or_name: str) -> list[str]:
        """bbrowse serve extension: the names `source=supervisor` accepts (`bbrowse` first).

        Kernel's cloud has no such route and answers `NotFound`."""
        response = await self._t.request("GET", f"/browsers/{segment(id_or_name)}/logs/supervisors", idempotent=True)
        names = json_body(response, "list supervisors")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ProtocolError(f"list supervisors: expected an array of names, got {names!r:.200}")
        return names
