"""Driving a headless session: CDP `Input.*` events sent to the page the screenshots show.

A headless Chromium has no screen to put a pointer on, so the service keeps the pointer itself
(where it is, which buttons are down, which modifiers are held) and sends each step as
`Input.dispatchMouseEvent` / `Input.dispatchKeyEvent` with the page's own coordinates, which are
the screenshot's pixels. Characters no key types (é, 日本) go in with `Input.insertText`. Browser
shortcuts that never reach the page (Ctrl+T opens no tab) do nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from bbrowse.service.computer_keys import ALT, CHAR_KEYS, CTRL, META, SHIFT, Key, shifted
from bbrowse.service.computer_steps import (
    WHEEL_TICK_PIXELS,
    ButtonDown,
    ButtonUp,
    Click,
    KeyDown,
    KeyUp,
    MoveTo,
    Pause,
    Step,
    Tap,
    TypeText,
    Wheel,
)
from bbrowse.service.errors import ServiceError
from bbrowse.timeouts import bounded

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

#: CDP's `buttons` bit for each button held.
BUTTON_BITS = {"left": 1, "right": 2, "middle": 4, "back": 8, "forward": 16}
#: Bound on a clipboard call into the page (a page busy in a script must not hang the request).
CLIPBOARD_SECONDS = 2.0


class CDPInput:
    x11 = False

    def __init__(self, page_call: Call, browser_call: Call, width: int, height: int) -> None:
        self._page = page_call
        self._browser = browser_call
        #: Where the pointer is: the middle of the viewport until something moves it (as on a fresh X screen).
        self.x, self.y = width // 2, height // 2
        self.buttons: set[str] = set()
        self.modifiers = 0
        self.held: list[Key] = []
        self.clipboard = ""
        self.cursor_hidden = False
        self._granted = False

    # input ------------------------------------------------------------------

    async def run(self, steps: list[Step]) -> None:
        try:
            for step in steps:
                await self._step(step)
        except BaseException:
            await asyncio.shield(self._release())
            raise

    async def _step(self, step: Step) -> None:
        if isinstance(step, MoveTo):
            self.x, self.y = step.x, step.y
            await self._mouse("mouseMoved", button=self._pressed_button())
        elif isinstance(step, ButtonDown):
            self.buttons.add(step.button)
            await self._mouse("mousePressed", button=step.button, clickCount=1)
        elif isinstance(step, ButtonUp):
            self.buttons.discard(step.button)
            await self._mouse("mouseReleased", button=step.button, clickCount=1)
        elif isinstance(step, Click):
            for count in range(1, step.count + 1):
                self.buttons.add(step.button)
                await self._mouse("mousePressed", button=step.button, clickCount=count)
                self.buttons.discard(step.button)
                await self._mouse("mouseReleased", button=step.button, clickCount=count)
        elif isinstance(step, Wheel):
            await self._mouse("mouseWheel", button="none",
                              deltaX=step.dx * WHEEL_TICK_PIXELS, deltaY=step.dy * WHEEL_TICK_PIXELS)
        elif isinstance(step, KeyDown):
            await self._key_down(step.key)
        elif isinstance(step, KeyUp):
            await self._key_up(step.key)
        elif isinstance(step, Tap):
            for key in step.combo.keys[:-1]:
                await self._key_down(key)
            main = step.combo.keys[-1]
            await self._key_down(main)
            await self._key_up(main)
            for key in reversed(step.combo.keys[:-1]):
                await self._key_up(key)
        elif isinstance(step, TypeText):
            await self._type(step.text, step.delay)
        elif isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
        else:  # pragma: no cover - every step kind is handled above
            raise TypeError(f"no CDP form for {step!r}")

    def _pressed_button(self) -> str:
        for name in ("left", "right", "middle", "back", "forward"):
            if name in self.buttons:
                return name
        return "none"

    async def _mouse(self, kind: str, **extra: Any) -> None:
        buttons = sum(BUTTON_BITS[b] for b in self.buttons)
        await self._page("Input.dispatchMouseEvent", {
            "type": kind, "x": self.x, "y": self.y, "modifiers": self.modifiers, "buttons": buttons, **extra,
        })

    async def _key_down(self, key: Key) -> None:
        if key.modifier:
            self.modifiers |= key.modifier
            self.held.append(key)
        typed = shifted(key) if self.modifiers & SHIFT else key
        if not typed.code and typed.text:  # a character no key of the layout types
            await self._page("Input.insertText", {"text": typed.text})
            return
        text = typed.text if not self.modifiers & (CTRL | ALT | META) else ""
        params: dict[str, Any] = {
            "type": "keyDown" if text else "rawKeyDown", "modifiers": self.modifiers, "key": typed.key,
            "code": typed.code, "windowsVirtualKeyCode": typed.key_code, "nativeVirtualKeyCode": typed.key_code,
        }
        if text:
            params["text"] = params["unmodifiedText"] = text
        if typed.code.endswith(("Left", "Right")) and key.modifier:
            params["location"] = 1 if typed.code.endswith("Left") else 2
        await self._page("Input.dispatchKeyEvent", params)

    async def _key_up(self, key: Key) -> None:
        typed = shifted(key) if self.modifiers & SHIFT else key
        if key.modifier:
            self.modifiers &= ~key.modifier
            with contextlib.suppress(ValueError):
                self.held.remove(key)
        if not typed.code and typed.text:
            return
        await self._page("Input.dispatchKeyEvent", {
            "type": "keyUp", "modifiers": self.modifiers, "key": typed.key, "code": typed.code,
            "windowsVirtualKeyCode": typed.key_code, "nativeVirtualKeyCode": typed.key_code,
        })

    async def type_text(self, text: str, delay: float) -> None:
        """Type `text` now, outside any action (a headful session's non-keyboard text comes this way)."""
        try:
            await self._type(text, delay)
        except BaseException:
            await asyncio.shield(self._release())
            raise

    async def _type(self, text: str, delay: float) -> None:
        for index, char in enumerate(text):
            if index and delay:
                await asyncio.sleep(delay)
            key = CHAR_KEYS.get(char)
            if key is None:
                await self._page("Input.insertText", {"text": char})
                continue
            await self._key_down(key)
            await self._key_up(key)

    async def _release(self) -> None:
        """Let go of whatever is held after a failure or cancellation."""
        with contextlib.suppress(Exception):
            for button in list(self.buttons):
                self.buttons.discard(button)
                await self._mouse("mouseReleased", button=button, clickCount=1)
            for key in reversed(list(self.held)):
                await self._key_up(key)
        self.modifiers = 0
        self.held.clear()

    async def position(self) -> tuple[int, int]:
        return self.x, self.y

    # clipboard and cursor ---------------------------------------------------

    async def _grant_clipboard(self) -> None:
        if not self._granted:
            with contextlib.suppress(ServiceError, TimeoutError):
                await bounded(self._browser("Browser.grantPermissions", {
                    "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
                }), CLIPBOARD_SECONDS)
                self._granted = True

    async def _evaluate(self, expression: str) -> Any:
        result = await bounded(self._page("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True, "userGesture": True,
        }), CLIPBOARD_SECONDS)
        if "exceptionDetails" in result:
            raise LookupError(result["exceptionDetails"].get("text", "exception"))
        return result.get("result", {}).get("value")

    async def read_clipboard(self) -> str:
        """The clipboard is the page's: what the page copied when it can be read (`navigator.clipboard`,
        where the page's origin allows it), else the last text written (which was offered to the page)."""
        await self._grant_clipboard()
        with contextlib.suppress(ServiceError, TimeoutError, LookupError):
            value = await self._evaluate("navigator.clipboard.readText()")
            if isinstance(value, str):
                self.clipboard = value
        return self.clipboard

    async def write_clipboard(self, text: str) -> None:
        self.clipboard = text
        await self._grant_clipboard()
        with contextlib.suppress(ServiceError, TimeoutError, LookupError):
            await self._evaluate(f"navigator.clipboard.writeText({json.dumps(text)})")

    async def set_cursor_hidden(self, hidden: bool) -> None:
        self.cursor_hidden = hidden

    async def close(self) -> None:
        return None
