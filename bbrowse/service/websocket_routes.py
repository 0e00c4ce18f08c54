"""What the WebSocket routes (process `attach`, `cdp_ws_url`) share: refusing an upgrade, running both ways.

An upgrade is refused the way an HTTP route refuses a request, with a real status and a JSON body, for
what the route finds wrong before it accepts: an unknown session, a process that is not PTY-backed, a
browser that is down. A server without the denial-response extension closes the socket instead, with
`4000 + status` and the message. Once accepted, a session is two tasks, one per direction, and ends
when either does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Iterator
from typing import Any

from fastapi import WebSocket
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from bbrowse.service.errors import ServiceError, error_body

#: The most bytes a WebSocket close reason may carry.
CLOSE_REASON_BYTES = 123


async def deny_upgrade(websocket: WebSocket, exc: ServiceError, kernel_body: BaseModel | None = None) -> None:
    """Answer the upgrade with `exc`: the contract's error body, or `kernel_body` (--kernel-compat's shape)."""
    await websocket.receive()  # websocket.connect
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        if kernel_body is not None:
            body = kernel_body.model_dump()
        else:
            body = error_body(exc.status, exc.code, exc.message, exc.details)
        await websocket.send_denial_response(JSONResponse(body, status_code=exc.status))
    else:
        await websocket.close(code=4000 + exc.status, reason=close_reason(exc.message))


def close_reason(reason: str) -> str:
    """`reason` cut to what a WebSocket close frame can carry (ending in `...` when cut)."""
    encoded = reason.encode()
    return reason if len(encoded) <= CLOSE_REASON_BYTES else encoded[:120].decode(errors="ignore") + "..."


async def until_one_ends(tasks: Collection[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Wait until one of `tasks` ends, cancel the others and wait for them; the tasks that had ended by then."""
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return done


#: What Kernel's VM says when it shuts down with sockets open (`main.go`, `wsdrain.CloseAll`).
GOING_AWAY_CODE = 1001
GOING_AWAY_REASON = "browser shutting down"


class WebSocketRegistry:
    """Open `attach` and CDP sockets by session, so a VM going away closes them as Kernel's does (1001)."""

    def __init__(self) -> None:
        self._open: dict[WebSocket, str] = {}

    @contextlib.contextmanager
    def track(self, session_id: str, websocket: WebSocket) -> Iterator[None]:
        self._open[websocket] = session_id
        try:
            yield
        finally:
            self._open.pop(websocket, None)

    async def close_all(self, session_id: str | None = None) -> int:
        """Close every tracked socket (of `session_id`, or all) with 1001; the first close wins."""
        closing = [ws for ws, sid in self._open.items() if session_id is None or sid == session_id]
        for websocket in closing:
            self._open.pop(websocket, None)
            with contextlib.suppress(Exception):
                await websocket.close(code=GOING_AWAY_CODE, reason=GOING_AWAY_REASON)
        return len(closing)
