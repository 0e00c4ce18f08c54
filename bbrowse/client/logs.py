"""Log streams: a file on the instance (`source=path`) or a supervised program (`source=supervisor`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from bbrowse.client.decode import json_body, validate
from bbrowse.client.errors import ProtocolError
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import LogEvent, LogSource


class Logs:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

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
