"""`/browsers`: create, list (paged), get, delete.

Every Browser object handed out carries the session's VM endpoint, `base_url` (`{service}/vm/{id}`), and a
`cdp_ws_url` through the service (`ws://{service}/vm/{id}/cdp?jwt=...`) whose `jwt` is freshly minted
for that session: clients take it from there for every call to `base_url` (the official SDKs route
process/*, fs/*, logs/stream and computer/* there by default). The service URL is the one the request
came to (its Host), so a client behind a tunnel or on another interface gets URLs it can reach.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from bbrowse.service.openapi import errors
from bbrowse.service.sessions import Session
from bbrowse.service.state import ActiveSession, State, service_state
from bbrowse.service.vm_token import cdp_ws_url, vm_base_url
from bbrowse.wire import (
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    Browser,
    BrowserCreateRequest,
    SessionStatusFilter,
)

router = APIRouter(tags=["browsers"])


def public_url(request: Request) -> str:
    """The service's URL as this client reached it (scheme, Host, root path)."""
    return str(request.base_url).rstrip("/") or service_state(request).config.public_url


def browser_object(request: Request, session: Session) -> Browser:
    """The session as a Browser, with its VM endpoint and a `cdp_ws_url` carrying a fresh session jwt."""
    url, sid = public_url(request), session.session_id
    token = service_state(request).vm_tokens.mint(sid)
    return session.to_wire().model_copy(update={"base_url": vm_base_url(url, sid),
                                                "cdp_ws_url": cdp_ws_url(url, sid, token)})


@router.post("/browsers", response_model=Browser, response_model_exclude_none=True, responses=errors(409, 503))
async def create_browser(
    request: Request, state: State, body: BrowserCreateRequest | None = None
) -> Browser:
    session = await state.sessions.create(body or BrowserCreateRequest())
    return browser_object(request, session)


@router.get("/browsers", response_model=list[Browser], response_model_exclude_none=True)
async def list_browsers(
    request: Request,
    response: Response,
    state: State,
    limit: Annotated[int, Query(ge=1, le=LIST_LIMIT_MAX)] = LIST_LIMIT_DEFAULT,
    offset: Annotated[int, Query(ge=0)] = 0,
    query: str | None = None,
    status: SessionStatusFilter = SessionStatusFilter.ACTIVE,
    include_deleted: bool = False,
) -> list[Browser]:
    if include_deleted and status is SessionStatusFilter.ACTIVE:
        status = SessionStatusFilter.ALL
    sessions = state.sessions.list(status, query)
    page = sessions[offset : offset + limit]
    has_more = offset + len(page) < len(sessions)
    response.headers["X-Has-More"] = "true" if has_more else "false"
    response.headers["X-Next-Offset"] = str(offset + len(page)) if has_more else "0"
    return [browser_object(request, s) for s in page]


@router.get(
    "/browsers/{id_or_name}", response_model=Browser, response_model_exclude_none=True, responses=errors(404, 410)
)
async def get_browser(
    id_or_name: str, request: Request, state: State, include_deleted: bool = False
) -> Browser:
    return browser_object(request, state.sessions.get(id_or_name, include_deleted=include_deleted))


@router.delete("/browsers/{id_or_name}", status_code=204, response_class=Response, responses=errors(404, 410))
async def delete_browser(session: ActiveSession, state: State) -> Response:
    await state.sessions.delete(session)
    return Response(status_code=204)
