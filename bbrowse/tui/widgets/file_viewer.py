"""The file viewer: the first bytes of a remote file as highlighted text, a hex dump, or an image.

A file on the instance may be 500 MB and `read_file` has no byte ranges, so the first read keeps only
`FIRST_READ` bytes on a connection of its own with a small receive buffer, then closes it: on a slow link
the first screen costs that much and no more. `m` (or scrolling to the end) loads a further `LOAD_STEP`
(read from the start again), up to `MAX_LOADED`; past that, `s` in the files pane saves the whole file.
Reading, highlighting and decoding are workers that post what they got; the viewer's handlers draw it,
and an open is itself a message, so a late reply cannot land in the next file. Only visible rows are
formatted (line API), and highlighting (Pygments, in a thread) never holds up the first screen.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from PIL import Image as PILImage
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style
from textual.widgets import Static

from bbrowse.client import ClientError
from bbrowse.humanize import human_bytes
from bbrowse.tui import hexdump
from bbrowse.tui.ansi_text import show_controls
from bbrowse.tui.app_services import services
from bbrowse.tui.file_kind import SNIFF_BYTES, FileKind, detect_kind, language_for, pygments_language
from bbrowse.tui.widgets.image_view import ImageView, decode_image, image_error_text

#: Bytes of the first read: the first screen needs the first block (`SNIFF_BYTES`) of it; the rest is a
#: margin for long lines and the first pages down.
FIRST_READ = 64 * 1024
#: Socket receive buffer of the first read's connection: what the service can send past `FIRST_READ`
#: before the close reaches it is about this much (plus what is on the wire).
FIRST_READ_WINDOW = 32 * 1024
#: Bytes loaded by each further step (`m`, or scrolling to the end).
LOAD_STEP = 256 * 1024
#: Most bytes the viewer ever holds for text and hex; save the file to see past it.
MAX_LOADED = 16 * 1024 * 1024
#: Largest image drawn as an image; bigger ones are shown as a hex dump of their start.
MAX_IMAGE_BYTES = 32 * 1024 * 1024
#: Characters of one line kept for display; the rest is marked with "…".
MAX_LINE_CHARS = 4000
TAB_SIZE = 4
#: Lines highlighted first, so the top of the file is coloured quickly.
FIRST_HIGHLIGHT_LINES = 200
#: Rendered rows kept between frames.
STRIP_CACHE_ROWS = 512

#: Styles, as Textual style strings resolved against the current theme.
STYLE_GUTTER = "$text 50%"
STYLE_FOOTER = "$text 60% italic"
STYLE_OFFSET = "$text-secondary"
HEX_STYLES = {"null": "$text 45%", "printable": "$text", "whitespace": "$text-success", "other": "$text-warning"}

HighlightedLine = list[tuple[str, str]]


def image_target(kind: FileKind, size: int | None, target: int) -> int:
    """The bytes to read once the kind is known: a whole image when it can be drawn, else `target`."""
    if kind is FileKind.IMAGE and (size is None or size <= MAX_IMAGE_BYTES):
        return MAX_IMAGE_BYTES + 1
    return target


def display_line(raw: str) -> str:
    """A decoded line ready to draw: no CR, tabs expanded, controls visible, at most MAX_LINE_CHARS."""
    if raw.endswith("\r"):
        raw = raw[:-1]
    clipped = len(raw) > MAX_LINE_CHARS
    raw = raw[: MAX_LINE_CHARS * 2]
    if "\t" in raw:
        raw = raw.expandtabs(TAB_SIZE)
    line = show_controls(raw)
    if clipped or len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + "…"
    return line


class TextLines:
    """Bytes to display lines, incrementally: UTF-8 (bad bytes as U+FFFD), a partial last line kept open."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.lines: list[str] = []
        self._partial = ""
        self.widest = 0

    def feed(self, data: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        parts = (self._partial + text).split("\n")
        # Only the start of an overlong line is ever drawn: keep the open line bounded.
        self._partial = parts.pop()[: MAX_LINE_CHARS * 2 + 1]
        for part in parts:
            line = display_line(part)
            self.lines.append(line)
            self.widest = max(self.widest, cell_len(line))
        if self._partial:
            self.widest = max(self.widest, cell_len(display_line(self._partial)))

    def __len__(self) -> int:
        return len(self.lines) + (1 if self._partial else 0)

    def __getitem__(self, index: int) -> str:
        if index < len(self.lines):
            return self.lines[index]
        if index == len(self.lines) and self._partial:
            return display_line(self._partial)
        raise IndexError(index)

    def first_line(self) -> str:
        return self[0] if len(self) else ""


def _token_style(token_type, cache: dict) -> str:
    from textual.highlight import HighlightTheme

    found = cache.get(token_type)
    if found is None:
        found, probe = "", token_type
        while probe is not None:
            if style := HighlightTheme.STYLES.get(probe):
                found = style
                break
            probe = probe.parent
        cache[token_type] = found
    return found


def highlight_lines(lines: Sequence[str], language: str) -> list[HighlightedLine] | None:
    """Lines as (text, style) runs, styles being Textual theme style strings; None when the lexer
    is unknown or changed the text's line structure. Slow (Pygments): call it off the UI thread."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language, stripnl=False, ensurenl=True, tabsize=TAB_SIZE)
    except ClassNotFound:
        return None
    out: list[HighlightedLine] = []
    current: HighlightedLine = []
    cache: dict = {}
    for token_type, value in lexer.get_tokens("\n".join(lines)):
        style = _token_style(token_type, cache)
        first = True
        for part in value.split("\n"):
            if not first:
                out.append(current)
                current = []
            first = False
            if part:
                current.append((part, style))
    if current:
        out.append(current)
    del out[len(lines):]
    if len(out) != len(lines):
        return None
    if any("".join(text for text, _ in runs) != line for runs, line in zip(out, lines, strict=True)):
        return None
    return out


class FileLines(ScrollView, can_focus=True):
    """Rows of the loaded bytes, as numbered text lines or hex dump lines, drawn on demand.

    Only visible rows are formatted (`render_line`), so the cost of a frame does not depend on the size
    of what is loaded. Highlighted rows replace the plain ones when Pygments is done: first the opening
    lines, then the whole step."""

    DEFAULT_CSS = """
    FileLines { height: 1fr; background: $surface; }
    """

    class EndReached(Message):
        """The user scrolled to the last row: a good moment to load more."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode: str = "text"
        self.data = bytearray()
        self.text = TextLines()
        self.highlighted: list[HighlightedLine] = []
        self.total_size: int | None = None
        self.footer: str | None = None
        #: `time.perf_counter()` when a row of content was first drawn, and when colours first arrived, since
        #: the last reset.
        self.first_paint_at: float | None = None
        self.first_highlight_at: float | None = None
        self._strips: dict[int, Strip] = {}
        self._styles: dict[str, RichStyle] = {}
        self._style_key: object = None
        #: Bytes a hex row: 16, or fewer when the viewer is narrow (`hexdump.fit_per_line`).
        self.per_line = hexdump.BYTES_PER_LINE

    # content ------------------------------------------------------------------

    def reset(self, mode: str = "text") -> None:
        self.mode = mode
        self.data = bytearray()
        self.text = TextLines()
        self.highlighted = []
        self.total_size = None
        self.footer = None
        self.first_paint_at = None
        self.first_highlight_at = None
        self.scroll_to(0, 0, animate=False)
        self.changed()

    def set_mode(self, mode: str) -> None:
        if mode != self.mode:
            self.mode = mode
            self.scroll_to(0, 0, animate=False)
            self.changed()

    def changed(self) -> None:
        """Content grew or changed: new virtual size, cached rows dropped, repaint."""
        self._strips.clear()
        if self.mode == "hex":
            self.per_line = hexdump.fit_per_line(self.scrollable_content_region.width or 10_000, self._digits())
        self.virtual_size = Size(self._content_width(), self.row_count)
        self.refresh()

    @property
    def content_rows(self) -> int:
        if self.mode == "hex":
            return hexdump.line_count(len(self.data), self.per_line)
        return len(self.text)

    @property
    def row_count(self) -> int:
        return self.content_rows + (1 if self.footer else 0)

    def row_text(self, row: int) -> str:
        """The plain text of row `row`, as drawn (without line numbers): for tests and copying."""
        if row < self.content_rows:
            if self.mode == "hex":
                return hexdump.line_at(self.data, row, digits=self._digits(), per_line=self.per_line)
            return self.text[row]
        if self.footer and row == self.content_rows:
            return self.footer
        raise IndexError(row)

    def _digits(self) -> int:
        return hexdump.offset_digits(max(self.total_size or 0, len(self.data)))

    def _gutter_width(self) -> int:
        return len(str(max(len(self.text), 1))) + 1 if self.mode == "text" else 0

    def _content_width(self) -> int:
        if self.mode == "hex":
            width = hexdump.line_width(self._digits(), self.per_line)
        else:
            width = self._gutter_width() + self.text.widest
        return max(width, cell_len(self.footer or ""))

    # drawing ------------------------------------------------------------------

    def _style(self, spec: str) -> RichStyle:
        key = (self.app.theme, self.styles._cache_key)
        if key != self._style_key:
            self._style_key = key
            self._styles.clear()
            self._strips.clear()
        found = self._styles.get(spec)
        if found is None:
            base = self.visual_style
            found = (base + Style.parse(spec)).rich_style if spec else base.rich_style
            self._styles[spec] = found
        return found

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        base = self._style("")
        if row >= self.row_count:
            return Strip.blank(width, base)
        if row < self.content_rows and self.first_paint_at is None:
            self.first_paint_at = time.perf_counter()
        strip = self._strips.get(row)
        if strip is None:
            if len(self._strips) >= STRIP_CACHE_ROWS:
                self._strips.clear()
            strip = self._strips[row] = self._render_row(row)
        gutter = self._gutter_width() if row < self.content_rows else 0
        if gutter:
            number = Strip([Segment(f"{row + 1:>{gutter - 1}} ", self._style(STYLE_GUTTER))])
            body = strip.crop_extend(scroll_x, scroll_x + max(width - gutter, 0), base)
            return Strip.join([number, body])
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _render_row(self, row: int) -> Strip:
        if row >= self.content_rows:
            return Strip([Segment(self.footer or "", self._style(STYLE_FOOTER))])
        if self.mode == "hex":
            return self._hex_row(row)
        if row < len(self.highlighted):
            return Strip([Segment(text, self._style(style)) for text, style in self.highlighted[row]])
        return Strip([Segment(self.text[row], self._style(""))])

    def _hex_row(self, row: int) -> Strip:
        per_line = self.per_line
        start = row * per_line
        chunk = bytes(self.data[start:start + per_line])
        plain = self._style("")
        segments = [Segment(f"{start:0{self._digits()}x}", self._style(STYLE_OFFSET)), Segment("  ", plain)]
        for index in range(per_line):
            if index == hexdump.GROUP and per_line > hexdump.GROUP:
                segments.append(Segment(" ", plain))
            if index < len(chunk):
                byte = chunk[index]
                segments.append(Segment(f"{byte:02x}", self._style(HEX_STYLES[hexdump.byte_class(byte)])))
            else:
                segments.append(Segment("  ", plain))
            if index < per_line - 1:
                segments.append(Segment(" ", plain))
        segments.append(Segment("  |", plain))
        for byte, char in zip(chunk, hexdump.gutter(chunk), strict=True):
            segments.append(Segment(char, self._style(HEX_STYLES[hexdump.byte_class(byte)])))
        segments.append(Segment("|", plain))
        return Strip(segments)

    def on_resize(self) -> None:
        if self.mode == "hex" and hexdump.fit_per_line(self.scrollable_content_region.width,
                                                       self._digits()) != self.per_line:
            self.changed()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.footer and new_value > old_value and round(new_value) >= self.max_scroll_y > 0:
            self.post_message(self.EndReached())


class FileViewer(Vertical):
    """A title line, then the file as text, hex or image; `open_remote` streams, `show_bytes` shows given bytes.

    An open cancels the workers (they post nothing more) and is itself a message the viewer posts to
    itself, handled after what they had already posted: a late reply cannot land in the next file, and
    one after the viewer is gone is never handled."""

    DEFAULT_CSS = """
    FileViewer { height: 1fr; }
    FileViewer #viewer-title { height: 1; background: $panel; padding: 0 1; }
    FileViewer #viewer-message { height: auto; padding: 1 2; color: $text-muted; }
    FileViewer #viewer-message.error { color: $text-error; }
    FileViewer FileLines, FileViewer ImageView { display: none; }
    FileViewer.-lines FileLines { display: block; }
    FileViewer.-image ImageView { display: block; }
    FileViewer.-lines #viewer-message, FileViewer.-image #viewer-message { display: none; }
    """

    #: Bytes shown as a hex dump whatever the file is (`x`); the title and the rows follow it.
    hex_forced: reactive[bool] = reactive(False, init=False)

    class Opened(Message):
        """The viewer decided what the file is and drew its first screen (or an error)."""

        def __init__(self, viewer: FileViewer) -> None:
            super().__init__()
            self.viewer = viewer

    @dataclass
    class OpenRemote(Message, bubble=False):
        """`open_remote` asked for `path`: handled in turn with the replies of the read it replaces."""

        path: str
        size: int | None
        at: float

    @dataclass
    class Block(Message, bubble=False):
        """The read's next bytes to show (those already shown and those past the step are left out)."""

        data: bytes

    @dataclass
    class StepEnded(Message, bubble=False):
        """The read stopped: at the end of the file (`eof`) or at its target; `received` bytes came in all."""

        eof: bool
        received: int

    @dataclass
    class ReadFailed(Message, bubble=False):
        error: ClientError
        received: int

    @dataclass
    class ShowBytes(Message, bubble=False):
        """`show_bytes` was called: handled in turn, as `OpenRemote` is."""

        path: str
        data: bytes
        size: int | None

    @dataclass
    class LanguageFound(Message, bubble=False):
        language: str

    @dataclass
    class Highlighted(Message, bubble=False):
        """Text rows from `start` on, coloured."""

        start: int
        lines: list[HighlightedLine]

    @dataclass
    class ImageDecoded(Message, bubble=False):
        image: PILImage.Image

    @dataclass
    class ImageFailed(Message, bubble=False):
        why: str

    def __init__(self, session_id: str | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session_id = session_id
        self.path: str | None = None
        self.kind: FileKind | None = None
        self.language: str | None = None
        self.total_size: int | None = None
        #: Bytes received from `read_file` since the last `open_remote`: the viewer's whole transfer.
        self.bytes_received = 0
        self.complete = False
        self.is_loading = False
        self.error: str | None = None
        #: `time.perf_counter()` at the last `open_remote`/`show_bytes`, and when its first block was in.
        self.opened_at: float | None = None
        self.first_block_at: float | None = None
        #: `open_remote` / `show_bytes` calls not handled yet.
        self._opens_pending = 0
        self._target = FIRST_READ
        self._image_failed = False
        self._image_why = "too large to draw"

    def compose(self) -> ComposeResult:
        yield Static("", id="viewer-title", markup=False)
        yield Static("Select a file in the tree and press enter to view it.", id="viewer-message", markup=False)
        yield FileLines(id="viewer-lines")
        yield ImageView(id="viewer-image")

    @property
    def lines(self) -> FileLines:
        return self.query_one(FileLines)

    @property
    def loaded_bytes(self) -> int:
        return len(self.lines.data)

    @property
    def is_settled(self) -> bool:
        """Nothing loading or highlighting any more (for tests and benchmarks)."""
        return not self._opens_pending and not self.is_loading and \
            not any(w.node is self and w.is_running for w in self.workers)

    # opening ------------------------------------------------------------------

    def _stop_work(self) -> None:
        """Cancel every worker of the file shown: none posts anything more, what they posted is handled first."""
        for group in ("file-viewer-load", "file-viewer-highlight", "file-viewer-image"):
            self.workers.cancel_group(self, group)

    def _start(self, path: str, size: int | None, at: float | None = None) -> None:
        self._stop_work()
        self.path = path
        self.kind = None
        self.language = None
        self.total_size = size
        self.bytes_received = 0
        self.complete = False
        self.error = None
        self.hex_forced = False
        self._image_failed = False
        self._image_why = "too large to draw"
        self._target = FIRST_READ
        self.opened_at = time.perf_counter() if at is None else at
        self.first_block_at = None
        self.lines.reset()
        self.lines.total_size = size
        self.query_one(ImageView).show(None)
        self.set_class(False, "-lines", "-image")
        self._message("Loading…")
        self._update_title()

    def open_remote(self, path: str, size: int | None = None) -> None:
        """Stream the start of `path` from the session (`size` from file_info, when known)."""
        if self.session_id is None:
            raise ValueError("a file viewer without a session shows only what `show_bytes` gives it")
        self._stop_work()
        self._opens_pending += 1
        self.post_message(self.OpenRemote(path, size, time.perf_counter()))

    @on(OpenRemote)
    def _open_remote(self, message: OpenRemote) -> None:
        self._opens_pending -= 1
        self._start(message.path, message.size, message.at)
        if self.session_id is not None:
            self.is_loading = True
            self._stream(self.session_id, message.path, skip=0, target=FIRST_READ, size=message.size,
                         window=FIRST_READ_WINDOW)

    def show_bytes(self, path: str, data: bytes, size: int | None = None) -> None:
        """Show `data` as the start of `path` without a service: for snapshots and previews."""
        self._stop_work()
        self._opens_pending += 1
        self.post_message(self.ShowBytes(path, data, size))

    @on(ShowBytes)
    def _show_bytes(self, message: ShowBytes) -> None:
        self._opens_pending -= 1
        data, size = message.data, message.size
        self._start(message.path, size if size is not None else len(data))
        self._take(data)
        self._finish_step(eof=self.loaded_bytes == len(data) and (size is None or len(data) >= size))

    def load_more(self) -> None:
        """Load the next step of a text or hex view, if there is more and room for it."""
        if self.path is None or self.is_loading or self._opens_pending or self.complete or self.session_id is None:
            return  # (no session: bytes given by `show_bytes`, there is no stream to ask)
        if self.kind is FileKind.IMAGE and not self.hex_forced:
            return
        if self.loaded_bytes >= MAX_LOADED:
            self.notify(f"The viewer stops at {human_bytes(MAX_LOADED)}; press s to save the whole file.")
            return
        self._target = min(self.loaded_bytes + LOAD_STEP, MAX_LOADED)
        self.is_loading = True
        self._set_footer()
        self._stream(self.session_id, self.path, skip=self.loaded_bytes, target=self._target, size=None)

    def toggle_hex(self) -> None:
        """Switch a text or image file to its hex dump and back."""
        if self.kind is not None:
            self.hex_forced = not self.hex_forced

    def watch_hex_forced(self) -> None:
        if self.kind is not None:
            self._show_kind()

    @work(exclusive=True, group="file-viewer-load")
    async def _stream(self, session_id: str, path: str, *, skip: int, target: int, size: int | None,
                      window: int | None = None) -> None:
        """Read `path` from its start; post the bytes from `skip` to `target`, then close the stream. Posts
        only: the handlers below draw. An image found by the first read is read whole, on a connection with
        a normal window (the small one would slow it down)."""
        posted, received, eof = skip, 0, False
        head = bytearray() if skip == 0 else None  # the first read finds the kind, as the handler will
        fs = services(self).connected_client().fs
        try:
            while True:
                seen, widen = 0, False
                async with fs.read_file(session_id, path, chunk_size=None, receive_buffer=window) as chunks:
                    async for chunk in chunks:
                        start, seen = seen, seen + len(chunk)
                        received += len(chunk)
                        if head is not None:
                            head += chunk[: SNIFF_BYTES - len(head)]
                            if len(head) >= SNIFF_BYTES:
                                wanted = image_target(detect_kind(bytes(head), complete=False), size, target)
                                widen, target, head = wanted != target and window is not None, wanted, None
                        if seen > posted:
                            self.post_message(self.Block(chunk[posted - start:max(target - start, 0)]))
                            posted = min(seen, target)
                        if seen >= target or widen:
                            break
                    else:
                        eof = True
                if not widen:
                    break
                window = None
        except ClientError as error:
            self.post_message(self.ReadFailed(error, received))
            return
        self.post_message(self.StepEnded(eof=eof, received=received))

    @on(Block)
    def _block(self, message: Block) -> None:
        self._take(message.data)

    @on(StepEnded)
    def _step_ended(self, message: StepEnded) -> None:
        self.bytes_received += message.received
        self._finish_step(eof=message.eof)

    @on(ReadFailed)
    def _read_failed(self, message: ReadFailed) -> None:
        self.bytes_received += message.received
        self.is_loading = False
        self._failed(message.error)

    def _take(self, piece: bytes) -> bool:
        """Accept `piece` up to the current target (which can grow once the kind is known); True when reached."""
        while piece:
            room = self._target - self.loaded_bytes
            if room <= 0:
                break
            self._accept(piece[:room])
            piece = piece[room:]
        return self.loaded_bytes >= self._target

    def _accept(self, piece: bytes) -> None:
        """Take a block of the file: decide its kind once enough has arrived, then draw what is new."""
        if not piece:
            return
        lines = self.lines
        lines.data += piece
        if self.kind is None:
            if self.loaded_bytes < SNIFF_BYTES:
                return
            self._decide(complete=False)
            return
        if self.kind is FileKind.TEXT:
            lines.text.feed(piece)
        if self.kind is not FileKind.IMAGE or self.hex_forced:
            lines.changed()

    def _decide(self, *, complete: bool) -> None:
        self.first_block_at = time.perf_counter()
        data = bytes(self.lines.data)
        self.kind = detect_kind(data[:SNIFF_BYTES], complete=complete)
        if self.kind is FileKind.IMAGE:
            self._target = image_target(self.kind, self.total_size, self._target)
            self._image_failed = self._target <= MAX_IMAGE_BYTES
        if self.kind is FileKind.TEXT:
            self.lines.text.feed(data)
            self.language = language_for(self.path or "", self.lines.text.first_line())
        self._show_kind()
        self.post_message(self.Opened(self))

    def _finish_step(self, *, eof: bool) -> None:
        self.is_loading = False
        self.complete = eof or (self.total_size is not None and self.loaded_bytes >= self.total_size > 0)
        if self.kind is None:
            self._decide(complete=True)
        if self.complete and self.kind is FileKind.TEXT:
            self.lines.text.feed(b"", final=True)
        if self.kind is FileKind.IMAGE and not self._image_failed:
            if self.loaded_bytes > MAX_IMAGE_BYTES:
                self._image_failed = True
                del self.lines.data[LOAD_STEP:]
                self.complete = False
                self._show_kind()
            else:
                self._decode_image(bytes(self.lines.data))
        self._set_footer()
        self.lines.changed()
        self._update_title()
        if self.kind is FileKind.TEXT:
            self._highlight()

    def _failed(self, error: ClientError) -> None:
        self.error = str(error)
        self._message(f"Could not read {self.path}\n{error}", error=True)
        self.set_class(False, "-lines", "-image")
        services(self).report_error(error, "Could not read file")  # a read failed: the app has a client
        self.post_message(self.Opened(self))

    # showing ------------------------------------------------------------------

    def _show_kind(self) -> None:
        as_hex = self.hex_forced or self.kind is FileKind.BINARY or (self.kind is FileKind.IMAGE and self._image_failed)
        if self.kind is FileKind.IMAGE and not as_hex:
            self.set_class(False, "-lines")
            self.set_class(True, "-image")
        else:
            self.lines.set_mode("hex" if as_hex else "text")
            self.set_class(False, "-image")
            self.set_class(True, "-lines")
        self._set_footer()
        self._update_title()

    def _set_footer(self) -> None:
        lines = self.lines
        if self.complete or self.kind is None:
            lines.footer = None
        else:
            shown = human_bytes(self.loaded_bytes)
            total = f" of {human_bytes(self.total_size)}" if self.total_size else ""
            if self.is_loading:
                lines.footer = f"── {shown}{total} shown · loading… ──"
            elif self.loaded_bytes >= MAX_LOADED:
                lines.footer = f"── {shown}{total} shown · the viewer stops here; s saves the whole file ──"
            else:
                lines.footer = f"── {shown}{total} shown · m (or scrolling past the end) loads more ──"
        lines.changed()

    def _message(self, text: str, *, error: bool = False) -> None:
        message = self.query_one("#viewer-message", Static)
        message.update(Text(text))
        message.set_class(error, "error")

    def _update_title(self) -> None:
        if self.path is None:
            return
        parts = [PurePosixPath(self.path).name or self.path]
        if self.total_size is not None:
            parts.append(human_bytes(self.total_size))
        if self.kind is not None:
            kind = self.kind.value
            if self.kind is FileKind.TEXT and self.language and self.language != "text":
                kind = self.language
            if self.kind is FileKind.IMAGE and self._image_failed:
                kind = f"image ({self._image_why})"
            parts.append(kind + (" as hex" if self.hex_forced else ""))
        if not self.complete and self.kind is not None and self.kind is not FileKind.IMAGE:
            parts.append(f"first {human_bytes(self.loaded_bytes)}")
        self.query_one("#viewer-title", Static).update(Text(" · ".join(parts)))

    def on_file_lines_end_reached(self, event: FileLines.EndReached) -> None:
        event.stop()
        self.load_more()

    # background work: the workers post, these handlers draw ------------------------

    @work(exclusive=True, group="file-viewer-highlight")
    async def _highlight(self) -> None:
        """Colour the loaded lines not coloured yet (Pygments, in a thread): the opening lines first."""
        text = self.lines.text
        done = len(self.lines.highlighted)
        # An open last line may still grow: colour it only once the whole file is here.
        count = len(text) if self.complete else len(text.lines)
        language = self.language
        if language is None and PurePosixPath(self.path or "").suffix:
            language = await asyncio.to_thread(pygments_language, self.path or "")
            if language:
                self.post_message(self.LanguageFound(language))
        if not language or language == "text" or done >= count:
            return
        lines = [text[i] for i in range(done, count)]
        passes = [len(lines)]
        if done == 0 and len(lines) > FIRST_HIGHLIGHT_LINES:
            passes.insert(0, FIRST_HIGHLIGHT_LINES)
        for upto in passes:
            result = await asyncio.to_thread(highlight_lines, lines[:upto], language)
            if result is None:
                return
            self.post_message(self.Highlighted(done, result))

    @on(LanguageFound)
    def _language_found(self, message: LanguageFound) -> None:
        self.language = message.language
        self._update_title()

    @on(Highlighted)
    def _highlighted(self, message: Highlighted) -> None:
        if self.kind is not FileKind.TEXT:
            return
        lines = self.lines
        lines.highlighted[message.start:message.start + len(message.lines)] = message.lines
        if lines.first_highlight_at is None:
            lines.first_highlight_at = time.perf_counter()
        lines.changed()

    @work(exclusive=True, group="file-viewer-image")
    async def _decode_image(self, data: bytes) -> None:
        try:
            image = await asyncio.to_thread(decode_image, data)
        except Exception as error:  # Pillow raises many kinds for broken files
            self.post_message(self.ImageFailed(image_error_text(error)))
            return
        self.post_message(self.ImageDecoded(image))

    @on(ImageDecoded)
    def _image_decoded(self, message: ImageDecoded) -> None:
        self.query_one(ImageView).show(message.image)
        self._update_title()

    @on(ImageFailed)
    def _image_not_decoded(self, message: ImageFailed) -> None:
        self._image_failed = True
        self._image_why = "not a valid image"
        self._show_kind()
        self.notify(f"{PurePosixPath(self.path or '').name or 'The file'} is not a valid image "
                    f"({message.why}); showing its bytes.", severity="warning", markup=False)
