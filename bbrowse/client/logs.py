"""Log streams: a file on the instance (`source=path`) or a supervised program (`source=supervisor`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from bbrowse.client.decode import validate
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.streams import Stream
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
    ) -> Stream[LogEvent]:
        """One `LogEvent` per line. With `follow=False` the iteration ends after the existing lines;
        with `follow=True` it runs until closed. Unknown path or name: `NotFound` on the first iteration."""
        params: dict[str, Any] = {"source": str(source), "follow": "true" if follow else "false"}
        if path is not None:
            params["path"] = path
        if supervisor_process is not None:
            params["supervisor_process"] = supervisor_process
        return Stream(self._events(id_or_name, params))

    async def _events(self, id_or_name: str, params: dict[str, Any]) -> AsyncGenerator[LogEvent, None]:
        what = f"log stream {params.get('path') or params.get('supervisor_process') or ''}".strip()
        route = f"/browsers/{segment(id_or_name)}/logs/stream"
        async with self._t.open_stream("GET", route, params=params, sse=True) as response:
            async for payload in iter_sse_json(response, what):
                yield validate(LogEvent, payload, what)
