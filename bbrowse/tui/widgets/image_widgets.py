"""textual-image's widgets, given what the terminal said to `bbrowse.tui.graphics_probe`, else asking it.

textual-image asks the terminal when `textual_image.widget` is first imported: its cell size in pixels and
what it draws pictures with. When the probe asked already (one round trip, while the app loaded), its
answers are handed over and textual-image asks nothing: it is imported with a standard output that says it is
no terminal, then given the probe's choice, in textual-image's order (sixel, else kitty graphics, else half
cells). Without the probe's answers textual-image asks for itself, with two guards: a terminal that reports
a 0×0 size (a PTY nobody sized) is said as the OSError textual-image expects, not a ZeroDivisionError, and
its logger gets a NullHandler, so its warnings do not land on the user's screen. Without the answers, imported
before `App.run()`, while the terminal can still be asked; with them, when first needed.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from types import ModuleType

import textual_image._terminal as _terminal_probe

from bbrowse.tui import graphics_probe

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


class _NoTerminal:
    """Standard output, saying it is no terminal: textual-image then asks the terminal nothing."""

    def __init__(self, stream: object) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _asking_nothing() -> Iterator[None]:
    stdout = sys.__stdout__
    sys.__stdout__ = _NoTerminal(stdout)  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        sys.__stdout__ = stdout  # type: ignore[misc]


def _cell_from_winsize() -> tuple[int, int] | None:
    try:
        rows, columns, width, height = _sized_winsize()
    except OSError:
        return None
    return (width // columns, height // rows) if width and height else None


def _import_with(support: graphics_probe.GraphicsSupport) -> ModuleType:
    """`textual_image.widget`, with the probe's answers in place of textual-image's own questions."""
    cell = _cell_from_winsize() or support.cell
    with _asking_nothing():
        from textual_image import renderable

        renderable.Image = (renderable.SixelImage if support.sixel
                            else renderable.TGPImage if support.kitty else renderable.HalfcellImage)
        if cell is not None:
            _terminal_probe.get_cell_size._result = _terminal_probe.CellSize(*cell)  # type: ignore[attr-defined]
        import textual_image.widget as widgets
    return widgets


def _widgets() -> ModuleType:
    support = graphics_probe.answers()
    if support is not None:
        return _import_with(support)
    import textual_image.widget as widgets  # after the winsize guard above, on purpose

    return widgets


image_widgets = _widgets()

__all__ = ["image_widgets"]
