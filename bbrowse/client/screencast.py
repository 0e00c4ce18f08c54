"""`Screencast`: a session's screen as pushed frames, through Chromium's `Page.startScreencast` on its `cdp_ws_url`.

Works wherever the session's `cdp_ws_url` does (Kernel's cloud, `bbrowse serve`). The newest frame wins and
frames are acknowledged only when the reader takes one, so Chromium sends no faster than the reader reads;
a still page sends nothing. `start()` raises `ScreencastUnavailable` when CDP cannot be reached: poll
screenshots instead.

    async with Screencast(client, session_id, max_width=320, max_height=200) as cast:
        async for frame in cast:             # newest frame, waits for the next; ends when the cast ends
            draw(frame.jpeg)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from bbrowse import __version__
from bbrowse.client.errors import ConnectionLost
from bbrowse.client.net import websocket_options
from bbrowse.timeouts import bounded

if TYPE_CHECKING:
    from bbrowse.client.client import BrowserClient

#: Letting go waits no longer than this for the other end's close frame.
CLOSE_TIMEOUT_SECONDS = 0.3
#: A CDP command (attach, start) gets this long before the screencast counts as unavailable.
COMMAND_TIMEOUT_SECONDS = 10.0
DEFAULT_QUALITY = 70
#: The request header naming a live view's connection, with an id that stays the same for one client and
#: session across reconnects: `bbrowse serve` records `live_view_connect`/`live_view_disconnect` for it rather
#: than `cdp_connect`; other servers ignore it.
LIVE_VIEW_HEADER = "X-Bbrowse-Live-View"
#: Each client's live view id per session, so a reconnect names the same live view.
_live_view_ids: weakref.WeakKeyDictionary[BrowserClient, dict[str, str]] = weakref.WeakKeyDictionary()


def live_view_id(client: BrowserClient, session_id: str) -> str:
    """The id this client's live view of `session_id` gives the service (the same across reconnects)."""
    return _live_view_ids.setdefault(client, {}).setdefault(session_id, "lv_" + secrets.token_hex(8))


class ScreencastUnavailable(ConnectionLost):
    """The session's CDP could not be reached or stopped answering; `status` is the HTTP refusal, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Frame:
    """One pushed frame: its JPEG, its number since the start (1, 2, ...), and the page's size in CSS pixels."""

    #: The picture: JPEG, or PNG when the screencast was asked for PNG (`image_format`).
    jpeg: bytes
    number: int
    #: The page's viewport in CSS pixels (the frame is that scaled down to fit max_width × max_height).
    device_width: float
    device_height: float
    #: `time.monotonic()` when it arrived.
    received: float


class Screencast:
    """One WebSocket to the session's CDP, the first page target attached, frames scaled by Chromium to
    `max_width` × `max_height`. A frame that arrives before the reader took the last one replaces it (counted
    in `dropped`); Chromium stops after a couple of frames without an acknowledgement, so acknowledging on
    take paces it to the reader. Iterating ends quietly after `stop()`; a dropped connection raises
    `ScreencastUnavailable`."""

    def __init__(self, client: BrowserClient, session_id: str, *, max_width: int | None = None,
                 max_height: int | None = None, quality: int = DEFAULT_QUALITY,
                 cdp_ws_url: str | None = None, image_format: Literal["jpeg", "png"] = "jpeg") -> None:
        """`cdp_ws_url`: connect there instead of the session's (read with `client.sessions.get`).
        `image_format`: `jpeg` (small on the wire), or `png` for small frames drawn cell by cell (exact colours:
        a flat area stays one colour and a still part of the page the same bytes, where JPEG adds noise)."""
        self.client = client
        self.session_id = session_id
        self.max_width = max_width
        self.max_height = max_height
        self.quality = quality
        self.cdp_ws_url = cdp_ws_url
        self.image_format = image_format
        #: Frames that arrived, frames replaced by a newer one before the reader took them, frames taken.
        self.received = 0
        self.dropped = 0
        self.taken = 0
        #: The last frame handed to the reader.
        self.latest: Frame | None = None
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._page_session: str | None = None
        self._next_id = 0
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        #: The newest frame not yet taken (its raw params) and the acks owed for it and those it replaced.
        self._pending: dict[str, Any] | None = None
        self._owed: list[int] = []
        self._arrived = asyncio.Event()
        self._ended: BaseException | None = None
        self._stopped = False

    # lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, attach the first tab and start the screencast; raises ScreencastUnavailable."""
        url = self.cdp_ws_url
        if url is None:
            url = (await self.client.sessions.get(self.session_id)).cdp_ws_url  # NotFound/SessionGone pass through
        if not url:
            raise ScreencastUnavailable("the session has no cdp_ws_url")
        try:
            self._ws = await connect(url, user_agent_header=f"bbrowse/{__version__}",
                                     additional_headers={LIVE_VIEW_HEADER: live_view_id(self.client, self.session_id)},
                                     open_timeout=self.client.config.connect_timeout + 5, compression=None,
                                     max_size=None, close_timeout=CLOSE_TIMEOUT_SECONDS,
                                     **websocket_options(url, loopback=self.client.config.is_loopback))
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise ScreencastUnavailable(f"CDP refused the connection ({status})", status) from None
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise ScreencastUnavailable(f"CDP not reachable: {exc or type(exc).__name__}") from None
        self._reader = asyncio.get_running_loop().create_task(self._read(), name=f"screencast-{self.session_id}")
        try:
            targets = (await self._call("Target.getTargets")).get("targetInfos", [])
            pages = [t for t in targets if t.get("type") == "page"]
            if not pages:
                raise ScreencastUnavailable("the browser has no tab")
            attached = await self._call("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})
            self._page_session = attached["sessionId"]
            await self._start_cast()
        except BaseException:
            await self.stop()
            raise

    async def resize(self, max_width: int | None, max_height: int | None) -> None:
        """Frames scaled to fit a new size from now on (the screencast restarts; a no-op when unchanged)."""
        if (max_width, max_height) == (self.max_width, self.max_height):
            return
        self.max_width, self.max_height = max_width, max_height
        if self._page_session is not None and self._ended is None:
            await self._call("Page.stopScreencast", session=self._page_session)
            self._pending = None  # a frame of the old size is not worth drawing
            self._acknowledge()  # what was received is acknowledged before the restart, as after a take
            await self._start_cast()

    async def stop(self) -> None:
        """End the screencast and close the connection (idempotent); iterating ends."""
        self._stopped = True
        self._arrived.set()
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        self._fail_replies(ScreencastUnavailable("the screencast was stopped"))

    aclose = stop

    async def __aenter__(self) -> Screencast:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def running(self) -> bool:
        return self._ws is not None and self._ended is None and not self._stopped

    # frames ---------------------------------------------------------------------

    def take(self) -> Frame | None:
        """The newest frame not yet taken, or None; taking acknowledges it (Chromium sends the next)."""
        params, self._pending = self._pending, None
        self._arrived.clear()
        if params is None:
            return None
        self._acknowledge()
        metadata = params.get("metadata") or {}
        self.taken += 1
        self.latest = Frame(jpeg=base64.b64decode(params["data"]), number=self.received,
                            device_width=float(metadata.get("deviceWidth") or 0),
                            device_height=float(metadata.get("deviceHeight") or 0),
                            received=params["_received"])
        return self.latest

    async def next_frame(self) -> Frame | None:
        """Wait for the newest frame; None once stopped. Raises ScreencastUnavailable when the connection ended."""
        while True:
            if self._stopped:  # a frame received before the stop is not drawn after it
                return None
            frame = self.take()
            if frame is not None:
                return frame
            if self._ended is not None:
                raise self._ended
            await self._arrived.wait()

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[Frame]:
        while (frame := await self.next_frame()) is not None:
            yield frame

    # CDP ------------------------------------------------------------------------

    def _acknowledge(self) -> None:
        """Acknowledge every frame received so far (taken or replaced): Chromium may send as many again."""
        owed, self._owed = self._owed, []
        for number in owed:
            self._send("Page.screencastFrameAck", {"sessionId": number}, session=self._page_session)

    async def _start_cast(self) -> None:
        params: dict[str, Any] = {"format": self.image_format, "everyNthFrame": 1}
        if self.image_format == "jpeg":
            params["quality"] = self.quality
        if self.max_width:
            params["maxWidth"] = self.max_width
        if self.max_height:
            params["maxHeight"] = self.max_height
        await self._call("Page.startScreencast", params, session=self._page_session)

    def _send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> int:
        ws = self._ws
        self._next_id += 1
        if ws is None:
            return self._next_id
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        sent = asyncio.ensure_future(ws.send(json.dumps(message, separators=(",", ":"))))
        sent.add_done_callback(_ignore_result)
        return self._next_id

    async def _call(self, method: str, params: dict[str, Any] | None = None, *,
                    session: str | None = None) -> dict[str, Any]:
        if self._ended is not None:
            raise self._ended
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[self._next_id + 1] = reply
        self._send(method, params, session=session)
        try:
            return await bounded(reply, COMMAND_TIMEOUT_SECONDS)
        except TimeoutError:
            raise ScreencastUnavailable(f"CDP did not answer {method} in {COMMAND_TIMEOUT_SECONDS:.0f} s") from None

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for text in self._ws:
                message = json.loads(text)
                if message.get("method") == "Page.screencastFrame":
                    if message.get("sessionId") == self._page_session:
                        self._on_frame(message["params"])
                elif "id" in message:
                    reply = self._replies.pop(message["id"], None)
                    if reply is not None and not reply.done():
                        error = message.get("error")
                        if error:
                            reply.set_exception(ScreencastUnavailable(f"CDP: {error.get('message', error)}"))
                        else:
                            reply.set_result(message.get("result") or {})
                elif message.get("method") == "Target.detachedFromTarget":
                    if message.get("params", {}).get("sessionId") == self._page_session:
                        break  # the tab closed or crashed
            reason = "the tab went away"
        except ConnectionClosed as exc:
            reason = f"CDP closed: {exc.rcvd.reason if exc.rcvd and exc.rcvd.reason else exc}"
        except (OSError, ValueError) as exc:
            reason = f"CDP failed: {exc}"
        self._ended = ScreencastUnavailable(reason)
        self._fail_replies(self._ended)
        self._arrived.set()

    def _on_frame(self, params: dict[str, Any]) -> None:
        self.received += 1
        if self._pending is not None:
            self.dropped += 1
        params["_received"] = time.monotonic()
        self._pending = params
        self._owed.append(params["sessionId"])
        self._arrived.set()

    def _fail_replies(self, error: BaseException) -> None:
        replies, self._replies = self._replies, {}
        for reply in replies.values():
            if not reply.done():
                reply.set_exception(error)


def _ignore_result(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # a send on a closing connection: the reader reports the end
