"""Drawing rows of cells as Textual Strips.

A `Painter` holds the base style the cells are drawn over (the widget's own colours, so default
colours follow the theme) and remembers `base + style of attribute` per attribute, so a row costs a
few dictionary hits and one Strip. Its `epoch` changes with the base style, which tells the
emulator's per-row strip cache that every cached strip is stale.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from .attrs import HIDDEN, REVERSE, Attr, rich_style

_STYLE_MEMO_LIMIT = 65536


class Painter:
    """Rows -> Strips over a base style."""

    def __init__(self, base: Style | None = None) -> None:
        self.base = base
        self.epoch = 1
        self._styles: dict[Attr, Style] = {}

    def set_base(self, base: Style | None) -> None:
        """Draw over `base` from now on (cached strips of the old base become stale)."""
        if base != self.base:
            self.base = base
            self.epoch += 1
            self._styles.clear()

    def style(self, attr: Attr) -> Style:
        style = self._styles.get(attr)
        if style is None:
            style = rich_style(attr)
            if self.base is not None:
                style = self.base + style
            if len(self._styles) >= _STYLE_MEMO_LIMIT:
                self._styles.clear()
            self._styles[attr] = style
        return style

    def paint(self, row, cols: int, cursor_x: int = -1) -> Strip:
        """Draw a row (chars and attrs) as a Strip of exactly `cols` cells: one segment per run of
        equal attributes. `cursor_x` marks the cursor's cell, drawn with reverse video toggled (both
        halves of a wide character)."""
        chars = row.chars
        attrs = row.attrs
        n = min(len(chars), cols)
        if 0 <= cursor_x < n:
            attrs = list(attrs)
            if chars[cursor_x] == "" and cursor_x:
                cursor_x -= 1
            wide = cursor_x + 1 < n and chars[cursor_x + 1] == ""
            for x in (cursor_x, cursor_x + 1) if wide else (cursor_x,):
                fg, bg, flags = attrs[x]
                attrs[x] = (fg, bg, flags ^ REVERSE)
        segments: list[Segment] = []
        if n:
            first = attrs[0]
            if len(attrs) == n and attrs.count(first) == n:
                # One attribute for the whole row (most rows): one segment, found in C.
                segments.append(self._segment(chars, 0, n, first))
            else:
                append = segments.append
                start = 0
                current = first
                for i in range(1, n):
                    attr = attrs[i]
                    if attr is not current and attr != current and chars[i] != "":
                        append(self._segment(chars, start, i, current))
                        start = i
                        current = attr
                append(self._segment(chars, start, n, current))
        if n < cols:
            segments.append(Segment(" " * (cols - n), self.base))
        return Strip(segments, cols)

    def _segment(self, chars: list[str], start: int, end: int, attr: Attr) -> Segment:
        style = self.style(attr)
        if attr[2] & HIDDEN:
            return Segment(" " * (end - start), style)
        text = "".join(chars[start:end])
        if not text.isascii() and cell_len(text) != end - start:
            text = _fit_cells(chars, start, end)
        return Segment(text, style)


def _fit_cells(chars: list[str], start: int, end: int) -> str:
    """Make each cell's text take exactly its cells where Rich measures a glyph differently from
    the emulator (or a wide character was cut by the right edge)."""
    out: list[str] = []
    for x in range(start, end):
        ch = chars[x]
        if ch == "":
            continue
        wide = x + 1 < len(chars) and chars[x + 1] == ""
        if wide and x + 1 >= end:
            out.append(" ")
            continue
        want = 2 if wide else 1
        have = cell_len(ch)
        if have == want:
            out.append(ch)
        elif have < want:
            out.append(ch + " " * (want - have) if have else " " * want)
        else:
            base = ch[0]
            out.append(base if cell_len(base) == want else " " * want)
    return "".join(out)
