"""`TerminalCore`: the boundary between the shell pane and the terminal emulator behind it.

Two cores implement it, and the widget, the painter and the tests see only this interface: `ghostty`
(`ghostty_core.py`: libghostty-vt through `pyghostty`, which has wheels for Linux x86_64 and aarch64 only,
so it is installed only there: an environment marker) and `python` (`python_core.py`, pure Python, checked
against tmux) on every other platform and wherever pyghostty cannot be imported.
`BBROWSE_TERMINAL_CORE=python` (or `ghostty`) forces one; the default (`auto`) takes libghostty when it
imports. `core_class(name)` names one explicitly; `core_status()` says which is in use and why, for `?`
and `bbrowse info`.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cells import Run
    from .images import Placement

ENV = "BBROWSE_TERMINAL_CORE"
NAMES = ("ghostty", "python")
_MODULES = {"ghostty": ("ghostty_core", "GhosttyCore"), "python": ("python_core", "PythonCore")}


@cache
def ghostty_import_error() -> str | None:
    """Why libghostty cannot be used here (None: it can)."""
    try:
        importlib.import_module(f"{__package__}.ghostty_core")
    except ImportError as error:  # no wheel for this platform (not installed), or a broken library
        return f"pyghostty is not available ({error})"
    except OSError as error:  # the bundled shared library failed to load
        return f"libghostty-vt failed to load ({error})"
    return None


def core_status() -> tuple[str, str]:
    """(the core `TerminalCore()` builds now, why: a sentence for people)."""
    asked = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if asked == "python":
        return "python", f"{ENV}=python"
    problem = ghostty_import_error()
    if problem is None:
        if asked not in ("auto", "ghostty"):
            return "ghostty", f"{ENV}={asked} is not a core ({', '.join(NAMES)}, auto): the default"
        return "ghostty", f"{ENV}=ghostty" if asked == "ghostty" else "the default where pyghostty is installed"
    return "python", problem


def core_class(name: str | None = None) -> type[TerminalCore]:
    """The class of core `name` (default: the one `core_status` picks)."""
    name = name or core_status()[0]
    module_name, class_name = _MODULES[name]
    cls: type[TerminalCore] = getattr(importlib.import_module(f"{__package__}.{module_name}"), class_name)
    return cls


def core_label() -> str:
    """What the pane shows: "libghostty-vt (pyghostty)" or "Python core (…why)"."""
    name, why = core_status()
    cls = core_class(name)
    return cls.label if name == "ghostty" else f"{cls.label} ({why})"


class TerminalCore:
    """A terminal of `cols` x `rows` cells with at least `scrollback` lines of history.

    `TerminalCore(...)` returns the chosen implementation; its interface (docs/terminal.md says what each does):

        feed(data); take_replies() -> bytes; resize(cols, rows); reset(); close()
        cols, rows, cursor, cursor_x, cursor_y, cursor_visible, alternate_screen_active, title
        application_cursor_keys, application_keypad, bracketed_paste, focus_events, mouse_tracking,
        mouse_sgr, synchronized_output, kitty_keyboard_flags, mode(n, ansi=False)
        encode_key(key, character) -> bytes | None; take_dirty() -> set[int]; row(y) -> [(text, style), ...]
        scroll_view(delta) -> offset; scroll_offset; scroll_to_bottom(); scrollback_lines
        display; line_text(y); scrollback_text(); cell(x, y)
        placements(); images_generation                          (kitty graphics; none in Python)
        flood_keep_lines; skippable_prefix(backlog, plain_end); plain_lines_only_scroll()
    """

    name = ""
    label = ""
    supports_images = False
    scrollback_limit: int

    def __new__(cls, *args: Any, **kwargs: Any) -> TerminalCore:
        if cls is TerminalCore:
            cls = core_class()
        return super().__new__(cls)

    if TYPE_CHECKING:  # the interface, for the type checker (each core implements it)

        # The state (cols, rows, cursor, modes, title...) is properties in one core and attributes in the other.
        def __getattr__(self, name: str) -> Any: ...

        def __init__(self, cols: int = 80, rows: int = 24, scrollback: int = 10_000) -> None: ...
        def feed(self, data: bytes) -> None: ...
        def take_replies(self) -> bytes: ...
        def resize(self, cols: int, rows: int) -> None: ...
        def reset(self) -> None: ...
        def close(self) -> None: ...
        def mode(self, number: int, ansi: bool = False) -> bool: ...
        def encode_key(self, key: str, character: str | None) -> bytes | None: ...
        def take_dirty(self) -> set[int]: ...
        def row(self, y: int) -> list[Run]: ...
        def scroll_view(self, delta: int) -> int: ...
        def scroll_to_bottom(self) -> None: ...
        def line_text(self, y: int) -> str: ...
        def scrollback_text(self) -> list[str]: ...
        def cell(self, x: int, y: int) -> tuple[str, tuple[int, int, int]]: ...
        def placements(self) -> list[Placement]: ...
        def skippable_prefix(self, backlog: bytes | bytearray, plain_end: int | None = None) -> int: ...
        def plain_lines_only_scroll(self) -> bool: ...
