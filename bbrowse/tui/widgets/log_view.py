"""A live log on screen: `LogView` draws a `LogBuffer` with the line API; `LogPanel` adds its prompt and status.

Design after toolong's LogLines: a `ScrollView` whose `render_line` draws only the rows on screen,
from an LRU cache of rendered strips keyed by the line's seq and the drawing options, so a busy log
costs a few rows of rendering per frame, not a widget per line. Lines are moved into the buffer in
batches at most `FRAMES_PER_SECOND` times a second, however fast they come.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.highlighter import JSONHighlighter
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.containers import Horizontal, Vertical
from textual.geometry import Offset, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Label

from bbrowse.transfer import save_lines
from bbrowse.tui.ansi_text import cell_widths, maybe_json, pretty_json, to_text
from bbrowse.tui.logbuffer import DEFAULT_CAPACITY, AllLines, LogBuffer, MatchIndex, RowMap

#: Upper bound of batches (and repaints) per second while lines stream in.
FRAMES_PER_SECOND = 30
#: Rendered lines kept; a screenful needs a few dozen, the rest makes scrolling back and forth free.
STRIP_CACHE_SIZE = 2000
#: Final screen rows kept (several panes' worth of screens).
ROW_CACHE_SIZE = 4000
#: Width of the `t` timestamp column: `12:34:56.789 ` or `~12:34:56.789 ` (see `line_time`).
TIMESTAMP_WIDTH = 14
#: Most rows `get_selection` turns back into text (a selection is what is on screen, give or take).
MAX_SELECTION_ROWS = 20_000

_json_highlighter = JSONHighlighter()


#: A time at the start of a line: ISO 8601 / RFC 3339 (`2026-11-26T12:34:56.789Z`, `2026-11-26 12:34:56,789`),
#: optionally in brackets; Chromium's `[pid:tid:MMDD/HHMMSS.mmm:`; syslog's `Nov 26 12:34:56`.
_LINE_TIME = re.compile(
    r"^\W{0,2}(?:(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r"|\d+:\d+:(?P<cr_md>\d{4})/(?P<cr_hms>\d{6})\.(?P<cr_ms>\d{3})"
    r"|(?P<sys>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d))"
)


def line_time(line: str) -> str | None:
    """`HH:MM:SS.mmm` of a time the line starts with (its own time), or None when it carries none."""
    match = _LINE_TIME.match(line)
    if match is None:
        return None
    if match["iso"]:
        iso = match["iso"].replace(",", ".").replace(" ", "T")
        try:
            moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is not None:
            moment = moment.astimezone()  # shown in local time, as the received times are
        return moment.strftime("%H:%M:%S.%f")[:-3]
    if match["cr_hms"]:
        hms = match["cr_hms"]
        return f"{hms[0:2]}:{hms[2:4]}:{hms[4:6]}.{match['cr_ms']}"
    return match["sys"][-8:] + ".000"


def format_timestamp(timestamp: float, line: str = "") -> str:
    """The `t` column: the line's own time where it starts with one (`12:34:56.789`), else when the service
    read it, marked `~` (`~12:34:56.789`); blanks when neither is known."""
    own = line_time(line) if line else None
    if own is not None:
        return f" {own}"
    if not timestamp:
        return " " * (TIMESTAMP_WIDTH - 1)
    return "~" + datetime.fromtimestamp(timestamp).strftime("%H:%M:%S.%f")[:-3]


class LogView(ScrollView, can_focus=True):
    """The lines of one log, scrolled with the keyboard or mouse.

    Follow mode keeps the end in view. Scrolling up (keys, wheel, scrollbar), moving the cursor or
    jumping to a search match pauses it; the status says so with the count of lines that arrived since;
    `G`/`End` (or scrolling back down to the end) resumes it. While paused the view stays on the same
    lines even as old ones drop off the front of the buffer.
    """

    ALLOW_SELECT = True
    COMPONENT_CLASSES = {"logview--timestamp", "logview--gap", "logview--match", "logview--cursor"}
    DEFAULT_CSS = """
    LogView {
        height: 1fr;
        scrollbar-gutter: stable;
        background: $surface;
        & > .logview--timestamp { color: $text-muted; }
        & > .logview--gap { color: $warning; text-style: bold; }
        & > .logview--match { background: $warning 45%; text-style: bold; }
        & > .logview--cursor { background: $primary 45%; }
    }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "top", "Top", show=False),
        Binding("end,G", "follow", "Follow", id="logs.follow"),
        Binding("n", "next_match(1)", "Next match", id="logs.next_match", show=False),
        Binding("N", "next_match(-1)", "Previous match", id="logs.previous_match", show=False),
        Binding("c", "copy", "Copy line", id="logs.copy", show=False),
        Binding("enter", "mark", "Cursor", show=False),
        Binding("escape", "clear", "Clear", show=False),
    ]

    following: reactive[bool] = reactive(True, init=False, repaint=False)
    #: View options, bound to the panel's (`LogPanel.wrap`...): set there, they lay the lines out again here.
    wrap: reactive[bool] = reactive(False, init=False, repaint=False)
    show_timestamps: reactive[bool] = reactive(False, init=False, repaint=False)
    pretty: reactive[bool] = reactive(False, init=False, repaint=False)

    @dataclass
    class Changed(Message):
        """Something the status line shows changed (lines, follow state, options, search)."""

        view: LogView

        @property
        def control(self) -> LogView:
            return self.view

    def __init__(self, capacity: int = DEFAULT_CAPACITY, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.buffer = LogBuffer(capacity)
        self._view: AllLines | MatchIndex = AllLines(self.buffer)
        self._rows: RowMap | None = None  # None: one row per entry
        self.search: MatchIndex | None = None
        #: seq of the highlighted line (search hit, click, enter), or None.
        self.cursor: int | None = None
        #: Entries that arrived while following was paused.
        self.new_while_paused = 0
        #: The newest seq drawn on screen so far (what "drawn in the pane" means in the benchmark).
        self.drawn_seq = -1
        self._incoming: list[str] = []
        self._incoming_times: list[float] = []
        self._flush_pending = False
        self._max_width = 0
        self._strips: LRUCache[tuple, list[Strip]] = LRUCache(STRIP_CACHE_SIZE)  # by (seq, wrap width)
        self._rows_drawn: LRUCache[tuple, Strip] = LRUCache(ROW_CACHE_SIZE)  # final rows, cropped and tagged
        self._styles: dict[str, Style] = {}
        self._auto_scroll = False  # set while the view scrolls itself, so it is not taken for the user

    # feeding ------------------------------------------------------------

    def push(self, line: str, timestamp: float = 0.0) -> None:
        """Queue one line; it is shown with the next batch (at most 1/FRAMES_PER_SECOND s later)."""
        self._incoming.append(line)
        self._incoming_times.append(timestamp)
        if not self._flush_pending:
            self._flush_pending = True
            self.set_timer(1 / FRAMES_PER_SECOND, self.flush)

    def push_many(self, lines: list[str], times: list[float]) -> None:
        """Queue lines and their timestamps (as `push`, for a batch)."""
        self._incoming.extend(lines)
        self._incoming_times.extend(times)
        if not self._flush_pending:
            self._flush_pending = True
            self.set_timer(1 / FRAMES_PER_SECOND, self.flush)

    def append_lines(self, lines: list[str], timestamp: float = 0.0) -> None:
        """Add lines at once (fixed content, tests, snapshots), bypassing the frame timer."""
        self._incoming.extend(lines)
        self._incoming_times.extend([timestamp] * len(lines))
        self.flush()

    def add_gap(self, seconds: float) -> None:
        """Mark that the stream was cut for `seconds`: lines written meanwhile may be missing."""
        self.flush()
        old_end = self._view.end_pos
        anchor = self._anchor()
        self.buffer.add_gap(seconds, time.time())
        self._after_append(old_end, anchor)

    def flush(self) -> None:
        """Move queued lines into the buffer and update the screen once: one buffer append, one index
        update, one scroll and one repaint a batch (`push` costs two list appends a line)."""
        self._flush_pending = False
        if not self._incoming:
            return
        lines, times = self._incoming, self._incoming_times
        self._incoming, self._incoming_times = [], []
        old_end = self._view.end_pos
        anchor = self._anchor()
        self.buffer.append_many(lines, times)
        widest = max(map(len, lines)) + (TIMESTAMP_WIDTH if self.show_timestamps else 0)
        self._max_width = max(self._max_width, min(widest, 10_000))
        self._after_append(old_end, anchor)

    def clear(self) -> None:
        self.buffer.clear()
        self._invalidate()
        self.cursor = None
        self._relayout()

    def _after_append(self, old_end: int, anchor: tuple[int, int] | None) -> None:
        view = self._view
        view.update()
        if self.search is not None:
            self.search.update()
        added = view.end_pos - old_end
        if self._rows is not None:
            self._extend_rows()
        if self.cursor is not None and self.cursor < self.buffer.first_seq:
            self.cursor = None
        self._set_virtual_size()
        if self.following:
            self._scroll_to_end()
        else:
            self.new_while_paused += added
            self._restore(anchor)
        self.refresh()
        self.post_message(self.Changed(self))

    # layout -------------------------------------------------------------

    @property
    def entry_count(self) -> int:
        """Entries in the current view (all lines, or those passing the filter)."""
        return len(self._view)

    def shown_lines(self) -> list[str]:
        """The lines this view shows: all of them, or those passing the filter (gap markers left out)."""
        view = self._view
        if not isinstance(view, MatchIndex):
            return self.buffer.snapshot()
        gaps = self.buffer.gaps
        seqs = (view.seq_at(pos) for pos in range(view.first_pos, view.end_pos))
        return [self.buffer.line(seq) for seq in seqs if seq not in gaps]

    @property
    def filter_query(self) -> str:
        return self._view.query if isinstance(self._view, MatchIndex) else ""

    @property
    def total_rows(self) -> int:
        return self._rows.rows if self._rows is not None else len(self._view)

    @property
    def _text_width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _heights(self, seqs: range | list[int]) -> list[int]:
        """Rows each entry takes with the current options (wrap width, timestamps, pretty JSON)."""
        buffer = self.buffer
        if isinstance(seqs, range) and seqs:
            lines = list(buffer.iter_lines(seqs.start, seqs.stop))
        else:
            lines = [buffer.line(seq) for seq in seqs]
        prefix = TIMESTAMP_WIDTH if self.show_timestamps else 0
        width = self._text_width
        if self.wrap:
            heights = [max(1, -(-(prefix + w) // width)) for w in cell_widths(lines)]
        else:
            heights = [1] * len(lines)
        if self.pretty:
            for index in maybe_json(lines):
                body = pretty_json(lines[index])
                if body is not None:
                    parts = body.split("\n")
                    heights[index] = (sum(max(1, -(-(prefix + w) // width)) for w in cell_widths(parts))
                                      if self.wrap else len(parts))
        return heights

    def _needs_row_map(self) -> bool:
        return self.wrap or self.pretty

    def _rebuild_rows(self) -> None:
        if not self._needs_row_map():
            self._rows = None
            return
        self._rows = RowMap(self._view.first_pos)
        self._extend_rows()

    def _extend_rows(self) -> None:
        rows, view = self._rows, self._view
        assert rows is not None
        if view.first_pos > rows.end_pos:  # everything it knew dropped off: start afresh
            self._rows = rows = RowMap(view.first_pos)
        else:
            rows.trim(view.first_pos)
        positions = range(rows.end_pos, view.end_pos)
        if isinstance(view, AllLines):
            rows.extend(self._heights(positions))  # positions are seqs
        else:
            rows.extend(self._heights([view.seq_at(pos) for pos in positions]))

    def _locate(self, row: int) -> tuple[int, int]:
        """(view position, row within the entry) of view row `row`."""
        if self._rows is None:
            return self._view.first_pos + row, 0
        return self._rows.locate(row)

    def _row_of_pos(self, pos: int) -> int:
        if self._rows is None:
            return pos - self._view.first_pos
        return self._rows.row_of(pos)

    def _row_of_seq(self, seq: int) -> int:
        return self._row_of_pos(self._view.pos_at_or_after(seq))

    def _set_virtual_size(self) -> None:
        width = self._text_width if self.wrap else self._max_width
        self.virtual_size = Size(width, self.total_rows)

    def _anchor(self) -> tuple[int, int] | None:
        """The entry (seq) and sub-row at the top of the screen, to keep in place across changes."""
        if self.following or not self.total_rows:
            return None
        pos, sub = self._locate(min(self.scroll_offset.y, self.total_rows - 1))
        if pos < self._view.first_pos or pos >= self._view.end_pos:
            return None
        return self._view.seq_at(pos), sub

    def _restore(self, anchor: tuple[int, int] | None) -> None:
        if anchor is None:
            return
        seq, sub = anchor
        pos = self._view.pos_at_or_after(seq)
        if pos < self._view.end_pos and self._view.seq_at(pos) != seq:
            sub = 0
        self._scroll_self(self._row_of_pos(pos) + sub)

    def _relayout(self, anchor: tuple[int, int] | None = None) -> None:
        """Options, filter or width changed: rebuild the rows, keeping the same lines on screen.

        `anchor` is the top line to keep, when the caller took it before changing the view.
        """
        anchor = anchor or self._anchor()
        self._invalidate()
        self._rebuild_rows()
        self._set_virtual_size()
        if self.following:
            self._scroll_to_end()
        elif self.cursor is not None and self._in_view(self.cursor):
            self._scroll_to_cursor()
        else:
            self._restore(anchor)
        self.refresh()
        self.post_message(self.Changed(self))

    def on_resize(self, event: events.Resize) -> None:
        if self.wrap:
            self._relayout()
        else:
            self._set_virtual_size()
            if self.following:
                self._scroll_to_end()

    # scrolling and follow --------------------------------------------------

    def _scroll_self(self, y: float) -> None:
        self._auto_scroll = True
        try:
            self.scroll_to(y=y, animate=False, force=True)
        finally:
            self._auto_scroll = False

    def _scroll_to_end(self) -> None:
        self._scroll_self(self.total_rows)  # clamped to the last screenful (whatever the scrollbars take)

    def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
        """The scrollbar under the lines came or went: the view is a row shorter or taller, so a following
        view scrolls to the end again (else the newest line hides under the scrollbar)."""
        if self.following:
            self.call_after_refresh(self._scroll_to_end)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._auto_scroll or not self.is_mounted:
            return
        if new_value < old_value and new_value < self.max_scroll_y:
            self.following = False  # the user scrolled up: keep what they look at
        elif new_value > old_value and new_value >= self.max_scroll_y and self.cursor is None:
            self.following = True  # the user scrolled back down to the end

    def watch_following(self, following: bool) -> None:
        if following:
            self.new_while_paused = 0
            self.cursor = None
            self._invalidate()
            self._scroll_to_end()
            self.refresh()
        self.post_message(self.Changed(self))

    def action_follow(self) -> None:
        self.following = True
        self._scroll_to_end()

    def action_top(self) -> None:
        self.following = False
        self.scroll_to(y=0, animate=False)

    def action_page(self, direction: int) -> None:
        if self.cursor is not None:
            self._move_cursor(direction * max(1, self.scrollable_content_region.height - 1))
            return
        if direction < 0:
            self.following = False
        self.scroll_to(y=self.scroll_offset.y + direction * self.scrollable_content_region.height, animate=False)

    def action_cursor(self, step: int) -> None:
        if self.cursor is not None:
            self._move_cursor(step)
            return
        if step < 0:
            self.following = False
        self.scroll_to(y=self.scroll_offset.y + step, animate=False)

    def _move_cursor(self, steps: int) -> None:
        assert self.cursor is not None
        view = self._view
        if not len(view):
            return
        pos = min(max(view.pos_at_or_after(self.cursor) + steps, view.first_pos), view.end_pos - 1)
        self.set_cursor(view.seq_at(pos))

    def _in_view(self, seq: int) -> bool:
        if not self.buffer.first_seq <= seq < self.buffer.end_seq:
            return False
        return not isinstance(self._view, MatchIndex) or self._view.pos_of(seq) is not None

    def set_cursor(self, seq: int | None, *, center: bool = False) -> None:
        """Highlight line `seq` (pausing follow) and bring it on screen; None removes the cursor."""
        self.cursor = seq
        self._invalidate()
        if seq is not None:
            self.following = False
            self._scroll_to_cursor(center=center)
        self.refresh()
        self.post_message(self.Changed(self))

    def _scroll_to_cursor(self, *, center: bool = False) -> None:
        if self.cursor is None:
            return
        row = self._row_of_seq(self.cursor)
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if center and not top <= row < top + height:
            self._scroll_self(max(0, row - height // 2))
        elif row < top:
            self._scroll_self(row)
        elif row >= top + height:
            self._scroll_self(row - height + 1)

    def action_mark(self) -> None:
        if self.cursor is None and self.total_rows:
            pos, _ = self._locate(min(self.scroll_offset.y, self.total_rows - 1))
            self.set_cursor(self._view.seq_at(pos))

    def action_clear(self) -> None:
        """Escape: drop the selection, the cursor, then the search; otherwise let the key go on."""
        from textual.actions import SkipAction

        if self.text_selection is not None:
            self.screen.clear_selection()
        elif self.cursor is not None:
            self.set_cursor(None)
        elif self.search is not None:
            self.set_search("")
        else:
            raise SkipAction()

    def on_click(self, event: events.Click) -> None:
        """A click puts the cursor on a line, once the view holds still (while following it only focuses)."""
        if self.following:
            return
        row = self.scroll_offset.y + event.y
        if 0 <= row < self.total_rows:
            pos, _ = self._locate(row)
            self.set_cursor(self._view.seq_at(pos))

    # options --------------------------------------------------------------

    def watch_wrap(self) -> None:
        self.scroll_to(x=0, animate=False)
        self._relayout()

    def watch_show_timestamps(self, shown: bool) -> None:
        self._max_width += TIMESTAMP_WIDTH if shown else -TIMESTAMP_WIDTH
        self._relayout()

    def watch_pretty(self) -> None:
        self._relayout()

    # search and filter ---------------------------------------------------------

    def set_search(self, query: str) -> None:
        """Highlight `query` (case-insensitive) and put the cursor on the newest match on or above the screen."""
        self.search = MatchIndex(self.buffer, query) if query else None
        self._invalidate()
        self.refresh()
        if self.search is None:
            self.post_message(self.Changed(self))
            return
        bottom = self._bottom_seq()
        hit = None
        if bottom is not None:
            hit = self._visible_match(self.search.prev_before(bottom + 1), -1)
        if hit is None:
            hit = self._visible_match(self.search.first(), 1)
        if hit is None:
            self.post_message(self.Changed(self))
            return
        self.set_cursor(hit, center=True)
        self._reveal_match(hit)

    def _bottom_seq(self) -> int | None:
        if not self.total_rows:
            return None
        row = min(self.scroll_offset.y + self.scrollable_content_region.height - 1, self.total_rows - 1)
        pos, _ = self._locate(row)
        return self._view.seq_at(pos)

    def _top_seq(self) -> int | None:
        if not self.total_rows:
            return None
        pos, _ = self._locate(min(self.scroll_offset.y, self.total_rows - 1))
        return self._view.seq_at(pos)

    def _visible_match(self, seq: int | None, direction: int) -> int | None:
        """`seq` or the next match from it in `direction` that the current view shows (a filter may hide some)."""
        assert self.search is not None
        step = self.search.next_after if direction > 0 else self.search.prev_before
        while seq is not None and not self._in_view(seq):
            seq = step(seq)
        return seq

    def action_next_match(self, direction: int) -> None:
        if self.search is None:
            self.notify("Search first: press /", severity="warning")
            return
        origin = self.cursor
        if origin is None:
            origin = self._top_seq() if direction > 0 else self._bottom_seq()
            origin = -1 if origin is None else origin - direction
        step = self.search.next_after if direction > 0 else self.search.prev_before
        hit = self._visible_match(step(origin), direction)
        if hit is None:  # wrap around
            hit = self._visible_match(self.search.first() if direction > 0 else self.search.last(), direction)
            if hit is not None and hit != self.cursor:
                self.notify("Search wrapped", timeout=2)
        if hit is None:
            self.notify(f"No match for {self.search.query!r}", severity="warning", timeout=3)
            return
        self.set_cursor(hit, center=True)
        self._reveal_match(hit)

    def _reveal_match(self, seq: int) -> None:
        """Scroll sideways (when not wrapping) so the first match in line `seq` is on screen."""
        if self.wrap or self.search is None:
            return
        spans = self.buffer.match_spans(seq, self.search.query)
        if not spans:
            return
        start, end = spans[0]
        if self.show_timestamps:
            start, end = start + TIMESTAMP_WIDTH, end + TIMESTAMP_WIDTH
        width = self._text_width
        left = self.scroll_offset.x
        if start < left or end > left + width:
            self.scroll_to(x=max(0, start - width // 4), animate=False)

    def match_number(self) -> int | None:
        """1-based index of the cursor among the search matches, if it is on one."""
        if self.search is None or self.cursor is None:
            return None
        pos = self.search.pos_of(self.cursor)
        return None if pos is None else pos - self.search.first_pos + 1

    def set_filter(self, query: str) -> None:
        """Show only the lines containing `query` (and gap markers); "" shows every line again."""
        anchor = self._anchor()
        self._view = MatchIndex(self.buffer, query, keep_gaps=True) if query else AllLines(self.buffer)
        if self.cursor is not None and not self._in_view(self.cursor):
            self.cursor = None
        self._relayout(anchor)

    # copy and save -----------------------------------------------------------------

    def current_line(self) -> str | None:
        """The cursor's line, else the last line on screen."""
        seq = self.cursor if self.cursor is not None else self._bottom_seq()
        return None if seq is None else self.buffer.line(seq)

    def action_copy(self) -> None:
        selection = self.text_selection
        text = None
        if selection is not None:
            extracted = self.get_selection(selection)
            text = extracted[0] if extracted else None
        if not text:
            text = self.current_line()
        if text is None:
            self.notify("Nothing to copy yet", severity="warning", timeout=3)
            return
        self.app.copy_to_clipboard(text)
        lines = text.count("\n") + 1
        self.notify(f"{lines:,} lines" if lines > 1 else text[:200], title="Copied", timeout=3, markup=False)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        if selection.start is None and selection.end is None:
            seqs = (self._view.seq_at(pos) for pos in range(self._view.first_pos, self._view.end_pos))
            return "\n".join(self.buffer.line(seq) for seq in seqs), "\n"
        top = self._top_absolute_row()  # selection offsets are absolute rows (see render_line)
        first = selection.start.y - top if selection.start is not None else 0
        last = selection.end.y - top if selection.end is not None else self.total_rows - 1
        first = max(0, first)
        last = min(last, self.total_rows - 1, first + MAX_SELECTION_ROWS)
        if last < first:
            return None
        rows = ["".join(segment.text for segment in self._row_strip(row)) for row in range(first, last + 1)]
        start = None if selection.start is None else Offset(selection.start.x, selection.start.y - top - first)
        end = None if selection.end is None else Offset(selection.end.x, selection.end.y - top - first)
        return Selection(start, end).extract("\n".join(rows)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    # drawing -----------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._invalidate()

    def _invalidate(self) -> None:
        """Forget every rendered strip (options, search, cursor or styles changed)."""
        self._strips.clear()
        self._rows_drawn.clear()
        self._styles.clear()

    def _style(self, name: str) -> Style:
        """The widget's base style ("") or a component style, looked up once per style change."""
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style if not name else self.get_component_rich_style(name)
            self._styles[name] = style
        return style

    def _absolute_row(self, pos: int, sub: int) -> int:
        """A row number that stays with its line as old lines drop off (what selection offsets use)."""
        return pos + sub if self._rows is None else self._rows.absolute_row(pos) + sub

    def _top_absolute_row(self) -> int:
        return self._view.first_pos if self._rows is None else self._rows.top_absolute_row

    def _entry_strips(self, seq: int) -> list[Strip]:
        """The rows of entry `seq` as strips, uncropped (wrapped to the width when wrapping)."""
        search = self.search.query if self.search is not None else ""
        width = self._text_width if self.wrap else 0
        key = (seq, width)
        cached = self._strips.get(key)
        if cached is not None:
            return cached
        buffer = self.buffer
        line = buffer.line(seq)
        base = self._style("")
        if seq == self.cursor:
            base = base + self._style("logview--cursor")
        if seq in buffer.gaps:
            gap = Text(line)
            gap.stylize(self._style("logview--gap"))
            bodies = [gap]
        else:
            pretty = pretty_json(line) if self.pretty else None
            if pretty is None:
                body = to_text(line)
                if not body.spans and not self.show_timestamps and not (search and search.lower() in line.lower()):
                    strip = Strip([Segment(body.plain, base)], body.cell_len)  # the common case, made cheap
                    strips = [strip] if not width or strip.cell_length <= width else self._fold(strip, width)
                    self._strips[key] = strips
                    return strips
                bodies = [body]
            else:
                bodies = [_json_highlighter(Text(part)) for part in pretty.split("\n")]
            if search:
                match_style = self._style("logview--match")
                for body in bodies:
                    body.highlight_words([search], match_style, case_sensitive=False)
        console = self.app.console
        strips = []
        for index, body in enumerate(bodies):
            if self.show_timestamps:
                stamp = format_timestamp(buffer.timestamp(seq), line) + " " if index == 0 else " " * TIMESTAMP_WIDTH
                text = Text(stamp, style=self._style("logview--timestamp"))
                text.append_text(body)
            else:
                text = body
            text.stylize_before(base)
            strip = Strip(text.render(console), text.cell_len)
            strips.extend(self._fold(strip, width) if width and strip.cell_length > width else [strip])
        self._max_width = max(self._max_width, min(max(s.cell_length for s in strips), 10_000))
        self._strips[key] = strips
        return strips

    @staticmethod
    def _fold(strip: Strip, width: int) -> list[Strip]:
        return list(strip.divide([*range(width, strip.cell_length, width), strip.cell_length]))

    def _row_strip(self, row: int) -> Strip:
        pos, sub = self._locate(row)
        strips = self._entry_strips(self._view.seq_at(pos))
        return strips[min(sub, len(strips) - 1)]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        if row >= self.total_rows or row < 0:
            return Strip.blank(width, self._style(""))
        pos, sub = self._locate(row)
        seq = self._view.seq_at(pos)
        if seq > self.drawn_seq:
            self.drawn_seq = seq
        x = 0 if self.wrap else scroll_x
        absolute = self._absolute_row(pos, sub)
        selection = self.text_selection
        key = (seq, sub, x, width, absolute)
        if selection is None and (cached := self._rows_drawn.get(key)) is not None:
            return cached
        strips = self._entry_strips(seq)
        strip = strips[min(sub, len(strips) - 1)]
        fill = self._style("")
        if seq == self.cursor:
            fill = fill + self._style("logview--cursor")
        strip = strip.crop_extend(x, x + width, fill)
        if selection is not None and (span := selection.get_span(absolute)) is not None:
            start, end = span
            end = width if end == -1 else end - x
            start = max(0, start - x)
            if end > start:
                style = self.screen.get_component_rich_style("screen--selection")
                head, middle, tail = strip.divide([start, min(end, width), width])
                strip = Strip.join([head, middle.apply_style(style), tail])
        strip = strip.apply_offsets(x, absolute)
        if selection is None:
            self._rows_drawn[key] = strip
        return strip


class LogStatus(Widget):
    """One line under a log: source, counts, follow and connection state, options, search and filter.

    The options (wrap, time, json) are reactives bound to the panel's; the rest is set by the panel up to
    FRAMES_PER_SECOND times a second, so it only repaints (a `Static.update` would lay the whole screen out
    again each time).
    """

    COMPONENT_CLASSES = {"logstatus--paused", "logstatus--live", "logstatus--problem"}
    DEFAULT_CSS = """
    LogStatus {
        height: 1; width: 1fr; background: $panel; color: $text-muted; padding: 0 1;
        & > .logstatus--paused { color: $warning; text-style: bold; }
        & > .logstatus--live { color: $success; }
        & > .logstatus--problem { color: $error; }
    }
    """

    wrap: reactive[bool] = reactive(False)
    show_timestamps: reactive[bool] = reactive(False)
    pretty: reactive[bool] = reactive(False)

    def __init__(self) -> None:
        super().__init__()
        self._head = Text()
        self._tail = Text()

    def _whole(self) -> Text:
        options = [name for name, enabled in (("wrap", self.wrap), ("time (~ when read)", self.show_timestamps),
                                              ("json", self.pretty)) if enabled]
        text = self._head.copy()
        for part in (Text("+".join(options)) if options else None, self._tail):
            if part:
                text.append(" │ ")
                text.append_text(part)
        return text

    @property
    def text(self) -> str:
        """The whole status, as plain text (what `render` cuts to the width)."""
        return self._whole().plain

    def render(self) -> Text:
        text = self._whole()
        width = self.content_region.width
        if width and text.cell_len > width:  # Textual draws a Text cut, without its overflow's "…"
            text.truncate(width, overflow="ellipsis")
        return text

    def on_resize(self) -> None:
        self.refresh()

    def set_parts(self, head: Text, tail: Text) -> None:
        """What comes before the options (source, counts, follow state) and after them (the connection)."""
        if (head.plain, head.spans, tail.plain, tail.spans) != (self._head.plain, self._head.spans,
                                                                 self._tail.plain, self._tail.spans):
            self._head, self._tail = head, tail
            self.refresh()


class LogFeed:
    """What a log's stream worker writes to: lines, gap markers, notes and the connection state, kept in order.

    Workers report, handlers draw: writing only queues (a line is two list appends) and posts `Arrived` to the
    panel when none is on its way; the panel's handler draws everything queued. A feed whose panel is gone
    is drawn by nobody.
    """

    class Arrived(Message):
        """The feed has something to draw."""

    def __init__(self, panel: LogPanel) -> None:
        self._panel = panel
        self._lines: list[str] = []
        self._times: list[float] = []
        #: What is queued, in order: ("lines", lines, times), ("gap", seconds), ("note", lines), ("state", text).
        self._queue: list[tuple] = []
        self._posted = False
        #: Lines written so far (notes left out).
        self.lines_written = 0

    def line(self, text: str, timestamp: float = 0.0) -> None:
        self._lines.append(text)
        self._times.append(timestamp)
        self.lines_written += 1
        self._post()

    def gap(self, seconds: float) -> None:
        """The stream was cut for `seconds`: lines written meanwhile may be missing."""
        self._enqueue(("gap", seconds))

    def note(self, lines: list[str]) -> None:
        """Lines of the app's own (an error, a hint), shown where the log's lines go."""
        self._enqueue(("note", lines))

    def state(self, text: str) -> None:
        """The stream's state for the status line ("● live", "reconnecting…", "stopped: …")."""
        self._enqueue(("state", text))

    def _enqueue(self, item: tuple) -> None:
        self._cut()
        self._queue.append(item)
        self._post()

    def _cut(self) -> None:
        if self._lines:
            self._queue.append(("lines", self._lines, self._times))
            self._lines, self._times = [], []

    def _post(self) -> None:
        if not self._posted:
            self._posted = True
            self._panel.post_message(self.Arrived())

    def take(self) -> list[tuple]:
        """Everything queued, in order (the panel's handler calls it)."""
        self._posted = False
        self._cut()
        queue, self._queue = self._queue, []
        return queue


class LogPanel(Vertical):
    """One log pane: the view, a prompt for search/filter, and the status line.

    `title` names the source (`chromium`, `/var/log/app.log`); `slug` is used in saved file names.
    `feed(panel)`, when given, is the coroutine that streams lines into `panel.feed` (a `LogFeed`): it runs as this
    panel's worker from mount, so removing the panel cancels the stream. Without it the panel shows
    whatever is appended to its view (fixed content, snapshots).
    """

    DEFAULT_CSS = """
    LogPanel { height: 1fr; border: round $panel-lighten-2; border-title-color: $text-muted; }
    LogPanel:focus-within { border: round $accent; border-title-color: $text; }
    LogPanel > #log-prompt-row { display: none; height: 1; }
    LogPanel > #log-prompt-row.visible { display: block; }
    LogPanel #log-prompt-label { width: auto; height: 1; padding: 0 1; background: $accent; color: $text; }
    /* Input's own :focus border would squeeze the text out of a one-row prompt */
    LogPanel #log-prompt, LogPanel #log-prompt:focus { height: 1; width: 1fr; border: none; padding: 0 1; margin: 0; }
    """
    BINDINGS = [
        Binding("slash", "prompt('search')", "Search", id="logs.search"),
        Binding("f", "prompt('filter')", "Filter", id="logs.filter"),
        Binding("ctrl+s", "save", "Save", id="logs.save"),
        Binding("w", "toggle_wrap", "Wrap", id="logs.wrap", show=False),
        Binding("t", "toggle_timestamps", "Timestamps", id="logs.timestamps", show=False),
        Binding("j", "toggle_json", "Pretty JSON", id="logs.json", show=False),
        Binding("escape", "close_prompt", "Close prompt", show=False),
    ]

    #: View options: the lines (`LogView`) and the status line (`LogStatus`) are bound to them (`data_bind`).
    wrap: reactive[bool] = reactive(False)
    show_timestamps: reactive[bool] = reactive(False)
    pretty: reactive[bool] = reactive(False)

    #: The stream's state as shown in the status line ("● live", "reconnecting in 2 s (...)"); "" for none.
    connection: reactive[str] = reactive("", init=False)

    def __init__(
        self,
        title: str,
        slug: str,
        *,
        feed: Callable[[LogPanel], Awaitable[None]] | None = None,
        capacity: int = DEFAULT_CAPACITY,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._feed = feed
        self.feed = LogFeed(self)
        self.title = title
        self.slug = slug
        self.capacity = capacity
        self.border_title = title
        self._prompt_mode = "search"
        self._status_pending = False

    def compose(self) -> ComposeResult:
        options = (LogPanel.wrap, LogPanel.show_timestamps, LogPanel.pretty)
        yield LogView(self.capacity).data_bind(*options)
        with Horizontal(id="log-prompt-row"):
            yield Label("search", id="log-prompt-label")
            yield Input(id="log-prompt", select_on_focus=False)
        yield LogStatus().data_bind(*options)

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.update_status()
        if self._feed is not None:
            self.run_worker(self._feed(self), group="log-stream", exclusive=True, exit_on_error=False)

    @on(LogFeed.Arrived)
    def _feed_arrived(self, message: LogFeed.Arrived) -> None:
        message.stop()
        view = self.view
        for item in self.feed.take():
            kind = item[0]
            if kind == "lines":
                view.push_many(item[1], item[2])
            elif kind == "gap":
                view.add_gap(item[1])
            elif kind == "note":
                view.append_lines(item[1])
            else:
                view.flush()  # the lines before a state change are shown with it
                self.connection = item[1]

    def focus_view(self) -> None:
        self.view.focus()

    # status ----------------------------------------------------------------

    @on(LogView.Changed)
    def _view_changed(self, event: LogView.Changed) -> None:
        event.stop()
        self.update_status()

    def watch_connection(self) -> None:
        self.update_status()

    def update_status(self) -> None:
        if not self.is_mounted:
            return
        view = self.view
        buffer = view.buffer
        status = self.query_one(LogStatus)
        paused, live, problem = (status.get_component_rich_style(f"logstatus--{name}")
                                 for name in ("paused", "live", "problem"))
        parts: list[tuple[str, Style | str]] = [
            (self.title, ""),
            (f"{len(buffer):,} lines", ""),
            (f"{buffer.dropped:,} dropped", problem if buffer.dropped else ""),
        ]
        if view.filter_query:
            parts.append((f"filter {view.filter_query!r}: {view.entry_count:,} shown", ""))
        if view.search is not None:
            number = view.match_number()
            where = f"{number:,}/" if number is not None else ""
            parts.append((f"/{view.search.query}: {where}{len(view.search):,} matches", ""))
        stopped = self.connection.startswith(("stopped", "not available"))
        if stopped:
            pass  # nothing comes any more: not "following" beside "stopped"
        elif view.following:
            parts.append(("● following", ""))
        else:
            count = view.new_while_paused
            new = f" · {count:,} new line{'s' if count != 1 else ''}" if count else ""
            parts.append((f"⏸ paused — G or End to follow{new}", paused))
        head = Text(no_wrap=True, overflow="ellipsis")
        for index, (part, style) in enumerate(parts):
            if index:
                head.append(" │ ")
            head.append(part, style)
        healthy = self.connection.startswith("●")
        status.set_parts(head, Text(self.connection, live if healthy else problem))

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap

    def action_toggle_timestamps(self) -> None:
        self.show_timestamps = not self.show_timestamps

    def action_toggle_json(self) -> None:
        self.pretty = not self.pretty

    # prompt -------------------------------------------------------------------

    def action_prompt(self, mode: str) -> None:
        self._prompt_mode = mode
        prompt = self.query_one("#log-prompt", Input)
        view = self.view
        if mode == "search":
            prompt.placeholder = "case-insensitive; enter finds, n/N next/previous, esc closes"
            prompt.value = view.search.query if view.search is not None else ""
        else:
            prompt.placeholder = "show only lines containing… (empty shows all)"
            prompt.value = view.filter_query
        self.query_one("#log-prompt-label", Label).update(mode)
        self.query_one("#log-prompt-row").add_class("visible")
        prompt.focus()

    def action_close_prompt(self) -> None:
        from textual.actions import SkipAction

        row = self.query_one("#log-prompt-row")
        if not row.has_class("visible"):
            raise SkipAction()
        row.remove_class("visible")
        self.focus_view()

    @on(Input.Submitted, "#log-prompt")
    def _prompt_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#log-prompt-row").remove_class("visible")
        view = self.view
        view.focus()
        if self._prompt_mode == "search":
            view.set_search(event.value)
        else:
            view.set_filter(event.value)

    # save ---------------------------------------------------------------------

    def action_save(self) -> None:
        """Ask where (the download directory by default), then write the lines held right now."""
        from bbrowse.tui.dialogs.save import SaveScreen

        view = self.view
        lines = view.shown_lines()
        query = view.filter_query
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        what = (f"the {len(lines):,} lines shown with the filter {query!r} (of {len(view.buffer):,})" if query
                else f"{len(lines):,} lines of {self.title}")

        def chosen(target: Path | None) -> None:
            if target is not None:
                self._save(lines, target, f" (filter {query!r})" if query else "")

        self.app.push_screen(SaveScreen("Save log", f"bbrowse-{self.slug}-{stamp}.log", what=what), chosen)

    @work(exclusive=True, group="log-save")
    async def _save(self, lines: list[str], target: Path, which: str = "") -> None:
        try:
            target, _ = await save_lines(lines, target)
        except OSError as error:
            self.notify(f"Could not save to {target}: {error}", title="Save failed", severity="error", timeout=8,
                        markup=False)
            return
        self.notify(f"Saved {len(lines):,} lines{which} to {target}", title="Log saved", timeout=8, markup=False)
