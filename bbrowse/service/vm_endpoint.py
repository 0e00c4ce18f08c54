"""A session's VM endpoint: the in-VM routes served a second time under `/vm/{session_id}/`.

Kernel's cloud has two planes: the control plane (`/browsers`, replays) and one endpoint per session
(`Browser.base_url`) serving `process/*`, `fs/*`, `logs/stream` and `computer/*`, authenticated by the
session's `jwt` instead of the API key. The official SDKs send those calls straight to `base_url`, so
`bbrowse serve` publishes the same two planes from one process, with the same handlers: a routes module
marks its router `vm_served(...)`, `create_app` adds its `mirror(router)`, and `BearerAuthMiddleware`
checks every `/vm/...` request (the CDP proxy's too) with `vm_refusal` instead of the bearer token.
The handlers do not know which plane called them; `is_vm_path` tells the error handlers.
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
    """Mark `router` as served by a session's VM endpoint too (under `/vm/{id}/` as well as `/browsers/{id}/`);
    its paths must start with `/browsers/{id_or_name}/`."""
    setattr(router, _MARK, True)
    return router


def is_vm_served(router: APIRouter) -> bool:
    return bool(getattr(router, _MARK, False))


def is_vm_path(path: str) -> bool:
    """Whether `path` is on the VM plane: the error handlers answer Kernel's VM shapes there in
    `--kernel-compat`."""
    return path == VM_PREFIX or path.startswith(VM_PREFIX + "/")


def vm_session_of(path: str) -> str:
    """The session id a `/vm/{session_id}/...` path addresses ("" when it names none)."""
    return path[len(VM_PREFIX) + 1 :].split("/", 1)[0] if is_vm_path(path) else ""


def vm_route_path(path: str) -> str:
    if not path.startswith(CONTROL_ROUTE_PREFIX):
        raise ValueError(f"a VM-served route must start with {CONTROL_ROUTE_PREFIX!r}, not {path!r}")
    return VM_ROUTE_PREFIX + path[len(CONTROL_ROUTE_PREFIX) :]


def mirror(router: APIRouter) -> APIRouter:
    """A router with a copy of each of `router`'s routes at `/vm/{id_or_name}/...`, same handler and options,
    left out of the OpenAPI document (the same operations, documented once).

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
    session. Exactly one `jwt` query parameter counts, whatever route follows; the bearer token opens
    nothing here."""
    query = scope.get("query_string", b"").decode("latin-1")
    values = [value for name, value in parse_qsl(query, keep_blank_values=True) if name == "jwt"]
    if len(values) > 1:
        return "give the `jwt` query parameter once"
    try:
        tokens.verify(values[0] if values else None, vm_session_of(scope.get("path", "")))
    except VmTokenError as refused:
        return str(refused)
    return None
