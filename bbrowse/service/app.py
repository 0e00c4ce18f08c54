"""The ASGI app of `bbrowse serve`: routers, auth, error shapes, access log, lifespan.

Every failure leaves here in one of the contract's two shapes: `ServiceError`s as they are,
validation failures as 400 `bad_request` with a `details` entry per field, unknown routes as 404,
and anything unexpected as a 500 whose traceback goes to the service log, never to the client.
Under a session's VM endpoint (`/vm/{session_id}/...`) in `--kernel-compat`, the same failures are
answered as Kernel's in-VM server answers them: `{"message": ...}` (wire `VmError`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
import warnings
from collections.abc import AsyncIterator, Iterable, Iterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError, WebSocketRequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic.warnings import UnsupportedFieldAttributeWarning
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from bbrowse import __version__
from bbrowse.service.auth import BearerAuthMiddleware
from bbrowse.service.config import ServiceConfig
from bbrowse.service.deferred_routes import DeferredRoutes, DeferredRoutesMiddleware, takes
from bbrowse.service.errors import ServiceError, error_body
from bbrowse.service.openapi import service_openapi
from bbrowse.service.state import build_state, service_state
from bbrowse.service.telemetry import TelemetryManager
from bbrowse.service.telemetry_http import TelemetryMiddleware
from bbrowse.service.unknown_fields import UnknownFieldsIgnored
from bbrowse.service.vm_endpoint import is_vm_path, is_vm_served, mirror
from bbrowse.service.worker_threads import start_worker_threads
from bbrowse.wire import ErrorDetail, VmError

log = logging.getLogger("bbrowse.service")
access_log = logging.getLogger("bbrowse.access")

#: Every area of the API: a module with a `router`; what its handlers use is in `state.ServiceState`.
#: A router marked with `vm_endpoint.vm_served(...)` (process, fs, logs, computer) is mounted twice: under
#: `/browsers/{id_or_name}/` as written, and under each session's VM endpoint `/vm/{id_or_name}/`,
#: authenticated there by the session's `jwt` alone. A new area (e.g. more computer/* or fs/* routes)
#: only needs its module listed here, and `vm_served(APIRouter(...))` if the VM serves it; nothing else
#: to do for the `/vm` copy. A new part the handlers need is a field of `ServiceState`, made in `build_state`.
#: The first area is built before the service serves, the others may be built just after (`deferred_routes`).
AREAS = tuple(f"bbrowse.service.{name}" for name in (
    "routes.sessions", "routes.processes", "routes.files", "routes.fs_write", "routes.fs_watch", "routes.logs",
    "routes.screenshot", "routes.browser", "routes.computer", "cdp_proxy", "routes.telemetry",
))


def create_app(config: ServiceConfig, *, defer_routes: bool = False) -> FastAPI:
    """The service's app. `defer_routes` (`bbrowse serve`): only the sessions' routes are built now, the others
    once it serves (`bbrowse.service.deferred_routes`); the app is the same either way."""
    # FastAPI reads each body under the alias "body"; with the wire models built on first use (WireModel),
    # pydantic takes that alias for a misplaced one and warns at the first request (pydantic#12356).
    warnings.filterwarnings("ignore", message="The 'alias' attribute with value 'body'",
                            category=UnsupportedFieldAttributeWarning)
    state = build_state(config)
    telemetry = TelemetryManager(state.sessions)  # before the startup hooks: restored sessions record too
    telemetry.install()
    state.shutdown.append(telemetry.stop)

    deferred = DeferredRoutes(lambda: _include_areas(app, AREAS[1:]),
                              built=lambda scope: takes(flat_routes(app.routes), scope))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await start_worker_threads()
        state.sessions.start_reaper()
        for start in state.startup:
            await start()
        deferred.finish_soon()  # after the requests already waiting, which come next
        log.info("bbrowse %s serving (state in %s)", __version__, config.state_dir)
        try:
            yield
        finally:
            await state.sessions.stop_reaper()
            await state.sessions.delete_all()
            for stop in reversed(state.shutdown):
                with contextlib.suppress(Exception):
                    await stop()
            log.info("bbrowse stopped")

    app = FastAPI(
        title="Browser Instance Control Service (bbrowse)",
        version="0.1.0",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.service = state
    app.state.telemetry = telemetry
    _include_areas(app, AREAS[:1])
    if not defer_routes:
        deferred.finish()

    def openapi() -> dict:
        """The errors the service really answers, and the bearer scheme (FastAPI's documented way to replace the
        schema), of every route."""
        deferred.finish()
        return service_openapi(app)

    app.openapi = openapi  # type: ignore[method-assign]
    _install_error_handlers(app)
    if config.kernel_compat:  # innermost: Go's decoder skips unknown fields, the default refuses them
        app.add_middleware(UnknownFieldsIgnored, routes=lambda: flat_routes(app.routes))
    app.add_middleware(TelemetryMiddleware, telemetry=telemetry)
    app.add_middleware(BearerAuthMiddleware, token=config.token, vm_tokens=state.vm_tokens)
    app.add_middleware(AccessLogMiddleware)
    if not deferred.complete:
        app.add_middleware(DeferredRoutesMiddleware, routes=deferred)
    return app


def _include_areas(app: FastAPI, modules: Iterable[str]) -> None:
    """Each area's routes (importing its module builds them), and their copy under the VM endpoint if it has one.
    The telemetry area has two routers: its stream is served under the VM endpoint too."""
    for module in map(importlib.import_module, modules):
        for router in (module.router, getattr(module, "stream_router", None)):
            if router is None:
                continue
            app.include_router(router)
            if is_vm_served(router):
                app.include_router(mirror(router))


def _json_error(
    request: Request, status: int, code: str, message: str, details=None, headers=None
) -> JSONResponse:
    """The contract's shape for `status`, or, under a VM endpoint in --kernel-compat, Kernel's in-VM `{"message"}`."""
    if kernel_vm_request(request):
        return JSONResponse(VmError(message=message).model_dump(), status_code=status, headers=headers)
    return JSONResponse(error_body(status, code, message, details), status_code=status, headers=headers)


def kernel_vm_request(request: Request) -> bool:
    """Whether this request reached a session's VM endpoint of a service running with --kernel-compat."""
    return is_vm_path(request.url.path) and service_state(request).config.kernel_compat


def _field_name(loc: tuple) -> str:
    """`("body", "cwd")` -> `cwd`; only the leading location kind is dropped (a query can be named `path`)."""
    if loc and loc[0] in ("body", "query", "path", "header", "cookie"):
        loc = loc[1:]
    return ".".join(str(p) for p in loc) or "body"


def validation_details(errors: list[dict]) -> list[ErrorDetail]:
    details = []
    for err in errors:
        field = _field_name(tuple(err.get("loc", ())))
        msg = err.get("msg", "invalid")
        if err.get("type") == "json_invalid":
            field, msg = "body", "request body is not valid JSON"
        elif err.get("type") == "missing":
            msg = "field required"
        msg = msg.removeprefix("Value error, ")
        details.append(ErrorDetail(code="invalid_input", message=f"{field}: {msg}"))
    return details


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return _json_error(request, exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        if kernel_vm_request(request) and any(map(_is_binding_error, exc.errors())):
            return _go_binding_error(list(exc.errors()))
        details = validation_details(list(exc.errors()))
        summary = "; ".join(d.message for d in details if d.message)
        return _json_error(request, 400, "bad_request", f"invalid request: {summary}", details)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and kernel_vm_request(request):
            return _go_text(404, "404 page not found")  # chi's NotFound (Go's http.NotFound)
        if exc.status_code == 404:
            return _json_error(request, 404, "not_found", f"no route for {request.method} {request.url.path}")
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        headers = exc.headers
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
        return _json_error(request, exc.status_code, "invalid_request", message, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _json_error(request, 500, "internal_error", f"internal error: {type(exc).__name__}")

    # WebSocket validation errors close the socket; the route validates its own input instead.
    _ = WebSocketRequestValidationError


def _go_text(status: int, message: str) -> PlainTextResponse:
    """What Go's `http.Error` writes: the message and a newline, as text/plain."""
    return PlainTextResponse(message + "\n", status_code=status, headers={"X-Content-Type-Options": "nosniff"})


def _is_binding_error(error: dict) -> bool:
    """What Go fails to decode or bind (bad JSON, a value of the wrong type), not what a handler checks."""
    kind = str(error.get("type", ""))
    return kind == "json_invalid" or kind.endswith(("_type", "_parsing"))


def _go_binding_error(errors: list[dict]) -> PlainTextResponse:
    """Kernel's VM (`oapi.go` 14535-14539, 17204-17209): a body it cannot decode, or a parameter it cannot
    bind, is answered by the generated wrapper with `http.Error(w, err.Error(), 400)`: text/plain."""
    first = next(e for e in errors if _is_binding_error(e))
    loc = tuple(first.get("loc", ()))
    if loc and loc[0] == "body":
        return _go_text(400, f"can't decode JSON body: {first.get('msg', 'invalid')}")
    return _go_text(400, f"Invalid format for parameter {_field_name(loc)}: {first.get('msg', 'invalid')}")


def flat_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """Every route of the app, one by one: FastAPI (0.165+) lists an included router as one entry."""
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is None:
            yield route
        else:
            for context in contexts():
                yield context.original_route


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of this path takes (Starlette's 405 names only the first route's)."""
    methods: set[str] = set()
    for route in flat_routes(request.app.routes):
        taken = getattr(route, "methods", None)
        if taken and route.matches(request.scope)[0] is not Match.NONE:
            methods |= taken
    return sorted(methods)


class AccessLogMiddleware:
    """Logs method, path (never the query string, which may carry a replay `jwt`), status, time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def send_wrapper(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            access_log.info(
                "%s %s %s %.1fms", scope["method"], scope["path"], status, (time.perf_counter() - started) * 1000
            )
