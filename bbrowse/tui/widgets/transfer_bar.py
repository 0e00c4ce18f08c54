"""The progress of a save, a download or an upload: a label over a bar, shown while it runs and a while after.

Workers report, handlers draw: `begin`, `report` and `end` only post messages (a worker may call them), and
the widget's handlers draw them, so a transfer that outlives its pane draws nothing.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

#: Seconds the finished bar stays up, so the user sees where the file went.
FINISHED_SECONDS = 6.0
#: The bar moves at most this often (a transfer reports every chunk).
REPORT_EVERY_SECONDS = 0.05


class TransferBar(Vertical):
    """A label (`#<id>-label`) and a bar (`#<id>-bar`); has the class `active` while shown."""

    DEFAULT_CSS = """
    TransferBar { height: auto; display: none; }
    TransferBar.active { display: block; }
    TransferBar ProgressBar { width: 1fr; }
    """

    class Began(Message):
        def __init__(self, text: str, total: int | None) -> None:
            super().__init__()
            self.text = text
            self.total = total

    class Moved(Message):
        def __init__(self, done: int) -> None:
            super().__init__()
            self.done = done

    class Ended(Message):
        def __init__(self, text: str | None, done: int) -> None:
            super().__init__()
            self.text = text
            self.done = done

    def __init__(self, *, id: str, show_eta: bool = True) -> None:
        super().__init__(id=id)
        self._show_eta = show_eta
        self._reported_at = 0.0
        self._hide: Timer | None = None
        #: The size the last transfer announced (None: unknown, the bar pulsed).
        self.total: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id=f"{self.id}-label", markup=False)
        yield ProgressBar(id=f"{self.id}-bar", show_eta=self._show_eta)

    # what a worker calls (posts only) ------------------------------------------------

    def begin(self, text: str, total: int | None = None) -> None:
        """Show the bar with `text`; `total` bytes when known (else it pulses)."""
        self._reported_at = 0.0
        self.post_message(self.Began(text, total))

    def report(self, done: int) -> None:
        """`done` bytes so far (a `bbrowse.transfer.Progress`); posted at most every REPORT_EVERY_SECONDS."""
        now = time.monotonic()
        if now - self._reported_at >= REPORT_EVERY_SECONDS:
            self._reported_at = now
            self.post_message(self.Moved(done))

    def end(self, text: str | None, done: int = 0) -> None:
        """The full bar with `text` for FINISHED_SECONDS, or (None: it failed) gone at once."""
        self.post_message(self.Ended(text, done))

    # drawing -----------------------------------------------------------------------

    @on(Began)
    def _began(self, message: Began) -> None:
        message.stop()
        if self._hide is not None:
            self._hide.stop()
            self._hide = None
        self.total = message.total
        self.add_class("active")
        self.query_one(Static).update(Text(message.text))
        self.query_one(ProgressBar).update(total=message.total or None, progress=0)

    @on(Moved)
    def _moved(self, message: Moved) -> None:
        message.stop()
        self.query_one(ProgressBar).update(progress=message.done)

    @on(Ended)
    def _ended(self, message: Ended) -> None:
        message.stop()
        if message.text is None:
            self.remove_class("active")
            return
        full = max(message.done, 1)
        self.query_one(ProgressBar).update(total=full, progress=full)
        self.query_one(Static).update(Text(message.text))
        self._hide = self.set_timer(FINISHED_SECONDS, lambda: self.remove_class("active"))
