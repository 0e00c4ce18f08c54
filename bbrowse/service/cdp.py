"""A minimal Chrome DevTools Protocol client over one WebSocket (the `websockets` package).

One connection to the browser endpoint carries every command: pages are reached through
flattened target sessions (`Target.attachToTarget` with `flatten: true`), so a command names its
`sessionId` instead of opening a socket per page. The connection is kept open per browser and
reused, which is what keeps a screenshot close to the cost of `Page.captureScreenshot` itself.

Only what the service needs is here: send a command and await its result, and subscribe to events.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

log = logging.getLogger("bbrowse.cdp")

#: Default bound on one command; screenshots of big pages take well under this.
COMMAND_TIMEOUT_SECONDS = 30.0

EventHandler = Callable[[dict[str, Any], str | None], None]


class CDPError(Exception):
    """The browser answered a command with a protocol error."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.method = method
        self.code = error.get("code")
        self.error_message = str(error.get("message", "unknown error"))
        super().__init__(f"{method}: {self.error_message} (code {self.code})")


class CDPClosedError(Exception):
    """The WebSocket to the browser is gone (the browser exited or closed it)."""


class CDPConnection:
    def __init__(self, ws: ClientConnection, url: str) -> None:
        self.url = url
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read_forever(), name=f"cdp-reader {url}")

    @classmethod
    async def open(cls, url: str, timeout: float = 10.0) -> CDPConnection:
        # Screenshots arrive as one base64 message of many megabytes: lift the 1 MiB default.
        ws = await asyncio.wait_for(
            connect(url, max_size=None, ping_interval=None, open_timeout=timeout, compression=None), timeout
        )
        return cls(ws, url)

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
        if self.closed:
            raise CDPClosedError(f"connection to {self.url} is closed")
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future)
        try:
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, timeout)
        except ConnectionClosed as exc:
            raise CDPClosedError(f"connection to {self.url} closed: {exc}") from exc
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
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        self._fail_pending("connection closed")

    async def _read_forever(self) -> None:
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                msg_id = message.get("id")
                if msg_id is not None:
                    self._resolve(msg_id, message)
                else:
                    self._dispatch(message)
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("CDP reader for %s failed", self.url)
        finally:
            self._closed.set()
            self._fail_pending("the browser closed the DevTools connection")

    def _resolve(self, msg_id: int, message: dict[str, Any]) -> None:
        entry = self._pending.get(msg_id)
        if entry is None:
            return
        method, future = entry
        if future.done():
            return
        if "error" in message:
            future.set_exception(CDPError(method, message["error"]))
        else:
            future.set_result(message.get("result", {}))

    def _dispatch(self, message: dict[str, Any]) -> None:
        for handler in list(self._handlers.get(message.get("method", ""), ())):
            try:
                handler(message.get("params", {}), message.get("sessionId"))
            except Exception:
                log.exception("CDP event handler for %s failed", message.get("method"))

    def _fail_pending(self, reason: str) -> None:
        for method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(CDPClosedError(f"{method}: {reason}"))
