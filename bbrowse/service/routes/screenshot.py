"""`/browsers/{id_or_name}/computer/screenshot`: a PNG of the session's browser viewport, or of a region of it.

Served by the session's VM endpoint too (`/vm/{id}/computer/screenshot`), as Kernel's cloud serves it.
The browser itself belongs to `routes.browser` (its `install` gives every session a Chromium).
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from bbrowse.service.errors import bad_request
from bbrowse.service.openapi import errors
from bbrowse.service.state import ActiveSession, State
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.wire import ScreenshotRequest
from bbrowse.wire.computer_routes import COMPUTER, ComputerRoute

#: Every documented route addresses a session: 404 when unknown.
router = vm_served(APIRouter(tags=["browser"], responses=errors(404)))


@router.post(
    f"/browsers/{{id_or_name}}/{COMPUTER}/{ComputerRoute.SCREENSHOT}",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "PNG of the browser viewport"},
               **errors(400, 410, 502, 503)},
)
async def capture_screenshot(
    session: ActiveSession,
    state: State,
    body: ScreenshotRequest | None = None,
) -> Response:
    region = body.region if body else None
    clip = None
    if region is not None:
        viewport = session.viewport
        if region.x + region.width > viewport.width or region.y + region.height > viewport.height:
            raise bad_request(
                f"x={region.x}, y={region.y}, width={region.width}, height={region.height} reaches outside "
                f"the {viewport.width}x{viewport.height} viewport",
                field="region",
            )
        clip = region.model_dump()
    with session.in_use(control=True):  # a computer-controls call: activity under Kernel's rule too
        png = await state.browsers.browser(session).screenshot(clip)
    return Response(content=png, media_type="image/png")
