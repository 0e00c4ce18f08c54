"""The Chrome DevTools Protocol over Chromium's debugging pipe, shared by several clients at once.

Chromium runs with `--remote-debugging-pipe`: no TCP port (nothing another local user could reach);
commands go in on its fd 3 and replies and events come out on fd 4, each a JSON text ended by NUL. Every
user of the browser goes through the one `CDPHub` on that pipe: the service's own `CDPConnection` and
each WebSocket of `cdp_proxy`, each as if it had the browser alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic_core

from bbrowse.timeouts import bounded

log = logging.getLogger("bbrowse.cdp")

#: Default bound on one command; screenshots of big pages take well under this.
COMMAND_TIMEOUT_SECONDS = 30.0
#: The fds Chromium reads commands from and writes messages to under `--remote-debugging-pipe`.
CHROMIUM_READ_FD, CHROMIUM_WRITE_FD = 3, 4
#: Linux lets an unprivileged process grow a pipe to 1 MiB: a screenshot then crosses in a few reads.
_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20
#: Attach commands whose result names a session the asking client then owns.
_ATTACH_METHODS = frozenset({"Target.attachToTarget", "Target.attachToBrowserTarget"})

Message = dict[str, Any]
EventHandler = Callable[[dict[str, Any], str | None], None]


class CDPError(Exception):
    """The browser answered a command with a protocol error."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.method = method
        self.code = error.get("code")
        self.error_message = str(error.get("message", "unknown error"))
        super().__init__(f"{method}: {self.error_message} (code {self.code})")


class CDPClosedError(Exception):
    """The DevTools pipe is gone (the browser exited), or this client was detached from it."""


# the pipe ----------------------------------------------------------------------


def reserve_devtools_fds() -> None:
    """Hold fds 3 and 4 for the life of the process (on /dev/null) if nothing holds them yet.

    A spawn that keeps fds 3 and 4 for Chromium (`pass_fds`, see `PipeEnds`) needs them open in the
    service at the fork, under asyncio's subprocess and uvloop alike. Left to chance they hold the first
    files the service opens; its log is one, and once rotation has reopened it elsewhere, fd 4 goes to any
    file a worker thread opens for a moment. One closed by that thread at the instant of the fork failed
    the spawn: "Chromium failed to start: [Errno 9] Bad file descriptor", once in 5,050 soak cycles.
    `bbrowse serve` calls this first, before it opens anything.
    """
    opened = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    null = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, CHROMIUM_WRITE_FD + 1)  # itself not on 3 or 4
    os.close(opened)
    try:
        for fd in PipeEnds.CHILD_FDS:
            if not _is_open(fd):  # one held already (inherited, opened before) is not ours to replace
                os.dup2(null, fd, inheritable=False)
    finally:
        os.close(null)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class PipeEnds:
    """The two pipes of `--remote-debugging-pipe`, before and after Chromium is started on them.

    `child_setup` (called in the child between fork and exec) moves Chromium's ends to fds 3 and 4;
    the caller passes `pass_fds=CHILD_FDS` so they survive `close_fds`, then `close_child_ends()`.
    `pass_fds` needs fds 3 and 4 open in the parent at the fork: `reserve_devtools_fds` keeps them so.
    """

    CHILD_FDS = (CHROMIUM_READ_FD, CHROMIUM_WRITE_FD)

    def __init__(self) -> None:
        self.child_read, self.write_fd = os.pipe()  # commands: we write, Chromium reads
        self.read_fd, self.child_write = os.pipe()  # messages: Chromium writes, we read
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.read_fd, _F_SETPIPE_SZ, _PIPE_SIZE)
        # Copies above any fd the child's stdio set-up touches, for child_setup to move onto 3 and 4.
        self._child_read_high = fcntl.fcntl(self.child_read, fcntl.F_DUPFD_CLOEXEC, 10)
        self._child_write_high = fcntl.fcntl(self.child_write, fcntl.F_DUPFD_CLOEXEC, 10)

    def child_setup(self) -> None:  # pragma: no cover - runs in the child between fork and exec
        os.dup2(self._child_read_high, CHROMIUM_READ_FD)
        os.dup2(self._child_write_high, CHROMIUM_WRITE_FD)
        os.set_inheritable(CHROMIUM_READ_FD, True)
        os.set_inheritable(CHROMIUM_WRITE_FD, True)

    def close_child_ends(self) -> None:
        """After the spawn: only Chromium holds its ends, so its exit is our end of file."""
        for fd in (self.child_read, self.child_write, self._child_read_high, self._child_write_high):
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        """Everything, for a spawn that failed before `CDPHub.connect` took the parent's ends."""
        self.close_child_ends()
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _loads(raw: bytes) -> Any:
    """JSON as `json.loads` reads it, five times faster (`pydantic_core`; a page's console flood is thousands of
    messages a second); what it refuses (a lone surrogate's escape, which JavaScript strings may hold) by json."""
    try:
        return pydantic_core.from_json(raw)
    except ValueError:
        return json.loads(raw)


class _PipeReader(asyncio.Protocol):
    """Splits Chromium's output into NUL-terminated messages without rescanning what was seen."""

    def __init__(self, hub: CDPHub) -> None:
        self._hub = hub
        self._parts: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\0", start)
            if end < 0:
                if start < len(data):
                    self._parts.append(data[start:])
                return
            piece = data[start:end]
            if self._parts:
                self._parts.append(piece)
                piece = b"".join(self._parts)
                self._parts.clear()
            self._hub._on_message(piece)
            start = end + 1

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._hub._pipe_ended()


class _PipeWriter(asyncio.BaseProtocol):
    def __init__(self, hub: CDPHub) -> None:
        self._hub = hub

    def connection_lost(self, exc: Exception | None) -> None:
        self._hub._pipe_ended()


# the hub -----------------------------------------------------------------------


@dataclass
class _Pending:
    channel: Channel | None  # None: the hub's own command on the root session
    client_id: Any
    method: str
    future: asyncio.Future[Message] | None = None


class CDPHub:
    """One Chromium's DevTools pipe, multiplexed between clients that each have a browser session.

    Each client gets a browser-level flat session of its own (`Target.attachToBrowserTarget`): message ids
    are made unique on the pipe and restored in replies, and events of the sessions it attached reach it
    alone (ownership learnt from `Target.attachedToTarget`). A client that leaves is detached, ending what
    it attached. When the pipe ends every client is told and every waiting command fails with
    `CDPClosedError`: nothing waits on a dead browser.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.close_reason = ""
        #: Called when Chromium's end of the pipe closes, to `close` the hub with a better reason (its
        #: exit status) once known; it must close the hub within a bounded time. Unset: closed at once.
        self.on_pipe_end: Callable[[], None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._owners: dict[str, Channel] = {}
        self._channels: set[Channel] = set()
        self._closed = asyncio.Event()
        self._pipe_gone = False
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None

    @classmethod
    async def connect(cls, ends: PipeEnds, label: str) -> CDPHub:
        """Take over the parent's ends of `ends` (closed with the hub from now on)."""
        hub = cls(label)
        loop = asyncio.get_running_loop()
        read_file = os.fdopen(ends.read_fd, "rb", buffering=0)
        write_file = os.fdopen(ends.write_fd, "wb", buffering=0)
        hub._reader, _ = await loop.connect_read_pipe(lambda: _PipeReader(hub), read_file)
        hub._writer, _ = await loop.connect_write_pipe(lambda: _PipeWriter(hub), write_file)
        return hub

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   timeout: float = COMMAND_TIMEOUT_SECONDS) -> dict[str, Any]:
        """A command on the root session (the hub's own: attaching clients, asking the version)."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        pipe_id = self._send({"method": method, "params": params or {}}, _Pending(None, None, method, future))
        try:
            reply = await bounded(future, timeout)
        finally:
            self._pending.pop(pipe_id, None)
        if "error" in reply:
            raise CDPError(method, reply["error"])
        return reply.get("result", {})

    async def open_channel(self, deliver: Callable[[Message], None], on_closed: Callable[[str], None],
                           timeout: float = 10.0) -> Channel:
        """A new client with its own browser session; `deliver` gets its replies and events."""
        result = await self.call("Target.attachToBrowserTarget", timeout=timeout)
        channel = Channel(self, result["sessionId"], deliver, on_closed)
        if self.closed:  # the pipe ended between the reply and here
            channel._end(self.close_reason)
            raise CDPClosedError(self.close_reason)
        self._channels.add(channel)
        self._owners[channel.session_id] = channel
        return channel

    def close(self, reason: str = "the DevTools pipe was closed") -> None:
        """End the pipe: every client is told, every waiting command fails. Idempotent."""
        if self.closed:
            return
        self.close_reason = reason
        self._closed.set()
        for transport in (self._reader, self._writer):
            if transport is not None:
                transport.close()
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            if entry.future is not None and not entry.future.done():
                entry.future.set_exception(CDPClosedError(f"{entry.method}: {reason}"))
        channels, self._channels = self._channels, set()
        self._owners.clear()
        for channel in channels:
            channel._end(reason)

    def _pipe_ended(self) -> None:
        """Either direction of the pipe ended (reported once per direction, acted on once)."""
        if self._pipe_gone:
            return
        self._pipe_gone = True
        if self.on_pipe_end is None or self.closed:
            self.close("Chromium closed its DevTools pipe")
        else:
            self.on_pipe_end()

    # sending ---------------------------------------------------------------

    def _send(self, message: Message, entry: _Pending) -> int:
        if self.closed or self._pipe_gone or self._writer is None or self._writer.is_closing():
            raise CDPClosedError(f"{entry.method}: {self.close_reason or 'the DevTools pipe is closed'}")
        pipe_id = next(self._ids)
        message["id"] = pipe_id
        self._pending[pipe_id] = entry
        self._writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\0")
        return pipe_id

    def _send_from(self, channel: Channel, message: Message) -> None:
        method = message.get("method")
        entry = _Pending(channel, message.get("id"), method if isinstance(method, str) else "")
        if "sessionId" not in message:
            message["sessionId"] = channel.session_id
        self._send(message, entry)

    def _detach(self, channel: Channel) -> None:
        self._channels.discard(channel)
        for session_id in channel.sessions:
            if self._owners.get(session_id) is channel:
                del self._owners[session_id]
        for pipe_id in [i for i, entry in self._pending.items() if entry.channel is channel]:
            del self._pending[pipe_id]
        if not self.closed:
            with contextlib.suppress(CDPClosedError):
                self._send({"method": "Target.detachFromTarget", "params": {"sessionId": channel.session_id}},
                           _Pending(None, None, "Target.detachFromTarget"))

    # receiving -------------------------------------------------------------

    def _on_message(self, raw: bytes) -> None:
        """Route one message; nothing in one message may stop the pipe for the others."""
        try:
            message = _loads(raw)
            if not isinstance(message, dict):
                raise ValueError("not an object")
            if "id" in message:
                self._on_reply(message)
            else:
                self._on_event(message)
        except Exception:
            log.exception("%s: DevTools message dropped (%d bytes: %r...)", self.label, len(raw), raw[:80])

    def _on_reply(self, message: Message) -> None:
        entry = self._pending.pop(message["id"], None)
        if entry is None:
            return
        channel = entry.channel
        if channel is None:
            if entry.future is not None and not entry.future.done():
                entry.future.set_result(message)
            return
        if channel.closed:
            return
        if entry.method in _ATTACH_METHODS:
            attached = (message.get("result") or {}).get("sessionId")
            if isinstance(attached, str):
                self._own(channel, attached)
        message["id"] = entry.client_id
        if message.get("sessionId") == channel.session_id:
            del message["sessionId"]
        channel._deliver(message)

    def _on_event(self, message: Message) -> None:
        session_id = message.get("sessionId")
        method = message.get("method")
        if session_id is None:
            # The root session is the hub's: only a client's own browser session ending matters here.
            if method == "Target.detachedFromTarget":
                gone = self._owners.get((message.get("params") or {}).get("sessionId", ""))
                if gone is not None and gone.session_id == message["params"]["sessionId"]:
                    gone._end("its browser session was detached")
                    self._detach_quietly(gone)
            return
        channel = self._owners.get(session_id)
        if channel is None:
            return
        params = message.get("params") or {}
        if method == "Target.attachedToTarget" and isinstance(params.get("sessionId"), str):
            self._own(channel, params["sessionId"])
        elif method == "Target.detachedFromTarget":
            child = params.get("sessionId")
            if isinstance(child, str) and child != channel.session_id and self._owners.get(child) is channel:
                del self._owners[child]
                channel.sessions.discard(child)
        if session_id == channel.session_id:
            del message["sessionId"]
        channel._deliver(message)

    def _own(self, channel: Channel, session_id: str) -> None:
        self._owners[session_id] = channel
        channel.sessions.add(session_id)

    def _detach_quietly(self, channel: Channel) -> None:
        """Forget a client whose browser session Chromium already ended (no detach command to send)."""
        self._channels.discard(channel)
        for session_id in channel.sessions:
            if self._owners.get(session_id) is channel:
                del self._owners[session_id]


class Channel:
    """One client's door to the hub: its browser session, the sessions it attached, its deliveries."""

    def __init__(self, hub: CDPHub, session_id: str, deliver: Callable[[Message], None],
                 on_closed: Callable[[str], None]) -> None:
        self.hub = hub
        self.session_id = session_id
        self.sessions: set[str] = {session_id}
        self.closed = False
        self._deliver_to = deliver
        self._on_closed = on_closed

    def send(self, message: Message) -> None:
        """Send a client message (`id`, `method`, `params`, optional `sessionId`); raises CDPClosedError."""
        if self.closed:
            raise CDPClosedError(f"{message.get('method')}: {self.hub.close_reason or 'this client was detached'}")
        self.hub._send_from(self, message)

    def close(self) -> None:
        """Detach this client (its browser session and every session it attached). Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.hub._detach(self)

    def _deliver(self, message: Message) -> None:
        try:
            self._deliver_to(message)
        except Exception:
            log.exception("%s: a CDP client failed to take a message", self.hub.label)

    def _end(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._on_closed(reason)
        except Exception:
            log.exception("%s: a CDP client failed to close", self.hub.label)


# the service's own client ------------------------------------------------------


class CDPConnection:
    """The service's own CDP client on the hub: awaitable commands and event subscriptions.

    It keeps its page session open and reuses it (see `browsers`), which is what keeps a screenshot
    close to the cost of `Page.captureScreenshot` itself. Events of its browser session come with
    `session_id` None, as on a connection of its own.
    """

    def __init__(self, hub: CDPHub) -> None:
        self.hub = hub
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._closed = asyncio.Event()
        self._reason = ""
        self._channel: Channel | None = None

    @classmethod
    async def open(cls, hub: CDPHub, timeout: float = 10.0) -> CDPConnection:
        connection = cls(hub)
        connection._channel = await hub.open_channel(connection._deliver, connection._on_channel_closed, timeout)
        return connection

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float = COMMAND_TIMEOUT_SECONDS,
    ) -> dict[str, Any]:
        if self.closed or self._channel is None:
            raise CDPClosedError(f"{method}: {self._reason or 'the DevTools connection is closed'}")
        msg_id = next(self._ids)
        message: Message = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future)
        try:
            self._channel.send(message)
            return await bounded(future, timeout)
        finally:
            self._pending.pop(msg_id, None)

    def on(self, event: str, handler: EventHandler) -> Callable[[], None]:
        """Call `handler(params, session_id)` for each `event`; returns a function that unsubscribes."""
        self._handlers.setdefault(event, []).append(handler)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._handlers.get(event, []).remove(handler)

        return unsubscribe

    async def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._on_channel_closed("the DevTools connection was closed")

    def _deliver(self, message: Message) -> None:
        if "id" in message:
            entry = self._pending.get(message["id"])
            if entry is None:
                return
            method, future = entry
            if future.done():
                return
            if "error" in message:
                future.set_exception(CDPError(method, message["error"]))
            else:
                future.set_result(message.get("result", {}))
            return
        for handler in list(self._handlers.get(message.get("method", ""), ())):
            try:
                handler(message.get("params", {}), message.get("sessionId"))
            except Exception:
                log.exception("CDP event handler for %s failed", message.get("method"))

    def _on_channel_closed(self, reason: str) -> None:
        if self.closed:
            return
        self._reason = reason
        self._closed.set()
        for method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(CDPClosedError(f"{method}: {reason}"))
