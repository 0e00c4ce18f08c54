"""`/browsers/{id_or_name}/computer/...`: mouse, keyboard, clipboard, cursor and batches (not screenshots).

Served by the session's VM endpoint too (`/vm/{id}/computer/...`), as Kernel's cloud serves them.
Answers as the cloud's do: 200 with an empty body for actions, JSON for what is read. The work
is in `bbrowse.service.computer` (`ServiceState.computer`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from bbrowse.service.computer import ComputerManager
from bbrowse.service.openapi import OpenApiResponses, errors
from bbrowse.service.state import ActiveSession, State
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire import OkResponse
from bbrowse.wire.computer import (
    BatchRequest,
    ClickMouseRequest,
    ClipboardContent,
    DragMouseRequest,
    MousePosition,
    MoveMouseRequest,
    PressKeyRequest,
    ScrollRequest,
    SetCursorRequest,
    TypeTextRequest,
    WriteClipboardRequest,
)
from bbrowse.wire.computer_routes import COMPUTER, ComputerRoute

PREFIX = "/browsers/{id_or_name}/" + COMPUTER

#: Unknown or ended session (404/410), Chromium or the display unusable (502/503).
router = vm_served(APIRouter(tags=["computer"], responses=errors(404, 410, 502, 503)))

DONE: OpenApiResponses = {200: {"description": "Done (empty body)", "content": None}}


async def _manager(state: State) -> ComputerManager:
    return state.computer


Manager = Annotated[ComputerManager, Depends(_manager)]


def _done() -> Response:
    return Response(status_code=200)


@router.post(f"{PREFIX}/{ComputerRoute.CLICK_MOUSE}", response_class=Response, responses=DONE)
async def click_mouse(session: ActiveSession, manager: Manager, body: ClickMouseRequest) -> Response:
    """Click (or press, or release) a button at x, y; `num_clicks` 2 is a double click."""
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.MOVE_MOUSE}", response_class=Response, responses=DONE)
async def move_mouse(session: ActiveSession, manager: Manager, body: MoveMouseRequest) -> Response:
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.DRAG_MOUSE}", response_class=Response, responses=DONE)
async def drag_mouse(session: ActiveSession, manager: Manager, body: DragMouseRequest) -> Response:
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.SCROLL}", response_class=Response, responses=DONE)
async def scroll(session: ActiveSession, manager: Manager, body: ScrollRequest) -> Response:
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.TYPE_TEXT}", response_class=Response, responses=DONE)
async def type_text(session: ActiveSession, manager: Manager, body: TypeTextRequest) -> Response:
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.PRESS_KEY}", response_class=Response, responses=DONE)
async def press_key(session: ActiveSession, manager: Manager, body: PressKeyRequest) -> Response:
    await manager.perform(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.BATCH}", response_class=Response, responses=DONE)
async def batch(session: ActiveSession, manager: Manager, body: BatchRequest) -> Response:
    """Run the actions in order, nothing else interleaving; every action is checked before the first runs."""
    await manager.batch(session, body)
    return _done()


@router.post(f"{PREFIX}/{ComputerRoute.GET_MOUSE_POSITION}", response_model=MousePosition)
async def get_mouse_position(session: ActiveSession, manager: Manager) -> MousePosition:
    x, y = await manager.position(session)
    return MousePosition(x=x, y=y)


@router.post(f"{PREFIX}/{ComputerRoute.SET_CURSOR}", response_model=OkResponse)
async def set_cursor(session: ActiveSession, manager: Manager, body: SetCursorRequest) -> OkResponse:
    await manager.perform(session, body)
    return OkResponse(ok=True)


@router.post(f"{PREFIX}/{ComputerRoute.READ_CLIPBOARD}", response_model=ClipboardContent)
async def read_clipboard(session: ActiveSession, manager: Manager) -> ClipboardContent:
    return ClipboardContent(text=await manager.read_clipboard(session))


@router.post(f"{PREFIX}/{ComputerRoute.WRITE_CLIPBOARD}", response_class=Response, responses=DONE)
async def write_clipboard(session: ActiveSession, manager: Manager, body: WriteClipboardRequest) -> Response:
    await manager.write_clipboard(session, body.text)
    return _done()
