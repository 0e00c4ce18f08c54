"""Session-scoped tokens for a session's VM endpoint (`base_url`) and its `cdp_ws_url`.

Kernel's cloud serves `process/*`, `fs/*`, `logs/stream`, `computer/*` and the DevTools WebSocket from
one endpoint per session, authenticated by a `jwt` query parameter instead of the API key: the jwt is
the query parameter of the session's `cdp_ws_url`, and clients (the official SDKs, bbrowse's own)
take it from there. `bbrowse serve` does the same. A token names exactly one session, so a jwt used on
another session's endpoint is refused; it is HS256-signed with a secret the service draws at start
and never writes anywhere (a restarted service hands out new ones with every Browser object; old
ones answer 401, which makes the SDKs drop their cached route and retry on the control plane).
"""

from __future__ import annotations

from bbrowse.service.signed_tokens import SignedTokens, TokenExpiredError, TokenInvalidError

#: A Browser object is handed out with a fresh token every time it is read; this bounds a leaked one.
TOKEN_TTL_SECONDS = 24 * 3600
#: Where a session's VM endpoint lives under the service's own URL: `{service}/vm/{session_id}`.
VM_PREFIX = "/vm"
AUDIENCE = "bbrowse-vm"


class VmTokenError(Exception):
    """Why a VM token was refused, in words fit for a 401 body."""


class VmTokens:
    def __init__(self, secret: bytes | None = None, ttl_seconds: int = TOKEN_TTL_SECONDS) -> None:
        self._tokens = SignedTokens(secret, ttl_seconds)

    def mint(self, session_id: str, *, ttl_seconds: int | None = None, now: float | None = None) -> str:
        return self._tokens.encode({"sub": session_id, "aud": AUDIENCE}, ttl_seconds=ttl_seconds, now=now)

    def verify(self, token: str | None, session_id: str) -> None:
        """Return if `token` grants `session_id`'s endpoint; raise `VmTokenError` saying why not."""
        if not token:
            raise VmTokenError("this endpoint needs its `jwt` query parameter")
        try:
            claims = self._tokens.decode(token, ["sub", "aud"], audience=AUDIENCE)
        except TokenExpiredError:
            raise VmTokenError("the `jwt` has expired; read the browser session again for a fresh one") from None
        except TokenInvalidError:
            raise VmTokenError("the `jwt` is not valid") from None
        if claims["sub"] != session_id:
            raise VmTokenError("the `jwt` was issued for another browser session")


def vm_base_url(public_url: str, session_id: str) -> str:
    """The session's VM endpoint (Browser.base_url): clients append `process/spawn`, `fs/read_file`, ..."""
    return f"{public_url.rstrip('/')}{VM_PREFIX}/{session_id}"


def cdp_ws_url(public_url: str, session_id: str, token: str) -> str:
    """The DevTools WebSocket through the service (never Chromium's own port), carrying the session's jwt."""
    base = vm_base_url(public_url, session_id)
    scheme, _, rest = base.partition("://")
    ws_scheme = "wss" if scheme == "https" else "ws"
    return f"{ws_scheme}://{rest}/cdp?jwt={token}"
