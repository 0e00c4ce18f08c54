"""`KeepAlive`: a CDP connection held open so a session a person is looking at is not reaped.

On Kernel only CDP, WebDriver/BiDi and live-view clients and computer-controls calls count as activity:
a shell, a log stream or file browsing does not, and the session is deleted under the person after its
`timeout_seconds`. While the app shows a session, or `bbrowse shell` / `bbrowse logs --follow` runs on
it, bbrowse holds a WebSocket to the session's `cdp_ws_url` and sends nothing on it.

    async with KeepAlive(client, session_id):
        ...                                  # the session stays alive meanwhile
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from bbrowse import __version__
from bbrowse.client.errors import ClientError, NotFound, SessionGone
from bbrowse.client.net import websocket_options
from bbrowse.client.retry import reconnect_delay

if TYPE_CHECKING:
    from bbrowse.client.client import BrowserClient

#: A connection that lived this long counts as good: the next drop starts the backoff over.
STABLE_SECONDS = 30.0
#: Letting go waits no longer than this for the service's close frame (a command's exit waits for it).
CLOSE_TIMEOUT_SECONDS = 0.3


class KeepAlive:
    def __init__(self, client: BrowserClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        #: True while the CDP connection is open.
        self.connected = False
        #: How many times a connection was opened (1 + the reconnects).
        self.connections = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin holding (in the background, on the running loop); idempotent."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._hold(), name=f"keepalive-{self.session_id}")

    async def aclose(self) -> None:
        """Let go: the connection is closed, the session's timeout counts again."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.connected = False

    async def __aenter__(self) -> KeepAlive:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _hold(self) -> None:
        """Hold the WebSocket, sending nothing (CDP is quiet to a client that enabled no domain). When it
        drops (Kernel closes CDP sockets after about an hour; a Chromium restart) the session is read
        again for a fresh `cdp_ws_url` and the connection reopened with backoff. Closing the holder
        closes it: the session's own timeout applies again."""
        failures = 0
        loop = asyncio.get_running_loop()
        while True:
            try:
                url = (await self.client.sessions.get(self.session_id)).cdp_ws_url
            except (NotFound, SessionGone):
                return  # nothing left to keep alive
            except ClientError:
                url = None
            if url:
                opened = loop.time()
                with contextlib.suppress(OSError, TimeoutError, InvalidHandshake, InvalidURI, ConnectionClosed):
                    async with connect(url, user_agent_header=f"bbrowse/{__version__}",
                                       open_timeout=self.client.config.connect_timeout + 5, compression=None,
                                       max_size=None, close_timeout=CLOSE_TIMEOUT_SECONDS,
                                       **websocket_options(url, loopback=self.client.config.is_loopback)) as ws:
                        self.connected = True
                        self.connections += 1
                        try:
                            async for _ in ws:  # nothing is asked, so nothing should come; read it anyway
                                pass
                        finally:
                            self.connected = False
                if loop.time() - opened > STABLE_SECONDS:
                    failures = 0
            await asyncio.sleep(reconnect_delay(failures))
            failures += 1
