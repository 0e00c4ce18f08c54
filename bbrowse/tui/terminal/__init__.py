"""The terminal pane's core: an emulator (bytes -> styled cells), key translation (Textual keys ->
the bytes an xterm sends) and the Textual widget that draws one and feeds the other.

The emulator and the key translation are plain classes and functions, testable without an app;
the widget knows nothing about HTTP: the app hands it a `send_input` callback and feeds it output.
"""

from .emulator import TerminalEmulator
from .keys import encode_paste, translate_key
from .widget import TerminalView

__all__ = ["TerminalEmulator", "TerminalView", "encode_paste", "translate_key"]
