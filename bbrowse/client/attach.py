"""The `attach` WebSocket: a live two-way connection to a process's PTY.

    async with client.processes.attach(sid, pid) as term:
        await term.send(b"ls\\n")
        async for output in term:      # bytes, until the process exits (then `term.exit_code`)
            ...

Binary frames carry bytes both ways; a text frame `{"type":"resize",...}` (`term.resize(rows, cols)`)
resizes; the service may end with a text frame `{"type":"exit","exitCode":N}`, where the iteration stops
and the caller closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from bbrowse import __version__
from bbrowse.client.errors import (
    ConnectionLost,
    IncompleteStream,
    LinkStalled,
    ProtocolError,
    VmGoingAway,
    error_from_response,
    snippet,
)
from bbrowse.client.net import PING_INTERVAL, PING_TIMEOUT, set_keepalive, websocket_options
from bbrowse.client.routing import Route, RouteCache
from bbrowse.timeouts import bounded
from bbrowse.wire import AttachExit, AttachResize

#: Largest single frame accepted from the service (PTY output comes in far smaller pieces).
MAX_FRAME_BYTES = 16 * 1024 * 1024
#: Frames received but not yet read before the connection stops reading the socket (back-pressure).
RECEIVE_QUEUE_FRAMES = 16
#: The socket's receive buffer (no autotuning to megabytes): what a flood can have in flight on this
#: side, all of which must be read before output typed after a ctrl-c shows. Ample for full speed.
RECEIVE_BUFFER_BYTES = 256 * 1024
#: How long closing waits for the service's close frame before dropping the connection.
CLOSE_TIMEOUT_SECONDS = 1.0
#: A stalled link (a ping unanswered for `PING_TIMEOUT` s) is waited for this long with the connection kept,
#: so the output on its way still arrives when the link is back (TCP resends it); then the connection is
#: dropped and a reattach finds the rest (Kernel's PTY keeps its output while nobody is attached).
STALL_GIVE_UP_SECONDS = 60.0


class AttachSession:
    """One attach connection; not reusable after it closes.

    `endpoints` are tried in order: the session's VM (jwt in the query, no API key) when the client knows
    its route, then the control plane. A 401/403 from the VM drops the route (`routes.forget`) and the
    next endpoint is tried, as the official SDK does for every VM call; any other refusal is raised.
    """

    def __init__(
        self,
        endpoints: str | Sequence[tuple[str, Mapping[str, str], Route | None]],
        headers: Mapping[str, str] | None = None,
        *,
        routes: RouteCache | None = None,
        open_timeout: float = 10.0,
        rows: int | None = None,
        cols: int | None = None,
        use_env_proxy: bool | None = None,
        on_link: Callable[[bool], object] = lambda stalled: None,
    ) -> None:
        """`on_link(True)` when a ping goes unanswered for `PING_TIMEOUT` s (the link stalled; the connection is
        kept), `on_link(False)` when the answer comes after all."""
        if isinstance(endpoints, str):
            endpoints = [(endpoints, dict(headers or {}), None)]
        self._endpoints = list(endpoints)
        self._routes = routes
        #: The URL connected to (or about to be), without its query: safe to show, the jwt stays out.
        self.url = _shown(self._endpoints[0][0])
        #: True when connected to the session's VM rather than the control plane.
        self.direct = False
        self._open_timeout = open_timeout
        self._initial_size = (rows, cols) if rows and cols else None
        host = urlsplit(self.url).hostname or ""
        self._proxy: bool | None = (use_env_proxy if use_env_proxy is not None
                                    else host not in ("127.0.0.1", "::1", "localhost"))
        self._ws: ClientConnection | None = None
        self._closing = False
        #: Told of the link's state (see `__init__`); may be set after construction.
        self.on_link = on_link
        self._watcher: asyncio.Task[None] | None = None
        #: A ping has gone unanswered for `PING_TIMEOUT` s and not been answered since.
        self.stalled = False
        self._gave_up = False
        #: The process's exit code, once the service has sent the exit frame.
        self.exit_code: int | None = None

    async def __aenter__(self) -> AttachSession:
        for index, (url, headers, route) in enumerate(self._endpoints):
            self.url, self.direct = _shown(url), route is not None
            try:
                self._ws = await connect(
                    url,
                    additional_headers=dict(headers),
                    user_agent_header=f"bbrowse/{__version__}",
                    open_timeout=self._open_timeout,
                    compression=None,
                    max_size=MAX_FRAME_BYTES,
                    max_queue=RECEIVE_QUEUE_FRAMES,
                    close_timeout=CLOSE_TIMEOUT_SECONDS,
                    **{**websocket_options(url, loopback=not self._proxy), "ping_interval": None},
                )
            except InvalidStatus as exc:
                response = exc.response
                status = response.status_code
                if route is not None and status in (401, 403) and index + 1 < len(self._endpoints):
                    if self._routes is not None:
                        self._routes.forget(route.session_id, route.jwt)
                    continue
                raise error_from_response(status, bytes(response.body or b""), method="GET",
                                          url=self.url) from None
            except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
                raise ConnectionLost(f"attach {self.url}: {exc or type(exc).__name__}") from exc
            break
        assert self._ws is not None
        sock = self._ws.transport.get_extra_info("socket")
        set_keepalive(sock)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        self._watcher = asyncio.get_running_loop().create_task(self._watch_link(self._ws))
        if self._initial_size:
            await self.resize(*self._initial_size)
        return self

    async def _watch_link(self, ws: ClientConnection) -> None:
        """A ping every `PING_INTERVAL` s. Unanswered for `PING_TIMEOUT` s: the link stalled (said, the
        connection kept); still unanswered after `STALL_GIVE_UP_SECONDS`: the connection is dropped."""
        while True:
            await asyncio.sleep(PING_INTERVAL)
            try:
                pong = await ws.ping()
            except ConnectionClosed:
                return
            try:
                await bounded(asyncio.shield(pong), PING_TIMEOUT)
                continue
            except TimeoutError:
                pass
            except ConnectionClosed:
                return
            self.stalled = True
            self.on_link(True)
            try:
                await bounded(pong, STALL_GIVE_UP_SECONDS)
            except TimeoutError:
                self._gave_up = True
                ws.transport.abort()
                return
            except ConnectionClosed:
                return
            self.stalled = False
            self.on_link(False)

    @property
    def local_address(self) -> tuple[Any, ...] | None:
        """This end of the connection, (host, port, ...), while connected: to find it in `ss` or a trace."""
        if self._ws is None:
            return None
        address: tuple[Any, ...] = self._ws.transport.get_extra_info("sockname")
        return address

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _connection(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("use the attach session inside `async with`")
        return self._ws

    async def send(self, data: bytes) -> None:
        """Bytes for the PTY, as typed (keys, pasted text, escape sequences)."""
        try:
            await self._connection().send(bytes(data))
        except ConnectionClosed as exc:
            raise ConnectionLost(f"attach {self.url}: closed ({exc})") from exc

    async def resize(self, rows: int, cols: int) -> None:
        frame = AttachResize(rows=rows, cols=cols).model_dump_json()
        try:
            await self._connection().send(frame)
        except ConnectionClosed as exc:
            raise ConnectionLost(f"attach {self.url}: closed ({exc})") from exc

    async def close(self) -> None:
        self._closing = True
        if self._watcher is not None:
            self._watcher.cancel()
        if self._ws is not None:
            await self._ws.close()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._output()

    async def _output(self) -> AsyncIterator[bytes]:
        """Output until the exit frame. Kernel's VM never closes the socket on its own after an exit (its
        reader waits for a frame or a close from us), and may skip the exit frame altogether (`PtyOutput`
        then learns the exit from `status`). A close without the exit frame, not asked for by us, raises
        `IncompleteStream`; 1001 ("going away": the VM shutting down) `VmGoingAway`; any other
        `ConnectionLost`."""
        ws = self._connection()
        try:
            while True:
                message = await ws.recv()
                if isinstance(message, bytes):
                    yield message
                else:
                    self._control(message)
                    if self.exit_code is not None:
                        return  # nothing follows the exit frame; the caller closes
        except ConnectionClosed as exc:
            if self.exit_code is not None or self._closing:
                return
            code = exc.rcvd.code if exc.rcvd else None
            reason = exc.rcvd.reason if exc.rcvd else ""
            if self._gave_up:
                raise LinkStalled(f"attach {self.url}: no answer to a ping for {STALL_GIVE_UP_SECONDS:g} s") from None
            if code == 1001:
                raise VmGoingAway(f"attach {self.url}: the session's VM is going away"
                                  f"{f' ({reason})' if reason else ''}", reason) from None
            if code == 1000:
                raise IncompleteStream(f"attach {self.url}: closed without the process's exit frame") from None
            suffix = f", {reason}" if reason else ""
            raise ConnectionLost(f"attach {self.url}: closed abnormally (code {code}{suffix})") from None

    def _control(self, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            raise ProtocolError(f"attach {self.url}: text frame is not JSON: {snippet(text.encode())!r}") from None
        if isinstance(frame, dict) and frame.get("type") == "exit":
            try:
                self.exit_code = AttachExit.model_validate(frame).exitCode
            except ValueError:
                raise ProtocolError(f"attach {self.url}: malformed exit frame {text[:200]!r}") from None
        # other control frames are ignored: the contract may grow new ones


def _shown(url: str) -> str:
    """`url` without its query (where the jwt travels)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
