"""Bearer-token auth for every HTTP and WebSocket route, as a pure ASGI middleware.

It sits in front of routing so no route can forget it: unknown paths, the OpenAPI document and
WebSocket upgrades all need the token. Two exceptions carry their own signed `jwt` instead:

- the replay viewer, whose route checks its `jwt` (it still answers 401 without one);
- every path under a session's VM endpoint, `/vm/{session_id}/...` (`vm_endpoint`): checked here, before
  routing, so an in-VM route added later (or the CDP proxy) cannot forget it. The `jwt` must name that
  session; the bearer token opens nothing there.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from bbrowse.service.errors import error_body
from bbrowse.service.replay_view import VIDEO_PATH, VIEW_PATH
from bbrowse.service.vm_endpoint import is_vm_path, vm_refusal
from bbrowse.service.vm_token import VmTokens

#: These exact paths authenticate with a signed `jwt` query parameter instead. Exact, not a prefix: a
#: prefix also let `/replay-viewer`, `/replay-view-x` and any future `/replay-view...` route skip the token.
JWT_AUTH_PATHS: frozenset[str] = frozenset({VIEW_PATH, VIDEO_PATH})


def token_matches(header: str | None, token: str) -> bool:
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value:
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, token: str, vm_tokens: VmTokens) -> None:
        self.app = app
        self.token = token
        self.vm_tokens = vm_tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if path in JWT_AUTH_PATHS:
            await self.app(scope, receive, send)
            return
        if is_vm_path(path):
            refusal = vm_refusal(scope, self.vm_tokens)
            if refusal is None:
                await self.app(scope, receive, send)
            else:
                await _deny(scope, receive, send, f"session endpoint refused: {refusal}", bearer=False)
            return
        header = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value.decode("latin-1")
                break
        if token_matches(header, self.token):
            await self.app(scope, receive, send)
            return
        await _deny(scope, receive, send)


async def _deny(
    scope: Scope, receive: Receive, send: Send, message: str = "missing or invalid bearer token", bearer: bool = True
) -> None:
    body = json.dumps(error_body(401, "unauthorized", message)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if bearer:
        headers.append((b"www-authenticate", b'Bearer realm="bbrowse"'))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    # WebSocket: answer the upgrade with a real 401 where the server supports it, else refuse it.
    await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
