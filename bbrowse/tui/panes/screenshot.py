"""Screenshots of a session's browser: capture now, a live view, interact mode, a region, save.

The live view captures continuously: the next capture starts when the last one is drawn (or, with an
interval, that many seconds after the last one started), only while the tab is on screen; the status
line shows frames per second and how long a capture takes. Interact mode (`i`, `esc` leaves) sends the
mouse and keyboard to the browser: a click on the picture clicks the matching pixel, the wheel
scrolls, typed text goes through `type` and special keys and chords through `press_key`; a mark
shows where the browser's mouse is.

The picture is drawn inline (kitty/sixel where the terminal has them through textual-image, half-cell
blocks otherwise with bbrowse's own fast canvas), scaled to the pane with its aspect ratio. A failed
capture (no Chromium, a crashed browser, a region outside the viewport) is shown in the pane with the
service's code and message and stays there until a capture works, so a live view that stops working
says why.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from datetime import datetime
from pathlib import Path

from PIL import Image as PILImage
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input, Static

from bbrowse.client import ClientError, NotFound, ServiceError, SessionGone
from bbrowse.tui.app_services import describe_error, services, settings_of
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.panes.base import HintLine, SessionPane
from bbrowse.tui.remote_input import RemoteInput
from bbrowse.tui.saving import commit, partial_path
from bbrowse.tui.widgets.image_view import ImageView, decode_image
from bbrowse.wire import ScreenshotRegion

#: Seconds between live captures; 0 is continuous (the next starts when the last is drawn).
DEFAULT_INTERVAL = 0
MIN_INTERVAL, MAX_INTERVAL = 0, 60
HINT = "space/c capture · a live on/off · i interact (esc leaves) · +/- interval · R region · s save PNG"
INTERACT_HINT = "interact: click, wheel and keys go to the browser · esc leaves · ctrl+q quits · alt+1..5 tabs"
#: After a failed live capture, wait this long before the next (a missing browser is not hammered).
RETRY_SECONDS = 1.0
#: While the tab is not on screen the live view idles, looking again this often.
HIDDEN_POLL_SECONDS = 0.25
#: Frames per second are counted over this many seconds.
FPS_WINDOW_SECONDS = 2.0


def parse_region(text: str, viewport: tuple[int, int] | None = None) -> ScreenshotRegion | None:
    """`x,y,w,h` (commas or spaces) to a region; empty text is None (the whole viewport). With `viewport`
    (width, height in pixels) the region must lie inside it.

    Raises ValueError with a sentence the user can act on.
    """
    parts = text.replace(",", " ").split()
    if not parts:
        return None
    if len(parts) != 4:
        raise ValueError("type four numbers: x,y,width,height (or nothing for the whole viewport)")
    try:
        x, y, width, height = (int(p) for p in parts)
    except ValueError:
        raise ValueError("x, y, width and height must be whole numbers of pixels") from None
    if x < 0 or y < 0 or width < 1 or height < 1:
        raise ValueError("x and y must be 0 or more, width and height 1 or more")
    if viewport is not None:
        view_width, view_height = viewport
        if x + width > view_width or y + height > view_height:
            raise ValueError(f"the region ends at {x + width},{y + height}, outside the {view_width}×{view_height} "
                             f"viewport: x+width at most {view_width}, y+height at most {view_height}")
    return ScreenshotRegion(x=x, y=y, width=width, height=height)


def describe_region(region: ScreenshotRegion | None) -> str:
    if region is None:
        return "full viewport"
    return f"region {region.x},{region.y} {region.width}×{region.height}"


class RegionInput(Input):
    """The region field: enter applies, escape closes it (instead of leaving the session screen)."""

    BINDINGS = [Binding("escape", "close", "Cancel", show=False)]

    class Closed(Message):
        """Escape in the field."""

    def action_close(self) -> None:
        self.post_message(self.Closed())


class ScreenshotPane(SessionPane, can_focus=True):
    DRAWN_INTO = ("#shot-error", ImageView)
    BINDINGS = [
        Binding("space", "capture", "Capture", id="screenshot.capture"),
        Binding("c", "capture", "Capture", show=False, id="screenshot.capture_c"),
        Binding("a", "toggle_live", "Live on/off", id="screenshot.live"),
        Binding("plus,equals_sign", "slower", "Interval +", show=False, id="screenshot.slower"),
        Binding("minus", "faster", "Interval −", show=False, id="screenshot.faster"),
        Binding("i", "interact", "Interact", id="screenshot.interact"),
        Binding("R", "region", "Region", id="screenshot.region"),
        Binding("s", "save", "Save PNG", id="screenshot.save"),
    ]

    DEFAULT_CSS = """
    ScreenshotPane { height: 1fr; }
    ScreenshotPane:focus { background-tint: $foreground 0%; }
    ScreenshotPane #shot-status { height: 1; background: $panel; padding: 0 1; }
    ScreenshotPane #shot-region { display: none; }
    ScreenshotPane #shot-region.open { display: block; }
    ScreenshotPane #shot-region-error { display: none; height: auto; color: $text-error; padding: 0 1; }
    ScreenshotPane #shot-region-error.shown { display: block; }
    ScreenshotPane #shot-error {
        display: none; height: auto; margin: 1 2; padding: 1 2; border: round $error; color: $text-error;
    }
    ScreenshotPane #shot-error.shown { display: block; }
    ScreenshotPane #shot-empty { height: 1fr; content-align: center middle; color: $text-muted; }
    ScreenshotPane.-has-image #shot-empty { display: none; }
    ScreenshotPane #shot-view { display: none; }
    ScreenshotPane.-has-image #shot-view { display: block; }
    ScreenshotPane #shot-hint { height: 1; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, session_id: str, *, auto_capture: bool = True, rendering: str | None = None) -> None:
        """`auto_capture`: take a first screenshot when the pane is first shown. `rendering`: force a
        textual-image protocol (`halfcell`, `sixel`, `tgp`, `unicode`); default from the environment."""
        super().__init__(session_id)
        self.auto_capture = auto_capture
        self.rendering = rendering
        self.capture_region: ScreenshotRegion | None = None
        #: The browser's viewport (width, height) in pixels, once known: a region is checked against it.
        self.viewport: tuple[int, int] | None = None
        self.interval = DEFAULT_INTERVAL
        self.live = False
        self.capturing = False
        #: The last good capture: PNG bytes, decoded image and when it was taken.
        self.png: bytes | None = None
        self.image: PILImage.Image | None = None
        self.captured_at: datetime | None = None
        #: The last failure shown in the pane ("code (status): message"), None after a good capture.
        self.error: str | None = None
        #: The last file saved (its local path).
        self.last_saved: Path | None = None
        #: The browser's mouse in screen pixels at the last capture (None: unknown).
        self.mouse: tuple[int, int] | None = None
        #: Seconds the last capture took (request to PNG in hand), and when recent frames were drawn.
        self.capture_seconds: float | None = None
        self.frame_times: deque[float] = deque(maxlen=240)
        #: Frames drawn since the pane was made (tests and benchmarks wait on it).
        self.frames = 0
        self.remote: RemoteInput | None = None
        self._last_failure: BaseException | None = None
        self._shown_once = False

    def compose(self) -> ComposeResult:
        configured = settings_of(self).screenshot  # [screenshot] interval and rendering
        self.interval = configured.interval
        self.rendering = self.rendering or configured.forced_rendering
        yield Static("", id="shot-status", markup=False)
        yield RegionInput(placeholder="x,y,width,height in pixels · empty = whole viewport · esc cancels",
                          id="shot-region")
        yield Static("", id="shot-region-error", markup=False)
        yield Static("", id="shot-error", markup=False)
        yield Static("No screenshot yet. Press space to capture, a for a live view.", id="shot-empty", markup=False)
        yield ImageView(rendering=self.rendering, id="shot-view")
        yield HintLine(HINT, id="shot-hint")

    @property
    def view(self) -> ImageView:
        return self.query_one(ImageView)

    def on_mount(self) -> None:
        self._update_status()

    def on_unmount(self) -> None:
        if self.remote is not None:
            self.remote.close()  # the pane is gone (session closed): nothing more to send

    def focus_default(self) -> None:
        """Put the keyboard in the pane: its keys act only when focus is inside it."""
        self.focus()

    def on_show(self) -> None:
        focused = self.screen.focused
        if focused is None or not focused.is_on_screen:
            self.focus_default()
        if self.auto_capture and not self._shown_once:
            self._shown_once = True
            self.action_capture()

    # capturing ----------------------------------------------------------------

    def action_capture(self) -> None:
        if not self.capturing and not self.live:
            self.capturing = True
            self._update_status()
            self._capture()

    @work(group="screenshot-capture")
    async def _capture(self) -> None:
        try:
            await self._capture_once()
        finally:
            self.capturing = False
            self._update_status()

    async def _capture_once(self) -> bool:
        """Capture, decode and draw one frame (with the browser's mouse); False when it failed (shown)."""
        computer = self.client.computer
        failure: BaseException | None = None
        prefix = ""
        started = time.perf_counter()
        where = asyncio.ensure_future(self._mouse_position())
        try:
            png = await computer.screenshot(self.session_id, region=self.capture_region)
            self.capture_seconds = time.perf_counter() - started
            same = png == self.png and self.image is not None  # a still page: nothing to decode or draw
            image = self.image if same else await asyncio.to_thread(decode_image, png)
        except ClientError as error:
            failure = error
        except Exception as error:  # Pillow: the answer was not an image
            failure, prefix = error, "The service's answer is not an image: "
        except BaseException:
            where.cancel()  # cancelled (live view stopped): the mouse question goes too
            raise
        if not self.in_place():  # the pane went away meanwhile (the session screen closed, the app quit)
            where.cancel()
            return False
        if failure is not None:
            where.cancel()
            self._failed(failure, prefix)
            return False
        self.mouse = await where
        if not self.in_place():
            return False
        self.show_png(png, image=image)
        if self.view.changed_rows != 0:  # nothing changed on screen: nothing to wait for
            await self._drawn()
            if not self.in_place():
                return False
        self.frames += 1
        self.frame_times.append(time.monotonic())
        self._update_status()
        return True

    async def _mouse_position(self) -> tuple[int, int] | None:
        try:
            return await self.client.computer.mouse_position(self.session_id)
        except ClientError:
            return None  # an older service, or no pointer yet: no mark

    async def _drawn(self) -> None:
        """Wait until the screen has been refreshed with what was just shown."""
        drawn = asyncio.Event()
        self.call_after_refresh(drawn.set)
        try:
            await asyncio.wait_for(drawn.wait(), 5)
        except TimeoutError:
            pass  # the app is suspended or closing: carry on, the loop looks again

    def show_png(self, png: bytes, *, image: PILImage.Image | None = None, captured_at: datetime | None = None) -> None:
        """Draw a captured PNG (decoding it here when `image` is not given) and clear any shown error."""
        if not self.in_place():
            return
        self.png = png
        self.image = image if image is not None else decode_image(png)
        self.captured_at = captured_at or datetime.now().astimezone()
        self.error = None
        self._last_failure = None
        self.query_one("#shot-error", Static).remove_class("shown")
        self.add_class("-has-image")
        self.view.origin = (self.capture_region.x, self.capture_region.y) if self.capture_region else (0, 0)
        self.view.show(self.image, self._local_mouse())
        self._update_status()

    def _local_mouse(self) -> tuple[int, int] | None:
        """The browser's mouse in pixels of the picture (the region moves the origin), None when outside."""
        if self.mouse is None or self.image is None:
            return None
        x, y = self.mouse
        if self.capture_region is not None:
            x, y = x - self.capture_region.x, y - self.capture_region.y
        if 0 <= x < self.image.width and 0 <= y < self.image.height:
            return x, y
        return None

    @property
    def session_gone(self) -> bool:
        """The last capture failed because the session no longer exists."""
        return isinstance(self._last_failure, SessionGone | NotFound)

    def _failed(self, error: BaseException, prefix: str = "") -> None:
        self._last_failure = error
        text = prefix + describe_error(error)
        self.error = text
        if not self.in_place():
            return
        box = self.query_one("#shot-error", Static)
        box.update(Text.assemble(("Screenshot failed\n", "bold"), text))
        box.add_class("shown")
        if isinstance(error, ClientError) and not isinstance(error, ServiceError):
            services(self).report_error(error)  # the connection itself: let the app mark it
        self._update_status()

    # live view ----------------------------------------------------------------

    def _visible(self) -> bool:
        return self.is_on_screen and self.screen.is_current

    @work(exclusive=True, group="screenshot-live")
    async def _live_loop(self) -> None:
        """Capture while live: the next frame starts when the last is drawn (plus the interval, if any)."""
        while self.live:
            if not self._visible():
                await asyncio.sleep(HIDDEN_POLL_SECONDS)
                continue
            started = time.monotonic()
            self.capturing = True
            try:
                ok = await self._capture_once()
            finally:
                self.capturing = False
            if not self.in_place():
                return  # the pane is being taken apart: its loop ends with it
            if not ok and self.session_gone:
                self._set_live(False)  # the session was deleted: nothing will ever come back
                self._leave_interact(take_keyboard=self.view.has_focus)
                return
            pause = self.interval - (time.monotonic() - started) if ok else RETRY_SECONDS
            if pause > 0:
                await asyncio.sleep(pause)

    def action_toggle_live(self) -> None:
        self._set_live(not self.live)

    def _set_live(self, live: bool) -> None:
        if live == self.live:
            return
        self.live = live
        self.frame_times.clear()
        if live:
            self._live_loop()
        else:
            self.workers.cancel_group(self, "screenshot-live")
            self.capturing = False
        self._update_status()

    def _set_interval(self, seconds: int) -> None:
        self.interval = max(MIN_INTERVAL, min(MAX_INTERVAL, seconds))
        self.frame_times.clear()
        self._update_status()

    def action_slower(self) -> None:
        self._set_interval(self.interval + 1)

    def action_faster(self) -> None:
        self._set_interval(self.interval - 1)

    def fps(self) -> float | None:
        """Frames drawn per second over the last couple of seconds of the live view."""
        now = time.monotonic()
        recent = [t for t in self.frame_times if now - t <= FPS_WINDOW_SECONDS]
        if len(recent) < 2:
            return None
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-6)

    # interact mode ------------------------------------------------------------

    def action_interact(self) -> None:
        """Send the mouse and keyboard to the browser (the live view starts too); esc leaves."""
        if self.remote is None:
            self.remote = RemoteInput(self.client.computer, self.session_id, on_error=self._input_failed)
        self._set_live(True)
        self.view.interact(self.remote)
        self.query_one("#shot-hint", HintLine).update_hint(INTERACT_HINT)
        self._update_status()

    @property
    def interacting(self) -> bool:
        return self.view.remote is not None

    def _leave_interact(self, *, take_keyboard: bool = True) -> None:
        """End interact mode; the pane takes the keyboard unless it went elsewhere (another tab, a click)."""
        if not self.interacting:
            return
        self.view.interact(None)
        self.remote = None
        self.query_one("#shot-hint", HintLine).update_hint(HINT)
        if take_keyboard:
            self.focus()
        self._update_status()

    @on(ImageView.LeaveInteract)
    def _left(self, event: ImageView.LeaveInteract) -> None:
        event.stop()
        self._leave_interact(take_keyboard=not event.blurred)

    def _input_failed(self, error: BaseException) -> None:
        if isinstance(error, ServiceError):
            self.notify(describe_error(error), title="The browser refused that input", severity="warning")
        else:
            services(self).report_error(error, "Input not sent")

    # region -------------------------------------------------------------------

    def action_region(self) -> None:
        field = self.query_one(RegionInput)
        r = self.capture_region
        field.value = f"{r.x},{r.y},{r.width},{r.height}" if r else ""
        field.add_class("open")
        field.focus()
        self._learn_viewport()

    @work(exclusive=True, group="screenshot-viewport")
    async def _learn_viewport(self) -> None:
        """The browser's viewport, which a region must lie inside (the session's, else the last full capture's)."""
        try:
            browser = await self.client.sessions.get(self.session_id)
        except ClientError:
            browser = None
        if browser is not None and browser.viewport is not None:
            self.viewport = (browser.viewport.width, browser.viewport.height)
        elif self.capture_region is None and self.image is not None:
            self.viewport = self.image.size

    def _close_region(self) -> None:
        self.query_one(RegionInput).remove_class("open")
        self.query_one("#shot-region-error").remove_class("shown")
        self.focus()

    @on(RegionInput.Closed)
    def _region_cancelled(self, event: RegionInput.Closed) -> None:
        event.stop()
        self._close_region()

    @on(Input.Submitted, "#shot-region")
    def _region_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            self.capture_region = parse_region(event.value, self.viewport)
        except ValueError as error:  # the field stays open with the focus: the next keys fix the numbers
            box = self.query_one("#shot-region-error", Static)
            box.update(Text(str(error)))
            box.add_class("shown")
            return
        self._close_region()
        self._update_status()
        self.action_capture()

    # saving -------------------------------------------------------------------

    def action_save(self) -> None:
        if self.png is None:
            self.notify("Capture a screenshot first (space)", severity="warning")
            return
        png, captured_at = self.png, self.captured_at or datetime.now()
        stamp = captured_at.strftime("%Y%m%d-%H%M%S")

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._write(png, target)

        self.app.push_screen(SaveScreen("Save screenshot", f"bbrowse-screenshot-{self.session_id}-{stamp}.png",
                                        what=f"PNG captured {captured_at.strftime('%H:%M:%S')}"), chosen)

    def _write(self, png: bytes, target: Path) -> None:
        partial = partial_path(target)
        try:
            partial.write_bytes(png)
            target = commit(partial, target)
        except OSError as error:
            partial.unlink(missing_ok=True)
            self.notify(str(error), title="Could not save the screenshot", severity="error")
            return
        self.last_saved = target
        self.notify(str(target), title="Screenshot saved")

    # status -------------------------------------------------------------------

    def on_resize(self) -> None:
        self.call_after_refresh(self._update_status)  # cut to the new width

    def _update_status(self) -> None:
        if not self.in_place():
            return
        status = Text()
        if self.live:
            status.append("● live", style="bold red")
        else:
            status.append("paused", style="dim")
        status.append(" · continuous" if self.interval == 0 else f" · every {self.interval}s")
        if self.interacting:
            status.append(" │ ")
            status.append("interacting", style="bold reverse")
        if self.image is not None:
            width, height = self.image.size
            status.append(f" │ {width}×{height} px")
        fps = self.fps() if self.live else None
        if fps is not None:
            status.append(f" │ {fps:.1f} fps")
        if self.capture_seconds is not None:
            status.append(f" │ capture {self.capture_seconds * 1000:.0f} ms")
        if self.captured_at is not None:
            status.append(f" │ captured {self.captured_at.strftime('%H:%M:%S')}")
        status.append(f" │ {describe_region(self.capture_region)}")
        if self.capturing and not self.live:
            status.append(" │ capturing…", style="italic")
        elif self.error:
            status.append(" │ failed", style="bold red")
        status.append(f" │ {self.view.rendering_label}", style="dim")
        line = self.query_one("#shot-status", Static)
        width = line.content_region.width
        if width and status.cell_len > width:  # cut with a "…", not mid-word
            status.truncate(width, overflow="ellipsis")
        line.update(status)
