"""Computer controls of a session: what each request means, checked, then replayed by its backend.

Every request is first checked as a whole (coordinates inside the screen, key names known, a drag of at
least two points), so a bad one is refused with 400 naming the field before anything moves; a batch is
checked action by action before its first action runs. Then the request becomes primitive steps
(`computer_steps`) that the session's backend replays: xdotool on the Xvfb display of a headful
session, CDP `Input.*` events for a headless one. Coordinates are the screenshot's pixels.
"""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
from dataclasses import dataclass, field
from typing import Any

from bbrowse.service import computer_motion as motion
from bbrowse.service.browsers import BrowserManager
from bbrowse.service.cdp import CDPClosedError, CDPError
from bbrowse.service.chromium import ChromiumBrowser
from bbrowse.service.computer_cdp import CDPInput
from bbrowse.service.computer_keys import Key, parse_combo, parse_hold_keys, parse_keys, require_headless_support
from bbrowse.service.computer_steps import (
    ButtonDown,
    ButtonUp,
    Click,
    InputBackend,
    KeyDown,
    KeyUp,
    MoveTo,
    Pause,
    Step,
    Tap,
    TypeText,
    Wheel,
)
from bbrowse.service.computer_x11 import X11Input
from bbrowse.service.errors import ServiceError, browser_unavailable
from bbrowse.service.files import field_error
from bbrowse.service.sandbox import sandbox_of
from bbrowse.service.sessions import Session
from bbrowse.wire.computer import (
    ActionBody,
    BatchRequest,
    ClickMouseRequest,
    DragMouseRequest,
    MoveMouseRequest,
    PressKeyRequest,
    ScrollRequest,
    SetCursorRequest,
    SleepAction,
    TypeTextRequest,
)

log = logging.getLogger("bbrowse.computer")

XDOTOOL_HINT = "computer controls of a headful session need xdotool (e.g. `sudo apt-get install xdotool`)"


@dataclass
class SessionInput:
    """A session's input state: its backend (made on first use) and the lock its actions take turns on."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    backend: InputBackend | None = None
    display: str = ""


class ComputerManager:
    """Checks and runs the computer requests of every session.

    Actions of one session never interleave: each runs under the session's input lock, and a batch holds
    it from its first action to its last. A click moves the pointer straight to its target (the cloud
    eases the pointer there first, and so does --kernel-compat; a live view wants the click at once);
    `move_mouse` and `drag_mouse` follow a human-like curve unless `smooth` is false, and `type` in
    --kernel-compat too (as Kernel's `smooth` default).
    """

    def __init__(self, browsers: BrowserManager, kernel_vm: bool = False) -> None:
        self.browsers = browsers
        #: --kernel-compat (`computer.go` 233-236, 450-545): `type` is smooth unless told otherwise, and a
        #: click eases the pointer to its target first.
        self.kernel_vm = kernel_vm
        self.xdotool = shutil.which("xdotool")
        self.xclip = shutil.which("xclip")
        self.rng = random.Random()

    # sessions ---------------------------------------------------------------

    def _input(self, session: Session) -> SessionInput:
        if session.input is None:
            session.input = SessionInput()
        return session.input

    async def on_delete(self, session: Session) -> None:
        state = session.input
        if state is not None and state.backend is not None:
            await state.backend.close()

    def headful(self, session: Session) -> bool:
        return session.request.headless is False

    async def _backend(self, session: Session, state: SessionInput) -> InputBackend:
        browser = self.browsers.browser(session)
        await browser.ready()  # 503 with the reason when Chromium is missing or down; restarts it
        if not self.headful(session):
            if state.backend is None:
                state.backend = self._cdp_input(browser, session)
            return state.backend
        if self.xdotool is None:
            raise browser_unavailable(XDOTOOL_HINT)
        display = getattr(getattr(browser, "xvfb", None), "display", "")
        if not display:
            raise browser_unavailable("the session's X display is not running")
        if state.backend is None or state.display != display:  # a new Xvfb after a crash has a new number
            if state.backend is not None:
                await state.backend.close()
            typist = self._cdp_input(browser, session)
            state.backend = X11Input(display, lambda: _viewport_origin(browser, session), typist.type_text,
                                     self.xdotool, self.xclip, sandbox_of(session))
            state.display = display
        return state.backend

    @staticmethod
    def _cdp_input(browser: ChromiumBrowser, session: Session) -> CDPInput:
        viewport = session.viewport
        return CDPInput(
            lambda method, params: browser.call(method, params),
            lambda method, params: _browser_call(browser, method, params),
            viewport.width, viewport.height,
        )

    # requests ---------------------------------------------------------------

    async def perform(self, session: Session, body: ActionBody) -> None:
        """Check one action, then run it."""
        self.check(session, body, "")
        state = self._input(session)
        with session.in_use(control=True):  # a long drag or typing is activity: the session does not time out under it
            async with state.lock:
                backend = await self._backend(session, state)
                await self._run(backend, body)

    async def batch(self, session: Session, request: BatchRequest) -> None:
        """Check every action, then run them in order under one hold of the lock; stop at the first failure."""
        for index, action in enumerate(request.actions):
            self.check(session, action.body(), f"actions.{index}.{action.type}.")
        state = self._input(session)
        with session.in_use(control=True):
            async with state.lock:
                backend = await self._backend(session, state)
                for index, action in enumerate(request.actions):
                    try:
                        await self._run(backend, action.body())
                    except ServiceError as exc:
                        done = f"actions 0-{index - 1} ran" if index else "no action ran"
                        raise ServiceError(
                            exc.status, exc.code, f"actions.{index} ({action.type}) failed, {done}: {exc.message}",
                            exc.details, exc.headers,
                        ) from None

    async def position(self, session: Session) -> tuple[int, int]:
        state = self._input(session)
        with session.in_use(control=True):
            async with state.lock:
                return await (await self._backend(session, state)).position()

    async def read_clipboard(self, session: Session) -> str:
        state = self._input(session)
        with session.in_use(control=True):
            async with state.lock:
                return await (await self._backend(session, state)).read_clipboard()

    async def write_clipboard(self, session: Session, text: str) -> None:
        state = self._input(session)
        with session.in_use(control=True):
            async with state.lock:
                await (await self._backend(session, state)).write_clipboard(text)

    # checking ---------------------------------------------------------------

    def check(self, session: Session, body: ActionBody, prefix: str) -> None:
        """400 naming the field (under `prefix`, e.g. `actions.2.press_key.`) for what cannot be done."""
        x11 = self.headful(session)
        points: list[tuple[int, int, str, str]] = []
        if isinstance(body, ClickMouseRequest | MoveMouseRequest | ScrollRequest):
            points.append((body.x, body.y, f"{prefix}x", f"{prefix}y"))
        if isinstance(body, DragMouseRequest):
            points += [(x, y, f"{prefix}path.{i}", f"{prefix}path.{i}") for i, (x, y) in enumerate(body.path)]
        for x, y, field_x, field_y in points:
            self._check_point(session, x, y, field_x, field_y)
        if isinstance(body, ScrollRequest) and not body.delta_x and not body.delta_y:
            raise field_error(f"{prefix}delta_y", "give delta_x or delta_y (wheel ticks), not both zero")
        held: list[Key] = []
        if isinstance(body, ClickMouseRequest | MoveMouseRequest | ScrollRequest | DragMouseRequest
                      | PressKeyRequest):
            held = parse_hold_keys(body.hold_keys, f"{prefix}hold_keys", x11)
        if isinstance(body, PressKeyRequest):
            for combo in parse_keys(body.keys, f"{prefix}keys", x11):
                held += list(combo.keys)
        if not x11:
            require_headless_support(held, f"{prefix}keys")

    @staticmethod
    def _check_point(session: Session, x: int, y: int, field_x: str, field_y: str) -> None:
        viewport = session.viewport
        for name, field_name, value, limit in (("x", field_x, x, viewport.width), ("y", field_y, y, viewport.height)):
            if not 0 <= value < limit:
                raise field_error(field_name, f"{name}={value} is outside the {viewport.width}x{viewport.height} "
                                              f"screen (x 0..{viewport.width - 1}, y 0..{viewport.height - 1})")

    # running ----------------------------------------------------------------

    async def _run(self, backend: InputBackend, body: ActionBody) -> None:
        if isinstance(body, SetCursorRequest):
            await backend.set_cursor_hidden(body.hidden)
            return
        steps = await self.steps(backend, body)
        if steps:
            await backend.run(steps)

    async def steps(self, backend: InputBackend, body: ActionBody) -> list[Step]:
        """The primitive steps of a checked action (a smooth move starts from where the pointer is now)."""
        x11 = backend.x11
        if isinstance(body, SleepAction):
            return [Pause(body.duration_ms / 1000)]
        if isinstance(body, TypeTextRequest):
            return self._typing(body)
        held = parse_hold_keys(getattr(body, "hold_keys", []), "hold_keys", x11)
        before: list[Step] = [KeyDown(k) for k in held]
        after: list[Step] = [KeyUp(k) for k in reversed(held)]
        if isinstance(body, ClickMouseRequest):
            half_clicks: dict[str, Step] = {"down": ButtonDown(body.button), "up": ButtonUp(body.button)}
            action = half_clicks.get(body.click_type, Click(body.button, body.num_clicks))
            if self.kernel_vm:  # Kernel's VM moves there smoothly first (its move_mouse default)
                start = await backend.position()
                points, pause = motion.smooth_path(start, (body.x, body.y), None, self.rng)
                return [*_walk(points, pause), *before, action, *after]
            return [MoveTo(body.x, body.y), *before, action, *after]
        if isinstance(body, ScrollRequest):
            return [MoveTo(body.x, body.y), *before, Wheel(body.delta_x, body.delta_y), *after]
        if isinstance(body, MoveMouseRequest):
            if not body.smooth:
                return [*before, MoveTo(body.x, body.y), *after]
            start = await backend.position()
            points, pause = motion.smooth_path(start, (body.x, body.y), body.duration_ms, self.rng)
            return [*before, *_walk(points, pause), *after]
        if isinstance(body, DragMouseRequest):
            path = [(p[0], p[1]) for p in body.path]
            if body.smooth:
                points, pause = motion.smooth_drag(path, body.duration_ms, self.rng)
            else:
                points, pause = motion.linear_drag(path, body.steps_per_segment), body.step_delay_ms / 1000
            press: list[Step] = [ButtonDown(body.button)]
            if body.delay:
                press.append(Pause(body.delay / 1000))
            return [MoveTo(*path[0]), *before, *press, *_walk(points, pause), ButtonUp(body.button), *after]
        if isinstance(body, PressKeyRequest):
            combos = parse_keys(body.keys, "keys", x11)
            if body.duration:
                keys = [k for combo in combos for k in combo.keys]
                return [*before, *(KeyDown(k) for k in keys), Pause(body.duration / 1000),
                        *(KeyUp(k) for k in reversed(keys)), *after]
            return [*before, *(Tap(c) for c in combos), *after]
        raise TypeError(f"not a computer action: {body!r}")  # pragma: no cover

    def _typing(self, body: TypeTextRequest) -> list[Step]:
        if not body.text:
            return []
        smooth = body.smooth or (self.kernel_vm and "smooth" not in body.model_fields_set)
        if not smooth:
            return [TypeText(body.text, body.delay / 1000)]
        steps: list[Step] = []
        backspace = parse_combo("BackSpace", "text", False)
        for chunk, between, pause in motion.typing_bursts(body.text, self.rng):
            for char in chunk:
                if body.typo_chance and char.isalpha() and self.rng.random() < body.typo_chance:
                    wrong = self.rng.choice([c for c in "asdfghjklqwertyuiopzxcvbnm" if c != char.lower()])
                    steps += [TypeText(wrong), Pause(self.rng.uniform(0.2, 0.45)), Tap(backspace)]
                steps += [TypeText(char), Pause(between)]
            steps.append(Pause(pause))
        return steps


def _walk(points: list[tuple[int, int]], pause: float) -> list[Step]:
    steps: list[Step] = []
    for index, (x, y) in enumerate(points):
        if index and pause > 0:
            steps.append(Pause(pause))
        steps.append(MoveTo(x, y))
    return steps


async def _browser_call(browser: ChromiumBrowser, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A browser-level CDP command (not addressed to the page): 503/502 when Chromium cannot answer."""
    cdp, _page = await browser.ready()
    try:
        return await cdp.send(method, params, timeout=10.0)
    except CDPClosedError:
        raise browser_unavailable("Chromium closed its DevTools connection") from None
    except (CDPError, TimeoutError) as exc:
        raise browser_unavailable(f"Chromium failed {method}: {exc}", status=502) from None


async def _viewport_origin(browser: ChromiumBrowser, session: Session) -> tuple[int, int]:
    """Where the page's viewport starts on the X screen: the window's corner plus its frame and toolbar.

    The browser UI sits above the viewport; any frame is as wide on the left as at the bottom.
    """
    _cdp, page = await browser.ready()
    window = await _browser_call(browser, "Browser.getWindowForTarget", {"targetId": page.target_id})
    bounds = window.get("bounds", {})
    viewport = session.viewport
    side = max(0, (int(bounds.get("width", viewport.width)) - viewport.width) // 2)
    top = max(0, int(bounds.get("height", viewport.height)) - viewport.height - side)
    return int(bounds.get("left", 0)) + side, int(bounds.get("top", 0)) + top

