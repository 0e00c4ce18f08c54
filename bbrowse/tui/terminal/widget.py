"""`TerminalView`: a Textual widget that shows a `TerminalCore` and types into the program.

It knows nothing about HTTP. The app feeds it the program's output (`feed` / `write`) and gives it two
callbacks: `send_input(bytes)` (async), called with every keystroke, paste and terminal reply in order,
and `on_pty_resize(cols, rows)`, called (debounced) when the pane's size changes. It stays responsive
under a flood (`yes`, `cat` of a big file): output is fed to the core in slices between key events, a
backlog that would scroll away unseen is dropped (`flood.py`), frames are coalesced to ~60 a second, and
keys never wait for drawing. How each part works: docs/terminal.md, "The widget".
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.keys import format_key
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from bbrowse.client.stdin_writer import StdinWriter

from . import flood
from .core import TerminalCore, core_label
from .images import Placement
from .keys import encode_paste, split_key
from .prediction import Mode, Predictor, overlay_runs
from .render import Painter

SendInput = Callable[[bytes], Awaitable[object]]
PtyResize = Callable[[int, int], object]

FRAME_SECONDS = 1 / 60
RESIZE_DEBOUNCE_SECONDS = 0.1
#: After a resize on the alternate screen, the old picture stays until the program's repaint arrives (at most
#: this long): the core's new screen is blank until then, a blank frame of 100-200 ms on every resize (vim).
RESIZE_HOLD_SECONDS = 0.5
# Parse for at most this long before letting the event loop run (keys, timers, drawing).
FEED_BUDGET_SECONDS = 0.004
# Each slice of output is parsed in one go; its size adapts so that a slice takes about this long.
SLICE_SECONDS = 0.002
MIN_SLICE_BYTES = 512
MAX_SLICE_BYTES = 32 * 1024
# A backlog bigger than this is checked for a flood that can be skipped, at most this often.
SKIP_CHECK_BYTES = 32 * 1024
SKIP_RETRY_SECONDS = 0.05
# Output up to this size, arriving with nothing queued, is parsed inline rather than by the drain task
# (a few tens of microseconds, less than the loop turn it saves).
INLINE_FEED_BYTES = 4096
# `write()` waits while more than this is queued: back-pressure for the reader.
HIGH_WATER_BYTES = 4 * 1024 * 1024
WHEEL_LINES = 3
# A program's synchronized update (mode 2026) holds drawing at most this long.
SYNC_HOLD_SECONDS = 1.0

LEAVE_BINDING_ID = "terminal.leave"
LEAVE_KEY = "ctrl+right_square_bracket"  # ctrl+], the telnet and ssh escape


class TerminalView(Widget, can_focus=True):
    """A terminal pane: draws the core with the line API and sends keys to the program.

    Every key goes to the program at once, Esc included, except the leave chord (`ctrl+]`, the binding
    `terminal.leave`, which a keymap can move) and alt+digit, which bubble up so the app can switch tabs.
    Shift+PgUp/PgDn and the mouse wheel scroll the scrollback on the main screen. After `show_exit(code)`
    the pane shows a banner, `r` posts `RestartRequested` and Esc leaves.
    """

    BINDINGS = [
        # priority: runs before the key reaches on_key (which sends everything else to the program)
        Binding(LEAVE_KEY, "leave", "Leave pane", id=LEAVE_BINDING_ID, priority=True, show=False),
    ]

    DEFAULT_CSS = """
    TerminalView {
        width: 1fr;
        height: 1fr;
        border: round $foreground 30%;
        border-subtitle-color: $foreground 60%;
    }
    TerminalView:focus {
        border: round $accent;
    }
    """

    @dataclass
    class LeaveRequested(Message):
        """The user pressed the leave chord (ctrl+]): focus should leave the pane."""

        terminal: TerminalView

        @property
        def control(self) -> TerminalView:
            return self.terminal

    @dataclass
    class RestartRequested(Message):
        """The program had exited and the user pressed `r`."""

        terminal: TerminalView

        @property
        def control(self) -> TerminalView:
            return self.terminal

    @dataclass
    class Input(Message):
        """Bytes for the program, posted when no `send_input` callback was given."""

        terminal: TerminalView
        data: bytes

        @property
        def control(self) -> TerminalView:
            return self.terminal

    @dataclass
    class InputFailed(Message):
        """`send_input` raised: the bytes were not delivered."""

        terminal: TerminalView
        error: BaseException

        @property
        def control(self) -> TerminalView:
            return self.terminal

    @dataclass
    class TitleChanged(Message):
        """The program set the window title (OSC 0 / 2)."""

        terminal: TerminalView
        title: str

        @property
        def control(self) -> TerminalView:
            return self.terminal

    def __init__(
        self,
        *,
        send_input: SendInput | None = None,
        on_pty_resize: PtyResize | None = None,
        scrollback: int = 10_000,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.core = TerminalCore(80, 24, scrollback=scrollback)
        self.send_input = send_input
        self.on_pty_resize = on_pty_resize
        self._backlog = bytearray()
        self._slice_bytes = 4096
        self._plain_scanned = 0
        self._not_plain_at: int | None = None
        self._skip_failed = 0.0
        self._pace_flood = False  # the flood shortcut works in this terminal's state
        self._flood_lines = 0  # plain flood lines fed since the last frame
        self._drain_task: asyncio.Task[None] | None = None
        self._drained = asyncio.Event()
        self._drained.set()
        self._below_high_water = asyncio.Event()
        self._below_high_water.set()
        self._stdin: StdinWriter | None = None  # made at the first send, in the running loop
        self._frame_timer: Timer | None = None
        self._last_frame = 0.0
        self._held_since: float | None = None
        self._resize_timer: Timer | None = None
        self._reported_size: tuple[int, int] | None = None
        self._callbacks: set[asyncio.Future[object]] = set()
        self._drawn_cursor: tuple[int, int] | None = None
        self._title = ""
        self._painter = Painter()
        self._base_style: Style | None = None
        self._strips: list[Strip | None] = [None] * self.core.rows
        #: The rows drawn before a resize of the alternate screen, shown until the program repaints.
        self._held: list[Strip | None] | None = None
        self._placements: list[Placement] = []
        self._images_generation = 0
        #: Predicted echo (prediction.py): keys drawn before the program echoes them on a slow link.
        self.predictor = Predictor(self.core)
        self._predict_timer: Timer | None = None
        self._rtt_label = ""
        self.exit_code: int | None = None
        self.exited = False
        # Which core draws this pane, for the help panel (`?` shows the focused widget's HELP, which Textual
        # declares a class variable; the core is this instance's).
        self.HELP = (  # type: ignore[misc]
            f"**Terminal core:** {core_label()}. Every key goes to the program; "
            "ctrl+] leaves the pane (unless the keymap moved it); shift+PgUp/PgDn scroll back."
        )
        self.border_subtitle = self._leave_hint()

    # ------------------------------------------------------------------ output from the program

    @property
    def terminal_size(self) -> tuple[int, int]:
        """(cols, rows) the program should be told."""
        return (self.core.cols, self.core.rows)

    def feed(self, data: bytes) -> None:
        """Queue program output; it is parsed in the background, in order.

        A small piece arriving while nothing is queued (a key's echo, a prompt) is parsed at once: the
        background task would cost a turn of the event loop between the byte and its frame."""
        if not data:
            return
        if self._held is not None:  # the program's repaint after a resize: the live screen again
            self._release_hold()
        if len(data) <= INLINE_FEED_BYTES and not self._backlog and (
            self._drain_task is None or self._drain_task.done()
        ):
            self.core.feed(data)
            replies = self.core.take_replies()
            if replies:
                self._send(replies)
            self._judge_predictions()
            self._schedule_frame()
            return
        self._backlog += data
        self._drained.clear()
        if self._drain_task is None or self._drain_task.done():
            self._drain_task = asyncio.get_running_loop().create_task(self._drain())

    async def write(self, data: bytes) -> None:
        """`feed`, then wait while the backlog is above the high-water mark (back-pressure for the
        reader, so a flood is not buffered without bound)."""
        self.feed(data)
        if len(self._backlog) > HIGH_WATER_BYTES:
            self._below_high_water.clear()
            await self._below_high_water.wait()

    async def wait_drained(self) -> None:
        """Wait until everything fed so far has been parsed and the view brought up to date (what
        `render_line` draws is then the latest)."""
        await self._drained.wait()
        if self.is_mounted:
            if self._frame_timer is not None:
                self._frame_timer.stop()
            self._frame()

    async def _drain(self) -> None:
        core = self.core
        backlog = self._backlog
        try:
            while backlog:
                if len(backlog) > SKIP_CHECK_BYTES:
                    self._skip_flood()
                started = time.perf_counter()
                paced = False
                while backlog:  # at least one slice per turn, then as many as the budget allows
                    size = self._slice_bytes
                    if self._pace_flood and self._plain_ahead() >= size:
                        # A frame shows only the last lines of a flood: past `flood_keep_lines` in
                        # one frame, what follows waits for the next turn and its shortcut.
                        lines = backlog.count(b"\n", 0, size)
                        if self._flood_lines and self._flood_lines + lines > core.flood_keep_lines:
                            paced = True
                            break
                        self._flood_lines += lines
                    chunk = bytes(backlog[:size])
                    del backlog[:size]
                    self._consumed(len(chunk))
                    sliced = time.perf_counter()
                    core.feed(chunk)
                    self._adapt_slice(len(chunk), time.perf_counter() - sliced)
                    replies = core.take_replies()
                    if replies:
                        self._send(replies)
                    if time.perf_counter() - started >= FEED_BUDGET_SECONDS:
                        break
                self._judge_predictions()
                self._schedule_frame()
                if len(backlog) <= HIGH_WATER_BYTES:
                    self._below_high_water.set()
                if backlog:
                    # Let the loop run keys, timers and drawing before the next budget (a paced
                    # flood waits for the next frame, letting its backlog grow).
                    delay = self._last_frame + FRAME_SECONDS - time.monotonic() if paced else 0
                    await asyncio.sleep(max(0.001, delay))
                    if paced:  # a frame's worth of time went by, drawn or not (hidden, held)
                        self._flood_lines = 0
        finally:
            self._below_high_water.set()
            if not backlog:
                self._drained.set()

    def _skip_flood(self) -> None:
        """Drop the head of a backlog of plain lines that would scroll away unseen (`flood.py`).

        The scan for the first non-plain byte is incremental: the backlog only loses bytes at the
        front and gains them at the back, so what was found plain stays plain. A check is tried at
        most every `SKIP_RETRY_SECONDS` after one that failed (it asks the core about scroll margins)."""
        backlog = self._backlog
        if self._not_plain_at is None:
            end = flood.first_not_plain(backlog, self._plain_scanned)
            self._plain_scanned = end
            if end < len(backlog):
                self._not_plain_at = end
        plain_end = self._plain_ahead()
        now = time.monotonic()
        if plain_end < SKIP_CHECK_BYTES or now - self._skip_failed < SKIP_RETRY_SECONDS:
            return
        skipped = self.core.skippable_prefix(backlog, plain_end)
        if skipped:
            del backlog[:skipped]
            self._consumed(skipped)
            self._pace_flood = True
        else:
            self._skip_failed = now
            self._pace_flood = self.core.plain_lines_only_scroll()

    def _plain_ahead(self) -> int:
        """Leading bytes of the backlog known to be plain lines."""
        return self._not_plain_at if self._not_plain_at is not None else self._plain_scanned

    def _consumed(self, size: int) -> None:
        """`size` bytes left the front of the backlog: move what the flood scan knows along."""
        self._plain_scanned = max(0, self._plain_scanned - size)
        if self._not_plain_at is not None:
            self._not_plain_at -= size
            if self._not_plain_at < 0:
                self._not_plain_at = None

    def _adapt_slice(self, size: int, seconds: float) -> None:
        """Size slices by what they cost, not by bytes: 16 KiB of `y` lines is 5,000 scrolls, 16 KiB of
        plain text a few hundred. Aim for `SLICE_SECONDS` per slice so a key waits at most about that long."""
        if size < self._slice_bytes or seconds <= 0:
            return
        wanted = int(size * SLICE_SECONDS / seconds)
        self._slice_bytes = min(max((self._slice_bytes + wanted) // 2, MIN_SLICE_BYTES), MAX_SLICE_BYTES)

    # ------------------------------------------------------------------ drawing

    def _schedule_frame(self) -> None:
        """Refresh the dirty rows at most once per frame, drawing whatever is latest by then.

        After a quiet spell (a key's echo, say) the frame is drawn at once rather than on a timer:
        only output arriving within a frame of the last one waits, so typing is never delayed.
        """
        if self._frame_timer is not None or not self.is_mounted:
            return
        delay = self._last_frame + FRAME_SECONDS - time.monotonic()
        if delay <= 0:
            self._frame()
            return
        self._frame_timer = self.set_timer(delay, self._frame, name="terminal-frame")

    def _frame(self) -> None:
        self._frame_timer = None
        core = self.core
        now = time.monotonic()
        if core.synchronized_output:
            # The program is drawing a frame (mode 2026): show it when done, or after a second.
            if self._held_since is None:
                self._held_since = now
            if now - self._held_since < SYNC_HOLD_SECONDS:
                self._frame_timer = self.set_timer(FRAME_SECONDS, self._frame, name="terminal-frame")
                return
        else:
            self._held_since = None
        self._last_frame = now
        self._flood_lines = 0
        dirty = core.take_dirty()
        dirty.update(y for y in self.predictor.take_dirty() if y < core.rows)
        strips = self._strips
        for y in dirty:
            strips[y] = None
        generation = core.images_generation
        if generation != self._images_generation or (dirty and (self._placements or generation)):
            self._images_generation = generation
            placements = core.placements() if generation else []
            if placements != self._placements:
                for placement in (*self._placements, *placements):
                    dirty.update(range(max(0, placement.row), min(core.rows, placement.row + placement.rows)))
                self._placements = placements
        cursor = self._cursor_state()
        if cursor != self._drawn_cursor:
            for state in (cursor, self._drawn_cursor):
                if state is not None and state[1] < core.rows:
                    dirty.add(state[1])
            self._drawn_cursor = cursor
        if core.title != self._title:
            self._title = core.title
            self.post_message(self.TitleChanged(self, self._title))
        if not dirty:
            return
        width = self.size.width
        if len(dirty) >= core.rows:
            self.refresh()
        else:
            self.refresh(*(Region(0, y, width, 1) for y in sorted(dirty)))

    def _cursor_state(self) -> tuple[int, int] | None:
        """Where the cursor is drawn: only while the pane has focus and shows the live screen."""
        core = self.core
        if not (self.has_focus and not self.exited and core.cursor_visible and core.scroll_offset == 0):
            return None
        return self.predictor.cursor() or core.cursor

    def render_line(self, y: int) -> Strip:
        core = self.core
        width = self.size.width
        if self._base_style is None:
            self._base_style = self.rich_style
            self._painter.set_base(self._base_style)
            self._strips = [None] * core.rows
        if self.exited and y == self.size.height - 1:
            return self._exit_banner(width)
        if self._held is not None:
            held = self._held[y] if y < len(self._held) else None
            return held.crop_extend(0, width, self._base_style) if held is not None \
                else Strip.blank(width, self._base_style)
        if y >= core.rows:
            return Strip.blank(width, self._base_style)
        cursor = self._drawn_cursor
        predicted = self.predictor.overlay(y) if self.predictor.active and core.scroll_offset == 0 else None
        if predicted:  # drawn fresh, never cached: the guesses change without the row changing
            strip = self._painter.paint(overlay_runs(core.row(y), predicted), core.cols,
                                        cursor[0] if cursor is not None and cursor[1] == y else -1)
        elif cursor is not None and cursor[1] == y:
            strip = self._painter.paint(core.row(y), core.cols, cursor[0])
        else:
            cached = self._strips[y]
            if cached is None:
                cached = self._strips[y] = self._painter.paint(core.row(y), core.cols)
            strip = cached
        if self._placements:
            strip = self._painter.overlay(strip, y, self._placements, core.cols)
        if strip.cell_length != width:
            strip = strip.crop(0, width).extend_cell_length(width, self._base_style)
        return strip

    def notify_style_update(self) -> None:
        """Colours changed (theme, CSS): redraw every row over the new base style."""
        self._base_style = None
        super().notify_style_update()

    #: Said after the exit in the banner (a view that cannot restart its program says nothing).
    RESTART_HINT = " — press r to restart"

    def _exit_banner(self, width: int) -> Strip:
        if self.exit_code is None:
            text = f" process ended{self.RESTART_HINT} "
        else:
            text = f" process exited with code {self.exit_code}{self.RESTART_HINT} "
        style = Style(bold=True, reverse=True)
        return Strip([Segment(text[:width], style)]).extend_cell_length(width, style)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_updated)

    def _bindings_updated(self, _screen: object) -> None:
        if self.has_focus:
            self.border_subtitle = self._leave_hint()

    def on_focus(self) -> None:
        if self.core.focus_events:
            self._send(b"\x1b[I")
        self.border_subtitle = self._leave_hint()
        self._schedule_frame()

    def on_blur(self) -> None:
        if self.core.focus_events:
            self._send(b"\x1b[O")
        self._schedule_frame()

    def _leave_hint(self) -> str:
        """ "ctrl+] leave", with whatever key the app's keymap gives the leave binding."""
        key = LEAVE_KEY
        try:
            for active in self.screen.active_bindings.values():
                if active.binding.id == LEAVE_BINDING_ID and active.node is self:
                    key = active.binding.key
                    break
        except Exception:  # not mounted yet: the default key
            pass
        names, base = split_key(key.split(",")[0].strip())
        modifiers = [name for name in ("ctrl", "alt", "shift", "meta", "super") if name in names]
        hint = "+".join([*modifiers, format_key(base)]) + " leave"
        # The Python core (macOS, or forced) is named where people look; libghostty is the default.
        if self.core.name == "python":
            hint += " · Python core"
        return f"{hint} · {self._rtt_label}" if self._rtt_label else hint

    # ------------------------------------------------------------------ size

    def on_resize(self, event: events.Resize) -> None:
        cols, rows = self.size.width, self.size.height
        if cols < 1 or rows < 1:
            return
        if (cols, rows) != self.terminal_size:
            if self.core.alternate_screen_active and self._base_style is not None and not self.exited:
                core = self.core
                self._held = self._held or [strip or self._painter.paint(core.row(y), core.cols)
                                            for y, strip in enumerate(self._strips)]
                self.set_timer(RESIZE_HOLD_SECONDS, self._release_hold, name="terminal-resize-hold")
            self.core.resize(cols, rows)
            self.predictor.reset()
            self._strips = [None] * rows
            self._placements = []
            self._images_generation = -1
            self._drawn_cursor = None
            self.refresh()
        if self._resize_timer is not None:
            self._resize_timer.stop()
        self._resize_timer = self.set_timer(RESIZE_DEBOUNCE_SECONDS, self._report_size, name="terminal-resize")

    def _release_hold(self) -> None:
        if self._held is not None:
            self._held = None
            self.refresh()

    def _report_size(self) -> None:
        self._resize_timer = None
        size = self.terminal_size
        if size == self._reported_size or self.on_pty_resize is None:
            return
        self._reported_size = size
        result = self.on_pty_resize(*size)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)

    # ------------------------------------------------------------------ input to the program

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every key belongs to the program while the pane has focus (even ctrl+p and ctrl+q), except
        alt+digit, which the app uses to switch tabs."""
        return not _is_alt_digit(key)

    def _send(self, data: bytes) -> None:
        """Hand bytes to the program now, in order; sends in flight are joined, never reordered."""
        self.predictor.sent(len(data))
        if self.send_input is None:
            self.post_message(self.Input(self, data))
            return
        if self._stdin is None:
            self._stdin = StdinWriter(self._deliver, on_error=self._input_failed)
        self._stdin.write(data)

    def _type(self, data: bytes) -> None:
        """Input from the person (not a reply): the predictor learns of it, then it is sent."""
        if data:
            self.predictor.key(data)
        self._send(data)

    async def _deliver(self, data: bytes) -> None:
        """One send, through whatever `send_input` is by then (it may be set after the pane is made)."""
        if self.send_input is None:
            return
        started = time.monotonic()
        try:
            await self.send_input(data)
        except BaseException:
            self.predictor.acked(len(data))  # those bytes are lost: nothing of them is to be echoed
            raise
        now = time.monotonic()
        self.predictor.acked(len(data), now)
        self.predictor.rtt_sample(now - started)
        self._show_round_trip()
        self._judge_predictions(output=False)
        self._schedule_frame()

    # ------------------------------------------------------------------ predicted echo

    @property
    def prediction(self) -> Mode:
        """Predicted echo: "auto" (on a link slower than ~30 ms), "always" or "never"."""
        return self.predictor.mode

    @prediction.setter
    def prediction(self, mode: Mode) -> None:
        self.predictor.mode = mode
        self._schedule_frame()

    @property
    def round_trip(self) -> float | None:
        """The smoothed round trip of the program's `stdin` calls, in seconds (None before the first key)."""
        return self.predictor.srtt

    def _show_round_trip(self) -> None:
        """The border shows the round trip (in steps, so it does not flicker with every key)."""
        srtt = self.predictor.srtt
        if srtt is None:
            return
        ms = srtt * 1000
        step = 1 if ms < 20 else 5 if ms < 200 else 10
        label = f"rtt {round(ms / step) * step:.0f} ms"
        if label != self._rtt_label:
            self._rtt_label = label
            self.border_subtitle = self._leave_hint()

    def _judge_predictions(self, output: bool = True) -> None:
        """Check the guesses against what the program drew (`output`: new output was fed); wake up again at
        the next expiry."""
        predictor = self.predictor
        predictor.cull(output=output)
        deadline = predictor.next_deadline()
        if self._predict_timer is not None:
            self._predict_timer.stop()
            self._predict_timer = None
        if deadline is not None and self.is_mounted:
            delay = max(0.0, deadline - time.monotonic()) + 0.001
            self._predict_timer = self.set_timer(delay, self._prediction_deadline, name="terminal-prediction")

    def _prediction_deadline(self) -> None:
        self._predict_timer = None
        self._judge_predictions(output=False)
        self._schedule_frame()

    def _input_failed(self, error: Exception) -> None:
        """The app shows it; the pane keeps working."""
        self.post_message(self.InputFailed(self, error))

    async def on_key(self, event: events.Key) -> None:
        key = event.key
        if _is_alt_digit(key):
            return  # bubbles up to the app's bindings
        event.stop()
        event.prevent_default()
        if self.exited:
            if key == "r":
                self.post_message(self.RestartRequested(self))
            elif key == "escape":
                self.post_message(self.LeaveRequested(self))
            return
        core = self.core
        if key in ("shift+pageup", "shift+pagedown") and not core.alternate_screen_active:
            page = max(1, core.rows - 1)
            core.scroll_view(page if key == "shift+pageup" else -page)
            self._schedule_frame()
            return
        data = core.encode_key(key, event.character)
        if data is None:
            return
        if core.scroll_offset:
            core.scroll_to_bottom()
        self._type(data)
        self._judge_predictions(output=False)  # a key typed blind may find the cursor in what is already drawn
        self._schedule_frame()

    def action_leave(self) -> None:
        """The leave chord: hand focus back to the app (the pane decides where it goes)."""
        self.post_message(self.LeaveRequested(self))

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        if self.exited or not event.text:
            return
        self._type(encode_paste(event.text, self.core.bracketed_paste))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._wheel(event, up=True)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._wheel(event, up=False)

    def _wheel(self, event: events.MouseEvent, up: bool) -> None:
        core = self.core
        if core.mouse_tracking and not self.exited:
            self._type(_mouse_report(64 if up else 65, event.x, event.y, True, core.mouse_sgr))
        elif core.alternate_screen_active and not self.exited:
            # As xterm's alternateScroll: the wheel becomes arrow keys for pagers and editors.
            arrow = core.encode_key("up" if up else "down", None)
            self._type((arrow or b"") * WHEEL_LINES)
        else:
            core.scroll_view(WHEEL_LINES if up else -WHEEL_LINES)
            self._schedule_frame()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self.focus()
        if self.core.mouse_tracking and not self.exited:
            self._type(_mouse_report(_button_code(event), event.x, event.y, True, self.core.mouse_sgr))

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self.core.mouse_tracking and not self.exited:
            sgr = self.core.mouse_sgr
            self._type(_mouse_report(_button_code(event) if sgr else 3, event.x, event.y, False, sgr))

    # ------------------------------------------------------------------ lifecycle

    def show_exit(self, code: int | None) -> None:
        """The program ended: draw the banner; `r` then asks for a restart."""
        self.exited = True
        self.exit_code = code
        self.refresh()

    def reset(self) -> None:
        """Blank slate for a new program: the screen, scrollback, queued output and exit state go."""
        self._backlog.clear()
        self._plain_scanned = 0
        self._not_plain_at = None
        self._pace_flood = False
        self._below_high_water.set()
        self._drained.set()
        if self._stdin is not None:
            self._stdin.discard()
        self.core.reset()
        self.predictor.forget_input()
        self._strips = [None] * self.core.rows
        self._placements = []
        self._images_generation = -1
        self.exited = False
        self.exit_code = None
        self._reported_size = None
        self.refresh()

    def on_unmount(self) -> None:
        if self._drain_task is not None and not self._drain_task.done():
            self._drain_task.cancel()
        if self._stdin is not None:
            self._stdin.abort()
            self._stdin = None


def _alt_digit_aliases() -> dict[str, str]:
    """The key names Textual gives alt+1..alt+0 in terminals without the kitty keyboard protocol, by digit.

    Such terminals send ESC 1 .. ESC 0, which Textual reads as the characters macOS's option key
    types on a US layout (¡ ™ £ ...: WezTerm sends those sequences for them), so the app sees
    `trade_mark_sign` where the user pressed alt+2."""
    from bbrowse.tui.textual_private import ANSI_SEQUENCES_KEYS, character_to_key

    names: dict[str, str] = {}
    for digit in "1234567890":
        character = ANSI_SEQUENCES_KEYS.get("\x1b" + digit)
        if isinstance(character, str) and len(character) == 1:
            names[digit] = character_to_key(character)
    return names


_ALT_DIGIT_NAMES = _alt_digit_aliases()
ALT_DIGIT_ALIASES = frozenset(_ALT_DIGIT_NAMES.values())


def alt_digit_keys(digit: int | str) -> str:
    """A binding's key string for alt+`digit` in every terminal: `alt+2` and the name it arrives as without
    the kitty protocol (`trade_mark_sign`), so a screen's alt+N binding fires in tmux and xterm too."""
    alias = _ALT_DIGIT_NAMES.get(str(digit))
    return f"alt+{digit},{alias}" if alias else f"alt+{digit}"


def _is_alt_digit(key: str) -> bool:
    names, base = split_key(key)
    return (names == {"alt"} and len(base) == 1 and base.isdigit()) or key in ALT_DIGIT_ALIASES


def _button_code(event: events.MouseEvent) -> int:
    code = {1: 0, 2: 1, 3: 2}.get(event.button, 0)
    if event.shift:
        code |= 4
    if event.meta:
        code |= 8
    if event.ctrl:
        code |= 16
    return code


def _mouse_report(code: int, x: int, y: int, press: bool, sgr: bool) -> bytes:
    """A mouse event in SGR form (`CSI < b ; x ; y M/m`) or the X10 form (`CSI M b x y`)."""
    if sgr:
        return f"\x1b[<{code};{x + 1};{y + 1}{'M' if press else 'm'}".encode()
    if x > 222 or y > 222:
        return b""
    return b"\x1b[M" + bytes([32 + code, 33 + x, 33 + y])
