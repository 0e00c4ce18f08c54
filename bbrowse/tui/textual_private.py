"""Every use of Textual's private API, for the one Textual version it was written for.

Textual is pinned exactly in pyproject.toml (the SVG snapshots depend on it too) and `WRITTEN_FOR` is that
version. bbrowse and its tests reach Textual's private names (a `textual._*` module, a `Final` constant,
an underscored attribute) only through this module, and tests/test_textual_private.py fails on any other
use. Moving to a new Textual: bump the pin, read each name below against the new Textual's source
(`QuickExitDriver.run_input_thread` is a copy of `LinuxDriver.run_input_thread`), then change
`WRITTEN_FOR`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import termios
from codecs import getincrementaldecoder
from typing import TYPE_CHECKING

import textual._wait
import textual.app
import textual.constants
import textual.screen
from textual import constants
from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
from textual._parser import ParseError
from textual._queue import Queue
from textual._styles_cache import StylesCache
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.keys import _character_to_key, _get_unicode_name_from_key
from textual.widgets._footer import FooterKey, FooterLabel

if TYPE_CHECKING:
    from collections.abc import Mapping

    from textual.app import App
    from textual.dom import DOMNode
    from textual.driver import Driver
    from textual.message_pump import MessagePump
    from textual.notifications import Notification
    from textual.screen import Screen

#: The Textual release every name here was read against (the exact pin of pyproject.toml).
WRITTEN_FOR = "8.2.8"

__all__ = [
    "ANSI_SEQUENCES_KEYS",
    "WRITTEN_FOR",
    "FooterKey",
    "FooterLabel",
    "ParseError",
    "QuickExitDriver",
    "XTermParser",
    "character_to_key",
    "driver_of",
    "forget_closed_watchers",
    "keymap_of",
    "notifications",
    "pilots_wait_until_settled",
    "release_render_caches",
    "screen_lines",
    "set_escape_delay",
    "set_screen_update_period",
    "starve_idle_guess",
    "unicode_name_from_key",
    "until_settled",
    "version_problem",
]


def set_screen_update_period(seconds: float) -> None:
    """Repaint dirty screens at least this often. `Final` in Textual, read at every screen's start."""
    textual.screen.UPDATE_PERIOD = min(textual.screen.UPDATE_PERIOD, seconds)  # type: ignore[misc]


def set_escape_delay(seconds: float) -> None:
    """Hold a lone Esc this long. `Final` in Textual, read when the driver starts: set it before."""
    textual.constants.ESCAPE_DELAY = seconds  # type: ignore[misc]


#: Textual's names for keys, by character and back (private helpers of `textual.keys`).
character_to_key = _character_to_key
unicode_name_from_key = _get_unicode_name_from_key


def driver_of(app: App) -> Driver | None:
    """The app's driver while it runs (None before and after)."""
    return app._driver


def keymap_of(app: App) -> Mapping[str, str]:
    """Binding id → key(s) the app's keymap gives (`App.set_keymap`; Textual keeps it in a private dict)."""
    return app._keymap


def screen_lines(screen: Screen) -> list[str]:
    """The text of every row the screen shows now, as composed for the terminal (tests read it)."""
    return ["".join(segment.text for segment in strip) for strip in screen._compositor.render_strips()]


#: How long `until_settled` waits at most: a handler may await the service, and a node that closes while
#: waited for never finishes its queue.
SETTLE_SECONDS = 5.0


async def until_settled(app: App) -> None:
    """Until the app and every node of its screen have handled every message sent to them, including those
    posted while handling the ones before: a key, the binding it runs as it bubbles up, the focus that binding
    moves. Told from each node's queue (a node waiting for its next message has handled the last one), where
    Textual's `wait_for_idle` guesses from the process's CPU time, which a process starved of CPU passes
    before anything was handled. Bounded by `SETTLE_SECONDS`."""
    quiet = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SETTLE_SECONDS):
            while quiet < 2:  # twice: what runs right after a message (idle callbacks) may post another
                if not app.is_running:
                    return
                busy = [node for node in _nodes(app) if not _waiting_for_messages(node)]
                quiet = 0 if busy else quiet + 1
                if busy:
                    await _handled_so_far(busy)
                else:
                    await asyncio.sleep(0)


def _waiting_for_messages(node: MessagePump) -> bool:
    """Nothing queued, and the node's loop waits for the next message (not inside a handler); or the node is
    closing, and handles nothing more."""
    if node._closing or node._closed:
        return True
    queue: Queue[object] = node._message_queue
    return not queue.values and bool(queue.ready_event._waiters)


async def _handled_so_far(nodes: list[MessagePump]) -> None:
    """Until each of `nodes` has handled what it had queued (a callback queued behind it has run)."""
    waiting = 0
    all_handled = asyncio.Event()

    def handled() -> None:
        nonlocal waiting
        waiting -= 1
        if waiting == 0:
            all_handled.set()

    for node in nodes:
        if node.call_later(handled):  # False for a node closed meanwhile
            waiting += 1
    if waiting:
        await all_handled.wait()
    else:  # every one closed meanwhile: the event loop runs before the next look
        await asyncio.sleep(0)


def _nodes(app: App) -> list[MessagePump]:
    try:
        screen = app.screen
    except textual.app.ScreenStackError:  # starting or closing: no screen
        return [app]
    return [app, *screen.walk_children(with_self=True)]


def pilots_wait_until_settled() -> None:
    """Tests: Pilot's waits (between keys, in `pause()`) first wait `until_settled`, then as before."""
    import textual.pilot
    from textual._context import active_app

    guess = textual._wait.wait_for_idle

    async def settled_then_idle(min_sleep: float = textual._wait.SLEEP_GRANULARITY, max_sleep: float = 1) -> None:
        app = active_app.get(None)
        if app is not None and app.is_running:
            await until_settled(app)
        await guess(min_sleep, max_sleep)

    textual.app.wait_for_idle = settled_then_idle
    textual.pilot.wait_for_idle = settled_then_idle


def starve_idle_guess() -> None:
    """Tests, on purpose (`pytest --starved-cpu`): Textual's idle guess sees no CPU used, as in a process starved
    of CPU, so it ends after its first 20 ms sleep."""
    textual._wait.process_time = lambda: 0.0


def forget_closed_watchers(obj: DOMNode) -> None:
    """Drop the watchers of `obj` made by nodes now closed (`node.watch(obj, ...)`). Textual drops them only when
    the attribute next changes, which for the app's connection state or theme can be never: until then each
    keeps its node alive, and a closed screen's watcher keeps the screen and every widget it had."""
    watchers: dict[str, list[tuple[DOMNode, object]]] = getattr(obj, "__watchers", {})
    for entries in watchers.values():
        entries[:] = [(node, callback) for node, callback in entries if not (node._closing or node._closed)]


def release_render_caches() -> None:
    """Let go of the lines drawn by widgets now gone. `StylesCache.get_inner_outer` is an lru_cache on a method,
    so its keys hold the styles cache of each of the last 1,024 widgets drawn, and with it every line that widget
    drew, for the collector to walk at each full pass."""
    StylesCache.get_inner_outer.cache_clear()


def notifications(app: App) -> list[Notification]:
    """The notifications the app shows now (tests read them; Textual keeps them in a private list)."""
    return list(app._notifications)


def version_problem() -> str | None:
    """What to tell the user when the Textual installed is not the one this module was written for."""
    from importlib.metadata import version

    installed = version("textual")
    if installed == WRITTEN_FOR:
        return None
    return (f"Textual {installed} is installed; bbrowse was written for {WRITTEN_FOR} "
            f"(pip install 'textual=={WRITTEN_FOR}'). Keys and drawing may misbehave.")


#: How long the input thread sleeps in `select` when nothing is pending (Textual's value).
IDLE_WAKE_SECONDS = 0.1
#: Quiet wake-ups at the escape delay after an Esc (timer granularity may need a second one).
ESC_WAKES = 3
ESC = "\x1b"


class QuickExitDriver(LinuxDriver):
    """Textual's Linux driver with two of its waits cut, both felt by every shell pane user.

    A lone Esc would wait for the input thread's next 0.1 s `select` wake-up, so the thread wakes after
    `ESCAPE_DELAY` while an Esc is pending; and the terminal would be restored at quit only after that
    thread noticed its stop flag, so the thread is only told to stop. Its input loop is a copy of
    `LinuxDriver.run_input_thread` with those timeouts; the rest is Textual's (docs/decisions.md).
    """

    #: Set by the app when it quits: the input thread is not waited for.
    quitting = False
    #: Keys typed before this driver read the terminal (read meanwhile by `graphics_probe`): received first.
    typed_ahead = ""

    def disable_input(self) -> None:
        if not self.quitting:
            super().disable_input()
            return
        if self.exit_event.is_set():
            return
        signal.signal(signal.SIGWINCH, signal.SIG_DFL)
        self._disable_mouse_support()
        self.exit_event.set()  # the thread stops within 0.1 s; the process may be gone before
        try:
            termios.tcflush(self.fileno, termios.TCIFLUSH)
        except termios.error:
            pass

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events; wake up after the escape delay while an Esc may be pending."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        #: Wake-ups left at the escape delay: an Esc was read and may still be held by the parser.
        short_wakes = 0

        def process(selector_events: list, final: bool = False) -> None:
            """Feed what was read to the parser, then let it time out a held Esc."""
            nonlocal short_wakes
            for index, (_key, mask) in enumerate(selector_events):
                if mask & selectors.EVENT_READ:
                    data = decode(os.read(fileno, 1024 * 4), final=final and index == len(selector_events) - 1)
                    if not data:
                        break
                    if ESC in data:
                        short_wakes = ESC_WAKES
                    for event in parser.feed(data):
                        self.process_message(event)
            if not selector_events and short_wakes:
                short_wakes -= 1
            for event in parser.tick():
                self.process_message(event)

        typed, self.typed_ahead = self.typed_ahead, ""
        if ESC in typed:
            short_wakes = ESC_WAKES
        if typed:  # (an empty feed is the parser's end of input: every key after it would raise)
            for event in parser.feed(typed):
                self.process_message(event)
        try:
            while not self.exit_event.is_set():
                process(selector.select(min(IDLE_WAKE_SECONDS, constants.ESCAPE_DELAY) if short_wakes
                                        else IDLE_WAKE_SECONDS))
            selector.unregister(self.fileno)
            process(selector.select(0), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
