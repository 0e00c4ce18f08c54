"""`PythonCore`: the terminal core in pure Python, where libghostty (pyghostty) has no wheel (macOS)
or is turned off (`BBROWSE_TERMINAL_CORE=python`). Same interface as `GhosttyCore` (`core.py`).

It speaks the xterm dialect that `TERM=xterm-256color` programs use, checked against tmux; kitty
graphics and DECRQSS are not implemented. What it covers, and why it is fast enough (tokenising in C,
rows that move on scroll, memoised SGR, the widget's flood shortcut): docs/terminal.md, "The Python core".
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import cast

from rich.cells import get_character_cell_size

from . import flood
from .cells import DEFAULT_ATTR, Attr, Run
from .charsets import TABLES
from .core import TerminalCore
from .images import Placement
from .keys import PythonKeyEncoder
from .python_sgr import apply_sgr, blank_attr

# Everything that is not printable text, as one group so that `re.split` hands back text and
# sequences alternately (in C, with no match objects): CR LF (the commonest), CSI, OSC, DCS / APC /
# PM / SOS strings (ignored), other ESC sequences, an incomplete sequence at the very end (held for
# the next feed), and single control characters.
_SEQUENCE = re.compile(
    r"(\r\n"
    r"|\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[P_^X][^\x1b\x07]*(?:\x07|\x1b\\)"
    r"|\x1b[\x20-\x2f]*[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e]"
    r"|\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*|\][^\x07\x1b]*\x1b?|[P_^X][^\x1b\x07]*\x1b?|[\x20-\x2f]*)\Z"
    r"|[\x00-\x1f\x7f-\x9f])"
)
_COMPLETE_ESCAPE = re.compile(
    r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[P_^X][^\x1b\x07]*(?:\x07|\x1b\\)"
    r"|\x1b[\x20-\x2f]*[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e]"
)
_CSI_PARTS = re.compile(r"\x1b\[([\x30-\x3f]*)([\x20-\x2f]*)([\x40-\x7e])")
_ESC_PARTS = re.compile(r"\x1b([\x20-\x2f]*)(.)", re.DOTALL)
# Parsed escape sequences by their text: most output repeats a few dozen of them.
_ACTIONS: dict[str, tuple] = {}
_SGR_AFTER: dict[tuple[Attr, str], Attr] = {}
_MEMO_LIMIT = 65536
# A string sequence (OSC, DCS, ...) longer than this is dropped rather than held for its end.
_MAX_HELD = 1 << 20


_TAB_WIDTH = 8


class Row:
    """One line of cells: parallel lists of characters and attributes.

    A character is `" "` when blank, `""` in the second column of a wide character, and may hold
    several code points (a base and its combining marks). `runs` caches the row as styled runs and is
    cleared by every write; `wrapped` says the line continues on the next row (autowrap).
    """

    __slots__ = ("attrs", "chars", "runs", "wrapped")

    def __init__(self, cols: int, attr: Attr = DEFAULT_ATTR) -> None:
        self.chars: list[str] = [" "] * cols
        self.attrs: list[Attr] = [attr] * cols
        self.wrapped = False
        self.runs: list[Run] | None = None

    @property
    def text(self) -> str:
        """The row's characters (wide characters once), trailing blanks kept."""
        return "".join(self.chars)

    def fit(self, cols: int) -> None:
        """Cut or pad the row to `cols` cells, never leaving half of a wide character."""
        chars = self.chars
        have = len(chars)
        if have > cols:
            if chars[cols] == "" and cols > 0:
                chars[cols - 1] = " "
            del chars[cols:]
            del self.attrs[cols:]
        elif have < cols:
            chars.extend([" "] * (cols - have))
            self.attrs.extend([DEFAULT_ATTR] * (cols - have))
        self.runs = None


_ROW_CHARS = Row.__dict__["chars"]
_ROW_ATTRS = Row.__dict__["attrs"]


class _PlainRow(Row):
    """A row the flood path sent straight to the history: one line of ASCII text in one attribute on a
    blank row, kept as that text until something reads its cells. Most flood lines leave the history
    unread, so they never cost a list of cells."""

    __slots__ = ("_plain",)

    def __init__(self, text: str, attr: Attr, cols: int) -> None:  # no Row.__init__: no cells yet
        self._plain: tuple[str, Attr, int] | None = (text, attr, cols)
        self.wrapped = False
        self.runs = None

    def _make_cells(self) -> None:
        assert self._plain is not None
        text, attr, cols = self._plain
        self._plain = None
        n = len(text)
        _ROW_CHARS.__set__(self, [*text, *(" " * (cols - n))])
        _ROW_ATTRS.__set__(self, [attr] * n + [DEFAULT_ATTR if attr[1] == -1 else blank_attr(attr)] * (cols - n))

    @property
    def chars(self) -> list[str]:
        if self._plain is not None:
            self._make_cells()
        return _ROW_CHARS.__get__(self)

    @chars.setter
    def chars(self, value: list[str]) -> None:
        if self._plain is not None:
            self._make_cells()
        _ROW_CHARS.__set__(self, value)

    @property
    def attrs(self) -> list[Attr]:
        if self._plain is not None:
            self._make_cells()
        return _ROW_ATTRS.__get__(self)

    @attrs.setter
    def attrs(self, value: list[Attr]) -> None:
        if self._plain is not None:
            self._make_cells()
        _ROW_ATTRS.__set__(self, value)


class _SavedCursor:
    """What DECSC saves and DECRC restores (xterm: position, attributes, charsets, wrap, origin)."""

    __slots__ = ("attr", "charsets", "gl", "origin", "wrap_pending", "x", "y")

    def __init__(self, x: int = 0, y: int = 0, attr: Attr = DEFAULT_ATTR, wrap_pending: bool = False,
                 origin: bool = False, charsets: tuple[str, ...] = ("B", "B", "B", "B"), gl: int = 0) -> None:
        self.x, self.y, self.attr, self.wrap_pending = x, y, attr, wrap_pending
        self.origin, self.charsets, self.gl = origin, charsets, gl


class PythonCore(TerminalCore):
    """The state of one terminal: screens, cursor, modes, scrollback; fed with the PTY's bytes.

    Output with no escape sequence is split on CR LF with `str.split`, the rest with one `re.split` into
    text runs and sequences; printable runs are written with list slice assignment, so a line of text
    costs a handful of Python operations, not one per character.
    """

    name = "python"
    label = "Python core"
    supports_images = False

    def __init__(self, cols: int = 80, rows: int = 24, scrollback: int = 10_000) -> None:
        self.cols = max(1, cols)
        self.rows = max(1, rows)
        self.scrollback_limit = max(0, scrollback)
        # History is trimmed back to the limit in batches (as libghostty drops whole pages), so a view
        # scrolled back to the top stays on its lines while output arrives.
        self._history_cap = self.scrollback_limit + max(256, self.scrollback_limit // 8) if scrollback else 0
        self.scrollback: deque[Row] = deque()
        self._spare_rows: list[Row] = []
        self._main: list[Row] = [Row(self.cols) for _ in range(self.rows)]
        self._alt: list[Row] = [Row(self.cols) for _ in range(self.rows)]
        self.lines: list[Row] = self._main
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""
        self._skipping_string = False
        self.title = ""
        self.icon_title = ""
        self.cwd: str | None = None
        self.bell_count = 0
        self.on_reply: Callable[[bytes], None] | None = None
        self.on_bell: Callable[[], None] | None = None
        self._replies: list[bytes] = []
        self._keys = PythonKeyEncoder()
        self._view: list[list[Run]] = [[(" " * self.cols, DEFAULT_ATTR)] for _ in range(self.rows)]
        self._scroll_offset = 0
        self._title_stack: list[str] = []
        self._reset_state()

    # ------------------------------------------------------------------ state

    def _reset_state(self) -> None:
        self._blank_chars = [" "] * self.cols
        self._blank_attrs = [DEFAULT_ATTR] * self.cols
        self.cx = 0
        self.cy = 0
        self.attr: Attr = DEFAULT_ATTR
        self.wrap_pending = False
        self.top = 0
        self.bottom = self.rows - 1
        self.autowrap = True
        self.origin_mode = False
        self.insert_mode = False
        self.newline_mode = False
        self.cursor_visible = True
        self.cursor_shape = 0
        self.application_cursor_keys = False
        self.application_keypad = False
        self.bracketed_paste = False
        self.mouse_tracking = 0
        self.mouse_sgr = False
        self.focus_events = False
        self.reverse_video = False
        self.synchronized_output = False
        self.modify_other_keys = 0
        self._kitty_flags = [0]  # the kitty keyboard protocol's stack (the top is in force)
        self.alternate_screen_active = False
        self._charsets = ["B", "B", "B", "B"]
        self._gl = 0
        self._translate: dict[int, str] | None = None
        self._saved = [_SavedCursor(), _SavedCursor()]
        self._tabs = set(range(0, self.cols, _TAB_WIDTH))
        self._last_char = ""
        self._dirty: set[int] = set()
        self._all_dirty = True

    # ------------------------------------------------------------------ public API

    @property
    def cursor(self) -> tuple[int, int]:
        """The cursor's (column, row) on the screen, 0-based (in the last column while a wrap is pending)."""
        return (min(self.cx, self.cols - 1), self.cy)

    @property
    def cursor_x(self) -> int:
        return min(self.cx, self.cols - 1)

    @property
    def cursor_y(self) -> int:
        return self.cy

    @property
    def scrollback_lines(self) -> int:
        """How many lines the scrollback holds."""
        return len(self.scrollback)

    @property
    def scroll_offset(self) -> int:
        """How many lines the view is scrolled back from the live screen (0: live)."""
        return self._scroll_offset

    def scroll_view(self, delta: int) -> int:
        """Scroll the view back (`delta` > 0) or forward into the scrollback; returns the new offset.

        The alternate screen has no scrollback, so there the view stays live.
        """
        limit = 0 if self.alternate_screen_active else len(self.scrollback)
        offset = min(max(self._scroll_offset + delta, 0), limit)
        if offset != self._scroll_offset:
            self._scroll_offset = offset
            self._all_dirty = True
        return offset

    def scroll_to_bottom(self) -> None:
        """Return the view to the live screen."""
        self.scroll_view(-self._scroll_offset)

    def take_dirty(self) -> set[int]:
        """The view rows changed since the last call, decoded into runs (read them with `row(y)`)."""
        if self._all_dirty or self._scroll_offset:
            dirty = set(range(self.rows))
        else:
            dirty = self._dirty
        self._dirty = set()
        self._all_dirty = False
        view = self._view
        if len(view) != self.rows:
            view[:] = [[(" " * self.cols, DEFAULT_ATTR)]] * self.rows
        for y in dirty:
            row = self.view_row(y)
            view[y] = _runs(row, self.cols) if row is not None else [(" " * self.cols, DEFAULT_ATTR)]
        return dirty

    def row(self, y: int) -> list[Run]:
        """The runs of row `y` of the view as of the last `take_dirty`."""
        return self._view[y]

    def take_replies(self) -> bytes:
        """Answers to the program's queries (cursor position, device attributes) not yet sent."""
        data = b"".join(self._replies)
        self._replies.clear()
        return data

    def view_row(self, y: int) -> Row | None:
        """The row shown at view line `y` (scrollback included when scrolled back)."""
        if not 0 <= y < self.rows:
            return None
        offset = self._scroll_offset
        if not offset:
            return self.lines[y]
        history = self.scrollback
        index = len(history) - offset + y
        if index < len(history):
            return history[index]
        return self.lines[index - len(history)]

    # ------------------------------------------------------------------ the rest of the interface

    @property
    def kitty_keyboard_flags(self) -> int:
        """The kitty keyboard protocol flags the program pushed (0: legacy keys)."""
        return self._kitty_flags[-1]

    def mode(self, number: int, ansi: bool = False) -> bool:
        """A DEC private mode (or with `ansi`, an ANSI mode) as the program set it."""
        if ansi:
            return bool({4: self.insert_mode, 20: self.newline_mode}.get(number))
        if number == 66:
            return self.application_keypad
        return bool(self._private_mode_state(number))

    def encode_key(self, key: str, character: str | None) -> bytes | None:
        """The bytes a key press sends, as the program's modes want it."""
        return self._keys.encode(key, character, cursor_keys=self.application_cursor_keys,
                                 modify_other_keys=self.modify_other_keys, kitty_flags=self._kitty_flags[-1])

    @property
    def flood_keep_lines(self) -> int:
        """How many plain lines at the end of a flood must be drawn (as `GhosttyCore`)."""
        return 2 * self.rows + self.scrollback_limit + 1

    def plain_lines_only_scroll(self) -> bool:
        """Plain lines fed now would scroll the whole main screen, the parser being between sequences."""
        return not (
            self.alternate_screen_active
            or self.top != 0
            or self.bottom != self.rows - 1
            or self._held
            or self._skipping_string
            or self._decoder.getstate()[0]
        )

    def skippable_prefix(self, backlog: bytes | bytearray, plain_end: int | None = None) -> int:
        """How many leading bytes of `backlog` only scroll away unseen (see `flood.py`)."""
        cut = flood.plain_head(backlog, self.flood_keep_lines, plain_end)
        if not cut or not self.plain_lines_only_scroll():
            return 0
        # The head would push the whole history out: older lines must not stay above the rest.
        self.scrollback.clear()
        self._scroll_offset = 0
        return cut

    @property
    def images_generation(self) -> int:
        return 0  # no kitty graphics in this core

    def placements(self) -> list[Placement]:
        return []

    def close(self) -> None:
        """Nothing native to free."""

    def line_text(self, y: int) -> str:
        """The text of screen row `y` (wide characters once, trailing blanks removed)."""
        return "".join(self.lines[y].chars).rstrip()

    @property
    def display(self) -> list[str]:
        """The screen as text, one string per row, trailing blanks removed."""
        return ["".join(row.chars).rstrip() for row in self.lines]

    def scrollback_text(self) -> list[str]:
        """The scrollback as text, oldest first."""
        return ["".join(row.chars).rstrip() for row in self.scrollback]

    def cell(self, x: int, y: int) -> tuple[str, Attr]:
        """The character and attribute of screen cell (`x`, `y`)."""
        row = self.lines[y]
        return row.chars[x], row.attrs[x]

    def reset(self) -> None:
        """Power-on state: both screens blank, scrollback emptied, modes at their defaults."""
        self._main = [Row(self.cols) for _ in range(self.rows)]
        self._alt = [Row(self.cols) for _ in range(self.rows)]
        self.lines = self._main
        self.scrollback.clear()
        self._decoder.reset()
        self._held = ""
        self._skipping_string = False
        self._scroll_offset = 0
        self.title = ""
        self._reset_state()
        self._replies.clear()
        self._view = [[(" " * self.cols, DEFAULT_ATTR)] for _ in range(self.rows)]

    # ------------------------------------------------------------------ resize

    def resize(self, cols: int, rows: int) -> None:
        """Change the screen size. A new width reflows the main screen and its history (wrapped lines
        re-wrap, the cursor stays on its character); rows are cut or padded and the main screen trades
        lines with the scrollback (shrinking pushes the top into it, growing pulls lines back, as tmux
        does). The alternate screen is cut or padded, never reflowed."""
        cols = max(1, cols)
        rows = max(1, rows)
        if cols == self.cols and rows == self.rows:
            return
        alternate = self.alternate_screen_active
        main_x = self._saved[0].x if alternate else min(self.cx, self.cols - 1)
        main_y = self._saved[0].y if alternate else self.cy
        if cols != self.cols:
            main_x, main_y = self._reflow_main(cols, rows, main_x, main_y)
            if alternate:
                self._saved[0].x = main_x
            else:
                self.cx = main_x
        else:
            main_y = self._resize_rows(self._main, rows, main_y, history=True)
        alt_y = self._resize_rows(self._alt, rows, self.cy if alternate else 0, history=False)
        for row in self._main:
            row.fit(cols)
        for row in self._alt:
            row.fit(cols)
        if self.alternate_screen_active:
            self._saved[0].y = min(main_y, rows - 1)
            self.cy = alt_y
        else:
            self.cy = main_y
        self.cols = cols
        self.rows = rows
        self._blank_chars = [" "] * cols
        self._blank_attrs = [DEFAULT_ATTR] * cols
        self.cx = min(self.cx, cols - 1)
        self.cy = min(self.cy, rows - 1)
        self.wrap_pending = False
        self.top = 0
        self.bottom = rows - 1
        for saved in self._saved:
            saved.x = min(saved.x, cols - 1)
            saved.y = min(saved.y, rows - 1)
        self._tabs = {t for t in self._tabs if t < cols} | set(range((self._tab_end() // _TAB_WIDTH + 1)
                                                                      * _TAB_WIDTH, cols, _TAB_WIDTH))
        self._scroll_offset = min(self._scroll_offset, len(self.scrollback))
        self._all_dirty = True
        self._view = [[(" " * cols, DEFAULT_ATTR)] for _ in range(rows)]

    def _reflow_main(self, cols: int, rows: int, cx: int, cy: int) -> tuple[int, int]:
        """Re-wrap the history and the main screen at `cols`; the cursor (`cx`, `cy`) is kept on the
        same character. Returns the cursor's new position on the main screen."""
        source = [*self.scrollback, *self._main]
        cursor_index = len(self.scrollback) + cy
        end = len(source)
        while end - 1 > cursor_index and _is_blank(source[end - 1]):
            end -= 1
        out: list[Row] = []
        cursor = (0, 0)
        i = 0
        while i < end:
            chars: list[str] = []
            attrs: list[Attr] = []
            offset = -1
            while True:
                row = source[i]
                if i == cursor_index:
                    offset = len(chars) + cx
                chars.extend(row.chars)
                attrs.extend(row.attrs)
                i += 1
                if not row.wrapped or i >= end:
                    break
            keep = len(chars)
            while keep and chars[keep - 1] == " " and attrs[keep - 1] == DEFAULT_ATTR:
                keep -= 1
            first = len(out)
            out.extend(_wrap(chars[:keep], attrs[:keep], cols))
            if offset >= 0:
                line, x = divmod(offset, cols)
                while len(out) <= first + line:
                    out[-1].wrapped = True
                    out.append(Row(cols))
                cursor = (x, first + line)
        top = max(0, len(out) - rows)
        top = min(top, cursor[1])
        history = out[:top]
        cap = self._history_cap
        self.scrollback = deque(history[-cap:] if cap else ())
        screen = out[top : top + rows]
        screen.extend(Row(cols) for _ in range(rows - len(screen)))
        self._main[:] = screen
        if self.lines is not self._alt:
            self.lines = self._main
        return cursor[0], cursor[1] - top

    def _tab_end(self) -> int:
        return max(self._tabs) if self._tabs else -_TAB_WIDTH

    def _resize_rows(self, lines: list[Row], rows: int, cursor_y: int, history: bool) -> int:
        """Make `lines` `rows` long; returns where the cursor's row went."""
        have = len(lines)
        cols = self.cols
        if rows < have:
            excess = have - rows
            # Blank rows below the cursor go first, then the top rows scroll into history.
            while excess and len(lines) - 1 > cursor_y and _is_blank(lines[-1]):
                lines.pop()
                excess -= 1
            if excess:
                for row in lines[:excess]:
                    if history and self.scrollback_limit:
                        self.scrollback.append(row)
                del lines[:excess]
                cursor_y -= excess
            return max(cursor_y, 0)
        need = rows - have
        if history:
            while need and self.scrollback:
                row = self.scrollback.pop()
                row.wrapped = False
                lines.insert(0, row)
                cursor_y += 1
                need -= 1
        lines.extend(Row(cols) for _ in range(need))
        return cursor_y

    # ------------------------------------------------------------------ feeding

    def feed(self, data: bytes) -> None:
        """Consume output from the program. Chunks may split UTF-8 characters and escape sequences."""
        text = self._decoder.decode(data)
        if self._skipping_string:
            end = _string_end(text)
            if end < 0:
                return
            text = text[end:]
            self._skipping_string = False
        if self._held:
            text = self._held + text
            self._held = ""
        if text:
            self._process(text)

    def _process(self, text: str) -> None:
        """Apply decoded output."""
        if "\x1b" not in text:
            lines = text.split("\r\n")
            if all(map(str.isprintable, lines)):
                self._process_plain_lines(lines)
                return
        self._process_sequences(text)

    def _process_plain_lines(self, lines: list[str]) -> None:
        """The flood path: printable lines joined by CR LF, no escape sequence, no other control.

        `str.split` and `str.isprintable` did the tokenising in C. Many lines that scroll the whole
        main screen go at once (`_plain_lines_at_once`) once the cursor is on the bottom row; the rest
        one by one (`_plain_lines_one_by_one`).
        """
        rows = self.rows
        if (
            len(lines) > 2 * rows + 2
            and self.lines is self._main
            and self.top == 0
            and self.bottom == rows - 1
            and self._translate is None
            and not self.insert_mode
        ):
            lead = rows - self.cy  # lines whose CR LF takes the cursor to the bottom row, the last one scrolling
            rest = lines[lead:]
            if max(map(len, rest)) <= self.cols and all(map(str.isascii, rest)):
                self._plain_lines_one_by_one([*lines[:lead], ""])
                self._plain_lines_at_once(rest)
                return
        self._plain_lines_one_by_one(lines)

    def _plain_lines_at_once(self, lines: list[str]) -> None:
        """More than a screen of ASCII lines that fit a row, the cursor at the start of a bottom row that
        a scroll just made blank: the state that writing and scrolling them one by one would leave.

        The last screenful become the screen's rows; the lines before them go to the history as
        `_PlainRow`s (text only), and only as many as the history keeps (its trimming is counted, not
        run line by line).
        """
        screen = self._main
        cols, rows = self.cols, self.rows
        attr = self.attr
        count = len(lines)
        pushes = count - 1  # one scroll per CR LF: the screen's rows above the bottom one, then the lines
        to_history = count - rows  # lines that scroll off the screen
        spares = self._spare_rows
        if self.scrollback_limit:
            kept, offset = self._history_after(pushes)
            mine = min(kept, pushes)  # this call's rows the history keeps (the newest)
            tail: list[Row] = []
            if mine > to_history:
                tail.extend(screen[rows - 1 - (mine - to_history) : rows - 1])
            history = self.scrollback
            gone = len(history) - (kept - mine)
            if gone >= len(history):
                dropped = list(history)
                history.clear()
            elif gone < len(history) // 4:  # a small feed: its few rows one by one
                popleft = history.popleft
                dropped = [popleft() for _ in range(gone)]
            else:  # copies of pointers in C, not a popleft a row
                dropped = list(islice(history, gone))
                rest = list(islice(history, gone, None))
                history.clear()
                history.extend(rest)
            # the rows the history drops carry the new lines (no allocation under a steady flood)
            reused: list[_PlainRow]
            if set(map(type, dropped)) <= {_PlainRow}:
                reused = cast("list[_PlainRow]", dropped)
            else:
                reused = [row for row in dropped if isinstance(row, _PlainRow)]
                spares.extend(row for row in dropped if type(row) is Row)
            texts = lines[max(0, to_history - mine) : to_history]
            for plain_row, text in zip(reused, texts, strict=False):
                plain_row._plain = (text, attr, cols)
                plain_row.runs = None
                plain_row.wrapped = False
            tail.extend(reused[: len(texts)])
            tail.extend([_PlainRow(text, attr, cols) for text in texts[len(reused) :]])
            history.extend(tail)
            self._scroll_offset = offset
            if len(spares) > self._history_cap:
                del spares[: -self._history_cap]
        blank = DEFAULT_ATTR if attr[1] == -1 else blank_attr(attr)
        blank_chars = self._blank_chars
        fresh: list[Row] = []
        for text in lines[-rows:]:
            row: Row | None = spares.pop() if spares else None
            if row is None or len(row.chars) != cols:
                row = Row(cols)
            n = len(text)
            chars = row.chars
            chars[:] = blank_chars
            chars[:n] = text
            row.attrs[:] = [attr] * n + [blank] * (cols - n)
            row.wrapped = False
            row.runs = None
            fresh.append(row)
        screen[:] = fresh
        last = lines[-1]
        n = len(last)
        self.cy = rows - 1
        if n == cols:
            self.cx = cols - 1
            self.wrap_pending = self.autowrap
        else:
            self.cx = n
            self.wrap_pending = False
        self._last_char = last[-1] if last else ""
        self._all_dirty = True

    def _history_after(self, pushes: int) -> tuple[int, int]:
        """The history's length and the view's offset after `pushes` rows went to it one by one, as
        `_scroll_screen` and `_trim_history` would leave them."""
        length, offset = len(self.scrollback), self._scroll_offset
        cap, limit = self._history_cap, self.scrollback_limit
        while pushes:
            room = cap - length  # rows that go in before one makes the history trim
            if pushes <= room:
                length += pushes
                if offset:
                    offset += pushes
                break
            pushes -= room + 1
            if offset:
                offset += room
            length = limit
            offset = min(offset, length)
            if offset:
                offset = min(offset + 1, length)
        return length, offset

    def _plain_lines_one_by_one(self, lines: list[str]) -> None:
        """Plain lines one at a time: each a slice assignment into its row (when it is ASCII and fits)
        and each CR LF a scroll that reuses a row."""
        dirty = self._dirty
        screen, cols, rows, bottom, attr, inline_print, inline_scroll = self._hot_state()
        last = len(lines) - 1
        for index, run in enumerate(lines):
            if run:
                cx = self.cx
                end = cx + len(run)
                if inline_print and end <= cols and not self.wrap_pending and run.isascii():
                    cy = self.cy
                    row = screen[cy]
                    chars = row.chars
                    if chars[cx] == "" and cx:
                        chars[cx - 1] = " "
                    if end < cols and chars[end] == "":
                        chars[end] = " "
                    chars[cx:end] = run
                    row.attrs[cx:end] = [attr] * (end - cx)
                    row.runs = None
                    dirty.add(cy)
                    if end == cols:
                        self.cx = cols - 1
                        self.wrap_pending = self.autowrap
                    else:
                        self.cx = end
                    self._last_char = run[-1]
                else:
                    self._print(run)
            if index == last:
                break
            self.wrap_pending = False
            self.cx = 0
            cy = self.cy
            if cy == bottom:
                if inline_scroll:
                    self._scroll_screen(screen)
                else:
                    self._index()
            elif cy < rows - 1:
                self.cy = cy + 1
        self._last_char = "" if lines[-1] == "" else self._last_char

    def _process_sequences(self, text: str) -> None:
        """Apply output with escape sequences and controls. The hot cases (ASCII text that fits the
        line, CR LF, SGR) run inline on local copies of the state they read; anything else goes to a
        method, after which the locals are read again."""
        parts = _SEQUENCE.split(text)
        if len(parts) > 1 and not parts[-1] and parts[-2][0] == "\x1b" and not _COMPLETE_ESCAPE.fullmatch(parts[-2]):
            tail = parts[-2]
            if len(tail) <= _MAX_HELD:
                self._held = tail
            else:
                self._skipping_string = tail[1:2] in ("]", "P", "_", "^", "X")
            del parts[-2:]
        sgr_after = _SGR_AFTER
        dirty = self._dirty
        lines, cols, rows, bottom, attr, inline_print, inline_scroll = self._hot_state()
        it = iter(parts)
        for run, seq in zip(it, it, strict=False):
            if run:
                cx = self.cx
                end = cx + len(run)
                if inline_print and end <= cols and not self.wrap_pending and run.isascii():
                    cy = self.cy
                    row = lines[cy]
                    chars = row.chars
                    if chars[cx] == "" and cx:
                        chars[cx - 1] = " "
                    if end < cols and chars[end] == "":
                        chars[end] = " "
                    chars[cx:end] = run
                    row.attrs[cx:end] = [attr] * (end - cx)
                    row.runs = None
                    dirty.add(cy)
                    if end == cols:
                        self.cx = cols - 1
                        self.wrap_pending = self.autowrap
                    else:
                        self.cx = end
                    self._last_char = run[-1]
                else:
                    self._print(run)
            if seq == "\r\n":
                self.wrap_pending = False
                self._last_char = ""
                self.cx = 0
                cy = self.cy
                if cy == bottom:
                    if inline_scroll:
                        self._scroll_screen(lines)
                    else:
                        self._index()
                elif cy < rows - 1:
                    self.cy = cy + 1
                continue
            if seq[0] != "\x1b":
                self._control(seq)
                if seq in "\x0e\x0f":
                    lines, cols, rows, bottom, attr, inline_print, inline_scroll = self._hot_state()
                continue
            action = _ACTIONS.get(seq)
            if action is None:
                action = _parse_escape(seq)
            kind = action[0]
            if kind == "sgr":
                self.attr = attr = action[1]
                self._last_char = ""
                continue
            if kind == "m":
                key = (attr, seq)
                new_attr = sgr_after.get(key)
                if new_attr is None:
                    new_attr = apply_sgr(attr, action[1])
                    if len(sgr_after) >= _MEMO_LIMIT:
                        sgr_after.clear()
                    sgr_after[key] = new_attr
                self.attr = attr = new_attr
                self._last_char = ""
                continue
            if kind == "csi":
                self._csi(action[1], action[2], action[3])
            elif kind == "esc":
                self._esc(action[1], action[2])
            elif kind == "osc":
                self._osc(seq[2:].rstrip("\x07").removesuffix("\x1b\\"))
            else:
                continue
            self._last_char = ""
            dirty = self._dirty
            lines, cols, rows, bottom, attr, inline_print, inline_scroll = self._hot_state()
        if parts[-1]:
            self._print(parts[-1])

    def _hot_state(self) -> tuple:
        """The state `_process` keeps in locals, and whether its inline paths apply."""
        return (
            self.lines,
            self.cols,
            self.rows,
            self.bottom,
            self.attr,
            self._translate is None and not self.insert_mode,
            self.top == 0 and self.bottom == self.rows - 1,
        )

    # ------------------------------------------------------------------ printing

    def _print(self, text: str) -> None:
        if self._translate is not None:
            text = text.translate(self._translate)
        if text.isascii():
            self._print_ascii(text)
        else:
            self._print_wide(text)
        self._last_char = text[-1]

    def _print_ascii(self, text: str) -> None:
        cols = self.cols
        attr = self.attr
        n = len(text)
        pos = 0
        while pos < n:
            if self.wrap_pending:
                self.wrap_pending = False
                if self.autowrap:
                    self.lines[self.cy].wrapped = True
                    self.cx = 0
                    self._index()
            cx = self.cx
            cy = self.cy
            space = cols - cx
            if n - pos <= space:
                chunk = text[pos:] if pos else text
            elif self.autowrap:
                chunk = text[pos : pos + space]
            else:
                # Without autowrap the rest piles up in the last column: only its final character stays.
                chunk = text[pos : pos + space - 1] + text[-1]
                n = pos + space
            count = len(chunk)
            end = cx + count
            row = self.lines[cy]
            chars = row.chars
            if self.insert_mode:
                self._insert_blanks(row, cx, count)
            if chars[cx] == "" and cx:
                chars[cx - 1] = " "
            if end < cols and chars[end] == "":
                chars[end] = " "
            chars[cx:end] = chunk
            row.attrs[cx:end] = [attr] * count
            row.runs = None
            self._dirty.add(cy)
            pos += count
            if end >= cols:
                self.cx = cols - 1
                self.wrap_pending = self.autowrap
            else:
                self.cx = end

    def _print_wide(self, text: str) -> None:
        cols = self.cols
        attr = self.attr
        for ch in text:
            width = _char_width(ch)
            if width == 0:
                self._combine(ch)
                continue
            if width > cols:
                continue
            if self.wrap_pending:
                self.wrap_pending = False
                if self.autowrap:
                    self.lines[self.cy].wrapped = True
                    self.cx = 0
                    self._index()
            if width == 2 and self.cx == cols - 1:
                if not self.autowrap:
                    continue  # no room and no wrap: the character is dropped
                row = self.lines[self.cy]
                self._erase_cells(row, self.cx, cols, DEFAULT_ATTR)
                row.wrapped = True
                self.cx = 0
                self._index()
            cx = self.cx
            cy = self.cy
            row = self.lines[cy]
            chars = row.chars
            if self.insert_mode:
                self._insert_blanks(row, cx, width)
            end = cx + width
            if chars[cx] == "" and cx:
                chars[cx - 1] = " "
            if end < cols and chars[end] == "":
                chars[end] = " "
            chars[cx] = ch
            row.attrs[cx] = attr
            if width == 2:
                chars[cx + 1] = ""
                row.attrs[cx + 1] = attr
            row.runs = None
            self._dirty.add(cy)
            if end >= cols:
                self.cx = cols - 1
                self.wrap_pending = self.autowrap
            else:
                self.cx = end

    def _combine(self, mark: str) -> None:
        """Attach a zero-width character (combining mark, ZWJ, variation selector) to the last cell."""
        x = self.cx if self.wrap_pending else self.cx - 1
        if x < 0:
            return
        row = self.lines[self.cy]
        if row.chars[x] == "" and x:
            x -= 1
        row.chars[x] += mark
        row.runs = None
        self._dirty.add(self.cy)

    # ------------------------------------------------------------------ lines and scrolling

    def _index(self) -> None:
        """Line feed: down one row, scrolling the region when on its bottom margin."""
        if self.cy == self.bottom:
            if self.top == 0 and self.bottom == self.rows - 1:
                self._scroll_screen(self.lines)
            else:
                self._scroll_up(1)
        elif self.cy < self.rows - 1:
            self.cy += 1

    def _scroll_screen(self, lines: list[Row]) -> None:
        """The hot path of a line feed: the whole screen scrolls one line, the top row goes to the
        history (main screen) and a blank row comes in at the bottom.

        The blank row reuses the row the history drops (or the one leaving the screen when nothing
        keeps it), so a long flood allocates no rows: fewer allocations, far less garbage collection.
        """
        row = lines.pop(0)
        spare: Row | None = row
        if lines is self._main:
            limit = self.scrollback_limit
            if limit:
                history = self.scrollback
                history.append(row)
                if len(history) > self._history_cap:
                    self._trim_history()
                spares = self._spare_rows
                spare = spares.pop() if spares else None
            if self._scroll_offset:
                self._keep_view(1)
        attr = self.attr
        cols = self.cols
        if spare is not None and len(spare.chars) == cols:
            spare.chars[:] = self._blank_chars
            spare.attrs[:] = self._blank_attrs if attr[1] == -1 else [blank_attr(attr)] * cols
            spare.wrapped = False
            spare.runs = None
            lines.append(spare)
        else:
            lines.append(Row(cols, DEFAULT_ATTR if attr[1] == -1 else blank_attr(attr)))
        self._all_dirty = True

    def _reverse_index(self) -> None:
        if self.cy == self.top:
            self._scroll_down(1)
        elif self.cy > 0:
            self.cy -= 1

    def _scroll_up(self, count: int) -> None:
        """Scroll the region up `count` lines (rows leaving the top of the main screen go to history)."""
        top, bottom = self.top, self.bottom
        count = min(count, bottom - top + 1)
        if count <= 0:
            return
        lines = self.lines
        gone = lines[top : top + count]
        del lines[top : top + count]
        blank = blank_attr(self.attr)
        for _ in range(count):
            lines.insert(bottom - count + 1, Row(self.cols, blank))
        if lines is self._main and top == 0:
            # As xterm: lines leaving a region that starts at the top of the main screen are history.
            if self.scrollback_limit:
                self.scrollback.extend(gone)
                self._trim_history()
            if self._scroll_offset:
                self._keep_view(count)
        self._mark_rows(top, bottom)

    def _trim_history(self) -> None:
        """Drop the oldest history down to the limit once it grew past the cap. The rows dropped become
        the blank rows of the next line feeds: a flood allocates no rows (and wakes no garbage collector)."""
        history = self.scrollback
        if len(history) > self._history_cap:
            spares = self._spare_rows
            for _ in range(len(history) - self.scrollback_limit):
                spares.append(history.popleft())
            del spares[: -self._history_cap]
            self._scroll_offset = min(self._scroll_offset, len(history))

    def _keep_view(self, added: int) -> None:
        """While the view is scrolled back, keep it on the same lines as new ones arrive."""
        self._scroll_offset = min(self._scroll_offset + added, len(self.scrollback))

    def _scroll_down(self, count: int) -> None:
        top, bottom = self.top, self.bottom
        count = min(count, bottom - top + 1)
        if count <= 0:
            return
        lines = self.lines
        del lines[bottom - count + 1 : bottom + 1]
        blank = blank_attr(self.attr)
        for _ in range(count):
            lines.insert(top, Row(self.cols, blank))
        self._mark_rows(top, bottom)

    def _mark_rows(self, top: int, bottom: int) -> None:
        if top == 0 and bottom == self.rows - 1:
            self._all_dirty = True
        else:
            self._dirty.update(range(top, bottom + 1))

    # ------------------------------------------------------------------ cell editing

    def _touch(self, y: int) -> Row:
        row = self.lines[y]
        row.runs = None
        self._dirty.add(y)
        return row

    def _erase_cells(self, row: Row, start: int, end: int, attr: Attr) -> None:
        """Blank cells [start, end) of `row`, not leaving half of a wide character."""
        cols = len(row.chars)
        start = max(start, 0)
        end = min(end, cols)
        if start >= end:
            return
        chars = row.chars
        if chars[start] == "" and start:
            chars[start - 1] = " "
        if end < cols and chars[end] == "":
            chars[end] = " "
        chars[start:end] = [" "] * (end - start)
        row.attrs[start:end] = [attr] * (end - start)
        row.runs = None

    def _insert_blanks(self, row: Row, x: int, count: int) -> None:
        """Shift cells from `x` right by `count` (those pushed past the edge are lost)."""
        cols = len(row.chars)
        count = min(count, cols - x)
        if count <= 0:
            return
        chars, attrs = row.chars, row.attrs
        if chars[x] == "" and x:
            chars[x - 1] = " "
            chars[x] = " "
        blank = blank_attr(self.attr)
        chars[x:x] = [" "] * count
        attrs[x:x] = [blank] * count
        if chars[cols] == "":
            chars[cols - 1] = " "
        del chars[cols:]
        del attrs[cols:]
        row.runs = None

    def _delete_cells(self, row: Row, x: int, count: int) -> None:
        cols = len(row.chars)
        count = min(count, cols - x)
        if count <= 0:
            return
        chars, attrs = row.chars, row.attrs
        if chars[x] == "" and x:
            chars[x - 1] = " "
        if x + count < cols and chars[x + count] == "":
            chars[x + count] = " "
        del chars[x : x + count]
        del attrs[x : x + count]
        blank = blank_attr(self.attr)
        chars.extend([" "] * count)
        attrs.extend([blank] * count)
        row.runs = None

    # ------------------------------------------------------------------ controls

    def _control(self, ch: str) -> None:
        if ch == "\n" or ch == "\x0b" or ch == "\x0c":
            self.wrap_pending = False
            if self.newline_mode:
                self.cx = 0
            self._index()
        elif ch == "\r":
            self.wrap_pending = False
            self.cx = 0
        elif ch == "\x08":
            self.wrap_pending = False
            if self.cx > 0:
                self.cx -= 1
        elif ch == "\t":
            self._tab_forward(1)
        elif ch == "\x07":
            self.bell_count += 1
            if self.on_bell is not None:
                self.on_bell()
        elif ch == "\x0e":
            self._gl = 1
            self._update_translate()
        elif ch == "\x0f":
            self._gl = 0
            self._update_translate()
        self._last_char = ""
        # NUL, ENQ, DEL, lone ESC, C1 code points and the rest are ignored.

    def _tab_forward(self, count: int) -> None:
        x = min(self.cx, self.cols - 1)
        for _ in range(min(count, self.cols)):
            stops = [t for t in self._tabs if t > x]
            x = min(stops) if stops else self.cols - 1
        self.cx = min(x, self.cols - 1)
        if self.cx < self.cols - 1:
            self.wrap_pending = False

    def _tab_backward(self, count: int) -> None:
        x = min(self.cx, self.cols - 1)
        for _ in range(min(count, self.cols)):
            stops = [t for t in self._tabs if t < x]
            x = max(stops) if stops else 0
        self.cx = x
        self.wrap_pending = False

    def _update_translate(self) -> None:
        self._translate = TABLES.get(self._charsets[self._gl])

    # ------------------------------------------------------------------ ESC sequences

    def _esc(self, inter: str, final: str) -> None:
        if not inter:
            if final == "7":
                self._save_cursor()
            elif final == "8":
                self._restore_cursor()
            elif final == "D":
                self.wrap_pending = False
                self._index()
            elif final == "E":
                self.wrap_pending = False
                self.cx = 0
                self._index()
            elif final == "M":
                self.wrap_pending = False
                self._reverse_index()
            elif final == "H":
                self._tabs.add(min(self.cx, self.cols - 1))
            elif final == "c":
                self._full_reset()
            elif final == "=":
                self.application_keypad = True
            elif final == ">":
                self.application_keypad = False
            # ESC N/O (single shifts), ESC \ (a stray ST) and the rest: ignored.
            return
        if inter in ("(", ")", "*", "+") and len(inter) == 1:
            self._charsets["()*+".index(inter)] = final
            self._update_translate()
        elif inter == "#" and final == "8":
            self._alignment_test()

    def _full_reset(self) -> None:
        """RIS: both screens blank, modes, tabs and charsets back to power-on (the scrollback stays)."""
        self._main = [Row(self.cols) for _ in range(self.rows)]
        self._alt = [Row(self.cols) for _ in range(self.rows)]
        self.lines = self._main
        self._scroll_offset = 0
        self.title = ""
        self._reset_state()
        self._replies.clear()
        self._view = [[(" " * self.cols, DEFAULT_ATTR)] for _ in range(self.rows)]

    def _alignment_test(self) -> None:
        """DECALN: fill the screen with E, margins reset, cursor home."""
        for y, row in enumerate(self.lines):
            row.chars[:] = ["E"] * self.cols
            row.attrs[:] = [DEFAULT_ATTR] * self.cols
            row.runs = None
            self._dirty.add(y)
        self.top, self.bottom = 0, self.rows - 1
        self.cx = self.cy = 0
        self.wrap_pending = False

    def _save_cursor(self) -> None:
        self._saved[1 if self.alternate_screen_active else 0] = _SavedCursor(
            self.cx, self.cy, self.attr, self.wrap_pending, self.origin_mode, tuple(self._charsets), self._gl)

    def _restore_cursor(self) -> None:
        saved = self._saved[1 if self.alternate_screen_active else 0]
        self.cx = min(saved.x, self.cols - 1)
        self.cy = min(saved.y, self.rows - 1)
        self.attr = saved.attr
        self.wrap_pending = saved.wrap_pending and self.cx == self.cols - 1
        self.origin_mode = saved.origin
        self._charsets = list(saved.charsets)
        self._gl = saved.gl
        self._update_translate()

    # ------------------------------------------------------------------ CSI sequences

    def _csi(self, params: str, inter: str, final: str) -> None:
        private = ""
        if params and params[0] in "<=>?":
            private, params = params[0], params[1:]
        if inter:
            self._csi_intermediate(private, params, inter, final)
            return
        if private == "?":
            if final in "hl":
                self._set_private_modes(params, final == "h")
            elif final == "n" and params == "6":
                self._reply(f"\x1b[?{self.cy - (self.top if self.origin_mode else 0) + 1};"
                            f"{min(self.cx, self.cols - 1) + 1}R")
            elif final == "u":
                self._reply(f"\x1b[?{self._kitty_flags[-1]}u")
            elif final == "J":
                self._erase_display(_first(params, 0))
            elif final == "K":
                self._erase_line(_first(params, 0))
            return
        if private == ">":
            if final == "c":
                self._reply("\x1b[>1;10;0c")
            elif final == "q":
                self._reply("\x1bP>|bbrowse\x1b\\")
            elif final == "u":  # kitty keyboard: push flags
                self._kitty_flags.append(_first(params, 0) & 0x1F)
                del self._kitty_flags[1:-16]
            elif final == "m":  # xterm's modifyOtherKeys: CSI > 4 ; n m (no value: reset)
                resource, _, value = params.partition(";")
                if resource == "4":
                    self.modify_other_keys = _first(value, 0)
            return
        if private == "<" and final == "u":  # kitty keyboard: pop n entries
            count = max(1, _first(params, 1))
            del self._kitty_flags[max(1, len(self._kitty_flags) - count) :]
            if len(self._kitty_flags) == 1:
                self._kitty_flags[0] = 0
            return
        if private == "=" and final == "u":  # kitty keyboard: set (1), or (2), and-not (3) the current flags
            flags_text, _, how = params.partition(";")
            flags, mode = _first(flags_text, 0) & 0x1F, _first(how, 1)
            current = self._kitty_flags[-1]
            self._kitty_flags[-1] = flags if mode == 1 else current | flags if mode == 2 else current & ~flags
            return
        if private:
            return
        handler = _CSI_HANDLERS.get(final)
        if handler is not None:
            handler(self, params)

    def _csi_intermediate(self, private: str, params: str, inter: str, final: str) -> None:
        if inter == "$" and final == "p":
            mode = _first(params, 0)
            if private == "?":
                state = self._private_mode_state(mode)
            else:
                state = {4: self.insert_mode, 20: self.newline_mode}.get(mode)
            value = 0 if state is None else (1 if state else 2)
            self._reply(f"\x1b[{private}{mode};{value}$y")
        elif inter == "!" and final == "p":
            self._soft_reset()
        elif inter == " " and final == "q":
            self.cursor_shape = _first(params, 0)

    def _soft_reset(self) -> None:
        """DECSTR: modes and margins back to defaults, the screen left as it is."""
        self.insert_mode = False
        self.origin_mode = False
        self.autowrap = True
        self.cursor_visible = True
        self.application_cursor_keys = False
        self.application_keypad = False
        self.top, self.bottom = 0, self.rows - 1
        self.attr = DEFAULT_ATTR
        self._charsets = ["B", "B", "B", "B"]
        self._gl = 0
        self._update_translate()
        self._saved[1 if self.alternate_screen_active else 0] = _SavedCursor()
        self.wrap_pending = False

    def _private_mode_state(self, mode: int) -> bool | None:
        return {
            1: self.application_cursor_keys,
            6: self.origin_mode,
            7: self.autowrap,
            25: self.cursor_visible,
            47: self.alternate_screen_active,
            1047: self.alternate_screen_active,
            1049: self.alternate_screen_active,
            1000: self.mouse_tracking == 1000,
            1002: self.mouse_tracking == 1002,
            1003: self.mouse_tracking == 1003,
            1004: self.focus_events,
            1006: self.mouse_sgr,
            2004: self.bracketed_paste,
            2026: self.synchronized_output,
        }.get(mode)

    def _set_private_modes(self, params: str, on: bool) -> None:
        for part in params.split(";"):
            mode = _int(part, -1)
            if mode == 1:
                self.application_cursor_keys = on
            elif mode == 6:
                self.origin_mode = on
                self._home()
            elif mode == 7:
                self.autowrap = on
                if not on:
                    self.wrap_pending = False
            elif mode == 25:
                self.cursor_visible = on
                self._dirty.add(self.cy)
            elif mode == 66:
                self.application_keypad = on
            elif mode in (47, 1047, 1049):
                self._switch_screen(mode, on)
            elif mode == 1048:
                if on:
                    self._save_cursor()
                else:
                    self._restore_cursor()
            elif mode in (9, 1000, 1002, 1003):
                self.mouse_tracking = mode if on else 0
            elif mode == 1006:
                self.mouse_sgr = on
            elif mode == 1004:
                self.focus_events = on
            elif mode == 2004:
                self.bracketed_paste = on
            elif mode == 2026:
                self.synchronized_output = on
            elif mode == 5:
                self.reverse_video = on
                self._all_dirty = True

    def _switch_screen(self, mode: int, on: bool) -> None:
        """Enter or leave the alternate screen.

        1049 saves the cursor and clears the alternate screen on entry and restores the cursor on
        exit; 1047 clears the alternate screen on exit; 47 only switches.
        """
        if on == self.alternate_screen_active:
            if on and mode == 1049:
                self._clear_lines(self._alt, DEFAULT_ATTR)
            return
        if on:
            if mode == 1049:
                self._save_cursor()
            self.alternate_screen_active = True
            self.lines = self._alt
            if mode == 1049:
                self._clear_lines(self._alt, blank_attr(self.attr))
            self._scroll_offset = 0
        else:
            if mode == 1047:
                self._clear_lines(self._alt, blank_attr(self.attr))
            self.alternate_screen_active = False
            self.lines = self._main
            if mode == 1049:
                self._restore_cursor()
        self.wrap_pending = False
        self._all_dirty = True

    def _clear_lines(self, lines: list[Row], attr: Attr) -> None:
        cols = self.cols
        for i in range(len(lines)):
            lines[i] = Row(cols, attr)

    def _set_modes(self, params: str, on: bool) -> None:
        for part in params.split(";"):
            mode = _int(part, -1)
            if mode == 4:
                self.insert_mode = on
            elif mode == 20:
                self.newline_mode = on

    def _reply(self, text: str) -> None:
        data = text.encode()
        if self.on_reply is not None:
            self.on_reply(data)
        else:
            self._replies.append(data)

    def _home(self) -> None:
        self.cx = 0
        self.cy = self.top if self.origin_mode else 0
        self.wrap_pending = False

    def _move_to(self, x: int, y: int) -> None:
        """Absolute position (0-based), relative to the scroll region in origin mode, clamped."""
        if self.origin_mode:
            y = min(max(y + self.top, self.top), self.bottom)
        self.cx = min(max(x, 0), self.cols - 1)
        self.cy = min(max(y, 0), self.rows - 1)
        self.wrap_pending = False

    def _line_down(self, count: int) -> None:
        """CNL: down `count` lines, to the first column."""
        self._cursor_down(count)
        self.cx = 0

    def _line_up(self, count: int) -> None:
        """CPL: up `count` lines, to the first column."""
        self._cursor_up(count)
        self.cx = 0

    def _cursor_up(self, count: int) -> None:
        limit = self.top if self.cy >= self.top else 0
        self.cy = max(self.cy - count, limit)
        self.cx = min(self.cx, self.cols - 1)
        self.wrap_pending = False

    def _cursor_down(self, count: int) -> None:
        limit = self.bottom if self.cy <= self.bottom else self.rows - 1
        self.cy = min(self.cy + count, limit)
        self.cx = min(self.cx, self.cols - 1)
        self.wrap_pending = False

    def _erase_display(self, mode: int) -> None:
        blank = blank_attr(self.attr)
        cols = self.cols
        if mode == 0:
            self._erase_cells(self._touch(self.cy), min(self.cx, cols - 1), cols, blank)
            for y in range(self.cy + 1, self.rows):
                self.lines[y] = Row(cols, blank)
                self._dirty.add(y)
        elif mode == 1:
            for y in range(self.cy):
                self.lines[y] = Row(cols, blank)
                self._dirty.add(y)
            self._erase_cells(self._touch(self.cy), 0, min(self.cx, cols - 1) + 1, blank)
        elif mode == 2:
            if self.lines is self._main and self.scrollback_limit:
                # As tmux and VTE do, a cleared main screen scrolls into history rather than vanishing.
                used = [y for y, row in enumerate(self.lines) if not _is_blank(row)]
                if used:
                    self.scrollback.extend(self.lines[: used[-1] + 1])
                    self._trim_history()
            self._clear_lines(self.lines, blank)
            self._all_dirty = True
        elif mode == 3:
            self.scrollback.clear()
            self._scroll_offset = 0
            self._all_dirty = True
        self.wrap_pending = False

    def _erase_line(self, mode: int) -> None:
        blank = blank_attr(self.attr)
        row = self._touch(self.cy)
        x = min(self.cx, self.cols - 1)
        if mode == 0:
            self._erase_cells(row, x, self.cols, blank)
        elif mode == 1:
            self._erase_cells(row, 0, x + 1, blank)
        elif mode == 2:
            self._erase_cells(row, 0, self.cols, blank)
        self.wrap_pending = False

    def _insert_lines(self, count: int) -> None:
        if not self.top <= self.cy <= self.bottom:
            return
        top = self.top
        self.top = self.cy
        self._scroll_down(count)
        self.top = top
        self.cx = 0
        self.wrap_pending = False

    def _delete_lines(self, count: int) -> None:
        if not self.top <= self.cy <= self.bottom:
            return
        top = self.top
        self.top = self.cy
        count = min(count, self.bottom - self.cy + 1)
        lines = self.lines
        del lines[self.cy : self.cy + count]
        blank = blank_attr(self.attr)
        for _ in range(count):
            lines.insert(self.bottom - count + 1, Row(self.cols, blank))
        self._mark_rows(self.cy, self.bottom)
        self.top = top
        self.cx = 0
        self.wrap_pending = False

    def _set_margins(self, params: str) -> None:
        parts = params.split(";") if params else []
        top = _int(parts[0], 1) if parts else 1
        bottom = _int(parts[1], self.rows) if len(parts) > 1 else self.rows
        top = max(top, 1)
        bottom = min(bottom or self.rows, self.rows)
        if top < bottom:
            self.top, self.bottom = top - 1, bottom - 1
            self._home()

    def _window_op(self, params: str) -> None:
        op = _first(params, 0)
        if op == 18:
            self._reply(f"\x1b[8;{self.rows};{self.cols}t")
        elif op == 22:
            self._title_stack.append(self.title)
            del self._title_stack[:-10]
        elif op == 23 and self._title_stack:
            self.title = self._title_stack.pop()

    def _repeat(self, count: int) -> None:
        """REP: print the last printed character `count` more times."""
        if self._last_char:
            self._print(self._last_char * min(count, self.cols * self.rows))

    # ------------------------------------------------------------------ OSC

    def _osc(self, payload: str) -> None:
        code, _, value = payload.partition(";")
        if code in ("0", "2"):
            self.title = value
            if code == "0":
                self.icon_title = value
        elif code == "1":
            self.icon_title = value
        elif code == "7":
            self.cwd = value
        # Colour queries and settings (4, 10, 11, 104...), hyperlinks (8), clipboard (52): ignored.


def _parse_escape(seq: str) -> tuple:
    """What an escape sequence does, parsed once and remembered (OSC strings are not remembered)."""
    if len(seq) < 2:
        return ("ignore",)  # a lone ESC that no sequence followed
    if seq[1] == "]":
        return ("osc",)
    if seq[1] == "[":
        m = _CSI_PARTS.fullmatch(seq)
        params, inter, final = m.group(1, 2, 3) if m else ("", "", "")
        if final == "m" and not inter and not (params and params[0] in "<=>?"):
            if params.split(";", 1)[0] in ("", "0"):
                # Starts with a reset: the result does not depend on the attributes before it.
                action: tuple = ("sgr", apply_sgr(DEFAULT_ATTR, params))
            else:
                action = ("m", params)
        else:
            action = ("csi", params, inter, final)
    elif seq[1] in "P_^X":
        action = ("ignore",)
    else:
        m = _ESC_PARTS.match(seq)
        action = ("esc", m.group(1), m.group(2)) if m else ("ignore",)
    if len(_ACTIONS) >= _MEMO_LIMIT:
        _ACTIONS.clear()
    _ACTIONS[seq] = action
    return action


def _int(text: str, default: int) -> int:
    if not text:
        return default
    try:
        return int(text.split(":", 1)[0])
    except ValueError:
        return default


def _first(params: str, default: int) -> int:
    return _int(params.split(";", 1)[0], default) if params else default


def _count(params: str) -> int:
    """The first parameter as a count: missing or 0 means 1."""
    return _first(params, 1) or 1


def _params2(params: str) -> tuple[int, int]:
    parts = params.split(";")
    a = _int(parts[0], 1) or 1
    b = _int(parts[1], 1) if len(parts) > 1 else 1
    return a, b or 1


def _string_end(text: str) -> int:
    """Where a skipped string sequence ends in `text` (just after BEL or ST), or -1."""
    positions = [p for p in (text.find("\x07"), text.find("\x1b\\")) if p >= 0]
    if not positions:
        return -1
    end = min(positions)
    return end + (1 if text[end] == "\x07" else 2)


def _wrap(chars: list[str], attrs: list[Attr], cols: int) -> list[Row]:
    """One logical line as rows of `cols` cells (the last not marked wrapped); a wide character that
    would straddle the edge moves to the next row whole."""
    rows: list[Row] = []
    if "" not in chars:
        for start in range(0, max(1, len(chars)), cols):
            row = Row(cols)
            piece = chars[start : start + cols]
            row.chars[: len(piece)] = piece
            row.attrs[: len(piece)] = attrs[start : start + cols]
            row.wrapped = True
            rows.append(row)
    else:
        row = Row(cols)
        x = 0
        k = 0
        while k < len(chars):
            width = 2 if k + 1 < len(chars) and chars[k + 1] == "" else 1
            if x + width > cols:
                row.wrapped = True
                rows.append(row)
                row, x = Row(cols), 0
            row.chars[x : x + width] = chars[k : k + width]
            row.attrs[x : x + width] = attrs[k : k + width]
            x += width
            k += width
        row.wrapped = True
        rows.append(row)
    rows[-1].wrapped = False
    return rows


def _runs(row: Row, cols: int) -> list[Run]:
    """A row as runs of (text, style), cached on the row until it is written to."""
    runs = row.runs
    if runs is not None and len(row.chars) == cols:
        return runs
    chars, attrs = row.chars, row.attrs
    first = attrs[0]
    if attrs.count(first) == len(attrs):
        runs = [("".join(chars), first)]
    else:
        runs = []
        start = 0
        for i in range(1, len(attrs)):
            if attrs[i] != attrs[i - 1]:
                text = "".join(chars[start:i])
                if text:
                    runs.append((text, attrs[start]))
                start = i
        text = "".join(chars[start:])
        if text:
            runs.append((text, attrs[start]))
    row.runs = runs
    return runs


def _is_blank(row: Row) -> bool:
    return all(c == " " for c in row.chars) and all(a == DEFAULT_ATTR for a in row.attrs)


_width_cache: dict[str, int] = {}


def _char_width(ch: str) -> int:
    width = _width_cache.get(ch)
    if width is None:
        if not ch:
            return 0
        width = get_character_cell_size(ch)
        # Variation selectors, ZWJ and combining marks are zero width; so are controls here.
        _width_cache[ch] = width
    return width


_CSI_HANDLERS: dict[str, Callable[[PythonCore, str], None]] = {
    "@": lambda t, p: t._insert_blanks(t._touch(t.cy), min(t.cx, t.cols - 1), _count(p)),
    "A": lambda t, p: t._cursor_up(_count(p)),
    "B": lambda t, p: t._cursor_down(_count(p)),
    "C": lambda t, p: t._move_to(min(t.cx, t.cols - 1) + _count(p), t.cy - (t.top if t.origin_mode else 0)),
    "D": lambda t, p: t._move_to(min(t.cx, t.cols - 1) - _count(p), t.cy - (t.top if t.origin_mode else 0)),
    "E": lambda t, p: t._line_down(_count(p)),
    "F": lambda t, p: t._line_up(_count(p)),
    "G": lambda t, p: t._move_to(_count(p) - 1, t.cy - (t.top if t.origin_mode else 0)),
    "`": lambda t, p: t._move_to(_count(p) - 1, t.cy - (t.top if t.origin_mode else 0)),
    "a": lambda t, p: t._move_to(min(t.cx, t.cols - 1) + _count(p), t.cy - (t.top if t.origin_mode else 0)),
    "H": lambda t, p: t._move_to(_params2(p)[1] - 1, _params2(p)[0] - 1),
    "f": lambda t, p: t._move_to(_params2(p)[1] - 1, _params2(p)[0] - 1),
    "d": lambda t, p: t._move_to(min(t.cx, t.cols - 1), _count(p) - 1),
    "e": lambda t, p: t._cursor_down(_count(p)),
    "I": lambda t, p: t._tab_forward(_count(p)),
    "Z": lambda t, p: t._tab_backward(_count(p)),
    "J": lambda t, p: t._erase_display(_first(p, 0)),
    "K": lambda t, p: t._erase_line(_first(p, 0)),
    "L": lambda t, p: t._insert_lines(_count(p)),
    "M": lambda t, p: t._delete_lines(_count(p)),
    "P": lambda t, p: t._delete_cells(t._touch(t.cy), min(t.cx, t.cols - 1), _count(p)),
    "X": lambda t, p: t._erase_cells(t._touch(t.cy), min(t.cx, t.cols - 1), min(t.cx, t.cols - 1) + _count(p),
                                     blank_attr(t.attr)),
    "S": lambda t, p: t._scroll_up(_count(p)),
    "T": lambda t, p: t._scroll_down(_count(p)) if ";" not in p else None,
    "b": lambda t, p: t._repeat(_count(p)),
    "c": lambda t, p: t._reply("\x1b[?62;22c") if _first(p, 0) == 0 else None,  # as Ghostty: VT220, colour
    "g": lambda t, p: (t._tabs.discard(min(t.cx, t.cols - 1)) if _first(p, 0) == 0
                       else t._tabs.clear() if _first(p, 0) == 3 else None),
    "h": lambda t, p: t._set_modes(p, True),
    "l": lambda t, p: t._set_modes(p, False),
    "n": lambda t, p: (t._reply("\x1b[0n") if _first(p, 0) == 5 else
                       t._reply(f"\x1b[{t.cy - (t.top if t.origin_mode else 0) + 1};{min(t.cx, t.cols - 1) + 1}R")
                       if _first(p, 0) == 6 else None),
    "r": lambda t, p: t._set_margins(p),
    "s": lambda t, p: t._save_cursor(),
    "u": lambda t, p: t._restore_cursor(),
    "t": lambda t, p: t._window_op(p),
}
