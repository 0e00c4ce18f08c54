"""Styled cells: the plain data a terminal core hands to the painter (the same for every core).

A cell style is a tuple ``(fg, bg, flags)`` so that it hashes and compares in C and can key memo
tables: most output reuses a handful of styles. Colours are ints: `DEFAULT` (-1) for the terminal's
default, 0..255 for the xterm palette (0..15 are the ANSI colours, which Textual maps through its
theme) and `RGB_BASE + 0xRRGGBB` for true colour.

A row is a list of runs ``(text, style)``. The runs of a row cover exactly the terminal's columns:
a wide character is one character of the text that takes two cells, an empty cell is a space.

"""

from __future__ import annotations

DEFAULT = -1
RGB_BASE = 256

BOLD = 1
DIM = 2
ITALIC = 4
UNDERLINE = 8
BLINK = 16
REVERSE = 32
HIDDEN = 64
STRIKE = 128
DOUBLE_UNDERLINE = 256
OVERLINE = 512

Attr = tuple[int, int, int]
DEFAULT_ATTR: Attr = (DEFAULT, DEFAULT, 0)
Run = tuple[str, Attr]

_FLAG_NAMES = {
    BOLD: "bold", DIM: "dim", ITALIC: "italic", UNDERLINE: "underline", BLINK: "blink", REVERSE: "reverse",
    HIDDEN: "hidden", STRIKE: "strike", DOUBLE_UNDERLINE: "double_underline", OVERLINE: "overline",
}


def describe(attr: Attr) -> dict[str, object]:
    """A readable view of a style (for tests and debugging): colours and the set flags."""

    def colour(value: int) -> object:
        if value == DEFAULT:
            return None
        if value < RGB_BASE:
            return value
        rgb = value - RGB_BASE
        return ((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF)

    fg, bg, flags = attr
    return {"fg": colour(fg), "bg": colour(bg), "flags": {name for bit, name in _FLAG_NAMES.items() if flags & bit}}
