"""textual-image's widgets, imported only after its terminal probe is safe on a terminal of no size.

textual-image reads the terminal's cell size when `textual_image.widget` is first imported (TIOCGWINSZ's
pixels over columns and rows): a terminal that reports 0×0 (a PTY nobody sized: some `docker exec -t`,
`script` in a pipeline) made that a ZeroDivisionError before the app drew anything. Its logger gets a
NullHandler, as a library's should, so its warning does not land on the user's screen. The app imports
this before `App.run()`, while the probe can still talk to the terminal.
"""

from __future__ import annotations

import logging

import textual_image._terminal as _terminal_probe

# A terminal that answers no cell-size query makes textual-image log a warning with a traceback; with no
# logging configured Python prints it to stderr, over the screen, still there after the app quit. The
# record still reaches any logging the user configures.
logging.getLogger("textual_image").addHandler(logging.NullHandler())

_read_winsize = _terminal_probe.get_tiocgwinsz


def _sized_winsize() -> tuple[int, int, int, int]:
    """TIOCGWINSZ, with "no size" said as the OSError textual-image expects (0.12 catches only that): it
    then falls back to asking the terminal, `TEXTUAL_CELL_WIDTH/HEIGHT`, then 10×20 pixels. Textual
    itself takes a 0×0 terminal as 80×25."""
    rows, columns, width, height = _read_winsize()
    if rows == 0 or columns == 0:
        raise OSError("the terminal reports no size")
    return rows, columns, width, height


_terminal_probe.get_tiocgwinsz = _sized_winsize

import textual_image.widget as image_widgets  # noqa: E402  (after the probe is made safe, on purpose)

__all__ = ["image_widgets"]
