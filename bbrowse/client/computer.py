"""Computer controls: screenshots, mouse, keyboard, clipboard and cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from bbrowse.client.bodies import body
from bbrowse.client.decode import model
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import ScreenshotRegion, ScreenshotRequest
from bbrowse.wire.computer import (
    BatchRequest,
    ClickMouseRequest,
    ClickType,
    ClipboardContent,
    ComputerAction,
    DragButton,
    DragMouseRequest,
    MouseButton,
    MousePosition,
    MoveMouseRequest,
    PressKeyRequest,
    ScrollRequest,
    SetCursorRequest,
    TypeTextRequest,
    WriteClipboardRequest,
)
from bbrowse.wire.computer_routes import COMPUTER, ComputerRoute


class Computer:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def screenshot(
        self, id_or_name: str, region: ScreenshotRegion | tuple[int, int, int, int] | None = None,
    ) -> bytes:
        """The screen as PNG bytes; `region` is a ScreenshotRegion or (x, y, width, height) in pixels.

        `BrowserUnavailable` when the session has no working browser.
        """
        if region is not None and not isinstance(region, ScreenshotRegion):
            x, y, width, height = region
            region = ScreenshotRegion.model_construct(x=x, y=y, width=width, height=height)
        response = await self._t.request(
            "POST", self._route(id_or_name, ComputerRoute.SCREENSHOT),
            json=body(ScreenshotRequest.model_construct(region=region)), idempotent=False,
        )
        return response.content

    # mouse, keyboard, clipboard, cursor (the official SDK's `browsers.computer.*`) ----------------
    #
    # Coordinates are the screenshot's pixels. Key names are X11 keysym names as xdotool takes them
    # ("Return", "Tab", "BackSpace", "F5", "a", "minus") or combinations ("Ctrl+t", "Ctrl+Shift+Tab");
    # the aliases "Ctrl", "Alt", "Shift", "Super", "Enter", "Esc" work too. Input is never retried:
    # a click that may have happened is not clicked twice. Bad input raises `BadRequest` naming the field.

    def _route(self, id_or_name: str, action: ComputerRoute) -> str:
        return f"/browsers/{segment(id_or_name)}/{COMPUTER}/{action}"

    async def _act(self, id_or_name: str, action: ComputerRoute, request: BaseModel) -> None:
        await self._t.request("POST", self._route(id_or_name, action), json=body(request), idempotent=False)

    async def click(
        self,
        id_or_name: str,
        x: int,
        y: int,
        *,
        button: MouseButton = "left",
        num_clicks: int = 1,
        click_type: ClickType = "click",
        hold_keys: Sequence[str] = (),
    ) -> None:
        """Click at (x, y): `num_clicks=2` double-clicks; `click_type` "down"/"up" presses or releases only."""
        await self._act(id_or_name, ComputerRoute.CLICK_MOUSE, ClickMouseRequest.model_construct(
            x=x, y=y, button=button, num_clicks=num_clicks, click_type=click_type, hold_keys=list(hold_keys)))

    async def move_mouse(
        self,
        id_or_name: str,
        x: int,
        y: int,
        *,
        smooth: bool = True,
        duration_ms: int | None = None,
        hold_keys: Sequence[str] = (),
    ) -> None:
        """Move the pointer to (x, y): along a human-like curve (`smooth`, the API's default), or at once."""
        await self._act(id_or_name, ComputerRoute.MOVE_MOUSE, MoveMouseRequest.model_construct(
            x=x, y=y, smooth=smooth, duration_ms=duration_ms, hold_keys=list(hold_keys)))

    async def drag(
        self,
        id_or_name: str,
        path: Sequence[tuple[int, int]],
        *,
        button: DragButton = "left",
        smooth: bool = True,
        duration_ms: int | None = None,
        delay_ms: int = 0,
        steps_per_segment: int = 10,
        step_delay_ms: int = 50,
        hold_keys: Sequence[str] = (),
    ) -> None:
        """Press `button` at the first point, move through the others, release at the last."""
        await self._act(id_or_name, ComputerRoute.DRAG_MOUSE, DragMouseRequest.model_construct(
            path=[[x, y] for x, y in path], button=button, smooth=smooth, delay=delay_ms,
            steps_per_segment=steps_per_segment, step_delay_ms=step_delay_ms, duration_ms=duration_ms,
            hold_keys=list(hold_keys)))

    async def scroll(
        self, id_or_name: str, x: int, y: int, delta_x: int = 0, delta_y: int = 0, *, hold_keys: Sequence[str] = (),
    ) -> None:
        """Turn the wheel at (x, y) by whole ticks: positive `delta_y` scrolls down, positive `delta_x` right."""
        await self._act(id_or_name, ComputerRoute.SCROLL, ScrollRequest.model_construct(
            x=x, y=y, delta_x=delta_x, delta_y=delta_y, hold_keys=list(hold_keys)))

    async def type_text(self, id_or_name: str, text: str, *, delay_ms: int = 0, smooth: bool = False) -> None:
        """Type `text` into whatever has focus ("\\n" presses Return), `delay_ms` between characters.

        `smooth` (human-like bursts and pauses) is always sent: Kernel's VM types smoothly when it is
        left out, 50-120 ms a key, which live typing cannot wait for."""
        await self._act(id_or_name, ComputerRoute.TYPE_TEXT,
                        TypeTextRequest.model_construct(text=text, delay=delay_ms, smooth=smooth))

    async def press_key(
        self, id_or_name: str, keys: str | Sequence[str], *, duration_ms: int = 0, hold_keys: Sequence[str] = (),
    ) -> None:
        """Tap each key or combination in turn ("Ctrl+a", "Delete"); with `duration_ms`, hold them all that long."""
        names = [keys] if isinstance(keys, str) else list(keys)
        await self._act(id_or_name, ComputerRoute.PRESS_KEY, PressKeyRequest.model_construct(
            keys=names, duration=duration_ms, hold_keys=list(hold_keys)))

    async def batch(self, id_or_name: str, actions: Sequence[ComputerAction | dict[str, Any]]) -> None:
        """Run actions in order with nothing interleaving, e.g. `{"type": "click_mouse", "click_mouse": {...}}`.

        Every action is checked before the first runs; a failure stops the batch (the error names its index).
        """
        # Each action whole, defaults included, as given (not only the fields it was built with).
        given: list[Any] = [a.model_dump(mode="json", exclude_none=True) if isinstance(a, ComputerAction) else a
                            for a in actions]
        await self._act(id_or_name, ComputerRoute.BATCH, BatchRequest.model_construct(actions=given))

    async def mouse_position(self, id_or_name: str) -> tuple[int, int]:
        """Where the pointer is, in screenshot pixels."""
        route = ComputerRoute.GET_MOUSE_POSITION
        response = await self._t.request("POST", self._route(id_or_name, route), idempotent=True)
        position = model(MousePosition, response, route)
        return position.x, position.y

    async def read_clipboard(self, id_or_name: str) -> str:
        route = ComputerRoute.READ_CLIPBOARD
        response = await self._t.request("POST", self._route(id_or_name, route), idempotent=True)
        return model(ClipboardContent, response, route).text

    async def write_clipboard(self, id_or_name: str, text: str) -> None:
        """Put `text` on the instance's clipboard (a paste in the browser then inserts it)."""
        request = WriteClipboardRequest.model_construct(text=text)
        route = self._route(id_or_name, ComputerRoute.WRITE_CLIPBOARD)
        await self._t.request("POST", route, json=body(request), idempotent=True)

    async def set_cursor(self, id_or_name: str, *, hidden: bool) -> None:
        request = SetCursorRequest.model_construct(hidden=hidden)
        route = self._route(id_or_name, ComputerRoute.SET_CURSOR)
        await self._t.request("POST", route, json=body(request), idempotent=True)

