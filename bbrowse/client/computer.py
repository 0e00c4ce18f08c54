"""Computer controls: screenshots."""

from __future__ import annotations

from bbrowse.client.transport import Transport, segment
from bbrowse.wire import ScreenshotRegion


class Computer:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def screenshot(
        self, id_or_name: str, region: ScreenshotRegion | tuple[int, int, int, int] | None = None,
    ) -> bytes:
        """The screen as PNG bytes; `region` is a ScreenshotRegion or (x, y, width, height) in pixels.

        `BrowserUnavailable` when the session has no working browser.
        """
        body: dict = {}
        if region is not None:
            if not isinstance(region, ScreenshotRegion):
                x, y, width, height = region
                region = ScreenshotRegion(x=x, y=y, width=width, height=height)
            body["region"] = region.model_dump()
        response = await self._t.request(
            "POST", f"/browsers/{segment(id_or_name)}/computer/screenshot", json=body, idempotent=False,
        )
        return response.content
