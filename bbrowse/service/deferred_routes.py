"""Routes built after the service listens: what the first request needs first, the rest as soon as it is served.

Importing an area's module builds its routes (FastAPI reads every handler's signature), most of what the
service does before it can answer, while an app that has just started the service only lists the sessions.
`bbrowse serve` builds the sessions area before it serves, and the others in order a second later, or at once
when a request comes for a route not built yet. Either way the app ends with the same routes in the same order.
(The figures are in docs/decisions.md, "Start-up, fifth session".)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

#: Seconds after start-up before the rest is built unasked: the requests already waiting are served first, and
#: the app that started the service, loading on the other core, has drawn its first screen.
REST_AFTER_SECONDS = 1.0


class DeferredRoutes:
    """The routes still to build (`build_rest` includes them), and whether they are built yet."""

    def __init__(self, build_rest: Callable[[], None], built: Callable[[Scope], bool]) -> None:
        """`built(scope)`: whether a route built so far takes this request."""
        self._build_rest: Callable[[], None] | None = build_rest
        self._built = built

    @property
    def complete(self) -> bool:
        return self._build_rest is None

    def finish(self) -> None:
        """Build what is left (idempotent)."""
        build, self._build_rest = self._build_rest, None
        if build is not None:
            build()

    def finish_soon(self) -> None:
        """From the lifespan's start-up: build the rest once the requests already waiting had their turn."""
        asyncio.get_running_loop().call_later(REST_AFTER_SECONDS, self.finish)

    def needed_for(self, scope: Scope) -> bool:
        return not self.complete and not self._built(scope)


class DeferredRoutesMiddleware:
    """The outermost layer while routes are still to be built: a request no built route takes builds them first."""

    def __init__(self, app: ASGIApp, routes: DeferredRoutes) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and self.routes.needed_for(scope):
            self.routes.finish()
        await self.app(scope, receive, send)


def takes(routes: Iterable[BaseRoute], scope: Scope) -> bool:
    """Whether one of `routes` (each one route, not an included router) takes the request fully."""
    return any(route.matches(scope)[0] is Match.FULL for route in routes)
