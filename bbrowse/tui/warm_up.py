"""What the first session screen needs, loaded in the background while the sessions table is read.

The session screen's modules, and above all the terminal core: pyghostty parses libghostty's C declarations
when imported, then each C type the first time it is used, so the first shell pane cost the app's loop most of a
second (docs/decisions.md, "The first session opened"). Done once per process, in a daemon thread: the table
keeps answering (the thread yields the interpreter every few milliseconds), and a session opened meanwhile
waits only for what is left (Python's import lock and cffi's type cache are shared).
"""

from __future__ import annotations

import contextlib
import importlib
import threading

from bbrowse.startup import freeze_more

#: Seconds after the sessions table shows before the loading starts: the start-up's own work goes first.
AFTER_SECONDS = 0.5

#: The terminal state a pane reads (`TerminalCore`'s interface): each is a C type of its own to parse.
STATE = ("cursor", "cursor_visible", "alternate_screen_active", "title", "application_cursor_keys",
         "application_keypad", "bracketed_paste", "focus_events", "mouse_tracking", "mouse_sgr",
         "synchronized_output", "kitty_keyboard_flags", "scroll_offset", "scrollback_lines", "images_generation")

_started = threading.Lock()
_done = False
#: Set once `warm_up` has run (whatever it found).
finished = threading.Event()


def warm_up() -> None:
    """Import the session screen and build one terminal core, thrown away. Any failure is left to the real
    opening, which reports it."""
    try:
        with contextlib.suppress(Exception):
            _load()
        # what was loaded here, and the first screen, leave the collector's full passes as start-up's did
        freeze_more()
    finally:
        finished.set()


def _load() -> None:
    importlib.import_module("bbrowse.tui.screens.session")
    from bbrowse.tui.terminal.core import TerminalCore

    core = TerminalCore(80, 24)
    try:  # what a shell pane does with its first output, its first keys and its first resize
        core.feed(b"\x1b[1;31mwarm\x1b[0m\r\n$ ")
        core.take_replies()
        core.take_dirty()
        for y in range(core.rows):
            core.row(y)
        core.placements()
        core.encode_key("a", "a")
        core.encode_key("up", None)
        core.line_text(0)  # echo prediction reads the line it predicts on
        for name in STATE:
            with contextlib.suppress(Exception):
                getattr(core, name)
        core.resize(79, 24)
    finally:
        core.close()


def warm_up_soon() -> None:
    """Start `warm_up` in its thread, once per process."""
    global _done
    with _started:
        if _done:
            return
        _done = True
    threading.Thread(target=warm_up, name="warm-up", daemon=True).start()
