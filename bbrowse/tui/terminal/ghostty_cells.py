"""How libghostty's raw cells and styles become the plain styled runs of `cells.py`.

Decoding a row from libghostty's render state is the hot path of drawing, so it works on the row's
raw cells (one 64-bit word per cell, read in one call) with whole-row integer arithmetic: a row of
plain text, or of text in a few styles, costs a handful of C-level operations, not a Python loop per
cell for the text (runs of styles are found with one pass over the ids). Only rows with wide
characters, grapheme clusters or background-only cells take the per-cell path. The bit layout comes
from libghostty's type manifest (`ghostty_type_json`), checked at import.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyghostty import ffi, lib
from rich.cells import cell_len

from .cells import (
    BLINK,
    BOLD,
    DEFAULT,
    DEFAULT_ATTR,
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

# ---------------------------------------------------------------- libghostty's styles


def _colour(colour) -> int:
    tag = colour.tag
    if tag == lib.GHOSTTY_STYLE_COLOR_PALETTE:
        return colour.value.palette
    if tag == lib.GHOSTTY_STYLE_COLOR_RGB:
        rgb = colour.value.rgb
        return RGB_BASE + (rgb.r << 16 | rgb.g << 8 | rgb.b)
    return DEFAULT


def style_attr(style) -> Attr:
    """A `GhosttyStyle` as a cell style tuple (curly, dotted and dashed underlines draw as single)."""
    flags = 0
    if style.bold:
        flags |= BOLD
    if style.faint:
        flags |= DIM
    if style.italic:
        flags |= ITALIC
    if style.underline:
        flags |= DOUBLE_UNDERLINE if style.underline == lib.GHOSTTY_SGR_UNDERLINE_DOUBLE else UNDERLINE
    if style.blink:
        flags |= BLINK
    if style.inverse:
        flags |= REVERSE
    if style.invisible:
        flags |= HIDDEN
    if style.strikethrough:
        flags |= STRIKE
    if style.overline:
        flags |= OVERLINE
    return (_colour(style.fg_color), _colour(style.bg_color), flags)


# ---------------------------------------------------------------- raw cells


def _cell_layout() -> dict[str, tuple[int, int]]:
    """(lsb, width) of the raw cell's fields, from the library's own manifest."""
    manifest = json.loads(ffi.string(lib.ghostty_type_json()).decode())
    bits = manifest["types"]["GhosttyCell"]["bits"]
    codepoint = bits["content"]["arms"]["CODEPOINT"]["bits"]["codepoint"]
    layout = {name: (bits[name]["lsb"], bits[name]["width"]) for name in ("content_tag", "style_id", "wide")}
    layout["codepoint"] = (bits["content"]["lsb"] + codepoint["lsb"], codepoint["width"])
    return layout


_LAYOUT = _cell_layout()
_TAG_SHIFT, _TAG_WIDTH = _LAYOUT["content_tag"]
_CP_SHIFT, _CP_WIDTH = _LAYOUT["codepoint"]
_SID_SHIFT, _SID_WIDTH = _LAYOUT["style_id"]
_WIDE_SHIFT, _WIDE_WIDTH = _LAYOUT["wide"]
_TAG_MASK = (1 << _TAG_WIDTH) - 1
_CP_MASK = (1 << _CP_WIDTH) - 1
_SID_MASK = (1 << _SID_WIDTH) - 1
_WIDE_MASK = (1 << _WIDE_WIDTH) - 1
assert _CP_SHIFT + _CP_WIDTH <= 32, "a codepoint must fit the low half of the cell word"

TAG_CODEPOINT = lib.GHOSTTY_CELL_CONTENT_CODEPOINT
TAG_GRAPHEME = lib.GHOSTTY_CELL_CONTENT_CODEPOINT_GRAPHEME
TAG_BG_PALETTE = lib.GHOSTTY_CELL_CONTENT_BG_COLOR_PALETTE
TAG_BG_RGB = lib.GHOSTTY_CELL_CONTENT_BG_COLOR_RGB
WIDE_WIDE = lib.GHOSTTY_CELL_WIDE_WIDE
WIDE_SPACER_TAIL = lib.GHOSTTY_CELL_WIDE_SPACER_TAIL


class _Masks:
    """Per-width masks repeating one field in every 64-bit lane of a whole row read as one integer."""

    def __init__(self, cols: int) -> None:
        def repeat(value: int) -> int:
            return int.from_bytes(value.to_bytes(8, "little") * cols, "little")

        self.codepoint = repeat(_CP_MASK)
        self.style = repeat(_SID_MASK << _SID_SHIFT)
        self.special = repeat(_TAG_MASK << _TAG_SHIFT | _WIDE_MASK << _WIDE_SHIFT)
        self.high_ids = repeat((_SID_MASK & ~0xFF) << _SID_SHIFT)


_masks: dict[int, _Masks] = {}
# A zero-width joiner ending a cell would join the next cell's character when measured or drawn.
_JOINERS = "\u200d"

StyleOf = Callable[[int, int], Attr]
"""style_of(x, style_id) -> the style of the cell at column x (whose raw style id is style_id); it
also stores the answer in the `known` dict given with it."""
Graphemes = Callable[[int], str]
"""graphemes(x) -> the full grapheme cluster of the cell at column x."""


def decode_row(raw: bytes, known: dict[int, Attr], style_of: StyleOf, graphemes: Graphemes) -> list[Run]:
    """Runs of a row from its raw cells (8 bytes per cell, little-endian words). `known` maps the
    style ids already looked up (valid for this row's page) to their styles."""
    cols = len(raw) // 8
    if not cols:
        return []
    word = int.from_bytes(raw, "little")
    if not word:
        return [(" " * cols, DEFAULT_ATTR)]
    masks = _masks.get(cols)
    if masks is None:
        masks = _masks[cols] = _Masks(cols)
    if word & masks.special:
        return _decode_cells(raw, known, style_of, graphemes)
    # Every cell is one narrow codepoint (or empty): the text comes out of one UTF-32 decode of the
    # codepoint lanes (each lane: the codepoint, then four zero bytes, hence [::2]).
    lanes = ((word >> _CP_SHIFT) & masks.codepoint).to_bytes(cols * 8, "little")
    text = lanes.decode("utf-32-le", "replace")[::2].replace("\x00", " ")
    if not (text.isascii() and text.isprintable()) and cell_len(text) != cols:
        text = "".join(_fit(char, 1) for char in text)
    styles = word & masks.style
    if not styles:
        return [(text, DEFAULT_ATTR)]
    ids = (styles >> _SID_SHIFT).to_bytes(cols * 8, "little")
    # The style id of each cell: its low byte when all ids are below 256, else the 16-bit id.
    cells = ids[0::8] if not styles & masks.high_ids else memoryview(ids).cast("H")[::4].tolist()
    get = known.get
    runs: list[Run] = []
    start = 0
    current = cells[0]
    for x, sid in enumerate(cells):
        if sid != current:
            runs.append((text[start:x], get(current) or style_of(start, current)))
            start = x
            current = sid
    runs.append((text[start:], get(current) or style_of(start, current)))
    return runs


def _decode_cells(raw: bytes, known: dict[int, Attr], style_of: StyleOf, graphemes: Graphemes) -> list[Run]:
    """The per-cell path: wide characters, grapheme clusters and background-only cells."""
    values = memoryview(raw).cast("Q").tolist()
    runs: list[Run] = []
    chars: list[str] = []
    current: Attr | None = None
    for x, value in enumerate(values):
        wide = (value >> _WIDE_SHIFT) & _WIDE_MASK
        if wide == WIDE_SPACER_TAIL:
            continue  # drawn by the wide character before it
        tag = (value >> _TAG_SHIFT) & _TAG_MASK
        sid = (value >> _SID_SHIFT) & _SID_MASK
        attr = (known.get(sid) or style_of(x, sid)) if sid else DEFAULT_ATTR
        if tag == TAG_CODEPOINT:
            codepoint = (value >> _CP_SHIFT) & _CP_MASK
            char = chr(codepoint) if codepoint else " "
        elif tag == TAG_GRAPHEME:
            char = graphemes(x)
        else:
            attr = (attr[0], background_colour(tag, (value >> _CP_SHIFT) & ((1 << 24) - 1)), attr[2])
            char = " "
        if wide == WIDE_WIDE and x + 1 >= len(values):
            char = " "  # a wide character cut by the right edge
        elif not (char.isascii() and char.isprintable()):
            char = _fit(char.rstrip(_JOINERS) or " ", 2 if wide == WIDE_WIDE else 1)
        if attr != current:
            if chars:
                runs.append(("".join(chars), current))  # type: ignore[arg-type]
            chars = []
            current = attr
        chars.append(char)
    if chars:
        runs.append(("".join(chars), current))  # type: ignore[arg-type]
    if sum(cell_len(text) for text, _ in runs) != len(values):
        # Neighbouring cells that Rich would measure as one cluster (regional indicators, say):
        # keep the row aligned, whatever the glyphs.
        # Each character already measures its own cells (`_fit`), so spaces of that width line up.
        runs = [("".join(char if char.isascii() else " " * cell_len(char) for char in text), attr)
                for text, attr in runs]
    return runs


def _fit(char: str, cells: int) -> str:
    """`char` made to take exactly `cells` cells as Rich measures it (Rich and libghostty disagree
    on the width of a few characters; the row must still line up)."""
    have = cell_len(char)
    if have == cells:
        return char
    if have < cells:
        return char + " " * (cells - have) if have else " " * cells
    return char[0] if cell_len(char[0]) == cells else " " * cells


def cell_parts(word: int) -> tuple[int, int, int]:
    """(content tag, wide kind, content bits) of one raw cell."""
    return ((word >> _TAG_SHIFT) & _TAG_MASK, (word >> _WIDE_SHIFT) & _WIDE_MASK, (word >> _CP_SHIFT) & ((1 << 24) - 1))


def background_colour(tag: int, content: int) -> int:
    """The colour of a background-only cell (erased with a background colour set)."""
    return content & 0xFF if tag == TAG_BG_PALETTE else RGB_BASE + _rgb_from_content(content)


def _rgb_from_content(content: int) -> int:
    """The packed r, g, b bytes of a background-only cell (r in the low byte) as 0xRRGGBB."""
    r, g, b = content & 0xFF, (content >> 8) & 0xFF, (content >> 16) & 0xFF
    return r << 16 | g << 8 | b
