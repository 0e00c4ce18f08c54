"""`GhosttyCore`: the terminal core on libghostty-vt (Ghostty's terminal core, through the `pyghostty`
binding), where pyghostty has a wheel (Linux x86_64 and aarch64). See `core.py` for the choice.

It implements `TerminalCore` and knows nothing of Textual: rows come out as plain runs of
`(text, (fg, bg, flags))` (`cells.py`) for the painter, and the replies the terminal writes back to the
program (device attributes, cursor reports, kitty graphics acknowledgements...) come out of
`take_replies` in the order the queries came. How it reads rows and keeps scrollback: docs/terminal.md.
"""

from __future__ import annotations

from cffi import FFI, CDefError
from pyghostty import Terminal, ffi, lib
from pyghostty._ffi import union_fn

from . import flood
from .cells import DEFAULT_ATTR, Attr, Run
from .core import TerminalCore
from .ghostty_cells import (
    TAG_BG_PALETTE,
    TAG_BG_RGB,
    WIDE_SPACER_TAIL,
    background_colour,
    cell_parts,
    decode_row,
    style_attr,
)
from .ghostty_images import KittyImages
from .ghostty_keys import KeyEncoder
from .images import Placement

# Pixel size of a cell as reported to programs (CSI 14/16 t) and used to size kitty images: a
# typical terminal font; the half-block drawing shows 1 x 2 of these "pixels" per cell.
CELL_WIDTH_PX = 8
CELL_HEIGHT_PX = 16
# The scrollback budget per line: 10 bytes a column plus 256 (a cell takes 8 bytes; pages add their
# style and grapheme tables): the least that keeps the requested lines at 40 to 300 columns, since every
# byte of the budget is memory the ingest touches (figures: docs/decisions.md).
_BYTES_PER_CELL = 10
_BYTES_PER_LINE = 256
KITTY_IMAGE_STORAGE_BYTES = 64 * 1024 * 1024

# Device attributes as Ghostty answers them: a VT220-class terminal with ANSI colour.
_DA1_LEVEL = 62
_DA1_FEATURES = (22,)
_DA2 = (1, 10, 0)

_TWIN = "BbrowseScrollViewport"
try:
    ffi.typeof(_TWIN)
except CDefError:
    # cffi (ABI mode) cannot pass a union by value; a struct of the same size and alignment is passed
    # the same way (in memory on x86-64 and aarch64), as pyghostty does for GhosttyPoint.
    ffi.cdef(f"typedef struct {{ GhosttyTerminalScrollViewportTag tag; uint64_t v0; uint64_t v1; }} {_TWIN};")
assert ffi.sizeof(_TWIN) == ffi.sizeof("GhosttyTerminalScrollViewport")
_scroll_viewport = ffi.cast(
    f"void(*)(GhosttyTerminal, {_TWIN})", ffi.addressof(lib, "ghostty_terminal_scroll_viewport")
)

_grid_ref = union_fn("ghostty_terminal_grid_ref", "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)")

_ROW_RAW = lib.GHOSTTY_RENDER_STATE_ROW_DATA_CELLS_RAW
_ROW_CELLS = lib.GHOSTTY_RENDER_STATE_ROW_DATA_CELLS
_CELL_STYLE = lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_STYLE
_CELL_GRAPHEME_LEN = lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_GRAPHEMES_LEN
_CELL_GRAPHEME_BUF = lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_GRAPHEMES_BUF
_STYLE_MEMO_LIMIT = 65536

# libghostty's functions and constants, looked up once (an attribute of `lib` costs a dictionary
# walk in cffi's ABI mode, and these run for every key and every frame).
_SUCCESS = lib.GHOSTTY_SUCCESS
_terminal_get = lib.ghostty_terminal_get
_vt_write = lib.ghostty_terminal_vt_write
_render_update = lib.ghostty_render_state_update
_render_get = lib.ghostty_render_state_get
_render_clean = lib.ghostty_render_state_clean
_next_row = lib.ghostty_render_state_row_iterator_next
_next_dirty_row = lib.ghostty_render_state_row_iterator_next_dirty
_row_get = lib.ghostty_render_state_row_get
_cells_select = lib.ghostty_render_state_row_cells_select
_cells_get = lib.ghostty_render_state_row_cells_get
_DATA_DIRTY = lib.GHOSTTY_RENDER_STATE_DATA_DIRTY
_DATA_ROW_ITERATOR = lib.GHOSTTY_RENDER_STATE_DATA_ROW_ITERATOR
_DIRTY_FALSE = lib.GHOSTTY_RENDER_STATE_DIRTY_FALSE
_DIRTY_FULL = lib.GHOSTTY_RENDER_STATE_DIRTY_FULL
_DATA_MODE = lib.GHOSTTY_TERMINAL_DATA_MODE


def _check(result: int, what: str) -> None:
    if result != lib.GHOSTTY_SUCCESS:
        raise RuntimeError(f"libghostty: {what} failed ({result})")


class _RenderState:
    """libghostty's render state, its row iterator and row-cells handle, freed with the core."""

    def __init__(self) -> None:
        state = ffi.new("GhosttyRenderState*")
        _check(lib.ghostty_render_state_new(ffi.NULL, state), "render_state_new")
        self.state = ffi.gc(state[0], lib.ghostty_render_state_free)
        self.rows = ffi.new("GhosttyRenderStateRowIterator*")
        _check(lib.ghostty_render_state_row_iterator_new(ffi.NULL, self.rows), "row_iterator_new")
        self.iterator = ffi.gc(self.rows[0], lib.ghostty_render_state_row_iterator_free)
        self.cells = ffi.new("GhosttyRenderStateRowCells*")
        _check(lib.ghostty_render_state_row_cells_new(ffi.NULL, self.cells), "row_cells_new")
        self.cells_handle = ffi.gc(self.cells[0], lib.ghostty_render_state_row_cells_free)
        self.view = ffi.new("GhosttyCellsView*")
        self.dirty = ffi.new("GhosttyRenderStateDirty*")
        self.style = ffi.new("GhosttyStyle*")
        self.style.size = ffi.sizeof("GhosttyStyle")
        self.grapheme_len = ffi.new("uint32_t*")
        self.row_y = ffi.new("uint16_t*")


class _RowReaders:
    """Style and grapheme lookups for the row under the render state's iterator (its cells handle is
    fetched on first use). Styles are memoised by their bytes across frames, and by style id in
    `known` for as long as ids mean the same style: style ids belong to a page of the terminal's
    memory, and one table serves every row when the view lies in one page (asked on the first
    lookup), else each row starts afresh."""

    def __init__(self, render: _RenderState, styles: dict[bytes, Attr], iterator, one_page) -> None:
        self._render = render
        self._styles = styles
        self._iterator = iterator
        self._one_page_check = one_page
        self._one_page: bool | None = None
        self.known: dict[int, Attr] = {}
        self._ready = False

    def next_row(self) -> None:
        self._ready = False
        if self._one_page is False:
            self.known.clear()

    def _select(self, x: int) -> None:
        render = self._render
        if not self._ready:
            _row_get(self._iterator, _ROW_CELLS, render.cells)
            self._ready = True
        _cells_select(render.cells_handle, x)

    def style_of(self, x: int, style_id: int) -> Attr:
        if self._one_page is None:
            self._one_page = bool(self._one_page_check())
        render = self._render
        self._select(x)
        _cells_get(render.cells_handle, _CELL_STYLE, render.style)
        key = ffi.buffer(render.style)[:]
        attr = self._styles.get(key)
        if attr is None:
            if len(self._styles) >= _STYLE_MEMO_LIMIT:
                self._styles.clear()
            attr = self._styles[key] = style_attr(render.style)
        self.known[style_id] = attr
        return attr

    def graphemes(self, x: int) -> str:
        render = self._render
        self._select(x)
        _cells_get(render.cells_handle, _CELL_GRAPHEME_LEN, render.grapheme_len)
        length = render.grapheme_len[0]
        if not length:
            return " "
        buffer = ffi.new("uint32_t[]", length)
        _cells_get(render.cells_handle, _CELL_GRAPHEME_BUF, buffer)
        return "".join(map(chr, buffer))


class GhosttyCore(TerminalCore):
    """A terminal of `cols` x `rows` cells with about `scrollback` lines of history."""

    name = "ghostty"
    label = "libghostty-vt (pyghostty)"
    supports_images = True

    def __init__(self, cols: int = 80, rows: int = 24, scrollback: int = 10_000) -> None:
        self.scrollback_limit = scrollback
        self._terminal = Terminal(cols, rows, scrollback=0)
        self._handle = self._terminal._t[0]
        self._cols = cols
        self._rows_count = rows
        self._replies = bytearray()
        self._capture: bytearray | None = None
        self._callbacks: list[object] = []
        self._outs: dict[str, FFI.CData] = {}
        self._mode = ffi.new("GhosttyTerminalModeConfig*")
        self._configure()
        self._render = _RenderState()
        self._rows: list[list[Run]] = [[(" " * cols, DEFAULT_ATTR)] for _ in range(rows)]
        self._styles: dict[bytes, Attr] = {}
        self._keys = KeyEncoder()
        self._point = ffi.new("GhosttyPointS*")
        self._point.tag = lib.GHOSTTY_POINT_TAG_VIEWPORT
        self._ref = ffi.new("GhosttyGridRef*")
        self._ref.size = ffi.sizeof("GhosttyGridRef")
        self.images = KittyImages(self._handle)
        self._title = ""
        self._title_changed = False

    # ------------------------------------------------------------------ setup

    def _set(self, option: int, value: object) -> None:
        _check(lib.ghostty_terminal_set(self._handle, option, value), f"terminal_set {option}")

    def _configure(self) -> None:
        """Limits and the effects the pane answers: replies, title, size reports, device attributes."""
        self._set(lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_LINES, ffi.NULL)
        self._set_scrollback_budget()
        self._set(lib.GHOSTTY_TERMINAL_OPT_KITTY_IMAGE_STORAGE_LIMIT, ffi.new("uint64_t*", KITTY_IMAGE_STORAGE_BYTES))
        name = b"xterm-256color"
        self._terminfo = ffi.new("char[]", name)
        self._set(lib.GHOSTTY_TERMINAL_OPT_TERMINFO_NAME, ffi.new("GhosttyString*", (self._terminfo, len(name))))

        def write_pty(_terminal, _userdata, data, length) -> None:
            target = self._capture if self._capture is not None else self._replies
            target += ffi.buffer(data, length)

        def title_changed(_terminal, _userdata) -> None:
            self._title_changed = True

        def size(_terminal, _userdata, out) -> bool:
            out.rows, out.columns = self._rows_count, self._cols
            out.cell_width, out.cell_height = CELL_WIDTH_PX, CELL_HEIGHT_PX
            return True

        def device_attributes(_terminal, _userdata, out) -> bool:
            out.primary.conformance_level = _DA1_LEVEL
            for i, feature in enumerate(_DA1_FEATURES):
                out.primary.features[i] = feature
            out.primary.num_features = len(_DA1_FEATURES)
            out.secondary.device_type, out.secondary.firmware_version, out.secondary.rom_cartridge = _DA2
            return True

        for option, ctype, function in (
            (lib.GHOSTTY_TERMINAL_OPT_WRITE_PTY, "GhosttyTerminalWritePtyFn", write_pty),
            (lib.GHOSTTY_TERMINAL_OPT_TITLE_CHANGED, "GhosttyTerminalTitleChangedFn", title_changed),
            (lib.GHOSTTY_TERMINAL_OPT_SIZE, "GhosttyTerminalSizeFn", size),
            (lib.GHOSTTY_TERMINAL_OPT_DEVICE_ATTRIBUTES, "GhosttyTerminalDeviceAttributesFn", device_attributes),
        ):
            callback = ffi.callback(ctype, function)
            self._callbacks.append(callback)  # kept alive as long as the terminal
            self._set(option, callback)

    def _scrollback_budget(self) -> int:
        """Scrollback is bounded by bytes, not lines: libghostty's line limit is enforced by counting and cost
        two thirds of the plain throughput, while its byte limit only drops whole pages. Sized from the
        requested lines and the width, so at least that many lines are kept; a resize recomputes it."""
        return self.scrollback_limit * (self._cols * _BYTES_PER_CELL + _BYTES_PER_LINE)

    def _set_scrollback_budget(self) -> None:
        self._set(lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_BYTES, ffi.new("size_t*", self._scrollback_budget()))

    def _get(self, key: int, ctype: str):
        """One `ghostty_terminal_get` value (structs are copied out by the caller right away)."""
        out = self._outs.get(ctype)
        if out is None:
            out = self._outs[ctype] = ffi.new(ctype + "*")
        if _terminal_get(self._handle, key, out) != _SUCCESS:
            raise RuntimeError(f"libghostty: terminal_get {key} failed")
        return out[0]

    # ------------------------------------------------------------------ bytes in, replies out

    def feed(self, data: bytes) -> None:
        """Program output. Sequences and UTF-8 split across feeds are joined."""
        _vt_write(self._handle, data, len(data))

    def take_replies(self) -> bytes:
        """What the terminal answered since the last call (in order), for the program's input."""
        if not self._replies:
            return b""
        replies = bytes(self._replies)
        self._replies.clear()
        return replies

    @property
    def flood_keep_lines(self) -> int:
        """How many plain lines at the end of a flood must be drawn: enough to redraw every row of
        the screen and fill the promised history (beyond it libghostty keeps whatever its last page
        holds, which depends on how much went through)."""
        return 2 * self._rows_count + self.scrollback_limit + 1

    def skippable_prefix(self, backlog: bytes | bytearray, plain_end: int | None = None) -> int:
        """How many leading bytes of `backlog` can be dropped because they only scroll away unseen
        (see `flood.py`; `plain_end` is `flood.first_not_plain(backlog)` if the caller knows it);
        0 unless the terminal is in a state where that is exact."""
        cut = flood.plain_head(backlog, self.flood_keep_lines, plain_end)
        if not cut or not self.plain_lines_only_scroll():
            return 0
        return cut

    def plain_lines_only_scroll(self) -> bool:
        """Plain lines fed now would scroll the whole screen: the parser is between sequences, no
        scroll region or left/right margins are set (asked with DECRQSS, answered internally)."""
        if not self._get(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND, "bool"):
            return False
        self._capture = bytearray()
        try:
            self.feed(b"\x1bP$qr\x1b\\\x1bP$qs\x1b\\")
            answer = bytes(self._capture)
        finally:
            self._capture = None
        full = f"\x1bP1$r1;{self._rows_count}r\x1b\\".encode()
        # Left/right margins: "not valid" while DECLRMM is off, or set to the full width.
        no_margins = (b"", b"\x1bP0$r\x1b\\", f"\x1bP1$r1;{self._cols}s\x1b\\".encode())
        return answer.startswith(full) and answer[len(full) :] in no_margins

    # ------------------------------------------------------------------ size and reset

    @property
    def cols(self) -> int:
        return self._cols

    @property
    def rows(self) -> int:
        return self._rows_count

    def resize(self, cols: int, rows: int) -> None:
        """New size; the primary screen reflows (wrapped lines re-wrap), history is pulled back in."""
        cols, rows = max(1, cols), max(1, rows)
        _check(lib.ghostty_terminal_resize(self._handle, cols, rows, CELL_WIDTH_PX, CELL_HEIGHT_PX), "resize")
        self._cols, self._rows_count = cols, rows
        self._set_scrollback_budget()
        self._rows = [[(" " * cols, DEFAULT_ATTR)] for _ in range(rows)]

    def reset(self) -> None:
        """A blank terminal (full reset, history gone) for a new program."""
        lib.ghostty_terminal_reset(self._handle)
        self._scroll(lib.GHOSTTY_SCROLL_VIEWPORT_BOTTOM)
        self._rows = [[(" " * self._cols, DEFAULT_ATTR)] for _ in range(self._rows_count)]
        self._replies.clear()
        self._title = ""
        self._title_changed = True

    # ------------------------------------------------------------------ cursor and modes

    @property
    def cursor(self) -> tuple[int, int]:
        """(x, y) on the active screen."""
        return (self.cursor_x, self.cursor_y)

    @property
    def cursor_x(self) -> int:
        return self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_X, "uint16_t")

    @property
    def cursor_y(self) -> int:
        return self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y, "uint16_t")

    @property
    def cursor_visible(self) -> bool:
        return bool(self._get(lib.GHOSTTY_TERMINAL_DATA_CURSOR_VISIBLE, "bool"))

    @property
    def alternate_screen_active(self) -> bool:
        return self._get(lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, "int") == lib.GHOSTTY_TERMINAL_SCREEN_ALTERNATE

    def mode(self, number: int, ansi: bool = False) -> bool:
        """A DEC private mode (or with `ansi`, an ANSI mode) as the program set it."""
        config = self._mode
        config.mode = (number & 0x7FFF) | (ansi << 15)  # ghostty_mode_new's packing (a static inline)
        if _terminal_get(self._handle, _DATA_MODE, config) != _SUCCESS:
            raise RuntimeError(f"libghostty: mode {number} failed")
        return bool(config.value)

    @property
    def application_cursor_keys(self) -> bool:
        return self.mode(1)

    @property
    def application_keypad(self) -> bool:
        return self.mode(66)

    @property
    def bracketed_paste(self) -> bool:
        return self.mode(2004)

    @property
    def focus_events(self) -> bool:
        return self.mode(1004)

    @property
    def mouse_tracking(self) -> bool:
        return bool(self._get(lib.GHOSTTY_TERMINAL_DATA_MOUSE_TRACKING, "bool"))

    @property
    def mouse_sgr(self) -> bool:
        return self.mode(1006)

    @property
    def synchronized_output(self) -> bool:
        """The program is in the middle of drawing a frame it wants shown whole (mode 2026)."""
        return self.mode(2026)

    @property
    def kitty_keyboard_flags(self) -> int:
        """The kitty keyboard protocol flags the program pushed (0: legacy keys)."""
        return self._get(lib.GHOSTTY_TERMINAL_DATA_KITTY_KEYBOARD_FLAGS, "uint8_t")

    @property
    def title(self) -> str:
        if self._title_changed:
            self._title_changed = False
            value = self._get(lib.GHOSTTY_TERMINAL_DATA_TITLE, "GhosttyString")
            self._title = ffi.buffer(value.ptr, value.len)[:].decode("utf-8", "replace") if value.len else ""
        return self._title

    def encode_key(self, key: str, character: str | None) -> bytes | None:
        """The bytes a key press sends, as the program's modes want it (DECCKM, keypad, alt prefix,
        modifyOtherKeys, the kitty keyboard protocol); None for keys that mean nothing here."""
        return self._keys.encode(self._handle, key, character, self.kitty_keyboard_flags)

    # ------------------------------------------------------------------ scrollback

    def _scroll(self, tag: int, value: int = 0) -> None:
        request = ffi.new(f"{_TWIN}*")
        request.tag = tag
        request.v0 = value & 0xFFFFFFFFFFFFFFFF
        _scroll_viewport(self._handle, request[0])

    @property
    def scrollback_lines(self) -> int:
        """Lines of history (above the active screen)."""
        return self._get(lib.GHOSTTY_TERMINAL_DATA_SCROLLBACK_ROWS, "size_t")

    @property
    def scroll_offset(self) -> int:
        """How many lines the view is scrolled back from the live screen."""
        bar = self._get(lib.GHOSTTY_TERMINAL_DATA_SCROLLBAR, "GhosttyTerminalScrollbar")
        return max(0, bar.total - bar.offset - bar.len)

    def scroll_view(self, delta: int) -> int:
        """Scroll the view `delta` lines back (negative: forward); returns the new offset."""
        if delta:
            self._scroll(lib.GHOSTTY_SCROLL_VIEWPORT_DELTA, -delta)
        return self.scroll_offset

    def scroll_to_bottom(self) -> None:
        self._scroll(lib.GHOSTTY_SCROLL_VIEWPORT_BOTTOM)

    # ------------------------------------------------------------------ text (for tests and tools)

    @property
    def display(self) -> list[str]:
        """The active screen as rows of text, trailing spaces removed."""
        lines = self._terminal.text().split("\n")
        lines = [line.rstrip() for line in lines[: self._rows_count]]
        return lines + [""] * (self._rows_count - len(lines))

    def line_text(self, y: int) -> str:
        return self.display[y]

    def scrollback_text(self) -> list[str]:
        """The history, oldest line first, as rows of text."""
        count = self.scrollback_lines
        if not count:
            return []
        selection = ffi.new("GhosttySelection*")
        selection.size = ffi.sizeof("GhosttySelection")
        selection.start = self._terminal.ref(0, 0, "history")[0]
        selection.end = self._terminal.ref(self._cols - 1, count - 1, "history")[0]
        lines = self._terminal._format_sel(selection).split("\n")
        return [line.rstrip() for line in lines] + [""] * (count - len(lines))

    def cell(self, x: int, y: int) -> tuple[str, Attr]:
        """(text, style) of a cell of the active screen; "" for the right half of a wide character."""
        ref = self._terminal.ref(x, y)
        raw = ffi.new("GhosttyCell*")
        _check(lib.ghostty_grid_ref_cell(ref, raw), "grid_ref_cell")
        style = ffi.new("GhosttyStyle*")
        style.size = ffi.sizeof("GhosttyStyle")
        _check(lib.ghostty_grid_ref_style(ref, style), "grid_ref_style")
        attr = style_attr(style)
        tag, wide, content = cell_parts(raw[0])
        if wide == WIDE_SPACER_TAIL:
            return "", attr
        if tag in (TAG_BG_PALETTE, TAG_BG_RGB):
            return " ", (attr[0], background_colour(tag, content), attr[2])
        length = ffi.new("size_t*")
        lib.ghostty_grid_ref_graphemes(ref, ffi.NULL, 0, length)
        buffer = ffi.new("uint32_t[]", max(1, length[0]))
        if lib.ghostty_grid_ref_graphemes(ref, buffer, len(buffer), length) != lib.GHOSTTY_SUCCESS:
            return " ", attr
        return "".join(map(chr, buffer[0 : length[0]])) or " ", attr

    # ------------------------------------------------------------------ drawing

    def take_dirty(self) -> set[int]:
        """Bring the drawing state up to date: the rows of the view that changed since the last
        call are decoded (only those) and their numbers returned; read them with `row(y)`."""
        render = self._render
        if _render_update(render.state, self._handle) != _SUCCESS:
            raise RuntimeError("libghostty: render_state_update failed")
        _render_get(render.state, _DATA_DIRTY, render.dirty)
        level = render.dirty[0]
        if level == _DIRTY_FALSE:
            return set()
        _render_get(render.state, _DATA_ROW_ITERATOR, render.rows)
        iterator = render.iterator
        rows = self._rows
        count = len(rows)
        readers = _RowReaders(render, self._styles, iterator, lambda: self._page_of(0) == self._page_of(count - 1))
        style_of, graphemes, known = readers.style_of, readers.graphemes, readers.known
        dirty: set[int] = set()
        if level == _DIRTY_FULL:
            y = -1
            while _next_row(iterator):
                y += 1
                if y >= count:
                    break
                readers.next_row()
                rows[y] = decode_row(self._raw_row(iterator), known, style_of, graphemes)
                dirty.add(y)
        else:
            row_y = render.row_y
            while _next_dirty_row(iterator, row_y):
                y = row_y[0]
                if y >= count:
                    break
                readers.next_row()
                rows[y] = decode_row(self._raw_row(iterator), known, style_of, graphemes)
                dirty.add(y)
        _render_clean(render.state)
        return dirty

    def _raw_row(self, iterator) -> bytes:
        view = self._render.view
        _row_get(iterator, _ROW_RAW, view)
        return ffi.buffer(view.ptr, view.len * 8)[:]

    def _page_of(self, y: int) -> int:
        """Which page of the terminal's memory holds row `y` of the view (an opaque number)."""
        point = self._point
        point.value.y = y
        if _grid_ref(self._handle, point[0], self._ref) != lib.GHOSTTY_SUCCESS:
            return -1 - y  # unknown: never equal to another row's
        return int(ffi.cast("uintptr_t", self._ref.node))

    def row(self, y: int) -> list[Run]:
        """The runs of row `y` of the view as of the last `take_dirty`."""
        return self._rows[y]

    @property
    def images_generation(self) -> int:
        """Changes whenever a kitty graphics image or placement is added or deleted (0: none ever)."""
        return self.images.generation(self._handle)

    def placements(self) -> list[Placement]:
        """Kitty graphics images visible in the view, with their pixels and grid rectangle."""
        return self.images.visible(self._handle)

    def close(self) -> None:
        """Free the native terminal now (garbage collection frees it otherwise)."""
        self._terminal.close()
