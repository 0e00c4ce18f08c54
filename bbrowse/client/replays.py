"""Replays (screen recordings) of a session: list, start, stop, download."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator

from bbrowse.client.bodies import body
from bbrowse.client.decode import model, model_list
from bbrowse.client.errors import RequestTimeout
from bbrowse.client.retry import parse_retry_after
from bbrowse.client.streams import Stream, opened
from bbrowse.client.transport import Transport, iter_body, segment
from bbrowse.wire import Replay, ReplayStartRequest

#: How long `download` waits in total for a recording that is still being finalised (202).
DOWNLOAD_WAIT_SECONDS = 60.0
#: Wait between polls when a 202 carries no usable Retry-After.
DEFAULT_POLL_SECONDS = 1.0


class Replays:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _path(self, id_or_name: str, tail: str = "") -> str:
        return f"/browsers/{segment(id_or_name)}/replays{tail}"

    async def list(self, id_or_name: str) -> list[Replay]:
        response = await self._t.request("GET", self._path(id_or_name), idempotent=True)
        return model_list(Replay, response, "list replays")

    async def start(
        self, id_or_name: str, *, framerate: int | None = None, max_duration_in_seconds: int | None = None,
    ) -> Replay:
        """Start recording (201); `Conflict` when one is already running. Never re-sent."""
        request = ReplayStartRequest.model_construct(framerate=framerate,
                                                     max_duration_in_seconds=max_duration_in_seconds)
        response = await self._t.request("POST", self._path(id_or_name), json=body(request), idempotent=False,
                                         ok=(200, 201))
        return model(Replay, response, "start replay")

    async def stop(self, id_or_name: str, replay_id: str) -> None:
        """Stop a recording; stopping twice is harmless, so this one is retried."""
        await self._t.request("POST", self._path(id_or_name, f"/{segment(replay_id)}/stop"), idempotent=True,
                              ok=(200, 204))

    def download(
        self, id_or_name: str, replay_id: str, *, max_wait: float = DOWNLOAD_WAIT_SECONDS,
    ) -> Stream[bytes]:
        """The MP4 in chunks. While the service answers 202 (still finalising) this waits `Retry-After`
        and asks again, for at most `max_wait` seconds, then raises `RequestTimeout`."""
        return Stream(self._download(id_or_name, replay_id, max_wait))

    async def _download(self, id_or_name: str, replay_id: str, max_wait: float) -> AsyncGenerator[bytes, None]:
        route = self._path(id_or_name, f"/{segment(replay_id)}")
        deadline = time.monotonic() + max_wait
        while True:
            async with self._t.open_stream("GET", route, ok=(200, 202)) as response:
                if response.status_code == 200:
                    length = response.headers.get("content-length", "")
                    yield opened(int(length) if length.isdigit() else None)
                    async for chunk in iter_body(response, f"replay {replay_id}"):
                        yield chunk
                    return
                wait = parse_retry_after(response.headers.get("retry-after"))
                wait = DEFAULT_POLL_SECONDS if wait is None else wait
            if time.monotonic() + wait > deadline:
                raise RequestTimeout(f"replay {replay_id} was still being finalised after {max_wait:g} s")
            await asyncio.sleep(wait)
