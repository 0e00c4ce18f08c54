"""The base of bbrowse's dialogs: they fit a short terminal, and the footer lists their own keys.

At 80×24 a dialog of bordered fields (3 rows each) did not fit: the new-session form hid its timeout and
Headless switch behind a scrollbar, "Open a log" lost its buttons. Below `SHORT_ROWS` rows the dialog is
compact (Textual's vertical breakpoint class `-short`, see app.tcss: less padding, switches one row high;
inputs and buttons in their compact style). A footer of the dialog's own covers the one of the screen
behind, which listed keys that do nothing while the dialog is open.
"""

from __future__ import annotations

from typing import TypeVar

from textual import events, on
from textual.app import App
from textual.screen import ModalScreen
from textual.widgets import Button, Input

from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.textual_private import keymap_of

#: Below this many rows the dialogs are compact.
SHORT_ROWS = 32

ResultType = TypeVar("ResultType")


def button_label(app: App, label: str, binding_id: str) -> str:
    """A button's label with the key that presses it in force: `Create (ctrl+s)`, or as `[keys]` remapped it."""
    return f"{label} ({hint_text('{' + binding_id + '}', keymap_of(app))})"


class Dialog(ModalScreen[ResultType]):
    """A modal dialog (its body a `.dialog` container) that fits short terminals and has its own footer.

    Its set-up runs in handlers of its own, so subclasses keep their `on_mount` / `on_resize`."""

    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_ROWS, "-tall")]

    @on(events.Mount)
    async def _dialog_mounted(self) -> None:
        await self.mount(BbrowseFooter())
        self._compact_fields()
        self.refresh_bindings()  # the footer came after the screen announced its bindings

    @on(events.Resize)
    def _dialog_resized(self) -> None:
        self._compact_fields()

    def _compact_fields(self) -> None:
        short = self.app.size.height < SHORT_ROWS
        for field in self.query(Input).results():
            field.compact = short
        for button in self.query(Button).results():
            button.compact = short
