"""A session's VM endpoint: the in-VM routes served a second time under `/vm/{session_id}/`.

Kernel's cloud has two planes: the control plane (`/browsers`, replays) and one endpoint per session
(`Browser.base_url`) where `process/*`, `fs/*`, `logs/stream` and `computer/*` are served, authenticated
by the session's `jwt` instead of the API key. The official SDKs send those calls straight to
`base_url` (`/browsers/{id}/process/spawn` becomes `{base_url}/process/spawn?jwt=...`, no Authorization
header), so `bbrowse serve` publishes the same two planes from one process, with the same handlers:

- a routes module marks a router with `vm_served(...)`; its paths must start with `/browsers/{id_or_name}/`;
- `create_app` includes every area's router as usual and, for a marked one, `mirror(router)` as well: a
  copy of each route at `/vm/{id_or_name}/...` (left out of the OpenAPI document: the same operations,
  documented once). The handlers do not know which plane called them; `is_vm_path` tells the error
  handlers, which answer Kernel's VM shapes there in `--kernel-compat`.
- `BearerAuthMiddleware` sends every `/vm/...` request (HTTP and WebSocket, including the CDP proxy at
  `/vm/{session_id}/cdp`) through `vm_refusal` instead of the bearer check: the `jwt` query parameter
  must be valid and name the session of the path, whatever route follows.
"""

from __future__ import annotations

import copy
from urllib.parse import parse_qsl

from fastapi import APIRouter
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import BaseRoute, compile_path
from starlette.types import Scope

from bbrowse.service.vm_token import VM_PREFIX, VmTokenError, VmTokens

#: Every route of a VM-served router starts with this; its copy starts with `VM_ROUTE_PREFIX` instead.
CONTROL_ROUTE_PREFIX = "/browsers/{id_or_name}/"
VM_ROUTE_PREFIX = VM_PREFIX + "/{id_or_name}/"

_MARK = "_bbrowse_vm_served"


def vm_served(router: APIRouter) -> APIRouter:
    """Mark `router` as served by a session's VM endpoint too (under `/vm/{id}/` as well as `/browsers/{id}/`)."""
    setattr(router, _MARK, True)
    return router


def is_vm_served(router: APIRouter) -> bool:
    return bool(getattr(router, _MARK, False))


def is_vm_path(path: str) -> bool:
    return path == VM_PREFIX or path.startswith(VM_PREFIX + "/")


def vm_session_of(path: str) -> str:
    """The session id a `/vm/{session_id}/...` path addresses ("" when it names none)."""
    return path[len(VM_PREFIX) + 1 :].split("/", 1)[0] if is_vm_path(path) else ""


def vm_route_path(path: str) -> str:
    if not path.startswith(CONTROL_ROUTE_PREFIX):
        raise ValueError(f"a VM-served route must start with {CONTROL_ROUTE_PREFIX!r}, not {path!r}")
    return VM_ROUTE_PREFIX + path[len(CONTROL_ROUTE_PREFIX) :]


def mirror(router: APIRouter) -> APIRouter:
    """A router with a copy of each of `router`'s routes at `/vm/{id_or_name}/...`, same handler and options.

    Each copy is the route itself with its path changed: the handler, its parameters and its models
    are shared (both paths name the same `{id_or_name}`), not analysed a second time, which took most of
    the service's app building."""
    twins: list[BaseRoute] = []
    for route in router.routes:
        if not isinstance(route, APIRoute | APIWebSocketRoute):
            raise TypeError(f"cannot serve {route!r} on the VM endpoint: only API and WebSocket routes")
        twin = copy.copy(route)
        twin.path = vm_route_path(route.path)
        twin.path_regex, twin.path_format, twin.param_convertors = compile_path(twin.path)
        twin.name = f"vm_{route.name}"
        if isinstance(twin, APIRoute):
            twin.include_in_schema = False
        twins.append(twin)
    return APIRouter(routes=twins)


def vm_refusal(scope: Scope, tokens: VmTokens) -> str | None:
    """Why this `/vm/...` request may not pass (a message for the 401), or None when its `jwt` grants the path's
    session. Exactly one `jwt` query parameter counts; the bearer token opens nothing here."""
    query = scope.get("query_string", b"").decode("latin-1")
    values = [value for name, value in parse_qsl(query, keep_blank_values=True) if name == "jwt"]
    if len(values) > 1:
        return "give the `jwt` query parameter once"
    try:
        tokens.verify(values[0] if values else None, vm_session_of(scope.get("path", "")))
    except VmTokenError as refused:
        return str(refused)
    return None
