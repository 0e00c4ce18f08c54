"""Control and connection telemetry, seen from the HTTP side: an ASGI middleware around the app.

Every call made on a session (`/browsers/{id}/...` or its VM endpoint `/vm/{id}/...`) is recorded once
answered: the operation (named as Kernel's in-VM API names its handlers, e.g. `ComputerClickMouse`),
status, duration and a request id. As on Kernel, calls that drive the browser (`computer/*`,
`playwright/*`) are `control` `api_call`; calls that manage the VM (process, fs, logs, replays) are
`platform` `platform_api_call`, a category off by default; telemetry's own reads are neither. Each CDP
WebSocket (`/vm/{id}/cdp`) records `connection` `cdp_connect` and `cdp_disconnect` (`live_view_id`).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bbrowse.service.telemetry import TelemetryManager
from bbrowse.service.vm_token import VM_PREFIX

_PREFIXES = ("/browsers/", VM_PREFIX + "/")
#: Handlers that are not calls on the browser (telemetry's own reads).
_NOT_CALLS = frozenset({"telemetry_events", "telemetry_stream"})
#: The areas whose calls drive the browser (`control`); the others manage the VM (`platform`).
_CONTROL_AREAS = frozenset({"computer", "playwright"})
#: The request header by which a CDP client says it is a live view, and the id it gives (stable across reconnects).
LIVE_VIEW_HEADER = b"x-bbrowse-live-view"
_LIVE_VIEW_ID_MAX = 128


def session_of(path: str) -> tuple[str, str] | None:
    """(id or name, the rest) of a session-scoped path; None for other paths."""
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            sid, _, rest = path[len(prefix):].partition("/")
            return (sid, rest) if sid else None
    return None


def operation_name(endpoint: Any, rest: str) -> str:
    """`exec` under `process/...` -> `ProcessExec` (the area first, as Kernel names its handlers)."""
    words = (getattr(endpoint, "__name__", "") or "unknown").split("_")
    area = rest.split("/", 1)[0]
    if area and area not in words and area.removesuffix("s") not in words:
        words.insert(0, area)
    return "".join(word.capitalize() for word in words)


class TelemetryMiddleware:
    def __init__(self, app: ASGIApp, telemetry: TelemetryManager) -> None:
        self.app = app
        self.telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = session_of(scope.get("path", "")) if scope["type"] in ("http", "websocket") else None
        if target is None or not target[1] or self.telemetry.live_log(target[0]) is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            if target[1] == "cdp":
                await self._cdp(scope, receive, send, target[0])
            else:
                await self.app(scope, receive, send)
            return
        await self._call(scope, receive, send, target[0], target[1])

    async def _call(self, scope: Scope, receive: Receive, send: Send, sid: str, rest: str) -> None:
        started = time.perf_counter()
        status = 0

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            endpoint = scope.get("endpoint")
            name = getattr(endpoint, "__name__", "")
            telemetry = self.telemetry.live_log(sid)
            category, kind = ("control", "api_call") if rest.split("/", 1)[0] in _CONTROL_AREAS else \
                ("platform", "platform_api_call")
            if telemetry is not None and name not in _NOT_CALLS and telemetry.wants(category):
                telemetry.add(category, kind, {
                    "operation_id": operation_name(endpoint, rest),
                    "status": status or 500,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                    "request_id": secrets.token_hex(8),
                    "method": scope.get("method"), "path": scope.get("path"),
                }, kind="kernel_api")

    async def _cdp(self, scope: Scope, receive: Receive, send: Send, sid: str) -> None:
        started = time.monotonic()
        connection_id = secrets.token_hex(8)
        live_view = live_view_id(scope)
        accepted = False
        messages = 0
        reason = "context_cancelled"

        async def counting_receive() -> Message:
            nonlocal messages, reason
            message = await receive()
            if message["type"] == "websocket.receive":
                messages += 1
            elif message["type"] == "websocket.disconnect":
                reason = "client_close"
            return message

        async def counting_send(message: Message) -> None:
            nonlocal messages, accepted, reason
            if message["type"] == "websocket.accept" and not accepted:
                accepted = True
                telemetry = self.telemetry.live_log(sid)
                if telemetry is not None and live_view is not None:
                    telemetry.add("connection", "live_view_connect", {"session_id": live_view}, kind="kernel_api")
                elif telemetry is not None:
                    telemetry.add("connection", "cdp_connect", {"connection_id": connection_id}, kind="kernel_api")
            elif message["type"] == "websocket.send":
                messages += 1
            elif message["type"] == "websocket.close" and reason != "client_close":
                reason = "upstream_error" if message.get("code") == 1011 else "context_cancelled"
            await send(message)

        try:
            await self.app(scope, counting_receive, counting_send)
        finally:
            telemetry = self.telemetry.live_log(sid)
            duration_ms = round((time.monotonic() - started) * 1000, 3)
            if accepted and telemetry is not None and live_view is not None:
                telemetry.add("connection", "live_view_disconnect", {"session_id": live_view,
                                                                     "duration_ms": duration_ms}, kind="kernel_api")
            elif accepted and telemetry is not None:
                telemetry.add("connection", "cdp_disconnect", {
                    "connection_id": connection_id, "reason": reason, "message_count": messages,
                    "duration_ms": duration_ms,
                }, kind="kernel_api")


def live_view_id(scope: Scope) -> str | None:
    """The live view id a CDP WebSocket's request names (`X-Bbrowse-Live-View`), or None for another client.

    A connection that names one records `live_view_connect` and `live_view_disconnect` instead of
    `cdp_connect` / `cdp_disconnect`. bbrowse serve's live view is a CDP screencast, not Kernel's WebRTC
    page, so the client names it: the service cannot tell a viewer from another client's screencast
    (Playwright's videos use `Page.startScreencast` too), and a header is ignored by every other server
    the URL may lead to."""
    for name, value in scope.get("headers") or ():
        if name == LIVE_VIEW_HEADER:
            text = value.decode("latin-1").strip()[:_LIVE_VIEW_ID_MAX]
            return text or None
    return None
