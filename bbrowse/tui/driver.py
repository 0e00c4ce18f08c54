"""The terminal driver of the app: Textual's Linux driver, with a prompt Esc and an immediate quit.

Two waits of Textual's driver are felt by every user of the shell pane:

- a lone Esc: the input parser holds it for `ESCAPE_DELAY` to tell it from the start of an escape
  sequence, but the delay is only checked when the input thread's `select` wakes up, which is every
  0.1 s. An Esc reached vim 100–140 ms late. Here the thread wakes after `ESCAPE_DELAY` while an Esc
  is pending, and every 0.1 s otherwise (as Textual does);
- quitting: the driver waits for that thread (which looks at its stop flag every 0.1 s, then sleeps
  another 0.1 s in a final `select` with nothing to watch) before it restores the terminal. When the app
  quits nothing reads input any more, so the thread is only told to stop.

The input loop is Textual's `LinuxDriver.run_input_thread` (textual 8) with those timeouts; anything
else (suspend, resize, mouse) is Textual's own.
"""

from __future__ import annotations

import os
import selectors
import signal
import termios
from codecs import getincrementaldecoder

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

#: How long the input thread sleeps in `select` when nothing is pending (Textual's value).
IDLE_WAKE_SECONDS = 0.1
#: Quiet wake-ups at the escape delay after an Esc (timer granularity may need a second one).
ESC_WAKES = 3
ESC = "\x1b"


class QuickExitDriver(LinuxDriver):
    #: Set by the app when it quits: the input thread is not waited for.
    quitting = False

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
