"""A picture drawn with half blocks ("▀": top pixel as the colour, bottom pixel as the background), fast
enough for a live view: a 1280×800 page into a 160×45 terminal at video rate.

textual-image's half-cell widget rebuilds a Rich style per cell and lays the widget out again for every
picture (100+ ms a frame at that size). Here a frame costs a box-filter resize in Pillow, one pass over
the pixel bytes per row with runs of equal cells merged into one segment, and styles reused across
frames (a page has few colours). Rows whose pixels did not change keep their strip and are not
repainted, so a still page with a blinking caret repaints one line.

The widget also knows where the picture sits (`geometry`), so a mouse position maps back to a pixel
of the original image, and it can mark one pixel (the remote mouse) with a cell of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image as PILImage
from rich.color import Color, ColorType
from rich.color_triplet import ColorTriplet
from rich.segment import Segment
from rich.style import Style
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

UPPER_HALF = "▀"
#: The remote mouse's mark: a cell of its own, drawn over the picture.
CURSOR_CHAR = "◆"
CURSOR_STYLE = Style(color=Color.from_rgb(255, 255, 255), bgcolor=Color.from_rgb(220, 0, 120), bold=True)
#: Styles kept between frames; past this many the cache starts again (a photo has many colours).
STYLE_CACHE_LIMIT = 65536
#: Cell size in pixels when the terminal does not say (textual-image's assumption too).
DEFAULT_CELL = (10, 20)


@dataclass(frozen=True)
class Geometry:
    """Where the picture is drawn: its cells inside the widget, and the size of the image it shows."""

    x: int
    y: int
    columns: int
    rows: int
    image_width: int
    image_height: int

    def pixel_at(self, x: float, y: float) -> tuple[int, int] | None:
        """The image pixel under widget position (x, y) (cells, fractions allowed), None outside the picture.

        A whole-number position is a cell (its centre is taken); terminals reporting pixels give fractions.
        """
        if x == int(x):
            x += 0.5
        if y == int(y):
            y += 0.5
        cx, cy = x - self.x, y - self.y
        if not (0 <= cx < self.columns and 0 <= cy < self.rows):
            return None
        px = min(self.image_width - 1, int(cx * self.image_width / self.columns))
        py = min(self.image_height - 1, int(cy * self.image_height / self.rows))
        return px, py

    def cell_of(self, px: int, py: int) -> tuple[int, int] | None:
        """The widget cell showing image pixel (px, py), None when the pixel is outside the image."""
        if not (0 <= px < self.image_width and 0 <= py < self.image_height):
            return None
        return (self.x + px * self.columns // self.image_width, self.y + py * self.rows // self.image_height)


def cell_size() -> tuple[int, int]:
    """The terminal's cell size in pixels as textual-image knows it (asked once, at import), else 10×20."""
    try:
        from textual_image._terminal import get_cell_size

        import bbrowse.tui.widgets.image_widgets  # noqa: F401  (hands textual-image the terminal's answers)

        size = get_cell_size()
    except Exception:  # no terminal to ask: the common default
        return DEFAULT_CELL
    return (size.width or DEFAULT_CELL[0], size.height or DEFAULT_CELL[1])


def fit(image: tuple[int, int], space: Size, cell: tuple[int, int]) -> tuple[int, int]:
    """Columns and rows showing `image` (pixels) as large as `space` allows, keeping its aspect ratio on a
    terminal whose cells are `cell` pixels."""
    width, height = image
    if width <= 0 or height <= 0 or space.width <= 0 or space.height <= 0:
        return 0, 0
    cell_w, cell_h = cell
    scale = min(space.width * cell_w / width, space.height * cell_h / height)
    columns = max(1, min(space.width, round(width * scale / cell_w)))
    rows = max(1, min(space.height, round(height * scale / cell_h)))
    return columns, rows


class HalfcellCanvas(Widget):
    """Shows one PIL image with half blocks, centred and scaled to fit; `show` draws the next frame."""

    DEFAULT_CSS = """
    HalfcellCanvas { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.image: PILImage.Image | None = None
        #: The size the picture stands for (a screencast frame scaled down stands for the whole page): what
        #: `geometry` maps the mouse to and the cursor is given in; the image's own size by default.
        self.image_size: tuple[int, int] = (0, 0)
        #: The remote mouse, in pixels of `image_size`, marked with a cell of its own; None: no mark.
        self.cursor: tuple[int, int] | None = None
        self.geometry: Geometry | None = None
        self._cell = cell_size()
        self._strips: list[Strip] = []
        self._row_keys: list[tuple[list[int], int] | None] = []
        #: One cell's segment per `cell_keys` number, kept between frames (a page has few colours) and shared by
        #: every canvas (the wall's new tiles start with the colours drawn already).
        self._cells = _CELLS
        self._scaled: tuple[tuple[int, int, int], list[int]] | None = None
        #: Rows repainted by the last `show` (for benchmarks: a still page repaints few).
        self.rows_changed = 0

    # drawing ------------------------------------------------------------------

    def show(self, image: PILImage.Image | None, cursor: tuple[int, int] | None = None,
             size: tuple[int, int] | None = None) -> None:
        """Draw `image` (None clears) standing for a picture of `size` (default: its own) with the remote mouse
        at `cursor` (pixels of `size`); only changed rows are repainted."""
        if image is not self.image:
            self._scaled = None
        self.image = image
        self.image_size = size or (image.size if image is not None else (0, 0))
        self.cursor = cursor
        self._draw()

    def on_resize(self) -> None:
        self._row_keys = []
        self._draw(everything=True)

    def _draw(self, everything: bool = False) -> None:
        size = self.size
        image = self.image
        if image is None or size.width <= 0 or size.height <= 0:
            self.geometry = None
            self._strips = []
            self._row_keys = []
            self.refresh()
            return
        columns, rows = fit(self.image_size, size, self._cell)
        geometry = Geometry((size.width - columns) // 2, (size.height - rows) // 2, columns, rows, *self.image_size)
        if geometry != self.geometry or len(self._row_keys) != size.height:
            everything = True
            self.geometry = geometry
            self._row_keys = [None] * size.height
            self._strips = [Strip.blank(size.width)] * size.height
        scaled_key = (id(image), columns, rows)
        if self._scaled is None or self._scaled[0] != scaled_key:
            self._scaled = (scaled_key, cell_keys(image, columns, rows))
        cells = self._scaled[1]  # the same frame with the mark moved: not scaled again
        mark = geometry.cell_of(*self.cursor) if self.cursor is not None else None
        left = Segment(" " * geometry.x) if geometry.x else None
        right_width = size.width - geometry.x - columns
        right = Segment(" " * right_width) if right_width else None
        changed: list[int] = []
        for row in range(rows):
            keys = cells[row * columns: (row + 1) * columns]
            mark_x = mark[0] - geometry.x if mark is not None and mark[1] - geometry.y == row else -1
            y = geometry.y + row
            if not everything and self._row_keys[y] == (keys, mark_x):
                continue
            self._row_keys[y] = (keys, mark_x)
            segments = self._row_segments(keys, mark_x)
            if left is not None:
                segments.insert(0, left)
            if right is not None:
                segments.append(right)
            self._strips[y] = Strip(segments, size.width)
            changed.append(y)
        self.rows_changed = len(changed)
        if everything:
            self.refresh()
        else:
            for start, end in _runs(changed):
                self.refresh(Region(0, start, size.width, end - start))

    def _row_segments(self, keys: list[int], mark_x: int) -> list[Segment]:
        """One row of cells (`cell_keys`): runs of the same top/bottom colours become one segment."""
        cells = self._cells
        if len(cells) > STYLE_CACHE_LIMIT:
            cells.clear()
        segments: list[Segment] = []
        append = segments.append
        run_key = -1
        run_length = 0
        cell = _BLANK_CELL
        for key in keys:
            if key == run_key:
                run_length += 1
                continue
            if run_length:
                append(cell if run_length == 1 else Segment(UPPER_HALF * run_length, cell.style))
            found = cells.get(key)
            if found is None:
                found = cells[key] = _cell(key)
            cell, run_key, run_length = found, key, 1
        if run_length:
            append(cell if run_length == 1 else Segment(UPPER_HALF * run_length, cell.style))
        if mark_x >= 0:
            segments = _overlay(segments, mark_x, Segment(CURSOR_CHAR, CURSOR_STYLE))
        return segments

    def get_line_filters(self) -> Sequence[LineFilter]:
        """The app's filters but the ANSI-to-truecolor one: every colour drawn here is already truecolor and
        none is dim, so that filter would only copy each changed row's segments (a third of Textual's share
        of a frame of a page changing everywhere)."""
        return [found for found in super().get_line_filters() if not isinstance(found, ANSIToTruecolor)]

    def render_line(self, y: int) -> Strip:
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width)


@lru_cache(maxsize=STYLE_CACHE_LIMIT)
def _rgb(pixel: int) -> Color:
    """A true colour for a 24-bit RGB number (red in the low byte), built directly (`Color.from_rgb` and
    `Style(...)` check and name things: 10x slower)."""
    return Color("", ColorType.TRUECOLOR, triplet=ColorTriplet(pixel & 0xFF, (pixel >> 8) & 0xFF, pixel >> 16))


def _cell(key: int) -> Segment:
    """One half-block cell for a `cell_keys` number: the top pixel as the colour, the bottom as the background."""
    return Segment(UPPER_HALF, Style.from_color(_rgb(key & 0xFFFFFF), _rgb(key >> 24)))


_BLANK_CELL = Segment(UPPER_HALF)
_CELLS: dict[int, Segment] = {}

#: Colour levels kept per channel (the low bits dropped): gradients and photos then share styles and
#: runs, at a difference no one sees in a picture made of half cells. Five bits, not six: a page changing
#: everywhere (JPEG frames, new colours each one) then reuses styles and colours instead of making
#: thousands a frame.
LEVEL_MASK = 0xF8
_QUANTISE = [value & LEVEL_MASK for value in range(256)] * 3


def scaled_pixels(image: PILImage.Image, width: int, height: int) -> bytes:
    """RGB bytes of `image` box-filtered to width×height (every source pixel counts: thin text stays visible),
    with 5 bits per channel."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    if rgb.size != (width, height):
        rgb = rgb.resize((width, height), PILImage.Resampling.BOX)
    return rgb.point(_QUANTISE).tobytes()


def cell_keys(image: PILImage.Image, columns: int, rows: int) -> list[int]:
    """`image` scaled to columns × rows half cells: one number a cell, row after row, the top pixel's RGB in
    its low three bytes (red lowest) and the bottom pixel's in the next three. Made by Pillow and slice
    assignment, so no Python runs per pixel; equal numbers are equal cells."""
    pixels = scaled_pixels(image, columns, rows * 2)
    stride = columns * 3
    top = b"".join(pixels[2 * row * stride: (2 * row + 1) * stride] for row in range(rows))
    bottom = b"".join(pixels[(2 * row + 1) * stride: (2 * row + 2) * stride] for row in range(rows))
    packed = bytearray(8 * columns * rows)
    for channel in range(3):
        packed[channel::8] = top[channel::3]
        packed[3 + channel::8] = bottom[channel::3]
    if sys.byteorder == "big":
        packed.reverse()  # then the numbers come out in reverse order too
        return memoryview(packed).cast("Q").tolist()[::-1]
    return memoryview(packed).cast("Q").tolist()


def _overlay(segments: list[Segment], x: int, cell: Segment) -> list[Segment]:
    """`segments` (one character per cell) with the cell at `x` replaced by `cell`."""
    result: list[Segment] = []
    position = 0
    for segment in segments:
        length = len(segment.text)
        if position <= x < position + length:
            before, after = x - position, position + length - x - 1
            if before:
                result.append(Segment(segment.text[:before], segment.style))
            result.append(cell)
            if after:
                result.append(Segment(segment.text[before + 1:], segment.style))
        else:
            result.append(segment)
        position += length
    return result


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Sorted row numbers as (start, end) runs of consecutive rows."""
    runs: list[tuple[int, int]] = []
    for row in rows:
        if runs and runs[-1][1] == row:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs
