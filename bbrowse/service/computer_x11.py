"""Driving a headful session's own X display: xdotool for input, xclip for the clipboard.

Chromium's window on the session's Xvfb screen is larger than the viewport (tab strip and toolbar
above it), so every pointer position is shifted by where the viewport sits (`viewport_origin`, asked
of the browser again after a second) and shifted back when the pointer is read. An action's steps
become one chained command line written to a long-lived `xdotool -` of the session (no process start
per action); text whose characters no key of the keymap types goes through CDP instead. A failed or
cancelled action releases every key and button it pressed. The clipboard is X's CLIPBOARD selection
(Chromium's copy and paste): `xclip -o` reads it, and an `xclip` owns it after a write until something
else takes it or the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable

from bbrowse.service.child_process import kill_and_reap
from bbrowse.service.computer_keys import CHAR_KEYS
from bbrowse.service.computer_steps import (
    BUTTON_NUMBERS,
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
from bbrowse.service.lifetime import die_with_service
from bbrowse.service.sandbox import Sandbox
from bbrowse.timeouts import bounded

log = logging.getLogger("bbrowse.computer")

#: Bound on one xdotool or xclip run that is not a long drag or typing (those get their own time).
TOOL_TIMEOUT_SECONDS = 10.0
#: Milliseconds between the clicks of a multi-click (well inside Chromium's double-click interval).
CLICK_REPEAT_DELAY_MS = 40
_XCLIP_READY = b"Waiting for selection requests"
#: How long the viewport's place on the screen is trusted before the browser is asked again.
ORIGIN_SECONDS = 1.0


def tool_failed(tool: str, detail: str) -> ServiceError:
    return ServiceError(502, "browser_unavailable", f"{tool} failed on the session's display: {detail}")


class X11Input:
    x11 = True

    def __init__(
        self,
        display: str,
        viewport_origin: Callable[[], Awaitable[tuple[int, int]]],
        type_in_page: Callable[[str, float], Awaitable[None]],
        xdotool: str,
        xclip: str | None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.display = display
        #: The session's sandbox, where its Xvfb runs: xdotool and xclip run there too (None: the host).
        self.sandbox = sandbox
        self.prefix = sandbox.command_prefix() if sandbox is not None else []
        self._origin = viewport_origin
        self._type_in_page = type_in_page
        self.xdotool = xdotool
        self.xclip = xclip
        self.cursor_hidden = False
        self._clipboard_owner: asyncio.subprocess.Process | None = None
        self._scripted: asyncio.subprocess.Process | None = None
        self._origin_cache: tuple[float, tuple[int, int]] | None = None
        self._script_lock = asyncio.Lock()

    @property
    def env(self) -> dict[str, str]:
        return {**(self.sandbox.env(None) if self.sandbox is not None else os.environ), "DISPLAY": self.display}

    # input ------------------------------------------------------------------

    async def _viewport_origin(self) -> tuple[int, int]:
        """Where the viewport starts on the screen, asked of the browser at most every ORIGIN_SECONDS."""
        now = time.monotonic()
        if self._origin_cache is None or now - self._origin_cache[0] > ORIGIN_SECONDS:
            self._origin_cache = (now, await self._origin())
        return self._origin_cache[1]

    async def run(self, steps: list[Step]) -> None:
        origin = await self._viewport_origin() if any(isinstance(s, MoveTo) for s in steps) else (0, 0)
        chain: list[str] = []
        seconds = 0.0
        try:
            for step in steps:
                if isinstance(step, TypeText):
                    await self._script(chain, seconds)
                    chain, seconds = [], 0.0
                    await self._type(step)
                    continue
                chain += self._args(step, origin)
                if isinstance(step, Pause):
                    seconds += step.seconds
                elif isinstance(step, Click):
                    seconds += step.count * CLICK_REPEAT_DELAY_MS / 1000
            await self._script(chain, seconds)
        except BaseException:
            await self._release(steps)
            raise

    async def _type(self, step: TypeText) -> None:
        """Keyboard text as key presses (`key a space B exclam`); text with other characters (é, 日本)
        through the browser.

        xdotool types a character the keymap lacks by remapping a spare key just before pressing it,
        and Chromium often reads the key before it learns of the new mapping: such characters came
        out dropped or wrong. Text holding any of them is typed by the page's CDP input instead (all
        of it, so nothing overtakes what X is still delivering).
        """
        if all(char in CHAR_KEYS for char in step.text):
            delay_ms = round(step.delay * 1000)
            keysyms = [CHAR_KEYS[char].keysym for char in step.text]
            await self._script(["key", "--delay", str(delay_ms), *keysyms], len(keysyms) * (delay_ms + 2) / 1000)
        else:
            await self._type_in_page(step.text, step.delay)

    def _args(self, step: Step, origin: tuple[int, int]) -> list[str]:
        if isinstance(step, KeyDown):
            return ["keydown", step.key.keysym]
        if isinstance(step, KeyUp):
            return ["keyup", step.key.keysym]
        if isinstance(step, Tap):
            return ["key", step.combo.xdotool]
        if isinstance(step, MoveTo):
            return ["mousemove", str(step.x + origin[0]), str(step.y + origin[1])]
        if isinstance(step, ButtonDown):
            return ["mousedown", str(BUTTON_NUMBERS[step.button])]
        if isinstance(step, ButtonUp):
            return ["mouseup", str(BUTTON_NUMBERS[step.button])]
        if isinstance(step, Click):
            # Press and release, not `click`: that sleeps its --delay (100 ms) after the last click too.
            button = str(BUTTON_NUMBERS[step.button])
            clicks: list[str] = []
            for index in range(step.count):
                if index:
                    clicks += ["sleep", f"{CLICK_REPEAT_DELAY_MS / 1000:.3f}"]
                clicks += ["mousedown", button, "mouseup", button]
            return clicks
        if isinstance(step, Wheel):
            args: list[str] = []
            for ticks, negative, positive in ((step.dy, 4, 5), (step.dx, 6, 7)):
                if ticks:
                    args += ["click", "--repeat", str(abs(ticks)), "--delay", "0",
                             str(positive if ticks > 0 else negative)]
            return args
        if isinstance(step, Pause):
            return ["sleep", f"{step.seconds:.3f}"]
        raise TypeError(f"no xdotool form for {step!r}")

    async def _release(self, steps: list[Step]) -> None:
        """After a failure or cancellation: let go of every key and button the steps pressed."""
        args: list[str] = []
        for step in steps:
            if isinstance(step, ButtonDown):
                args += ["mouseup", str(BUTTON_NUMBERS[step.button])]
        for step in reversed(steps):
            if isinstance(step, KeyDown):
                args += ["keyup", step.key.keysym]
        if args:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._script(args, 0.0))

    async def _exec(self, argv: list[str], timeout: float, stdin: bytes | None = None) -> tuple[bytes, bytes, int]:
        try:
            process = await asyncio.create_subprocess_exec(
                *self.prefix, *argv, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self.env,
            )
        except OSError as exc:
            raise tool_failed(os.path.basename(argv[0]), str(exc)) from None
        try:
            out, err = await bounded(process.communicate(stdin), timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(process.wait())
            raise
        return out, err, process.returncode or 0

    async def position(self) -> tuple[int, int]:
        origin = await self._viewport_origin()
        x, y = await self._script([], 0.0)
        return x - origin[0], y - origin[1]

    async def _script(self, args: list[str], expected_seconds: float) -> tuple[int, int]:
        """Run a command chain in the session's long-lived `xdotool -`; where the pointer is afterwards.

        Starting xdotool costs tens of milliseconds (much more on a busy machine); a line written to
        one that is already running costs a tenth of one. Each line ends with `getmouselocation
        --shell`, whose answer tells that the whole line was carried out; anything xdotool prints
        before it is a complaint, reported as the failure.
        """
        async with self._script_lock:
            process = await self._script_process()
            assert process.stdin is not None and process.stdout is not None
            line = " ".join([*args, "getmouselocation", "--shell"]) + "\n"
            complaints: list[str] = []
            values: dict[str, str] = {}
            try:
                try:
                    process.stdin.write(line.encode())
                    await process.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    raise tool_failed("xdotool", "it exited (was the display restarted?); retry") from None
                async with asyncio.timeout(TOOL_TIMEOUT_SECONDS + expected_seconds):
                    while "WINDOW" not in values:
                        raw = await process.stdout.readline()
                        if not raw:
                            raise tool_failed("xdotool", "; ".join(complaints) or "it exited")
                        text = raw.decode(errors="replace").strip()
                        key, sep, value = text.partition("=")
                        if sep and key in ("X", "Y", "SCREEN", "WINDOW"):
                            values[key] = value
                        elif text:
                            complaints.append(text)
            except TimeoutError:
                await self._stop_script()
                limit = TOOL_TIMEOUT_SECONDS + expected_seconds
                raise tool_failed("xdotool", f"did not finish within {limit:.0f} s") from None
            except BaseException:
                await self._stop_script()  # its state is unknown now: the next call starts a fresh one
                raise
            if complaints:
                raise tool_failed("xdotool", "; ".join(complaints)[:300])
            try:
                return int(values["X"]), int(values["Y"])
            except (KeyError, ValueError):
                raise tool_failed("xdotool", f"unexpected getmouselocation output {values!r}") from None

    async def _script_process(self) -> asyncio.subprocess.Process:
        if self._scripted is None or self._scripted.returncode is not None:
            try:
                self._scripted = await asyncio.create_subprocess_exec(
                    *self.prefix, self.xdotool, "-", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT, env=self.env, start_new_session=True,
                    preexec_fn=die_with_service,
                )
            except OSError as exc:
                raise tool_failed("xdotool", str(exc)) from None
        return self._scripted

    async def _stop_script(self) -> None:
        process, self._scripted = self._scripted, None
        await kill_and_reap(process)

    # clipboard and cursor ---------------------------------------------------

    def _need_xclip(self) -> str:
        if self.xclip is None:
            raise ServiceError(503, "browser_unavailable",
                               "the clipboard of a headful session needs xclip (e.g. `sudo apt-get install xclip`)")
        return self.xclip

    async def read_clipboard(self) -> str:
        xclip = self._need_xclip()
        out, err, code = await self._exec([xclip, "-selection", "clipboard", "-o"], TOOL_TIMEOUT_SECONDS)
        if code != 0:
            if b"not available" in err:
                return ""  # nothing was ever copied
            raise tool_failed("xclip", err.decode(errors="replace").strip()[:300] or f"exit code {code}")
        return out.decode("utf-8", errors="replace")

    async def write_clipboard(self, text: str) -> None:
        xclip = self._need_xclip()
        await self._stop_clipboard_owner()
        try:
            owner = await asyncio.create_subprocess_exec(
                *self.prefix, xclip, "-quiet", "-selection", "clipboard", "-i",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                env=self.env, start_new_session=True, preexec_fn=die_with_service,
            )
        except OSError as exc:
            raise tool_failed("xclip", str(exc)) from None
        self._clipboard_owner = owner
        assert owner.stdin is not None and owner.stdout is not None
        owner.stdin.write(text.encode())
        await owner.stdin.drain()
        owner.stdin.close()
        # It owns the selection once it says it waits for requests: only then can a paste see the text.
        try:
            line = await bounded(owner.stdout.readline(), TOOL_TIMEOUT_SECONDS)
        except TimeoutError:
            line = b""
        if _XCLIP_READY not in line:
            await self._stop_clipboard_owner()
            raise tool_failed("xclip", line.decode(errors="replace").strip() or "did not take the clipboard")
        asyncio.get_running_loop().create_task(self._drain(owner))

    @staticmethod
    async def _drain(owner: asyncio.subprocess.Process) -> None:
        """Read the owner's output until it exits (another program took the clipboard), then reap it."""
        assert owner.stdout is not None
        with contextlib.suppress(Exception):
            while await owner.stdout.read(4096):
                pass
            await owner.wait()

    async def _stop_clipboard_owner(self) -> None:
        owner, self._clipboard_owner = self._clipboard_owner, None
        await kill_and_reap(owner)

    async def set_cursor_hidden(self, hidden: bool) -> None:
        # Screenshots are taken by the browser and never show the X pointer: the state is kept for
        # the caller (the app's live view draws its own cursor mark only when it is not hidden).
        self.cursor_hidden = hidden

    async def close(self) -> None:
        await self._stop_clipboard_owner()
        await self._stop_script()
