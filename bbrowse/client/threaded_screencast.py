"""`ThreadedScreencast`: a `Screencast` whose connection lives on the I/O thread's loop (`io_thread`).

Its handshake and its frames go on while the caller's loop is busy drawing; a frame crosses over when the
caller asks for it, so the pacing is the Screencast's own (acknowledged on take: Chromium sends no faster
than the caller draws). The session's `cdp_ws_url` is asked for on the caller's loop, where the client's
HTTP connections belong.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from bbrowse.client.io_thread import finish_on_io_loop, on_io_loop
from bbrowse.client.screencast import DEFAULT_QUALITY, Frame, Screencast, ScreencastUnavailable

if TYPE_CHECKING:
    from bbrowse.client.client import BrowserClient


class ThreadedScreencast:
    """The Screencast API (`start`, `resize`, `next_frame`, iteration, `stop`) with the connection off this loop."""

    def __init__(self, client: BrowserClient, session_id: str, *, max_width: int | None = None,
                 max_height: int | None = None, quality: int = DEFAULT_QUALITY,
                 cdp_ws_url: str | None = None) -> None:
        self.client = client
        self.session_id = session_id
        self._cast = Screencast(client, session_id, max_width=max_width, max_height=max_height, quality=quality,
                                cdp_ws_url=cdp_ws_url)

    @property
    def received(self) -> int:
        return self._cast.received

    @property
    def dropped(self) -> int:
        return self._cast.dropped

    @property
    def taken(self) -> int:
        return self._cast.taken

    @property
    def running(self) -> bool:
        return self._cast.running

    async def start(self) -> None:
        """Connect, attach and start on the I/O loop; raises ScreencastUnavailable as `Screencast.start`."""
        if self._cast.cdp_ws_url is None:
            url = (await self.client.sessions.get(self.session_id)).cdp_ws_url  # NotFound/SessionGone pass through
            if not url:
                raise ScreencastUnavailable("the session has no cdp_ws_url")
            self._cast.cdp_ws_url = url
        await on_io_loop(self._cast.start())

    async def resize(self, max_width: int | None, max_height: int | None) -> None:
        """As `Screencast.resize` (a no-op at the same size, decided here: no trip to the I/O loop)."""
        if (max_width, max_height) != (self._cast.max_width, self._cast.max_height):
            await on_io_loop(self._cast.resize(max_width, max_height))

    async def next_frame(self) -> Frame | None:
        return await on_io_loop(self._cast.next_frame())

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[Frame]:
        while (frame := await self.next_frame()) is not None:
            yield frame

    async def stop(self) -> None:
        """End the screencast and close its connection (idempotent); it closes even if this wait is cancelled."""
        await finish_on_io_loop(self._cast.stop())

    async def __aenter__(self) -> ThreadedScreencast:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
