"""SGR for the Python core: what `CSI ... m` does to a cell style `(fg, bg, flags)` (see `cells.py`).

An attribute is a plain tuple ``(fg, bg, flags)`` so that it hashes and compares in C and can key
the memo tables below: most output reuses a handful of attributes, so the SGR parse is a dictionary
hit after the first time.

Colours are ints: `DEFAULT` (-1) for the terminal's default, 0..255 for the xterm palette (0..15 are
the ANSI colours, which Textual maps through its theme), and `RGB_BASE + 0xRRGGBB` for true colour.
"""

from __future__ import annotations

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
)

# SGR codes that set (or clear) one flag: code -> (flags to set, flags to clear).
_FLAG_CODES: dict[int, tuple[int, int]] = {
    1: (BOLD, 0),
    2: (DIM, 0),
    3: (ITALIC, 0),
    4: (UNDERLINE, DOUBLE_UNDERLINE),
    5: (BLINK, 0),
    6: (BLINK, 0),
    7: (REVERSE, 0),
    8: (HIDDEN, 0),
    9: (STRIKE, 0),
    21: (DOUBLE_UNDERLINE, UNDERLINE),
    22: (0, BOLD | DIM),
    23: (0, ITALIC),
    24: (0, UNDERLINE | DOUBLE_UNDERLINE),
    25: (0, BLINK),
    27: (0, REVERSE),
    28: (0, HIDDEN),
    29: (0, STRIKE),
    53: (OVERLINE, 0),
    55: (0, OVERLINE),
}

_sgr_memo: dict[tuple[Attr, str], Attr] = {}
_MEMO_LIMIT = 65536


def apply_sgr(attr: Attr, params: str) -> Attr:
    """The attribute after `CSI params m`, starting from `attr` (memoised)."""
    key = (attr, params)
    result = _sgr_memo.get(key)
    if result is None:
        result = _parse_sgr(attr, params)
        if len(_sgr_memo) >= _MEMO_LIMIT:
            _sgr_memo.clear()
        _sgr_memo[key] = result
    return result


def _extended_colour(parts: list[str], index: int) -> tuple[int | None, int]:
    """Parse the tail of `38;5;n` / `38;2;r;g;b` (semicolon form): (colour or None, next index)."""
    count = len(parts)
    if index >= count:
        return None, index
    kind = parts[index]
    if kind == "5" and index + 1 < count:
        n = _int(parts[index + 1])
        return (n if 0 <= n <= 255 else None), index + 2
    if kind == "2" and index + 3 < count:
        try:
            r, g, b = int(parts[index + 1] or 0), int(parts[index + 2] or 0), int(parts[index + 3] or 0)
        except ValueError:
            r = g = b = 0
        if 0 <= r <= 255 and 0 <= g <= 255 and 0 <= b <= 255:
            return RGB_BASE + ((r << 16) | (g << 8) | b), index + 4
        return _rgb(r, g, b), index + 4
    return None, count


def _colon_colour(sub: list[str]) -> int | None:
    """Parse the colon form `38:5:n`, `38:2:r:g:b` or `38:2:colourspace:r:g:b`."""
    if len(sub) >= 3 and sub[1] == "5":
        n = _int(sub[2])
        return n if 0 <= n <= 255 else None
    if len(sub) >= 5 and sub[1] == "2":
        values = sub[2:]
        if len(values) >= 4:
            values = values[1:4]
        r, g, b = (_int(p) for p in values[:3])
        return _rgb(r, g, b)
    return None


def _rgb(r: int, g: int, b: int) -> int:
    return RGB_BASE + ((min(max(r, 0), 255) << 16) | (min(max(g, 0), 255) << 8) | min(max(b, 0), 255))


def _int(text: str) -> int:
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


def _parse_sgr(attr: Attr, params: str) -> Attr:
    fg, bg, flags = attr
    parts = params.split(";") if params else ["0"]
    i = 0
    while i < len(parts):
        part = parts[i]
        i += 1
        if ":" in part:
            sub = part.split(":")
            code = _int(sub[0])
            if code == 4:  # underline style: 4:0 none, 4:1 single, 4:2 double, 4:3+ curly etc.
                style = _int(sub[1]) if len(sub) > 1 else 1
                flags &= ~(UNDERLINE | DOUBLE_UNDERLINE)
                if style == 2:
                    flags |= DOUBLE_UNDERLINE
                elif style:
                    flags |= UNDERLINE
            elif code in (38, 48):
                colour = _colon_colour(sub)
                if colour is not None:
                    if code == 38:
                        fg = colour
                    else:
                        bg = colour
            continue  # 58:... (underline colour) and unknown colon forms are ignored
        code = _int(part)
        if code == 0:
            fg, bg, flags = DEFAULT, DEFAULT, 0
        elif 30 <= code <= 37:
            fg = code - 30
        elif 40 <= code <= 47:
            bg = code - 40
        elif 90 <= code <= 97:
            fg = code - 90 + 8
        elif 100 <= code <= 107:
            bg = code - 100 + 8
        elif code == 39:
            fg = DEFAULT
        elif code == 49:
            bg = DEFAULT
        elif code in (38, 48, 58):
            colour, i = _extended_colour(parts, i)
            if colour is not None and code != 58:
                if code == 38:
                    fg = colour
                else:
                    bg = colour
        else:
            change = _FLAG_CODES.get(code)
            if change is not None:
                flags = (flags | change[0]) & ~change[1]
    return (fg, bg, flags)


def blank_attr(attr: Attr) -> Attr:
    """The attribute erased cells get: the current background only (xterm's back-colour erase)."""
    bg = attr[1]
    return DEFAULT_ATTR if bg == DEFAULT else (DEFAULT, bg, 0)
