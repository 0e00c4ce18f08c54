"""Direct routing to a session's VM, as the official Kernel SDK does it (`kernel/lib/browser_routing`).

Kernel's cloud serves a session's `process/*`, `fs/*`, `logs/stream` and `computer/*` from the session's
own VM, at the Browser object's `base_url`, authenticated by the `jwt` of its `cdp_ws_url`:

    /browsers/{id}/process/spawn   ->   {base_url}/process/spawn?jwt=<jwt>   (no Authorization header)

Every Browser object the client reads teaches the `RouteCache` where that session's VM is. A session
without a `base_url` or a `jwt` (an older `bbrowse serve`) has no route: its calls stay on the control
plane. A route the VM refuses (401/403) is dropped and the call sent once to the control plane (`Transport`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit

ENV_SUBRESOURCES = "KERNEL_BROWSER_ROUTING_SUBRESOURCES"
#: The SDK's default: what the VM serves (bbrowse serve has no `curl`, `playwright` or telemetry,
#: which are then simply 404 on the VM as on the control plane).
DEFAULT_SUBRESOURCES: tuple[str, ...] = (
    "curl", "telemetry/stream", "computer", "playwright", "process", "fs", "logs/stream",
)


@dataclass(frozen=True)
class Route:
    """Where one session's VM answers: `base_url` (no trailing slash) and the token it accepts."""

    session_id: str
    base_url: str
    jwt: str

    def url(self, tail: str) -> str:
        """`tail` is the path after `/browsers/{id}/`, e.g. `process/spawn`."""
        return f"{self.base_url}/{tail.lstrip('/')}"

    def websocket_url(self, tail: str) -> str:
        url = self.url(tail)
        if url.startswith("https://"):
            url = "wss://" + url[len("https://"):]
        elif url.startswith("http://"):
            url = "ws://" + url[len("http://"):]
        return f"{url}?jwt={quote(self.jwt, safe='')}"


def subresources_from_env(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What goes direct: `KERNEL_BROWSER_ROUTING_SUBRESOURCES` (comma-separated, empty for none), exactly
    as for the SDK, else `DEFAULT_SUBRESOURCES`."""
    raw = (os.environ if env is None else env).get(ENV_SUBRESOURCES)
    if raw is None:
        return DEFAULT_SUBRESOURCES
    return tuple(part.strip().strip("/") for part in raw.split(",") if part.strip().strip("/"))


def jwt_from_cdp_ws_url(cdp_ws_url: str | None) -> str | None:
    if not cdp_ws_url:
        return None
    values = parse_qs(urlsplit(cdp_ws_url).query).get("jwt")
    return values[0].strip() if values and values[0].strip() else None


def route_from_browser(browser: object) -> Route | None:
    """The route a Browser object (model or mapping) announces, or None when it announces none."""
    def field(name: str) -> object:
        if isinstance(browser, Mapping):
            return browser.get(name)
        return getattr(browser, name, None)

    session_id, base_url, cdp = field("session_id"), field("base_url"), field("cdp_ws_url")
    if not isinstance(session_id, str) or not session_id.strip():
        return None
    if not isinstance(base_url, str) or not base_url.strip().startswith(("http://", "https://")):
        return None
    jwt = jwt_from_cdp_ws_url(cdp) if isinstance(cdp, str) else None
    if not jwt:
        return None
    return Route(session_id.strip(), base_url.strip().rstrip("/"), jwt)


def split_session_path(path: str) -> tuple[str, str] | None:
    """`/browsers/{id}/{tail}` -> (id unquoted, tail); None for any other path."""
    parts = path.strip("/").split("/", 2)
    if len(parts) < 3 or parts[0] != "browsers" or not parts[1] or not parts[2]:
        return None
    return unquote(parts[1]), parts[2]


def is_direct(tail: str, subresources: tuple[str, ...]) -> bool:
    """Whether `tail` falls under one of `subresources`, on segment boundaries (as the SDK matches)."""
    tail = tail.strip("/")
    return any(tail == prefix or tail.startswith(prefix + "/") for prefix in subresources)


class RouteCache:
    """Routes by session id. Only ids: a name can be reused by a later session, and a stale alias
    would send that session's calls to another session's VM."""

    def __init__(self, subresources: tuple[str, ...] = DEFAULT_SUBRESOURCES) -> None:
        self.subresources = subresources
        self._routes: dict[str, Route] = {}

    def learn(self, browser: object) -> Route | None:
        """Remember the route a Browser object announces; a deleted session's route is forgotten."""
        deleted = browser.get("deleted_at") if isinstance(browser, Mapping) else getattr(browser, "deleted_at", None)
        route = route_from_browser(browser)
        if route is None:
            return None
        if deleted:
            self.forget(route.session_id)
            return None
        self._routes[route.session_id] = route
        return route

    def remember(self, route: Route) -> None:
        self._routes[route.session_id] = route

    def get(self, session_id: str) -> Route | None:
        return self._routes.get(session_id.strip())

    def for_path(self, path: str) -> tuple[Route, str] | None:
        """(route, tail) when `path` is a direct subresource of a session with a known route."""
        split = split_session_path(path)
        if split is None or not is_direct(split[1], self.subresources):
            return None
        route = self.get(split[0])
        return (route, split[1]) if route is not None else None

    def forget(self, session_id: str, jwt: str | None = None) -> bool:
        """Drop a session's route (only if it still carries `jwt`, when given: a fresher one stays)."""
        route = self.get(session_id)
        if route is None or (jwt is not None and route.jwt != jwt):
            return False
        del self._routes[route.session_id]
        return True

    def __len__(self) -> int:
        return len(self._routes)

    def __contains__(self, session_id: object) -> bool:
        return isinstance(session_id, str) and self.get(session_id) is not None
