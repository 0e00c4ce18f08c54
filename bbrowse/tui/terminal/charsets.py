"""Character sets a program can designate with `ESC ( X` and friends.

Only the ones curses programs still use matter: ASCII (`B`), DEC special graphics (`0`, the
line-drawing set behind `smacs`/`rmacs` in terminfo) and the UK set (`A`, where `#` is `£`).
Each table is a `str.translate` map so a whole run is converted in one C call.
"""

from __future__ import annotations

DEC_SPECIAL_GRAPHICS = str.maketrans(
    {
        "`": "◆", "a": "▒", "b": "␉", "c": "␌", "d": "␍", "e": "␊", "f": "°", "g": "±",
        "h": "␤", "i": "␋", "j": "┘", "k": "┐", "l": "┌", "m": "└", "n": "┼", "o": "⎺",
        "p": "⎻", "q": "─", "r": "⎼", "s": "⎽", "t": "├", "u": "┤", "v": "┴", "w": "┬",
        "x": "│", "y": "≤", "z": "≥", "{": "π", "|": "≠", "}": "£", "~": "·",
    }
)

UK = str.maketrans({"#": "£"})

# Designator final character -> translation table (None: plain ASCII, nothing to do).
TABLES: dict[str, dict[int, str] | None] = {
    "B": None,
    "0": DEC_SPECIAL_GRAPHICS,
    "A": UK,
}
