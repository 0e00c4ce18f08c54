"""The terminal's graphics support, asked in one round trip: a real PTY, with a test playing the terminal."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from bbrowse.tui import graphics_probe
from bbrowse.tui.graphics_probe import QUESTIONS, GraphicsSupport, ask

TMUX = "\x1b[?1;2c"  # answers the device attributes only
KITTY = "\x1b[6;32;16t\x1b_Gi=31;OK\x1b\\\x1b[?62;22c"
SIXEL = "\x1b[6;20;10t\x1b[?62;4;22c"


class Terminal:
    """The master side of a PTY: reads what the program writes and, once every question is in, answers
    (after `delay` seconds, `answer` in one write, or nothing when `answer` is None)."""

    def __init__(self, answer: str | None, delay: float = 0.0, *, keep_reading: bool = False,
                 then: str = "") -> None:
        """`keep_reading`: after answering, go on reading what the program writes (a full-screen app), until
        closed; `then`: typed once the program has put the terminal in raw mode (a full-screen app's driver runs;
        the probe's cbreak mode keeps signals on)."""
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.answer, self.delay, self.keep_reading, self.then = answer, delay, keep_reading, then
        self.heard = b""
        self.writes = 0
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while QUESTIONS.encode() not in self.heard:
            readable, _, _ = select.select([self.master], [], [], 5)
            if not readable:
                return
            self.heard += os.read(self.master, 1024)
            self.writes += 1
        if self.answer is not None:
            time.sleep(self.delay)
            os.write(self.master, self.answer.encode())
        while self.keep_reading and not self._closing.is_set():
            if select.select([self.master], [], [], 0.05)[0]:
                self.heard += os.read(self.master, 65536)
            if self.then and not termios.tcgetattr(self.slave)[3] & termios.ISIG:  # the app's driver runs: raw mode
                os.write(self.master, self.then.encode())
                self.then = ""

    def close(self) -> None:
        """Stop playing the terminal, keeping in `heard` whatever else the program wrote."""
        self._closing.set()
        self._thread.join(5)
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 1024)
            except OSError:
                break
            if not chunk:
                break
            self.heard += chunk
        os.close(self.master)
        os.close(self.slave)


def asked(answer: str | None, *, timeout: float = 5.0,
          delay: float = 0.0) -> tuple[GraphicsSupport | None, float, bytes]:
    """`ask` of a terminal answering `answer` after `delay`: what it said, the seconds it took, what was written."""
    terminal = Terminal(answer, delay)
    try:
        started = time.monotonic()
        support, _typed = ask(terminal.slave, terminal.slave, timeout=timeout)
        took = time.monotonic() - started
    finally:
        terminal.close()
    return support, took, terminal.heard


@pytest.mark.parametrize(("answer", "expected"), [
    (TMUX, GraphicsSupport(cell=None, kitty=False, sixel=False)),
    (KITTY, GraphicsSupport(cell=(16, 32), kitty=True, sixel=False)),
    (SIXEL, GraphicsSupport(cell=(10, 20), kitty=False, sixel=True)),
])
def test_one_write_of_questions_and_the_answers_read_as_soon_as_the_last_is_in(answer, expected) -> None:
    support, took, heard = asked(answer)
    assert support == expected
    assert heard == QUESTIONS.encode()
    assert took < 1.0, f"waited {took:.2f} s though every answer was in"  # not the 5 s allowed


def test_a_kitty_answer_slower_than_a_tenth_of_a_second_still_counts() -> None:
    """Across a slow link every answer is late; the device attributes' answer, not a clock, ends the wait."""
    support, _, _ = asked(KITTY, delay=0.3)
    assert support is not None and support.kitty


def test_a_terminal_that_never_answers_is_waited_for_no_longer_than_the_timeout() -> None:
    support, took, _ = asked(None, timeout=0.3)
    assert support is None
    assert 0.3 <= took < 3.0


def test_the_terminal_is_left_in_the_mode_it_was_in() -> None:
    terminal = Terminal(TMUX)
    try:
        before = termios.tcgetattr(terminal.slave)
        ask(terminal.slave, terminal.slave, timeout=5.0)
        after = termios.tcgetattr(terminal.slave)
    finally:
        terminal.close()
    assert after == before


def run_in(terminal: Terminal, script: str) -> subprocess.CompletedProcess[str]:
    """`script` run by Python in `terminal` (an xterm with no cell size given by the environment), to its end."""
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("TEXTUAL_CELL_WIDTH", None)
    env.pop("TEXTUAL_CELL_HEIGHT", None)
    try:
        return subprocess.run([sys.executable, "-c", script], stdin=terminal.slave, stdout=terminal.slave,
                              stderr=subprocess.PIPE, env=env, timeout=60, text=True)
    finally:
        terminal.close()


CHOSEN = """
import sys
from bbrowse.tui import graphics_probe
graphics_probe.start()
from bbrowse.tui.widgets.image_widgets import image_widgets
from textual_image import renderable
from textual_image._terminal import get_cell_size
print("chosen", renderable.Image.__module__.rsplit(".", 1)[1], image_widgets.Image.__name__, tuple(get_cell_size()),
      file=sys.stderr)
"""


@pytest.mark.parametrize(("answer", "chosen"), [
    (KITTY, "tgp AutoImage (16, 32)"),
    (SIXEL, "sixel Image (10, 20)"),
    (TMUX, "halfcell AutoImage (10, 20)"),
])
def test_textual_image_draws_with_what_the_terminal_said_and_asks_nothing_more(answer, chosen) -> None:
    """The app's import of the image widgets, in a terminal: textual-image takes the probe's answers."""
    terminal = Terminal(answer)
    done = run_in(terminal, CHOSEN)
    assert done.returncode == 0, done.stderr
    assert f"chosen {chosen}" in done.stderr
    assert terminal.heard == QUESTIONS.encode(), "textual-image asked the terminal again"
    assert graphics_probe.answers() is None  # this process, not a terminal, never asked


CELL = """
import sys
from bbrowse.tui import graphics_probe
graphics_probe.start()
assert graphics_probe.answers() is not None
from bbrowse.tui.widgets.halfcell import cell_size
print("cell", cell_size(), file=sys.stderr)
"""


def test_the_half_cell_canvas_sizes_pictures_with_the_terminal_s_answer_and_asks_nothing_more() -> None:
    """The app imports the image widgets only when a picture is first shown; a live view's canvas may ask its
    cell size first: it gets the probe's answer, and the terminal (owned by Textual by then) is not asked."""
    terminal = Terminal(KITTY)
    try:
        done = subprocess.run([sys.executable, "-c", CELL], stdin=terminal.slave, stdout=terminal.slave,
                              stderr=subprocess.PIPE, env={**os.environ, "TERM": "xterm-256color"}, timeout=60,
                              text=True)
    finally:
        terminal.close()
    assert done.returncode == 0, done.stderr
    assert "cell (16, 32)" in done.stderr
    assert terminal.heard == QUESTIONS.encode(), "textual-image asked the terminal again"


def test_keys_typed_while_the_terminal_is_asked_are_told_from_its_answers() -> None:
    terminal = Terminal("j/\x1b[A" + KITTY + "q")
    try:
        support, typed = ask(terminal.slave, terminal.slave, timeout=5.0)
    finally:
        terminal.close()
    assert support == GraphicsSupport(cell=(16, 32), kitty=True, sixel=False)
    assert typed == "j/\x1b[Aq"


TYPED_AHEAD = """
import sys
from textual.app import App
from bbrowse.tui import graphics_probe
from bbrowse.tui.textual_private import QuickExitDriver
graphics_probe.start()
QuickExitDriver.typed_ahead = graphics_probe.typed_ahead()

class Keys(App):
    keys = []

    def on_key(self, event):
        self.keys.append(event.key)
        if event.key == "q":
            self.exit()

app = Keys(driver_class=QuickExitDriver)
app.run()
print("keys", " ".join(app.keys), file=sys.stderr)
"""


def test_keys_typed_as_the_app_starts_reach_it_though_the_probe_read_them() -> None:
    """A person types ahead while bbrowse starts: the probe reads those keys along with the terminal's
    answers, and the app's input gets them first, in order (else this app would never see its q)."""
    terminal = Terminal("ab" + TMUX + "q", keep_reading=True)
    done = run_in(terminal, TYPED_AHEAD)
    assert done.returncode == 0, done.stderr
    assert "keys a b q" in done.stderr


def test_a_key_typed_once_the_app_runs_reaches_it_when_none_was_typed_ahead() -> None:
    """Nothing typed while bbrowse starts, the usual case: the first keys typed once it runs reach it (an empty
    typed-ahead, fed to Textual's parser, read as the end of input: the first key then ended the input thread)."""
    terminal = Terminal(TMUX, keep_reading=True, then="xq")
    done = run_in(terminal, TYPED_AHEAD)
    assert done.returncode == 0, done.stderr
    assert "keys x q" in done.stderr
