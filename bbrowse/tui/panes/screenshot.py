"""Screenshots of a session's browser: capture now, a live view, interact mode, a region, save.

The live view follows the browser's screencast (`bbrowse.client.screencast`), or captures screenshots where
CDP cannot be reached and with a region or an interval. It runs only while the tab is on screen and takes
the next frame only once the last one is drawn (frames meanwhile are dropped, never queued); the status
line says which source and why. A failed capture stays in the pane with the service's code and message
until a capture works, so a live view that stops working says why. Workers fetch and decode and post
typed messages; the `@on` handlers draw (into widgets the pane holds, so a late message draws nothing).
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
from bbrowse.client.screencast import Screencast
from bbrowse.timeouts import bounded
from bbrowse.transfer import save_bytes
from bbrowse.tui.app_services import describe_error, services, settings_of
from bbrowse.tui.dialogs.save import SaveScreen
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.panes.base import HintLine, SessionPane
from bbrowse.tui.remote_input import RemoteInput
from bbrowse.tui.textual_private import keymap_of
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
#: After the screencast could not start or dropped, poll this long before trying it again.
SCREENCAST_RETRY_SECONDS = 10.0
#: While no frame comes (a still page), the screencast loop looks this often whether the pane was resized
#: or hidden, and asks where the mouse went after the last frame.
SCREENCAST_IDLE_SECONDS = 0.25
#: JPEG quality asked of the screencast (frames are scaled to the pane first: small and quick to decode).
SCREENCAST_QUALITY = 80
#: The browser's mouse is asked for at most this often while frames come.
MOUSE_EVERY_SECONDS = 0.25
#: A frame this large (JPEG bytes) is decoded off the event loop; smaller ones cost less than the hop.
DECODE_IN_THREAD_BYTES = 64 * 1024
#: While frames come, the status line (frames per second) is redrawn at most this often.
STATUS_EVERY_SECONDS = 0.5
#: How long a worker waits for its frame to be drawn before looking again (the app suspended or closing).
DRAWN_TIMEOUT_SECONDS = 5.0


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


# what the workers post ------------------------------------------------------------------------


class FrameReady(Message):
    """A decoded picture to draw: a screenshot (`png`) or a screencast frame (`png` None) standing for a
    picture of `size`; `drawn` is set once the screen shows it (the worker then takes the next)."""

    def __init__(self, image: PILImage.Image, size: tuple[int, int], *, png: bytes | None = None,
                 capture_seconds: float | None = None, mouse: tuple[int, int] | None = None,
                 mouse_known: bool = False, dropped: int | None = None) -> None:
        super().__init__()
        self.image = image
        self.size = size
        self.png = png
        self.capture_seconds = capture_seconds
        self.mouse = mouse
        self.mouse_known = mouse_known
        self.dropped = dropped
        self.drawn = asyncio.Event()


class CaptureFailed(Message):
    def __init__(self, error: BaseException, prefix: str = "") -> None:
        super().__init__()
        self.error = error
        self.prefix = prefix


class CaptureDone(Message):
    """A single capture (space) ended, well or not."""


class LiveSource(Message):
    """Where the live view's frames come from now: `screencast`, or `polling` with the reason."""

    def __init__(self, source: str, reason: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.reason = reason


class LiveEnded(Message):
    """The session is gone: the live view stops."""


class MouseAt(Message):
    def __init__(self, position: tuple[int, int] | None) -> None:
        super().__init__()
        self.position = position


class SaveReady(Message):
    """A full screenshot taken to be saved (the live view's frames are scaled down)."""

    def __init__(self, png: bytes, captured_at: datetime) -> None:
        super().__init__()
        self.png = png
        self.captured_at = captured_at


class ScreenshotPane(SessionPane, can_focus=True):
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
    ScreenshotPane #shot-status { height: 1; width: 1fr; background: $panel; padding: 0 1; }
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

    def __init__(self, session_id: str, *, auto_capture: bool = True, rendering: str | None = None,
                 screencast: bool = True) -> None:
        """`auto_capture`: take a first screenshot when the pane is first shown. `rendering`: force a
        textual-image protocol (`halfcell`, `sixel`, `tgp`, `unicode`); default from the environment.
        `screencast`: False polls screenshots even where CDP is reachable (benchmarks compare the two)."""
        super().__init__(session_id)
        self.auto_capture = auto_capture
        self.rendering = rendering
        self.screencast = screencast
        self.capture_region: ScreenshotRegion | None = None
        #: The browser's viewport (width, height) in pixels, once known: a region is checked against it.
        self.viewport: tuple[int, int] | None = None
        self.interval = DEFAULT_INTERVAL
        self.live = False
        self.capturing = False
        #: The last full screenshot's PNG (None while the live view shows screencast frames).
        self.png: bytes | None = None
        #: The picture shown (a screencast frame is scaled down) and the size it stands for, in page pixels.
        self.image: PILImage.Image | None = None
        self.image_size: tuple[int, int] | None = None
        self.captured_at: datetime | None = None
        #: The last failure shown in the pane ("code (status): message"), None after a good capture.
        self.error: str | None = None
        #: The last file saved (its local path).
        self.last_saved: Path | None = None
        #: The browser's mouse in screen pixels (None: unknown).
        self.mouse: tuple[int, int] | None = None
        #: Seconds the last screenshot took (request to PNG in hand), and when recent frames were drawn.
        self.capture_seconds: float | None = None
        self.frame_times: deque[float] = deque(maxlen=240)
        #: Frames drawn since the pane was made (tests and benchmarks wait on it).
        self.frames = 0
        #: Where live frames come from (`screencast`, `polling`; None before the live view ran) and why polling.
        self.source: str | None = None
        self.polling_reason: str | None = None
        #: Screencast frames Chromium sent that were replaced by a newer one before the pane could draw them.
        self.dropped = 0
        self.remote: RemoteInput | None = None
        self._cast: Screencast | None = None
        self._wire_frames_before = 0
        self._status_at = 0.0
        self._status_due = False
        self._last_failure: BaseException | None = None
        self._shown_once = False
        self._status = Static("", id="shot-status", markup=False)
        self._region_error = Static("", id="shot-region-error", markup=False)
        self._error_box = Static("", id="shot-error", markup=False)
        self._hint = HintLine(HINT, id="shot-hint")
        self._view: ImageView | None = None

    def compose(self) -> ComposeResult:
        configured = settings_of(self).screenshot  # [screenshot] interval and rendering
        self.interval = configured.interval
        self.rendering = self.rendering or configured.forced_rendering
        self._view = ImageView(rendering=self.rendering, id="shot-view")
        yield self._status
        yield RegionInput(placeholder="x,y,width,height in pixels · empty = whole viewport · esc cancels",
                          id="shot-region")
        yield self._region_error
        yield self._error_box
        yield Static(hint_text("No screenshot yet. Press {screenshot.capture} to capture, {screenshot.live} for a live "
                               "view.", keymap_of(self.app)), id="shot-empty", markup=False)
        yield self._view
        yield self._hint

    @property
    def view(self) -> ImageView:
        if self._view is None:
            self._view = ImageView(rendering=self.rendering, id="shot-view")  # not composed yet (a unit test)
        return self._view

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

    # the workers: fetch and decode, post what to draw (no widget is drawn into here) ---------

    def action_capture(self) -> None:
        if not self.capturing and not self.live:
            self.capturing = True
            self._update_status()
            self._capture()

    @work(group="screenshot-capture")
    async def _capture(self) -> None:
        try:
            await self._poll_once()
        finally:
            self.post_message(CaptureDone())

    async def _poll_once(self) -> BaseException | None:
        """Capture and decode one screenshot (with the browser's mouse), post it and wait until it is drawn;
        the failure (posted too) or None."""
        failure: BaseException | None = None
        prefix = ""
        started = time.perf_counter()
        where = asyncio.ensure_future(self._mouse_position())
        try:
            png = await self.client.computer.screenshot(self.session_id, region=self.capture_region)
            seconds = time.perf_counter() - started
            same = png == self.png and self.image is not None  # a still page: nothing to decode or draw
            image = self.image if same and self.image is not None else await asyncio.to_thread(decode_image, png)
        except ClientError as error:
            failure = error
        except Exception as error:  # Pillow: the answer was not an image
            failure, prefix = error, "The service's answer is not an image: "
        except BaseException:
            where.cancel()  # cancelled (live view stopped): the mouse question goes too
            raise
        if failure is not None:
            where.cancel()
            self.post_message(CaptureFailed(failure, prefix))
            return failure
        mouse = await where
        await self._draw(FrameReady(image, image.size, png=png, capture_seconds=seconds, mouse=mouse,
                                    mouse_known=True))
        return None

    async def _draw(self, frame: FrameReady) -> None:
        """Post `frame` and wait until it is on the screen (bounded: a closing app never draws it)."""
        self.post_message(frame)
        try:
            await bounded(frame.drawn.wait(), DRAWN_TIMEOUT_SECONDS)
        except TimeoutError:
            pass  # the app is suspended or closing: carry on, the loop looks again

    async def _mouse_position(self) -> tuple[int, int] | None:
        try:
            return await self.client.computer.mouse_position(self.session_id)
        except ClientError:
            return None  # an older service, or no pointer yet: no mark

    @property
    def wire_frames(self) -> int:
        """Screencast frames that came over the wire since the pane was made (drawn or dropped)."""
        return self._wire_frames_before + (self._cast.received if self._cast is not None else 0)

    def _visible(self) -> bool:
        return self.is_on_screen and self.screen.is_current

    def _wants_screencast(self) -> bool:
        return self.screencast and self.capture_region is None and self.interval == 0

    @work(exclusive=True, group="screenshot-live")
    async def _live_loop(self) -> None:
        """While live: follow the screencast, else capture (the next when the last is drawn, plus the interval)."""
        screencast_at = 0.0  # when the screencast may be tried (again)
        polling_said: str | None = None
        while self.live:
            if not self._visible():
                await asyncio.sleep(HIDDEN_POLL_SECONDS)
                continue
            started = time.monotonic()
            if self._wants_screencast() and started >= screencast_at:
                try:
                    await self._follow_screencast()
                    polling_said = None
                    continue
                except (NotFound, SessionGone) as gone:
                    self.post_message(CaptureFailed(gone))
                    self.post_message(LiveEnded())
                    return
                except ClientError as error:  # ScreencastUnavailable, or the session could not be read
                    screencast_at = time.monotonic() + SCREENCAST_RETRY_SECONDS
                    reason = str(error)
            elif not self.screencast:
                reason = "screencast off"
            elif self.capture_region is not None:
                reason = "a region"
            elif self.interval:
                reason = f"every {self.interval}s"
            else:
                reason = polling_said or "screencast unavailable"
            if reason != polling_said:
                polling_said = reason
                self.post_message(LiveSource("polling", reason))
            failure = await self._poll_once()
            if isinstance(failure, SessionGone | NotFound):
                self.post_message(LiveEnded())  # the session was deleted: nothing will ever come back
                return
            pause = self.interval - (time.monotonic() - started) if failure is None else RETRY_SECONDS
            if pause > 0:
                await asyncio.sleep(pause)

    async def _follow_screencast(self) -> None:
        """Draw pushed frames until the live view stops, the tab is hidden or polling is asked for; raises
        ScreencastUnavailable when CDP cannot be reached or drops.

        Chromium scales the frames to what the pane can show: PNG for half cells (exact colours keep flat
        areas flat and still rows unchanged), JPEG for larger pictures. A still page sends nothing."""
        wanted = self.view.frame_pixels()
        cast = Screencast(self.client, self.session_id, max_width=wanted[0] if wanted else None,
                          max_height=wanted[1] if wanted else None, quality=SCREENCAST_QUALITY,
                          image_format="png" if self.view.fast else "jpeg")
        await cast.start()
        self._cast = cast
        self.post_message(LiveSource("screencast"))
        mouse: asyncio.Task[None] | None = None
        mouse_due, mouse_asked = True, 0.0
        try:
            while self.live and self._visible() and self._wants_screencast():
                wanted = self.view.frame_pixels()
                if wanted is not None and wanted != (cast.max_width, cast.max_height):
                    await cast.resize(*wanted)
                now = time.monotonic()
                if mouse_due and (mouse is None or mouse.done()) and now - mouse_asked >= MOUSE_EVERY_SECONDS:
                    mouse, mouse_due, mouse_asked = asyncio.ensure_future(self._post_mouse()), False, now
                try:
                    frame = await bounded(cast.next_frame(), SCREENCAST_IDLE_SECONDS)
                except TimeoutError:
                    continue
                if frame is None:
                    return
                if len(frame.jpeg) > DECODE_IN_THREAD_BYTES:
                    image = await asyncio.to_thread(decode_image, frame.jpeg)
                else:
                    image = decode_image(frame.jpeg)
                size = (round(frame.device_width) or image.width, round(frame.device_height) or image.height)
                mouse_due = True
                await self._draw(FrameReady(image, size, dropped=cast.dropped))
        finally:
            if mouse is not None:
                mouse.cancel()
            self._cast = None
            self._wire_frames_before += cast.received
            await cast.stop()

    async def _post_mouse(self) -> None:
        self.post_message(MouseAt(await self._mouse_position()))

    @work(exclusive=True, group="screenshot-save")
    async def _capture_for_saving(self) -> None:
        try:
            png = await self.client.computer.screenshot(self.session_id, region=self.capture_region)
        except ClientError as error:
            self.post_message(CaptureFailed(error))
            return
        self.post_message(SaveReady(png, datetime.now().astimezone()))

    # the handlers: draw -------------------------------------------------------------------

    @on(FrameReady)
    def _frame_ready(self, message: FrameReady) -> None:
        if message.png is not None or message.capture_seconds is not None:
            self.capture_seconds = message.capture_seconds
        if message.mouse_known:
            self.mouse = message.mouse
        if message.dropped is not None:
            self.dropped = message.dropped
        self._show(message.image, message.size, message.png)
        if self.view.changed_rows == 0:  # nothing changed on screen: nothing to wait for
            self._frame_drawn(message.drawn)
        else:
            self.call_after_refresh(self._frame_drawn, message.drawn)

    def _frame_drawn(self, drawn: asyncio.Event) -> None:
        now = time.monotonic()
        self.frames += 1
        self.frame_times.append(now)
        drawn.set()
        if now - self._status_at >= STATUS_EVERY_SECONDS or not self.live:
            self._update_status()  # redrawing the status line costs a repaint: not 30 times a second
        elif not self._status_due:
            self._status_due = True  # the last frame of a burst is counted too, a little later
            self.set_timer(STATUS_EVERY_SECONDS, self._update_status)

    @on(CaptureFailed)
    def _capture_failed(self, message: CaptureFailed) -> None:
        self._failed(message.error, message.prefix)

    @on(CaptureDone)
    def _capture_done(self) -> None:
        self.capturing = False
        self._update_status()

    @on(LiveSource)
    def _live_source(self, message: LiveSource) -> None:
        if not self.live:
            return  # posted just before the live view was stopped
        self.source, self.polling_reason = message.source, message.reason
        self._update_status()

    @on(LiveEnded)
    def _live_ended(self) -> None:
        self._set_live(False)
        self._leave_interact(take_keyboard=self.view.has_focus)

    @on(MouseAt)
    def _mouse_at(self, message: MouseAt) -> None:
        if message.position != self.mouse:
            self.mouse = message.position
            if self.image is not None:
                self.view.show(self.image, self._local_mouse(), self.image_size)

    @on(SaveReady)
    def _save_ready(self, message: SaveReady) -> None:
        self._ask_where(message.png, message.captured_at)

    def show_png(self, png: bytes, *, image: PILImage.Image | None = None, captured_at: datetime | None = None) -> None:
        """Draw a captured PNG (decoding it here when `image` is not given) and clear any shown error."""
        picture = image if image is not None else decode_image(png)
        self._show(picture, picture.size, png, captured_at)

    def _show(self, image: PILImage.Image, size: tuple[int, int], png: bytes | None,
              captured_at: datetime | None = None) -> None:
        self.png = png
        self.image = image
        self.image_size = size
        self.captured_at = captured_at or datetime.now().astimezone()
        self.error = None
        self._last_failure = None
        self._error_box.remove_class("shown")
        self.add_class("-has-image")
        self.view.origin = (self.capture_region.x, self.capture_region.y) if self.capture_region else (0, 0)
        self.view.show(image, self._local_mouse(), size)
        if not self.live:
            self._update_status()  # while live, `_frame_drawn` does (at most a few times a second)

    def _local_mouse(self) -> tuple[int, int] | None:
        """The browser's mouse in pixels of the picture (the region moves the origin), None when outside."""
        if self.mouse is None or self.image_size is None:
            return None
        x, y = self.mouse
        if self.capture_region is not None:
            x, y = x - self.capture_region.x, y - self.capture_region.y
        width, height = self.image_size
        if 0 <= x < width and 0 <= y < height:
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
        self._error_box.update(Text.assemble(("Screenshot failed\n", "bold"), text))
        self._error_box.add_class("shown")
        if isinstance(error, ClientError) and not isinstance(error, ServiceError) and self.is_attached:
            services(self).report_error(error)  # the connection itself: let the app mark it
        self._update_status()

    # live view ----------------------------------------------------------------

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
            self.source = None
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
        """Send the mouse and keyboard to the browser (the live view starts too); esc leaves.

        A click on the picture clicks the matching pixel of the page, the wheel scrolls, typed text goes
        through `type`, special keys and chords through `press_key`; a mark shows the browser's mouse."""
        if self.remote is None:
            self.remote = RemoteInput(self.client.computer, self.session_id, on_error=self._input_failed)
        self._set_live(True)
        self.view.interact(self.remote)
        self._hint.update_hint(INTERACT_HINT)
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
        self._hint.update_hint(HINT)
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
        self._region_error.remove_class("shown")
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
            self._region_error.update(Text(str(error)))
            self._region_error.add_class("shown")
            return
        self._close_region()
        self._update_status()
        self.action_capture()

    # saving -------------------------------------------------------------------

    def action_save(self) -> None:
        if self.png is None and self.image is not None:  # a screencast frame, scaled down: save a full capture
            self._capture_for_saving()
            return
        if self.png is None:
            self.notify(hint_text("Capture a screenshot first ({screenshot.capture})", keymap_of(self.app)),
                        severity="warning")
            return
        self._ask_where(self.png, self.captured_at or datetime.now())

    def _ask_where(self, png: bytes, captured_at: datetime) -> None:
        stamp = captured_at.strftime("%Y%m%d-%H%M%S")

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._write(png, target)

        self.app.push_screen(SaveScreen("Save screenshot", f"bbrowse-screenshot-{self.session_id}-{stamp}.png",
                                        what=f"PNG captured {captured_at.strftime('%H:%M:%S')}"), chosen)

    def _write(self, png: bytes, target: Path) -> None:
        try:
            target = save_bytes(png, target)
        except OSError as error:
            self.notify(str(error), title="Could not save the screenshot", severity="error")
            return
        self.last_saved = target
        self.notify(str(target), title="Screenshot saved")

    # status -------------------------------------------------------------------

    def on_resize(self) -> None:
        self.call_after_refresh(self._update_status)  # cut to the new width

    def _update_status(self) -> None:
        self._status_at, self._status_due = time.monotonic(), False
        status = Text()
        if self.live:
            status.append("● live", style="bold red")
        else:
            status.append("paused", style="dim")
        status.append(" · continuous" if self.interval == 0 else f" · every {self.interval}s")
        if self.live and self.source == "screencast":
            status.append(" · screencast")
        elif self.live and self.source == "polling":
            status.append(f" · polling ({self.polling_reason})" if self.polling_reason else " · polling")
        if self.interacting:
            status.append(" │ ")
            status.append("interacting", style="bold reverse")
        if self.image_size is not None:
            width, height = self.image_size
            status.append(f" │ {width}×{height} px")
        fps = self.fps() if self.live else None
        if fps is not None:
            status.append(f" │ {fps:.1f} fps")
        if self.live and self.source == "screencast":
            if self.dropped:
                status.append(f" │ {self.dropped} dropped")
        elif self.capture_seconds is not None:
            status.append(f" │ capture {self.capture_seconds * 1000:.0f} ms")
        if self.captured_at is not None:
            status.append(f" │ captured {self.captured_at.strftime('%H:%M:%S')}")
        status.append(f" │ {describe_region(self.capture_region)}")
        if self.capturing and not self.live:
            status.append(" │ capturing…", style="italic")
        elif self.error:
            status.append(" │ failed", style="bold red")
        status.append(f" │ {self.view.rendering_label}", style="dim")
        width = self._status.content_region.width
        if width and status.cell_len > width:  # cut with a "…", not mid-word
            status.truncate(width, overflow="ellipsis")
        self._status.update(status, layout=False)  # one row the width of the pane: its size never changes
