"""`/browsers`: create, list (paged), get, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from bbrowse.service.openapi import errors
from bbrowse.service.state import ServiceState, service_state
from bbrowse.wire import (
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    Browser,
    BrowserCreateRequest,
    SessionStatusFilter,
)

router = APIRouter(tags=["browsers"])


def install(state: ServiceState) -> None:
    # The first startup hook (sessions is the first area): every other part's hooks are registered by now.
    state.startup.append(state.sessions.restore)


def _state(request: Request) -> ServiceState:
    return service_state(request)


@router.post("/browsers", response_model=Browser, response_model_exclude_none=True, responses=errors(409, 503))
async def create_browser(
    state: Annotated[ServiceState, Depends(_state)], body: BrowserCreateRequest | None = None
) -> Browser:
    session = await state.sessions.create(body or BrowserCreateRequest())
    return session.to_wire()


@router.get("/browsers", response_model=list[Browser], response_model_exclude_none=True)
async def list_browsers(
    response: Response,
    state: Annotated[ServiceState, Depends(_state)],
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
    return [s.to_wire() for s in page]


@router.get(
    "/browsers/{id_or_name}", response_model=Browser, response_model_exclude_none=True, responses=errors(404, 410)
)
async def get_browser(
    id_or_name: str, state: Annotated[ServiceState, Depends(_state)], include_deleted: bool = False
) -> Browser:
    return state.sessions.get(id_or_name, include_deleted=include_deleted).to_wire()


@router.delete("/browsers/{id_or_name}", status_code=204, response_class=Response, responses=errors(404, 410))
async def delete_browser(id_or_name: str, state: Annotated[ServiceState, Depends(_state)]) -> Response:
    session = state.sessions.get(id_or_name)
    await state.sessions.delete(session)
    return Response(status_code=204)
