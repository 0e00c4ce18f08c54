"""The terminal pane: `TerminalCore` (bytes -> styled cells, modes, scrollback, replies; libghostty-vt
through pyghostty where it is installed, else the Python core: see `core.py`), the key encoding
(Textual keys -> the bytes the program's modes want), the painter (styled runs and kitty graphics
pictures -> Textual strips) and the widget that draws one and feeds the other.

The core and the keys are plain classes, testable without an app; the widget knows nothing about
HTTP: the app hands it a `send_input` callback and feeds it output.
"""

from .core import TerminalCore
from .keys import encode_paste
from .widget import TerminalView

__all__ = ["TerminalCore", "TerminalView", "encode_paste"]
