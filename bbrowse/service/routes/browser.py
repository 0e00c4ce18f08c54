"""The browser area: each session's Chromium, replays (start, stop, list, download) and the replay viewer.

Screenshots are `routes.screenshot` (served by the session's VM endpoint too; replays are not).

Every new session gets its own Chromium (`browsers.BrowserManager`), and its teardown stops its
recording before closing its browser (`state.build_state`). Replays outlive their session (see
`recorder`): listing and downloading them works for deleted sessions too.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from bbrowse.service.errors import ServiceError, not_found
from bbrowse.service.openapi import errors
from bbrowse.service.recorder import ReplayRecord, ReplayState
from bbrowse.service.replay_view import VIDEO_PATH, VIEW_PATH, viewer_page
from bbrowse.service.state import ActiveSession, AnySession, ServiceState, State
from bbrowse.wire import Replay, ReplayStartRequest

#: Every documented route addresses a session: 404 when unknown.
router = APIRouter(tags=["browser"], responses=errors(404))

#: Seconds a client should wait before asking again for a replay that is still being finalised.
RETRY_AFTER_SECONDS = 1


# replays ----------------------------------------------------------------------


def _to_wire(state: ServiceState, record: ReplayRecord) -> Replay:
    return Replay(
        replay_id=record.replay_id,
        started_at=record.started_at,
        finished_at=record.finished_at,
        replay_view_url=state.replay_tokens.view_url(state.config.public_url, record.session_id, record.replay_id),
    )


@router.get("/browsers/{id_or_name}/replays", response_model=list[Replay], response_model_exclude_none=True)
async def list_replays(session: AnySession, state: State) -> list[Replay]:
    return [_to_wire(state, r) for r in state.replays.list(session)]


@router.post(
    "/browsers/{id_or_name}/replays", status_code=201, response_model=Replay, response_model_exclude_none=True,
    responses=errors(409, 410, 502, 503),
)
async def start_replay(session: ActiveSession, state: State, body: ReplayStartRequest | None = None) -> Replay:
    record = await state.replays.start(session, body or ReplayStartRequest())
    return _to_wire(state, record)


@router.post(
    "/browsers/{id_or_name}/replays/{replay_id}/stop", response_model=Replay, response_model_exclude_none=True
)
async def stop_replay(replay_id: str, session: AnySession, state: State) -> Replay:
    record = await state.replays.stop(session, replay_id)
    return _to_wire(state, record)


def _video_response(record: ReplayRecord, request: Request) -> Response:
    """The MP4 (Range requests honoured), 202 + Retry-After while it is being made, 500 if that failed."""
    if record.state is ReplayState.READY:
        return FileResponse(record.path, media_type="video/mp4", filename=f"{record.replay_id}.mp4",
                            content_disposition_type="inline")
    if record.state is ReplayState.FAILED:
        raise ServiceError(500, "internal_error", f"replay {record.replay_id} failed: {record.error}")
    doing = "still recording; stop it to get the video" if record.state is ReplayState.RECORDING else (
        "being finalised")
    return JSONResponse(
        {"replay_id": record.replay_id, "status": record.state.value, "message": f"replay is {doing}"},
        status_code=202, headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


@router.get(
    "/browsers/{id_or_name}/replays/{replay_id}",
    response_class=Response,
    responses={200: {"content": {"video/mp4": {}}}, 202: {"description": "still being finalised"}},
)
async def download_replay(replay_id: str, session: AnySession, state: State, request: Request) -> Response:
    return _video_response(state.replays.get(session, replay_id), request)


# viewer (authenticated by the jwt in its URL, not the bearer token) -----------


def _viewed_record(state: ServiceState, replay_id: str | None, token: str | None) -> tuple[ReplayRecord, str]:
    session_id = state.replay_tokens.verify(token, replay_id)
    assert replay_id is not None  # verify refuses a link without one
    record = state.replays.find(replay_id)
    if record is None or record.session_id != session_id:
        raise not_found(f"replay {replay_id!r} not found")
    assert token is not None
    return record, token


@router.get(VIEW_PATH, response_class=HTMLResponse, include_in_schema=False)
async def replay_view(
    state: State,
    replay_id: Annotated[str | None, Query()] = None,
    jwt: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    record, token = _viewed_record(state, replay_id, jwt)
    note = {
        ReplayState.RECORDING: "This replay is still recording; the page reloads when it is done.",
        ReplayState.FINALISING: "This replay is being finalised; the page reloads in a moment.",
        ReplayState.FAILED: f"This replay failed: {record.error}",
    }.get(record.state, "")
    page = viewer_page(record.replay_id, token, ready=record.state is ReplayState.READY, note=note,
                       reload=record.state is not ReplayState.FAILED)
    return HTMLResponse(page, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})


@router.get(VIDEO_PATH, response_class=Response, include_in_schema=False)
async def replay_view_video(
    state: State,
    request: Request,
    replay_id: Annotated[str | None, Query()] = None,
    jwt: Annotated[str | None, Query()] = None,
) -> Response:
    record, _ = _viewed_record(state, replay_id, jwt)
    return _video_response(record, request)


__all__ = ["router"]
