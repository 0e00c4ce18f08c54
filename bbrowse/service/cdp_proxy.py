"""`cdp_ws_url`: the session's Chromium DevTools, as a WebSocket served by `bbrowse serve` itself.

Chromium listens on no TCP port (it speaks CDP over a pipe, see `cdp`); this route is the only way in
from outside, at `/vm/{session_id}/cdp?jwt=...`, so it works from wherever the API works (Playwright's
`connect_over_cdp`, Puppeteer, a raw WebSocket). The session's `jwt` is checked before the upgrade by
`BearerAuthMiddleware` (`vm_endpoint.vm_refusal`): a bad token is answered 401 and never reaches this
module. Each WebSocket is one client of the browser's `CDPHub`, in a browser session of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect

from bbrowse.service.cdp import CDPClosedError, CDPError, CDPHub, Channel, Message
from bbrowse.service.errors import ServiceError, browser_unavailable
from bbrowse.service.state import active_session, service_state
from bbrowse.service.vm_token import VM_PREFIX
from bbrowse.service.websocket_routes import close_reason, deny_upgrade, until_one_ends
from bbrowse.wire import VmError

log = logging.getLogger("bbrowse.cdp_proxy")

#: Replies and events waiting for a client that does not read: past this it is disconnected, rather
#: than the service's memory growing (a screencast nobody reads fills this in about a minute).
MAX_QUEUED_CHARACTERS = 256 * 1024 * 1024
#: Close code when the browser went away under a client (as a server would on an internal failure).
BROWSER_GONE_CLOSE_CODE = 1011
SLOW_CLIENT_CLOSE_CODE = 1008

router = APIRouter()


@router.websocket(VM_PREFIX + "/{session_id}/cdp")
async def cdp_websocket(websocket: WebSocket, session_id: str) -> None:
    """The session's Chromium DevTools (CDP) for one client.

    The client sees the browser as if it were alone on it (ids and its session id are translated by the
    hub); any number of clients can be connected at once next to the service's own screenshots and
    recordings, and closing the WebSocket detaches what it attached. When Chromium goes away, every
    client's WebSocket is closed (1011, saying why); the next one to connect gets the new Chromium once
    the service has started it."""
    state = service_state(websocket)
    try:
        session = await active_session(session_id, websocket)
        hub = await state.browsers.browser(session).devtools()
        client = await ProxyClient.open(hub)
    except ServiceError as exc:
        kernel_body = VmError(message=exc.message) if state.config.kernel_compat else None
        await deny_upgrade(websocket, exc, kernel_body)
        return
    try:
        await websocket.accept()
        with session.in_use(control=True), state.websockets.track(session.session_id, websocket):
            await client.run(websocket)
    finally:
        client.close()


class ProxyClient:
    """One WebSocket's session on the hub: client text in, translated replies and events out, in order."""

    def __init__(self) -> None:
        self.channel: Channel | None = None
        #: Why the hub ended this client (the browser went away, or it read too slowly); None while it lives.
        self.end_reason: str | None = None
        self._outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._queued = 0

    @classmethod
    async def open(cls, hub: CDPHub) -> ProxyClient:
        client = cls()
        try:
            client.channel = await hub.open_channel(client._deliver, client._on_closed)
        except (CDPClosedError, CDPError, TimeoutError) as exc:
            raise browser_unavailable(f"Chromium did not take a new DevTools client: {exc}") from None
        return client

    async def run(self, websocket: WebSocket) -> None:
        """Until the client leaves or the hub ends it; then the WebSocket is closed saying why."""
        await until_one_ends([asyncio.create_task(self._send_out(websocket)),
                              asyncio.create_task(self._receive(websocket))])
        if self.end_reason is not None:
            code = SLOW_CLIENT_CLOSE_CODE if self.end_reason.startswith("the client") else BROWSER_GONE_CLOSE_CODE
            with contextlib.suppress(Exception):
                await websocket.close(code=code, reason=close_reason(self.end_reason))

    def close(self) -> None:
        """Detach from the browser (idempotent): its browser session and every session it attached end."""
        if self.channel is not None:
            self.channel.close()

    # hub -> client ---------------------------------------------------------

    def _deliver(self, message: Message) -> None:
        # ASCII with escapes: a lone surrogate (a JavaScript string may hold one) has no UTF-8 form.
        text = json.dumps(message, separators=(",", ":"))
        self._queued += len(text)
        if self._queued > MAX_QUEUED_CHARACTERS:
            self._on_closed(f"the client read too slowly ({self._queued // (1024 * 1024)} MiB waiting)")
            self.close()
            return
        self._outbox.put_nowait(text)

    def _on_closed(self, reason: str) -> None:
        if self.end_reason is None:
            self.end_reason = reason
            self._outbox.put_nowait(None)

    async def _send_out(self, websocket: WebSocket) -> None:
        while True:
            text = await self._outbox.get()
            if text is None:
                return
            self._queued -= len(text)
            await websocket.send_text(text)

    # client -> hub ---------------------------------------------------------

    async def _receive(self, websocket: WebSocket) -> None:
        assert self.channel is not None
        while True:
            frame = await websocket.receive()
            if frame["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(frame.get("code", 1000))
            text = frame.get("text")
            if text is None:
                text = (frame.get("bytes") or b"").decode("utf-8", errors="replace")
            message = _client_message(text)
            if isinstance(message, str):
                self._reply_error(_id_of(text), message)
                continue
            try:
                self.channel.send(message)
            except CDPClosedError:
                return

    def _reply_error(self, msg_id: Any, text: str) -> None:
        """Refuse a malformed message as Chromium does, without letting it onto the pipe."""
        reply: Message = {"error": {"code": -32600, "message": text}}
        if msg_id is not None:
            reply = {"id": msg_id, **reply}
        self._deliver(reply)


def _client_message(text: str) -> Message | str:
    """The client's command, or why it is not one (Chromium's wording where it has one)."""
    try:
        message = json.loads(text)
    except ValueError:
        return "Message must be a valid JSON"
    if not isinstance(message, dict):
        return "Message must be an object"
    if not isinstance(message.get("id"), int) or isinstance(message.get("id"), bool):
        return "Message must have integer 'id' property"
    if not isinstance(message.get("method"), str):
        return "Message must have string 'method' property"
    if "sessionId" in message and not isinstance(message["sessionId"], str):
        return "Message must have string 'sessionId' property"
    if "params" in message and not isinstance(message["params"], dict):
        return "Message must have object 'params' property"
    return message


def _id_of(text: str) -> Any:
    with contextlib.suppress(ValueError):
        message = json.loads(text)
        if isinstance(message, dict) and isinstance(message.get("id"), int):
            return message["id"]
    return None

