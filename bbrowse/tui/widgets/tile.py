"""One session of the wall: its live picture in half cells, its name, state, idle time and badges.

A tile shows whatever session the wall gives it (`show_session`) and pulls frames only while it is
shown: `start` runs one worker that reads the session's frame source, `stop` cancels it, so a session
paged out of view costs nothing. The frame source is the screencast where the service offers it (pushed
frames, `bbrowse.client.screencast`), else screenshot polling about once a second (`PollingFrames`).

Badges say what needs a person: the browser is down (frames fail), it came back (restarted), the session
may be reaped soon (its inactivity timeout nearly spent since the last call this app made to it, which
is activity for the service as for Kernel), a replay is recording. The idle time is since the picture
last changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from PIL import Image as PILImage
from rich.text import Text
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from bbrowse.client import BrowserClient, ClientError, SessionGone
from bbrowse.client.screencast import ScreencastUnavailable
from bbrowse.client.threaded_screencast import ThreadedScreencast
from bbrowse.humanize import duration
from bbrowse.timeouts import bounded
from bbrowse.tui.widgets.halfcell import HalfcellCanvas
from bbrowse.wire import Browser

#: Seconds between two screenshots of a polled tile (a frame a second at least, with the capture's own time).
POLL_SECONDS = 0.75
#: Seconds between two looks at a shown session's replays (the recording badge).
REPLAYS_SECONDS = 5.0
#: The first look at the replays waits for the first pictures of the whole page (else of the tile), at most this
#: long: as the wall opens, the service has every tile's screencast to start first, and the app every picture.
REPLAYS_FIRST_WAIT = 2.0
#: The session may be reaped when less than this share of its inactivity timeout is left (at least
#: REAP_WARN_SECONDS).
REAP_WARN_SHARE = 0.2
REAP_WARN_SECONDS = 15.0


class FrameSource(Protocol):
    """Frames of one session's browser, as pictures, while iterated; closed by cancelling the iteration."""

    def frames(self) -> AsyncIterator[PILImage.Image]: ...


def decode_image(data: bytes) -> PILImage.Image:
    image = PILImage.open(io.BytesIO(data))
    image.load()
    return image


class PollingFrames:
    """Screenshots every `interval` seconds (the capture's own time included), decoded off the event loop."""

    def __init__(self, client: BrowserClient, session_id: str, interval: float = POLL_SECONDS) -> None:
        self.client = client
        self.session_id = session_id
        self.interval = interval

    async def frames(self) -> AsyncIterator[PILImage.Image]:
        while True:
            started = time.monotonic()
            png = await self.client.computer.screenshot(self.session_id)
            yield await asyncio.to_thread(decode_image, png)
            await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - started)))


class ScreencastFrames:
    """Frames pushed by the session's screencast at about `size()` pixels, else (no CDP) screenshot polling.

    While the screencast is connected the session counts as in use (`holds_activity`): a CDP connection is
    activity for the service and for Kernel, pushed frames or not."""

    def __init__(self, client: BrowserClient, session_id: str, size: Callable[[], tuple[int, int]],
                 cdp_ws_url: str | None = None, warm: asyncio.Task[ThreadedScreencast] | None = None) -> None:
        """`cdp_ws_url`: the session's, as listed (saves asking for it; asked again when refused). `warm`: a
        screencast already starting (`warm_screencast`), taken instead of starting one."""
        self.client = client
        self.session_id = session_id
        self.size = size
        self.cdp_ws_url = cdp_ws_url
        self.warm = warm
        self.holds_activity = False
        #: The screencast could not be had: frames come from screenshots.
        self.polling = False

    async def frames(self) -> AsyncIterator[PILImage.Image]:
        width, height = self.size()
        warm, self.warm = self.warm, None
        cast = ThreadedScreencast(self.client, self.session_id, max_width=width, max_height=height,
                                  cdp_ws_url=self.cdp_ws_url)
        try:
            try:
                if warm is not None:
                    cast = await warm  # raises what its start raised
                    await cast.resize(width, height)  # a no-op at the size it was started at
                else:
                    await cast.start()
            except ScreencastUnavailable as refused:
                if refused.status is None or self.cdp_ws_url is None:
                    raise
                self.cdp_ws_url = None  # a listed URL whose token has expired: ask for the session's own
                cast = ThreadedScreencast(self.client, self.session_id, max_width=width, max_height=height)
                await cast.start()
        except ScreencastUnavailable:
            self.polling = True
            async for image in PollingFrames(self.client, self.session_id).frames():
                yield image
            return
        self.polling, self.holds_activity = False, True
        try:
            async for frame in cast:
                yield decode_image(frame.jpeg)  # a JPEG of a few hundred pixels: a millisecond
        finally:
            self.holds_activity = False
            await cast.stop()


def frame_source(client: BrowserClient, browser: Browser, size: Callable[[], tuple[int, int]],
                 warm: asyncio.Task[ThreadedScreencast] | None = None) -> FrameSource:
    return ScreencastFrames(client, browser.session_id, size, browser.cdp_ws_url or None, warm)


#: The last picture a tile drew of each session (the newest LAST_PICTURES sessions): a tile showing the session
#: again (the wall reopened, a page turned back) draws it at once, until the first new frame replaces it.
LAST_PICTURES = 64
_last_pictures: OrderedDict[str, PILImage.Image] = OrderedDict()


def last_picture(session_id: str) -> PILImage.Image | None:
    return _last_pictures.get(session_id)


def _remember(session_id: str, image: PILImage.Image) -> None:
    _last_pictures[session_id] = image
    _last_pictures.move_to_end(session_id)
    while len(_last_pictures) > LAST_PICTURES:
        _last_pictures.popitem(last=False)


#: The size a tile asks its first frames at (`SessionTile.pixels` before the grid is laid out).
FIRST_PIXELS = (160, 100)


def warm_screencast(client: BrowserClient, browser: Browser) -> asyncio.Task[ThreadedScreencast]:
    """Start `browser`'s screencast now, at a tile's first size, for a tile that is not mounted yet: the wall
    starts every shown session's while it builds its grid (connecting, attaching and starting take three
    round trips each through the service, on the I/O thread while the app lays the tiles out)."""

    async def start() -> ThreadedScreencast:
        cast = ThreadedScreencast(client, browser.session_id, max_width=FIRST_PIXELS[0],
                                  max_height=FIRST_PIXELS[1], cdp_ws_url=browser.cdp_ws_url or None)
        await cast.start()
        return cast

    return asyncio.create_task(start(), name=f"warm-screencast-{browser.session_id}")


async def drop_warm(task: asyncio.Task[ThreadedScreencast]) -> None:
    """Let go of a warm screencast no tile took (the page changed, the wall closed)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await (await task).stop()


@dataclass
class TileState:
    """What a tile knows of its session beyond the Browser object; `badges` and `idle` read it."""

    #: monotonic time of the last frame whose picture differed from the one before.
    changed_at: float | None = None
    #: monotonic time of the last call this app made to the session that went through (activity).
    touched_at: float | None = None
    #: The frames failed: the browser is down (its reason).
    down: str | None = None
    #: The frames failed, then came back: the browser restarted.
    restarted: bool = False
    #: The session was deleted (410/404).
    gone: bool = False
    recording: bool = False
    frames: int = 0
    frame_times: list[float] = field(default_factory=list)

    def badges(self, browser: Browser, now: float) -> list[tuple[str, str]]:
        """(text, style) of each badge, the most urgent first."""
        badges: list[tuple[str, str]] = []
        if self.gone:
            badges.append(("ended", "bold red"))
        elif self.down is not None:
            badges.append(("⚠ browser down", "bold red"))
        elif self.restarted:
            badges.append(("⚠ restarted", "bold yellow"))
        left = self.reap_in(browser, now)
        warn_at = max(REAP_WARN_SECONDS, browser.timeout_seconds * REAP_WARN_SHARE)
        if left is not None and not self.gone and left <= warn_at:
            badges.append((f"⌛ reaped in {duration(max(0, int(left)))}", "bold yellow"))
        if self.recording:
            badges.append(("● REC", "bold red"))
        return badges

    def reap_in(self, browser: Browser, now: float) -> float | None:
        """Seconds until the inactivity timeout, counted from the last call this app made; None: unknown."""
        if self.touched_at is None:
            return None
        return browser.timeout_seconds - (now - self.touched_at)

    def idle(self, now: float) -> str:
        if self.changed_at is None:
            return "–"
        return duration(int(now - self.changed_at)) if now - self.changed_at >= 1 else "0s"


def tile_line(browser: Browser, state: TileState, now: float, width: int) -> Text:
    """The line under the picture: state, idle time, badges."""
    text = Text()
    text.append("ended" if state.gone or browser.deleted_at else "active",
                style="red" if state.gone or browser.deleted_at else "green")
    text.append(f" · idle {state.idle(now)}", style="dim")
    for badge, style in state.badges(browser, now):
        text.append(" ")
        text.append(badge, style=style)
    text.truncate(max(1, width), overflow="ellipsis")
    return text


#: Makes a tile's frame source for a session, given a function that says the picture's size in pixels.
SourceFor = Callable[[Browser, Callable[[], tuple[int, int]]], FrameSource]

#: The longest a tile with a picture waits for the others' first pictures before it takes frames again.
FIRST_PICTURES_SECONDS = 2.0


class FirstPictures:
    """A wall page's first pictures come first: until every tile shown has one, a tile that has its picture
    takes no new frame (its screencast, unacknowledged, pauses too), so the app's and the browsers' time goes
    to the tiles still blank. At most FIRST_PICTURES_SECONDS; a page shown anew starts again (`expect`)."""

    def __init__(self, on_all: Callable[[], None] | None = None) -> None:
        """`on_all`: called when the last blank tile of a page has its picture, instead of letting the tiles go on
        at once: it calls `release` (the wall: once that picture is on screen, before the others' next frames)."""
        self._on_all = on_all
        self._blank: set[int] = set()
        self._all = asyncio.Event()
        self._all.set()
        self._until = 0.0

    def expect(self, tiles: list[SessionTile]) -> None:
        """A page is shown: these tiles' sessions are on it (those that had frames before wait for no one)."""
        self._blank = {id(tile) for tile in tiles if tile.browser is not None and not tile.state.frames}
        self._all = asyncio.Event()
        self._until = time.monotonic() + FIRST_PICTURES_SECONDS
        if not self._blank:
            self._all.set()

    def drawn(self, tile: SessionTile) -> None:
        if id(tile) not in self._blank:
            return
        self._blank.discard(id(tile))
        if self._blank:
            return
        if self._on_all is not None:
            self._on_all()
        else:
            self.release()

    def release(self) -> None:
        """The tiles of the page shown take frames again."""
        self._all.set()

    async def wait(self) -> None:
        """Until every tile of the page has a picture, or FIRST_PICTURES_SECONDS after the page was shown (a tile
        whose browser is down never has one)."""
        page, until = self._all, self._until
        if page.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await bounded(page.wait(), max(0.0, until - time.monotonic()))
        page.set()


class SessionTile(Widget):
    """A session's live picture with its name, state and badges; `cursor` and `selected` change its border."""

    DEFAULT_CSS = """
    SessionTile { border: round $foreground 30%; height: 1fr; width: 1fr; border-title-color: $foreground; }
    SessionTile.-cursor { border: heavy $accent; }
    SessionTile.-selected { border: round $success; border-title-color: $success; }
    SessionTile.-cursor.-selected { border: heavy $success; }
    SessionTile.-empty { border: none; }
    SessionTile HalfcellCanvas { height: 1fr; }
    SessionTile .tile-line { height: 1; }
    """

    def __init__(self, index: int, *, source_for: SourceFor, first_pictures: FirstPictures | None = None,
                 id: str | None = None) -> None:
        """`first_pictures`: the wall's, shared by the tiles of a page (`FirstPictures`)."""
        super().__init__(id=id)
        self.index = index
        self._first_pictures = first_pictures
        self.browser: Browser | None = None
        self.state = TileState()
        self._source_for = source_for
        self.source: FrameSource | None = None
        self._pull_task: asyncio.Task[None] | None = None
        self._replays_task: asyncio.Task[None] | None = None
        self._first_frame = asyncio.Event()
        self.selected = False
        self._drawn_title: str | None = None
        self._drawn_line: Text | None = None
        self.canvas = HalfcellCanvas()
        self.line = Static("", classes="tile-line", markup=False)

    def compose(self) -> ComposeResult:
        yield self.canvas
        yield self.line

    # what it shows ---------------------------------------------------------------

    def show_session(self, browser: Browser | None, state: TileState | None, *, selected: bool = False) -> None:
        """Show `browser` (None: an empty place on the last page) with the state the wall keeps for it."""
        same = browser is not None and self.browser is not None and browser.session_id == self.browser.session_id
        if not same:
            self.stop()
            self.canvas.show(last_picture(browser.session_id) if browser is not None else None)
        self.browser = browser
        self.state = state if state is not None else TileState()
        self.selected = selected
        self.set_class(browser is None, "-empty")
        self.set_class(selected, "-selected")
        self.canvas.display = browser is not None
        self.line.display = browser is not None
        self.redraw_labels()

    def redraw_labels(self) -> None:
        """The title and the line under the picture, rewritten only when they changed (never a new layout:
        a Static's update lays the whole screen out again by default, at every frame of every tile)."""
        browser = self.browser
        if getattr(self.source, "holds_activity", False):
            self.state.touched_at = time.monotonic()
        if browser is None:
            title, line = "", Text()
        else:
            title = ("✓ " if self.selected else "") + (browser.name or browser.session_id)
            line = tile_line(browser, self.state, time.monotonic(), self.content_size.width or 40)
        if title != self._drawn_title:
            self._drawn_title = title
            self.border_title = Text(title, overflow="ellipsis")
        if line != self._drawn_line:
            self._drawn_line = line
            self.line.update(line, layout=False)

    # frames ----------------------------------------------------------------------

    def pixels(self) -> tuple[int, int]:
        """The size to ask frames at: four pixels per half cell, for the box filter to average."""
        size = self.canvas.size
        return max(FIRST_PIXELS[0], size.width * 4), max(FIRST_PIXELS[1], size.height * 8)

    def start(self, client: BrowserClient) -> None:
        """Pull frames (and the recording state) of the shown session until `stop`."""
        if self.browser is None or self.browser.deleted_at or self.pulling:
            return
        browser = self.browser
        self._first_frame = asyncio.Event()
        self._pull_task = asyncio.create_task(self._pull(browser), name=f"tile-{browser.session_id}")
        self._replays_task = asyncio.create_task(self._watch_replays(client, browser.session_id))

    def stop(self) -> None:
        for task in (self._pull_task, self._replays_task):
            if task is not None:
                task.cancel()
        self._pull_task = self._replays_task = None

    @property
    def pulling(self) -> bool:
        return self._pull_task is not None and not self._pull_task.done()

    async def _pull(self, browser: Browser) -> None:
        state = self.state
        while True:
            try:
                self.source = self._source_for(browser, self.pixels)
                async for image in self.source.frames():
                    self._drawn(state, image)
                    if self._first_pictures is not None:
                        await self._first_pictures.wait()
            except asyncio.CancelledError:
                raise
            except SessionGone:
                state.gone = True
                self.redraw_labels()
                return
            except (ClientError, OSError, ValueError) as error:  # ValueError: a picture Pillow cannot read
                if state.down is None:
                    state.down = str(error) or type(error).__name__
                    self.redraw_labels()
            await asyncio.sleep(2.0)  # the browser is down or the source ended: try again

    def _drawn(self, state: TileState, image: PILImage.Image) -> None:
        now = time.monotonic()
        state.touched_at = now
        state.frames += 1
        state.frame_times.append(now)
        del state.frame_times[:-20]
        news = state.down is not None or state.changed_at is None  # else the labels move on once a second
        if state.down is not None:
            state.down = None
            state.restarted = True
        self._first_frame.set()
        if state is not self.state:
            return
        if state.frames == 1 and self._first_pictures is not None:
            self._first_pictures.drawn(self)
        self.canvas.show(image)
        if self.browser is not None:
            _remember(self.browser.session_id, image)
        if self.canvas.rows_changed or state.changed_at is None:  # the picture changed where it shows
            state.changed_at = now
        if news:
            self.redraw_labels()

    async def _watch_replays(self, client: BrowserClient, session_id: str) -> None:
        state = self.state
        first = self._first_pictures.wait() if self._first_pictures is not None else self._first_frame.wait()
        with contextlib.suppress(TimeoutError):
            await bounded(first, REPLAYS_FIRST_WAIT)
        while True:
            with contextlib.suppress(ClientError):
                replays = await client.replays.list(session_id)
                recording = any(r.finished_at is None for r in replays)
                if recording != state.recording:
                    state.recording = recording
                    self.redraw_labels()
            await asyncio.sleep(REPLAYS_SECONDS)

    def on_unmount(self) -> None:
        self.stop()
