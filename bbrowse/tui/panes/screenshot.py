"""Screenshots of a session's browser: capture now, a live view refreshed every N seconds, a region, save.

The picture is drawn inline by textual-image (kitty/sixel where the terminal has them, half-cell
blocks otherwise), scaled to the pane with its aspect ratio. A failed capture (no Chromium, a crashed
browser, a region outside the viewport) is shown in the pane with the service's code and message and
stays there until a capture works, so a live view that stops working says why.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from PIL import Image as PILImage
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from bbrowse.client import ClientError, ServiceError
from bbrowse.tui.app import settings_of
from bbrowse.tui.saving import commit, partial_path
from bbrowse.tui.screens.save import SaveScreen
from bbrowse.tui.widgets.screenshot_view import ScreenshotView, decode_image
from bbrowse.wire import ScreenshotRegion

DEFAULT_INTERVAL = 2
MIN_INTERVAL, MAX_INTERVAL = 1, 60
HINT = "space/c capture · a live on/off · +/- interval · R region · s save PNG"


def parse_region(text: str) -> ScreenshotRegion | None:
    """`x,y,w,h` (commas or spaces) to a region; empty text is None (the whole viewport).

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


class ScreenshotPane(Vertical, can_focus=True):
    BINDINGS = [
        Binding("space", "capture", "Capture", id="screenshot.capture"),
        Binding("c", "capture", "Capture", show=False, id="screenshot.capture_c"),
        Binding("a", "toggle_live", "Live on/off", id="screenshot.live"),
        Binding("plus,equals_sign", "slower", "Interval +", show=False, id="screenshot.slower"),
        Binding("minus", "faster", "Interval −", show=False, id="screenshot.faster"),
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
        super().__init__()
        self.session_id = session_id
        self.auto_capture = auto_capture
        self.rendering = rendering
        self.capture_region: ScreenshotRegion | None = None
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
        self._shown_once = False
        self._timer = None

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
        yield ScreenshotView(rendering=self.rendering, id="shot-view")
        yield Static(HINT, id="shot-hint", markup=False)

    @property
    def view(self) -> ScreenshotView:
        return self.query_one(ScreenshotView)

    def on_mount(self) -> None:
        self._timer = self.set_interval(self.interval, self._tick, pause=True)
        self._update_status()

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
        if not self.capturing:
            self.capturing = True
            self._update_status()
            self._capture()

    @work(group="screenshot-capture")
    async def _capture(self) -> None:
        failure: BaseException | None = None
        prefix = ""
        try:
            png = await self.app.client.computer.screenshot(self.session_id, region=self.capture_region)
            image = await asyncio.to_thread(decode_image, png)
        except ClientError as error:
            failure = error
        except Exception as error:  # Pillow: the answer was not an image
            failure, prefix = error, "The service's answer is not an image: "
        finally:
            self.capturing = False
        if failure is not None:
            self._failed(failure, prefix)
        else:
            self.show_png(png, image=image)

    def show_png(self, png: bytes, *, image: PILImage.Image | None = None, captured_at: datetime | None = None) -> None:
        """Draw a captured PNG (decoding it here when `image` is not given) and clear any shown error."""
        self.png = png
        self.image = image if image is not None else decode_image(png)
        self.captured_at = captured_at or datetime.now().astimezone()
        self.error = None
        self.query_one("#shot-error").remove_class("shown")
        self.add_class("-has-image")
        self.view.show(self.image)
        self._update_status()

    def _failed(self, error: BaseException, prefix: str = "") -> None:
        if isinstance(error, ServiceError):
            text = f"{error.code} ({error.status}): {error.message}"
        else:
            text = prefix + (str(error) or type(error).__name__)
        self.error = text
        box = self.query_one("#shot-error", Static)
        box.update(Text.assemble(("Screenshot failed\n", "bold"), text))
        box.add_class("shown")
        if isinstance(error, ClientError) and not isinstance(error, ServiceError):
            self.app.report_error(error)  # the connection itself: let the app mark it
        self._update_status()

    def _tick(self) -> None:
        if self.live and self.is_on_screen and self.screen.is_current:
            self.action_capture()

    # live view ----------------------------------------------------------------

    def action_toggle_live(self) -> None:
        self.live = not self.live
        if self.live:
            self._timer.resume()
            self.action_capture()
        else:
            self._timer.pause()
        self._update_status()

    def _set_interval(self, seconds: int) -> None:
        self.interval = max(MIN_INTERVAL, min(MAX_INTERVAL, seconds))
        self._timer.stop()
        self._timer = self.set_interval(self.interval, self._tick, pause=not self.live)
        self._update_status()

    def action_slower(self) -> None:
        self._set_interval(self.interval + 1)

    def action_faster(self) -> None:
        self._set_interval(self.interval - 1)

    # region -------------------------------------------------------------------

    def action_region(self) -> None:
        field = self.query_one(RegionInput)
        r = self.capture_region
        field.value = f"{r.x},{r.y},{r.width},{r.height}" if r else ""
        field.add_class("open")
        field.focus()

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
            self.capture_region = parse_region(event.value)
        except ValueError as error:
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

    def _update_status(self) -> None:
        status = Text()
        if self.live:
            status.append("● live", style="bold red")
        else:
            status.append("paused", style="dim")
        status.append(f" · every {self.interval}s")
        if self.image is not None:
            width, height = self.image.size
            status.append(f" │ {width}×{height} px")
        if self.captured_at is not None:
            status.append(f" │ captured {self.captured_at.strftime('%H:%M:%S')}")
        status.append(f" │ {describe_region(self.capture_region)}")
        if self.capturing:
            status.append(" │ capturing…", style="italic")
        elif self.error:
            status.append(" │ failed", style="bold red")
        status.append(f" │ {self.view.rendering}", style="dim")
        self.query_one("#shot-status", Static).update(status)
