"""textual-image's widgets, imported only after its terminal probe is safe on a terminal of no size.

textual-image reads the terminal's cell size when `textual_image.widget` is first imported: the pixel
size from TIOCGWINSZ divided by the columns and rows. A terminal that reports 0×0 (a PTY nobody sized:
some `docker exec -t`, serial consoles, `script` in a pipeline) made that a ZeroDivisionError, and the
app died before it drew anything (textual-image 0.12 catches only OSError there). Its probe is given a
size reader that reports "no size" as the OSError it expects, so it goes on to its own fallbacks (ask
the terminal with an escape sequence, then `TEXTUAL_CELL_WIDTH/HEIGHT`, then 10×20 pixels); Textual
itself takes a 0×0 terminal as 80×25.

When the terminal does not answer that escape sequence either (many do not), textual-image logs a
warning with a traceback; with no logging configured Python prints it to stderr, on the user's screen
before the app takes it over, and it is still there after the app has quit. Its logger gets a
NullHandler, as a library's should: the record still reaches any logging the user configures.

The app imports this before `App.run()`, while the probe can still talk to the terminal.
"""

from __future__ import annotations

import logging

import textual_image._terminal as _terminal_probe

logging.getLogger("textual_image").addHandler(logging.NullHandler())

_read_winsize = _terminal_probe.get_tiocgwinsz


def _sized_winsize() -> tuple[int, int, int, int]:
    rows, columns, width, height = _read_winsize()
    if rows == 0 or columns == 0:
        raise OSError("the terminal reports no size")
    return rows, columns, width, height


_terminal_probe.get_tiocgwinsz = _sized_winsize

import textual_image.widget as image_widgets  # noqa: E402  (after the probe is made safe, on purpose)

__all__ = ["image_widgets"]
