"""Signed replay view URLs and the page they open.

`replay_view_url` must open in a plain browser, which sends no bearer token, so it carries its own
proof: an HS256 `jwt` (PyJWT) naming the session, the replay and an expiry, signed with a secret the
service draws at startup and never writes anywhere. The auth middleware lets `/replay-view` through;
these routes verify the jwt themselves and answer 401 `unauthorized` when it is missing, tampered with,
expired, or made for another replay. URLs stop working when the service restarts (its replay list does
too); listing replays again gives fresh URLs.
"""

from __future__ import annotations

import html
from urllib.parse import urlencode

from bbrowse.service.errors import unauthorized
from bbrowse.service.signed_tokens import SignedTokens, TokenExpiredError, TokenInvalidError

#: How long a view URL stays valid; each replay list hands out fresh ones.
TOKEN_TTL_SECONDS = 24 * 3600
VIEW_PATH = "/replay-view"
VIDEO_PATH = "/replay-view/video"


class ReplayTokens:
    def __init__(self, secret: bytes | None = None, ttl_seconds: int = TOKEN_TTL_SECONDS) -> None:
        self._tokens = SignedTokens(secret, ttl_seconds)

    def sign(self, session_id: str, replay_id: str, ttl_seconds: int | None = None) -> str:
        return self._tokens.encode({"session_id": session_id, "replay_id": replay_id}, ttl_seconds=ttl_seconds)

    def verify(self, token: str | None, replay_id: str | None) -> str:
        """The session id the token grants `replay_id` of; 401 `unauthorized` otherwise."""
        if not token:
            raise unauthorized("this replay link needs its `jwt` query parameter")
        try:
            claims = self._tokens.decode(token, ["session_id", "replay_id"])
        except TokenExpiredError:
            raise unauthorized("this replay link has expired; list the replays again for a fresh one") from None
        except TokenInvalidError:
            raise unauthorized("this replay link's `jwt` is not valid") from None
        if not replay_id or claims["replay_id"] != replay_id:
            raise unauthorized("this replay link's `jwt` was issued for another replay")
        return str(claims["session_id"])

    def query(self, session_id: str, replay_id: str) -> str:
        return urlencode({"replay_id": replay_id, "jwt": self.sign(session_id, replay_id)})

    def view_url(self, public_url: str, session_id: str, replay_id: str) -> str:
        return f"{public_url.rstrip('/')}{VIEW_PATH}?{self.query(session_id, replay_id)}"


def viewer_page(replay_id: str, token: str, ready: bool, note: str = "", reload: bool = True) -> str:
    """The HTML a replay link opens: the video when it is ready, else a note (reloading while it may change).

    A minimal document with a `<video>` whose source is `/replay-view/video`, checked with the same token
    (the video route serves Range requests, so seeking works)."""
    title = html.escape(f"bbrowse replay {replay_id}")
    src = html.escape(f"{VIDEO_PATH}?{urlencode({'replay_id': replay_id, 'jwt': token})}")
    if ready:
        body = f'<video src="{src}" controls autoplay muted playsinline></video>'
        refresh = ""
    else:
        body = f"<p>{html.escape(note or 'This replay is not ready yet.')}</p>"
        refresh = '<meta http-equiv="refresh" content="2">' if reload else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
{refresh}
<title>{title}</title>
<style>
  body {{ margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }}
  header {{ padding: 8px 12px; }}
  main {{ display: flex; justify-content: center; }}
  video {{ max-width: 100vw; max-height: calc(100vh - 40px); background: #000; }}
</style>
</head>
<body>
<header>{title}</header>
<main>{body}</main>
</body>
</html>
"""
