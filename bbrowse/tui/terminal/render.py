"""Drawing rows of styled cells (and kitty graphics pictures) as Textual Strips.

A `Painter` holds the base style the cells are drawn over (the widget's own colours, so default
colours follow the theme) and remembers `base + Rich style of a cell style`, so a row costs a few
dictionary hits, one Segment per run and one Strip.

Pictures are drawn with half blocks: each cell shows two pixels, the upper one as the foreground
of "▀" and the lower one as its background, transparent pixels blended over the base background.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.color import Color, ColorType
from rich.color_triplet import ColorTriplet
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from .cells import (
    BLINK,
    BOLD,
    DEFAULT,
    DIM,
    DOUBLE_UNDERLINE,
    HIDDEN,
    ITALIC,
    OVERLINE,
    REVERSE,
    RGB_BASE,
    STRIKE,
    UNDERLINE,
    Attr,
    Run,
)
from .images import Placement

_STYLE_MEMO_LIMIT = 65536
_PICTURE_MEMO_LIMIT = 32
UPPER_HALF = "▀"


_colours: dict[int, Color] = {}
_flag_styles: dict[int, Style] = {}


def _colour(value: int) -> Color | None:
    """The Rich colour of a cell colour (memoised: building a Rich colour costs microseconds)."""
    if value == DEFAULT:
        return None
    colour = _colours.get(value)
    if colour is None:
        if value < RGB_BASE:
            colour = Color.from_ansi(value)
        else:
            rgb = value - RGB_BASE
            r, g, b = (rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF
            colour = Color(f"#{rgb:06x}", ColorType.TRUECOLOR, None, ColorTriplet(r, g, b))
        if len(_colours) >= _STYLE_MEMO_LIMIT:
            _colours.clear()
        _colours[value] = colour
    return colour


def _flags_style(flags: int) -> Style:
    style = _flag_styles.get(flags)
    if style is None:
        style = _flag_styles[flags] = Style(
            bold=bool(flags & BOLD) or None,
            dim=bool(flags & DIM) or None,
            italic=bool(flags & ITALIC) or None,
            underline=bool(flags & UNDERLINE) or None,
            underline2=bool(flags & DOUBLE_UNDERLINE) or None,
            blink=bool(flags & BLINK) or None,
            reverse=bool(flags & REVERSE) or None,
            strike=bool(flags & STRIKE) or None,
            overline=bool(flags & OVERLINE) or None,
        )
    return style


def rich_style(attr: Attr) -> Style:
    """The Rich style of a cell style, on its own (the painter's `style` adds the base)."""
    fg, bg, flags = attr
    style = Style.from_color(_colour(fg), _colour(bg))
    return style + _flags_style(flags) if flags else style


class Painter:
    """Rows -> Strips over a base style."""

    def __init__(self, base: Style | None = None) -> None:
        self._styles: dict[Attr, Style] = {}
        self._pictures: dict[tuple, list[list[Segment]]] = {}
        self.base: Style | None = None
        self.set_base(base)

    def set_base(self, base: Style | None) -> None:
        """Draw over `base` from now on: its colours are the default colours, its attributes apply
        under every cell's own."""
        self.base = base
        self._base_color = base.color if base is not None else None
        self._base_bgcolor = base.bgcolor if base is not None else None
        rest = base.without_color if base is not None else None
        self._base_rest = rest if rest is not None and rest != Style() else None
        self._styles.clear()
        self._pictures.clear()

    def style(self, attr: Attr) -> Style:
        style = self._styles.get(attr)
        if style is None:
            # Built from colours directly: `base + Style(...)` costs several times more, and a
            # screen of true-colour output makes hundreds of new styles a frame.
            fg, bg, flags = attr
            style = Style.from_color(
                _colour(fg) if fg != DEFAULT else self._base_color,
                _colour(bg) if bg != DEFAULT else self._base_bgcolor,
            )
            if flags:
                style += _flags_style(flags)
            if self._base_rest is not None:
                style = self._base_rest + style
            if len(self._styles) >= _STYLE_MEMO_LIMIT:
                self._styles.clear()
            self._styles[attr] = style
        return style

    def paint(self, runs: list[Run], cols: int, cursor_x: int = -1) -> Strip:
        """A row as a Strip of exactly `cols` cells (the runs cover exactly the columns), one
        segment per run. `cursor_x` marks the cursor's cell, drawn with reverse video toggled (the
        whole of a wide character)."""
        if cursor_x >= 0:
            runs = _with_cursor(runs, cursor_x)
        styles = self._styles
        style = self.style
        segments = [
            Segment(text if not attr[2] & HIDDEN else " " * cell_len(text), styles.get(attr) or style(attr))
            for text, attr in runs
        ]
        return Strip(segments, cols)

    def overlay(self, strip: Strip, y: int, placements: list[Placement], cols: int) -> Strip:
        """`strip` (row `y` of the view) with the parts of pictures that cover it drawn over it."""
        for placement in placements:
            line = y - placement.row
            if not 0 <= line < placement.rows:
                continue
            segments = self._picture_rows(placement)[line]
            start, end = placement.col, placement.col + placement.cols
            left, right = max(0, start), min(cols, end)
            if left >= right:
                continue
            piece = Strip(segments, placement.cols).crop(left - start, right - start)
            strip = Strip.join([strip.crop(0, left), piece, strip.crop(right, cols)])
        return strip

    def _picture_rows(self, placement: Placement) -> list[list[Segment]]:
        rows = self._pictures.get(placement.key)
        if rows is None:
            if len(self._pictures) >= _PICTURE_MEMO_LIMIT:
                self._pictures.clear()
            rows = self._pictures[placement.key] = self._half_blocks(placement)
        return rows

    def _half_blocks(self, placement: Placement) -> list[list[Segment]]:
        """The picture scaled to `cols` x `2 * rows` pixels, two pixels a cell."""
        from PIL import Image

        width, height = placement.cols, placement.rows * 2
        picture = placement.picture.resize((width, height), Image.Resampling.BOX)  # each cell: the mean of its pixels
        bgcolor = self._base_bgcolor
        background = tuple(bgcolor.get_truecolor()) if bgcolor is not None else (0, 0, 0)
        canvas = Image.new("RGBA", (width, height), (*background, 255))
        canvas.alpha_composite(picture)
        rgb = canvas.convert("RGB").tobytes()  # row after row, 3 bytes a pixel
        stride = 3 * width
        rows: list[list[Segment]] = []
        for row in range(placement.rows):
            top_row = 2 * row * stride
            bottom_row = top_row + stride
            segments = []
            for x in range(0, stride, 3):
                top, bottom = rgb[top_row + x : top_row + x + 3], rgb[bottom_row + x : bottom_row + x + 3]
                segments.append(Segment(UPPER_HALF, Style(color=Color.from_rgb(*top), bgcolor=Color.from_rgb(*bottom))))
            rows.append(list(Segment.simplify(segments)))
        return rows


def _with_cursor(runs: list[Run], cursor_x: int) -> list[Run]:
    """The runs with the character under cell `cursor_x` split out and its reverse flag toggled."""
    out: list[Run] = []
    cell = 0
    for index, (text, attr) in enumerate(runs):
        width = len(text) if text.isascii() else cell_len(text)
        if cell + width <= cursor_x:
            out.append((text, attr))
            cell += width
            continue
        # The cursor is in this run: find its character.
        offset = cell
        for position, char in enumerate(text):
            char_width = 1 if char.isascii() else cell_len(char)
            if offset + char_width > cursor_x:
                if position:
                    out.append((text[:position], attr))
                out.append((char, (attr[0], attr[1], attr[2] ^ REVERSE)))
                if position + 1 < len(text):
                    out.append((text[position + 1 :], attr))
                out.extend(runs[index + 1 :])
                return out
            offset += char_width
        cell = offset
    return out
