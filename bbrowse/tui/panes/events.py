"""Events of a session (its telemetry): a live list, filters, a detail view, and the replay's frame at an event.

A page producing 10,000 events a second must not slow the rest of the app (a shell in another tab):
events arrive as `RawEvent`s (seq and JSON, `client.telemetry.follow_raw`) and each is validated only
when it is looked at (a row on screen, a filter, the detail view). Every event is kept; the list is
redrawn at most `DRAW_SECONDS` apart, not at all while the tab is hidden, by a line-API widget whose
cost per frame does not grow with the events held. Workers report (`EventsArrived`, `FrameReady`);
the `@on` handlers of the mounted pane draw.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Input, Static

from bbrowse.client import ClientError
from bbrowse.client.telemetry import RawEvent, is_error, summary
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.panes.base import SessionPane
from bbrowse.tui.textual_private import keymap_of
from bbrowse.wire import Replay
from bbrowse.wire.telemetry import (
    TelemetryCategoriesConfig,
    TelemetryCategoryConfig,
    TelemetryEnvelope,
    TelemetryRequest,
)

#: Category filter, cycled by `f` (None: every category).
CATEGORY_CYCLE: tuple[str | None, ...] = (None, "console", "network", "page", "control", "connection", "system",
                                           "platform")
#: Events the pane holds; past this the oldest go, an eighth at a time (the service keeps its own bound).
MAX_EVENTS = 500_000
#: Frame step of the frame view, in seconds.
FRAME_STEP = 0.1
#: The list and its status line are redrawn at most this often while events pour in.
DRAW_SECONDS = 1 / 30
#: A request is looked for this many events back from its response (detail view).
REQUEST_LOOKBACK = 200_000
#: The keys the status line names, by binding id (`key_hints`): a remapped key shows as remapped.
HINT = ("{events.follow} follow · {events.category} category · {events.errors} errors · {events.search} filter · "
        "{events.detail} details · {events.copy} copy · {events.frame} frame")


def event_time(envelope: TelemetryEnvelope) -> str:
    return datetime.fromtimestamp(envelope.event.ts / 1_000_000, UTC).astimezone().strftime("%H:%M:%S.%f")[:-3]


def event_json(envelope: TelemetryEnvelope) -> str:
    return json.dumps(envelope.model_dump(exclude_none=True), indent=2, ensure_ascii=False)


class EventsArrived(Message):
    """New envelopes are in the pane's inbox."""


@dataclass
class StreamEnded(Message):
    """The event stream has ended: `error` says why, None when the session has ended."""

    error: str | None


@dataclass
class TelemetryConfigured(Message):
    """The session's telemetry was turned on (`error` None) or could not be."""

    error: str | None


@dataclass
class FrameReady(Message):
    """The frame view's picture (None: `note` says why there is none)."""

    png: bytes | None
    note: str


def row_text(item: RawEvent) -> tuple[str, bool]:
    """An event's line in the list and whether it is an error; validated here, not kept."""
    try:
        envelope = item.parse()
    except ClientError as exc:
        return f"#{item.seq}: not an event the app can read ({exc})", True
    event = envelope.event
    return f"{event_time(envelope)}  {event.category:<10} {event.type:<24} {summary(envelope)}", is_error(envelope)


class EventList(ScrollView, can_focus=True):
    """The shown events, one line each; the cursor row is highlighted, errors in red."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move(-20)", "Page up", show=False),
        Binding("pagedown", "move(20)", "Page down", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
    ]
    DEFAULT_CSS = "EventList { height: 1fr; }"

    class CursorMoved(Message):
        pass

    def __init__(self) -> None:
        super().__init__(id="events-list")
        self.rows: list[RawEvent] = []
        self.cursor = -1
        #: Drawn rows' text by seq (bounded): a row stays on screen for many frames, validated once.
        self._lines: dict[int, tuple[str, bool]] = {}

    def set_rows(self, rows: list[RawEvent], *, follow: bool) -> None:
        self.rows = rows
        if follow or self.cursor >= len(rows):
            self.cursor = len(rows) - 1
        if self.virtual_size.height != len(rows):
            self.virtual_size = Size(0, len(rows))  # no horizontal scrolling: its bar would hide the last row
        if follow:
            self.scroll_end(animate=False, immediate=True)
        self.refresh()

    def selected(self) -> RawEvent | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def action_move(self, delta: int) -> None:
        self.select(max(0, min(len(self.rows) - 1, self.cursor + delta)))

    def action_jump(self, where: int) -> None:
        self.select(len(self.rows) - 1 if where < 0 else 0)

    def select(self, index: int) -> None:
        self.cursor = index
        self.scroll_to_region(self._row_region(index), animate=False, immediate=True)
        self.refresh()
        self.post_message(self.CursorMoved())

    def _row_region(self, index: int) -> Region:
        return Region(0, index, 1, 1)

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.rows):
            return Strip.blank(width)
        item = self.rows[index]
        drawn = self._lines.get(item.seq)
        if drawn is None:
            if len(self._lines) > 4096:
                self._lines.clear()
            drawn = self._lines[item.seq] = row_text(item)
        line, error = drawn
        style = Style(color="red", bold=True) if error else Style()
        if index == self.cursor:
            style += Style(reverse=True)
        return Strip([Segment(line[:width].ljust(width), style)], width)


class EventsPane(SessionPane):
    BINDINGS = [
        Binding("space", "toggle_follow", "Follow / pause", id="events.follow"),
        Binding("f", "cycle_category", "Category", id="events.category"),
        Binding("e", "toggle_errors", "Errors only", id="events.errors"),
        Binding("slash", "search", "Filter (regex)", id="events.search"),
        Binding("enter", "toggle_detail", "Details", id="events.detail"),
        Binding("c", "copy", "Copy JSON", id="events.copy"),
        Binding("v", "frame", "Replay frame", id="events.frame"),
        Binding("t", "telemetry_on", "Record events", id="events.telemetry_on"),
        Binding("comma", "step(-1)", "Frame back", id="events.frame_back", show=False),
        Binding("full_stop", "step(1)", "Frame on", id="events.frame_on", show=False),
        Binding("left_square_bracket", "jump_event(-1)", "Previous event", id="events.prev", show=False),
        Binding("right_square_bracket", "jump_event(1)", "Next event", id="events.next", show=False),
    ]
    DEFAULT_CSS = """
    EventsPane { height: 1fr; }
    EventsPane #events-status { height: 1; color: $text-muted; }
    EventsPane #events-search { display: none; height: 3; }
    EventsPane #events-search.active { display: block; }
    EventsPane #events-detail { display: none; height: 45%; border-top: solid $primary; overflow-y: auto; }
    EventsPane #events-detail.active { display: block; }
    EventsPane #events-frame { display: none; height: 60%; border-top: solid $primary; }
    EventsPane #events-frame.active { display: block; }
    """

    #: The view's state: changing one redraws what shows it (the watchers below).
    category: var[str | None] = var(None, init=False)
    errors_only: var[bool] = var(False, init=False)
    pattern: var[re.Pattern[str] | None] = var(None, init=False)
    following: var[bool] = var(True, init=False)
    ended: var[str | None] = var(None, init=False)

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        #: Every event received (up to MAX_EVENTS); `shown` is the same list while no filter is set.
        self.events: list[RawEvent] = []
        self.shown: list[RawEvent] = self.events
        self.unseen = 0
        self._inbox: deque[list[RawEvent]] = deque()
        self._in_flight = False
        self._drawn_at = 0.0
        self._draw_timer: Timer | None = None
        self._frame_at: float | None = None
        self._replay_file: tuple[str, Path, Replay] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="events-status", markup=False)
        yield Input(placeholder="regex over the summary and type; enter applies, esc leaves", id="events-search")
        yield EventList()
        yield Static("", id="events-detail", markup=False)
        yield Static("", id="events-frame", markup=False)

    def focus_default(self) -> None:
        self.query_one(EventList).focus()

    def on_mount(self) -> None:
        self._draw_status()
        self._follow_stream()

    # the workers (no widget is touched here) ------------------------------------------

    @work(exclusive=True, group="events-stream")
    async def _follow_stream(self) -> None:
        """Append each batch to the inbox and post `EventsArrived`, at most one in flight."""
        error: str | None = None
        try:
            stream = self.client.telemetry.follow_raw(self.session_id, replay_all=True)
            async with stream:
                async for batch in stream:
                    self._inbox.append(batch)
                    if not self._in_flight:
                        self._in_flight = True
                        self.post_message(EventsArrived())
        except ClientError as exc:
            error = str(exc)
        self.post_message(StreamEnded(error))

    @work(exclusive=True, group="events-configure")
    async def action_telemetry_on(self) -> None:
        """Turn on console, network and page telemetry for this session (PATCH, as Kernel's update)."""
        on_ = TelemetryCategoryConfig(enabled=True)
        request = TelemetryRequest(browser=TelemetryCategoriesConfig(console=on_, network=on_, page=on_))
        try:
            await self.client.telemetry.configure(self.session_id, request)
        except ClientError as exc:
            self.post_message(TelemetryConfigured(str(exc)))
            return
        self.post_message(TelemetryConfigured(None))

    # the handlers (draw) ---------------------------------------------------------------

    @on(TelemetryConfigured)
    def _configured(self, message: TelemetryConfigured) -> None:
        if message.error is None:
            self.notify("Recording console, network and page events of this session")
        else:
            self.notify(f"could not turn telemetry on: {message.error}", severity="error")

    @on(EventsArrived)
    def _arrived(self) -> None:
        self._in_flight = False
        filtering = self.shown is not self.events
        while self._inbox:
            batch = self._inbox.popleft()
            self.events.extend(batch)
            matching = [e for e in batch if self._matches(e)] if filtering else batch
            if filtering:
                self.shown.extend(matching)
            if not self.following:
                self.unseen += len(matching)
        if len(self.events) > MAX_EVENTS + MAX_EVENTS // 8:  # an eighth at once: trimming costs O(1) an event
            dropped = len(self.events) - MAX_EVENTS
            del self.events[:dropped]
            if filtering:
                self._refilter()
                return
            events = self.query_one(EventList)
            events.cursor = max(events.cursor - dropped, 0)
        self._draw_soon()

    def _draw_soon(self) -> None:
        """Redraw the list and the status line now, or at most `DRAW_SECONDS` after the last time; not while hidden
        (`on_show` draws)."""
        if self._draw_timer is not None or not self.is_on_screen:
            return
        wait = self._drawn_at + DRAW_SECONDS - time.monotonic()
        if wait <= 0:
            self._draw_rows()
        else:
            self._draw_timer = self.set_timer(wait, self._draw_rows)

    def _draw_rows(self) -> None:
        self._draw_timer = None
        self._drawn_at = time.monotonic()
        self.query_one(EventList).set_rows(self.shown, follow=self.following)
        self._draw_status()

    def on_show(self) -> None:
        self._draw_rows()

    @on(StreamEnded)
    def _ended(self, message: StreamEnded) -> None:
        self.ended = message.error or "the session has ended: these are its kept events"

    def watch_category(self) -> None:
        self._refilter()

    def watch_errors_only(self) -> None:
        self._refilter()

    def watch_pattern(self) -> None:
        self._refilter()

    def watch_following(self, following: bool) -> None:
        self.unseen = 0
        if following:
            self.query_one(EventList).set_rows(self.shown, follow=True)
        self._draw_status()

    def watch_ended(self) -> None:
        self._draw_status()

    @on(EventList.CursorMoved)
    def _cursor_moved(self) -> None:
        events = self.query_one(EventList)
        self.following = events.cursor >= len(events.rows) - 1  # moving up pauses, End follows again (as less +F)
        if self.query_one("#events-detail").has_class("active"):
            self._draw_detail()

    @on(Input.Submitted, "#events-search")
    def _search(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        try:
            self.pattern = re.compile(text, re.IGNORECASE) if text else None
        except re.error as exc:
            self.notify(f"Not a regular expression: {exc}", severity="warning")
            return
        event.input.remove_class("active")
        self.query_one(EventList).focus()

    def on_key(self, event) -> None:
        search = self.query_one("#events-search", Input)
        if event.key == "escape" and search.has_focus:
            event.stop()
            search.remove_class("active")
            self.query_one(EventList).focus()

    @on(FrameReady)
    def _frame_ready(self, message: FrameReady) -> None:
        box = self.query_one("#events-frame", Static)
        box.add_class("active")
        if message.png is None:
            box.update(message.note)
            return
        box.update(self._halfcell(message.png, box.size.width or 80, max((box.size.height or 20) - 1, 1)))
        self.query_one("#events-status", Static).update(message.note)

    # drawing -----------------------------------------------------------------------------

    def _filtering(self) -> bool:
        return self.category is not None or self.errors_only or self.pattern is not None

    def _matches(self, item: RawEvent) -> bool:
        try:
            envelope = item.parse()
        except ClientError:
            return not self._filtering()
        if self.category is not None and envelope.event.category != self.category:
            return False
        if self.errors_only and not is_error(envelope):
            return False
        if self.pattern is not None:
            return bool(self.pattern.search(f"{envelope.event.type} {summary(envelope)}"))
        return True

    def _refilter(self) -> None:
        self.shown = [e for e in self.events if self._matches(e)] if self._filtering() else self.events
        self.unseen = 0
        self._draw_rows()

    def _draw_status(self) -> None:
        parts = [f"{len(self.shown)} of {len(self.events)} events"]
        parts.append("following" if self.following else f"paused ({self.unseen} new)")
        parts.append(f"category: {self.category or 'all'}")
        if self.errors_only:
            parts.append("errors only")
        if self.pattern is not None:
            parts.append(f"/{self.pattern.pattern}/")
        if self.ended:
            parts.append(self.ended)
        if not self.events and not (self.ended or getattr(self.screen, "ended", False)):
            parts.append(hint_text("no events yet: {events.telemetry_on} records this session's console, network "
                                   "and page events", keymap_of(self.app)))
        parts.append(hint_text(HINT, keymap_of(self.app)))
        self.query_one("#events-status", Static).update(" · ".join(parts), layout=False)  # one line, always

    def _draw_detail(self) -> None:
        item = self.query_one(EventList).selected()
        detail = self.query_one("#events-detail", Static)
        if item is None:
            detail.update("No event selected")
            return
        try:
            detail.update(self.describe(item.envelope))
        except ClientError as exc:
            detail.update(f"#{item.seq}: {exc}\n\n{item.raw.decode(errors='replace')}")

    def _request_of(self, seq: int, request_id: str) -> TelemetryEnvelope | None:
        """The network_request with `request_id` at or before event `seq` (found by its bytes, then validated)."""
        needle = json.dumps(request_id).encode()
        events = self.events
        index = min(max(seq - events[0].seq, 0), len(events) - 1) if events else -1
        while index >= 0 and events[index].seq > seq:
            index -= 1
        for at in range(index, max(index - REQUEST_LOOKBACK, -1), -1):
            item = events[at]
            if b'"network_request"' in item.raw and needle in item.raw:
                try:
                    envelope = item.parse()
                except ClientError:
                    continue
                if envelope.event.type == "network_request" and \
                        str((envelope.event.data or {}).get("request_id")) == request_id:
                    return envelope
        return None

    def describe(self, envelope: TelemetryEnvelope) -> Text:
        """What a person wants of one event: a request's headers and timing, an exception's stack."""
        event = envelope.event
        data = event.data or {}
        text = Text()
        text.append(f"#{envelope.seq} {event_time(envelope)} {event.category} {event.type}\n",
                    style="bold red" if is_error(envelope) else "bold")
        text.append(summary(envelope) + "\n\n")
        stack = data.get("stack_trace")
        if isinstance(stack, dict):
            text.append("stack:\n", style="bold")
            for frame in stack.get("callFrames") or []:
                text.append(f"  at {frame.get('functionName') or '(anonymous)'} ({frame.get('url')}:"
                            f"{int(frame.get('lineNumber', 0)) + 1}:{int(frame.get('columnNumber', 0)) + 1})\n")
        request_id = str(data.get("request_id") or "")
        if event.category == "network" and request_id:
            request = self._request_of(envelope.seq, request_id)
            if request is not None:
                took = (event.ts - request.event.ts) / 1000
                if event.type != "network_request":
                    text.append(f"timing: {took:.1f} ms after the request was sent\n", style="bold")
                text.append("request headers:\n", style="bold")
                for name, value in ((request.event.data or {}).get("headers") or {}).items():
                    text.append(f"  {name}: {value}\n")
            if event.type == "network_response":
                text.append("response headers:\n", style="bold")
                for name, value in (data.get("headers") or {}).items():
                    text.append(f"  {name}: {value}\n")
        text.append("\n" + event_json(envelope))
        return text

    # actions -----------------------------------------------------------------------------

    def action_toggle_follow(self) -> None:
        self.following = not self.following

    def action_cycle_category(self) -> None:
        self.category = CATEGORY_CYCLE[(CATEGORY_CYCLE.index(self.category) + 1) % len(CATEGORY_CYCLE)]

    def action_toggle_errors(self) -> None:
        self.errors_only = not self.errors_only

    def action_search(self) -> None:
        search = self.query_one("#events-search", Input)
        search.add_class("active")
        search.focus()

    def action_toggle_detail(self) -> None:
        detail = self.query_one("#events-detail")
        detail.toggle_class("active")
        if detail.has_class("active"):
            self.following = False
            self._draw_detail()

    def action_copy(self) -> None:
        item = self.query_one(EventList).selected()
        if item is None:
            self.notify("No event selected", severity="warning")
            return
        self.app.copy_to_clipboard(item.raw.decode(errors="replace"))  # as the service sent it
        self.notify(f"Event #{item.seq} copied as JSON")

    def action_frame(self) -> None:
        item = self.query_one(EventList).selected()
        if item is None:
            self.notify("No event selected", severity="warning")
            return
        try:
            at = item.envelope.event.ts / 1_000_000
        except ClientError as exc:
            self.notify(f"Event #{item.seq}: {exc}", severity="warning")
            return
        self.following = False
        self._frame_at = at
        self._extract_frame(self._frame_at)

    def action_step(self, direction: int) -> None:
        if self._frame_at is None:
            return
        self._frame_at += direction * FRAME_STEP
        self._extract_frame(self._frame_at)

    def action_jump_event(self, direction: int) -> None:
        events = self.query_one(EventList)
        if not events.rows:
            return
        events.select(max(0, min(len(events.rows) - 1, events.cursor + direction)))
        if self._frame_at is not None:
            self.action_frame()

    @work(exclusive=True, group="events-frame")
    async def _extract_frame(self, at: float) -> None:
        png, note = await self._frame(at)
        self.post_message(FrameReady(png, note))

    async def _frame(self, at: float) -> tuple[bytes | None, str]:
        """The replay's frame at `at`: the replay covering it is downloaded once, client side (Kernel's cloud
        and `bbrowse serve` have no frame route), and ffmpeg seeks it (`-ss` before `-i`: a keyframe
        seek, then decoding to the exact time). PNG bytes, or None, and a note for the status line."""
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            return None, "The frame view needs ffmpeg on this machine"
        try:
            replays = await self.client.replays.list(self.session_id)
        except ClientError as exc:
            return None, f"Could not list replays: {exc}"
        replay = next((r for r in replays if r.started_at and r.finished_at
                       and r.started_at.timestamp() <= at <= r.finished_at.timestamp()), None)
        if replay is None:
            return None, "No finished replay covers this moment (record one in the Replays tab)"
        path = await self._replay_path(replay)
        if path is None:
            return None, "Could not download the replay"
        assert replay.started_at is not None
        offset = max(at - replay.started_at.timestamp(), 0.0)
        process = await asyncio.create_subprocess_exec(
            ffmpeg, "-v", "error", "-ss", f"{offset:.3f}", "-i", str(path), "-frames:v", "1",
            "-f", "image2pipe", "-vcodec", "png", "-", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL)
        png, _ = await process.communicate()
        if not png:
            return None, f"ffmpeg found no frame at {offset:.2f}s of replay {replay.replay_id}"
        return png, f"replay {replay.replay_id} at {offset:.2f}s · , . step a frame · [ ] previous/next event"

    async def _replay_path(self, replay: Replay) -> Path | None:
        if self._replay_file is not None and self._replay_file[0] == replay.replay_id:
            return self._replay_file[1]
        target = Path(tempfile.gettempdir()) / f"bbrowse-events-{self.session_id}-{replay.replay_id}.mp4"
        try:
            with target.open("wb") as out:
                async with self.client.replays.download(self.session_id, replay.replay_id) as chunks:
                    async for chunk in chunks:
                        out.write(chunk)
        except (ClientError, OSError):
            target.unlink(missing_ok=True)
            return None
        self._replay_file = (replay.replay_id, target, replay)
        return target

    def _halfcell(self, png: bytes, width: int, height: int) -> Text:
        """The frame in half-block cells (two pixels a cell), which every terminal shows."""
        from bbrowse.tui.widgets.image_view import decode_image

        image = decode_image(png).convert("RGB").resize((max(width, 1), max(height, 1) * 2))
        raw, w = image.tobytes(), image.width
        text = Text()
        for row in range(0, image.height - 1, 2):
            for col in range(w):
                top, bottom = (row * w + col) * 3, ((row + 1) * w + col) * 3
                text.append("▀", style=Style(color=f"rgb{tuple(raw[top:top + 3])}",
                                             bgcolor=f"rgb{tuple(raw[bottom:bottom + 3])}"))
            text.append("\n")
        return text

    def on_unmount(self) -> None:
        if self._replay_file is not None:
            self._replay_file[1].unlink(missing_ok=True)
