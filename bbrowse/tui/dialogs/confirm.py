"""A yes/no question as a modal: `y` confirms, `n`/esc cancel, enter presses the focused button (Cancel at first)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from bbrowse.tui.dialogs.base import Dialog, button_label


class ConfirmScreen(Dialog[bool]):
    AUTO_FOCUS = "#confirm-no"  # the safe answer has the focus: enter cancels
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, confirm_label: str = "OK") -> None:
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="dialog-question", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yes = button_label(self.app, self.confirm_label, "confirm.yes")
                yield Button(yes, variant="error", id="confirm-yes")
                yield Button(button_label(self.app, "Cancel", "confirm.no"), id="confirm-no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
