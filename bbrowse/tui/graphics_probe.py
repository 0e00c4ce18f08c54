"""What the terminal draws pictures with and its cell size in pixels, asked in one round trip while the app loads.

textual-image asks when it is imported, one question at a time, each waiting up to 0.1 s for its answer: a
terminal that never answers the kitty graphics query (tmux, xterm, most of them) costs the whole 0.1 s, and
an answer slower than that (a terminal across a slow link) is taken for "no", then typed into the app.
Here the three questions (the cell size, kitty graphics, the device attributes) go in one write, in a
thread started as `bbrowse` starts; the device attributes' answer, which every terminal gives and gives
last, says every answer is in. `bbrowse.tui.widgets.image_widgets` hands the answers to textual-image.
"""

from __future__ import annotations

import os
import re
import select
import sys
import threading
import time
from dataclasses import dataclass

#: How long the answers may take: a terminal that never answers the device attributes (none known) is
#: waited for this long, in the background while the app loads.
ANSWER_SECONDS = 0.5
#: Cell size in pixels (xterm's CSI 16 t), a kitty graphics query (image id 31, one pixel), the primary
#: device attributes (DA1), in the order the answers come back.
QUESTIONS = "\x1b[16t" "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\" "\x1b[c"
_CELL_ANSWER = re.compile(r"\x1b\[6;(\d+);(\d+)t")
_KITTY_ANSWER = re.compile(r"\x1b_Gi=31;([^\x1b]*)\x1b\\")
_ATTRIBUTES_ANSWER = re.compile(r"\x1b\[\?([\d;]*)c")


@dataclass(frozen=True)
class GraphicsSupport:
    """The terminal's answers: its cell size in pixels (None: not said), kitty graphics, sixel."""

    cell: tuple[int, int] | None
    kitty: bool
    sixel: bool


def read_answers(text: str) -> GraphicsSupport | None:
    """The support the answers in `text` say, once the device attributes' answer is among them (else None)."""
    attributes = _ATTRIBUTES_ANSWER.search(text)
    if attributes is None:
        return None
    cell = _CELL_ANSWER.search(text)
    kitty = _KITTY_ANSWER.search(text)
    return GraphicsSupport(
        cell=(int(cell.group(2)), int(cell.group(1))) if cell and int(cell.group(1)) and int(cell.group(2)) else None,
        kitty=kitty is not None and kitty.group(1) == "OK",
        sixel="4" in attributes.group(1).split(";"),
    )


def ask(in_fd: int, out_fd: int, timeout: float = ANSWER_SECONDS) -> tuple[GraphicsSupport | None, str]:
    """Ask the terminal on `in_fd`/`out_fd` (its input set to cbreak meanwhile): what it supports (None when it
    did not answer), and whatever else was read meanwhile (keys typed ahead, for the app to receive)."""
    import termios
    import tty

    before = termios.tcgetattr(in_fd)
    tty.setcbreak(in_fd, termios.TCSANOW)
    received = b""
    try:
        os.write(out_fd, QUESTIONS.encode())
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([in_fd], [], [], left)
            if not readable:
                break
            received += os.read(in_fd, 1024)
            support = read_answers(received.decode(errors="replace"))
            if support is not None:
                return support, typed_besides_answers(received)
        return None, typed_besides_answers(received)
    finally:
        termios.tcsetattr(in_fd, termios.TCSANOW, before)


def typed_besides_answers(received: bytes) -> str:
    """What was read that is no answer to the questions: keys typed while they were asked."""
    text = received.decode(errors="replace")
    for answer in (_CELL_ANSWER, _KITTY_ANSWER, _ATTRIBUTES_ANSWER):
        text = answer.sub("", text, count=1)
    return text


class GraphicsProbe:
    """`ask` in a thread, on this process's terminal; `result()` waits for it."""

    def __init__(self) -> None:
        self._support: GraphicsSupport | None = None
        self._typed = ""
        self._thread = threading.Thread(target=self._run, name="graphics-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._support, self._typed = ask(sys.__stdin__.fileno(), sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (OSError, ValueError, ImportError):
            self._support = None  # textual-image asks for itself

    def result(self) -> GraphicsSupport | None:
        self._thread.join()
        return self._support

    def take_typed(self) -> str:
        """The keys typed while the terminal was asked, once (waiting for the probe if it still asks)."""
        self._thread.join()
        typed, self._typed = self._typed, ""
        return typed


_probe: GraphicsProbe | None = None


def start() -> None:
    """Ask now, in the background, when this process's input and output are a terminal (POSIX)."""
    global _probe
    if _probe is None and os.name == "posix" and _is_terminal(sys.__stdin__) and _is_terminal(sys.__stdout__):
        _probe = GraphicsProbe()


def answers() -> GraphicsSupport | None:
    """What the terminal said (waiting for the probe if it still asks); None: it was not asked or did not say."""
    return _probe.result() if _probe is not None else None


def typed_ahead() -> str:
    """The keys the person typed while the terminal was asked (the probe read them): the app's input is
    given them first, so nothing typed at launch is lost. Empty when there was no probe; given once."""
    return _probe.take_typed() if _probe is not None else ""


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream) and stream.isatty()  # type: ignore[attr-defined]
    except (OSError, ValueError):
        return False
