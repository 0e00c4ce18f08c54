"""Asked before quitting would end sessions: the embedded service this app started stops with it.

Answers "stop" (quit and stop the service: its sessions end, recordings are finalised and kept),
"keep" (quit and leave the service running: the sessions stay, the CLI and the next app find it),
or None (stay).
"""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from bbrowse.tui.dialogs.base import Dialog, button_label

QuitChoice = Literal["stop", "keep"]


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class QuitScreen(Dialog[QuitChoice | None]):
    BINDINGS = [
        Binding("y", "answer('stop')", "Quit and stop", id="quit.stop"),
        Binding("k", "answer('keep')", "Quit, keep running", id="quit.keep"),
        Binding("n,escape", "answer(None)", "Stay", id="quit.cancel"),
    ]

    def __init__(self, sessions: int, service: str) -> None:
        super().__init__()
        self.sessions = sessions
        self.service = service

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="quit-dialog"):
            yield Static("Quit bbrowse?", classes="dialog-title")
            yield Static(
                f"The embedded service this app started ({self.service}) stops with it, ending "
                f"{plural(self.sessions, 'session')} and {'its' if self.sessions == 1 else 'their'} browsers. "
                "Recordings are finalised and kept.\n\n"
                "Keep it running instead, and the sessions stay for the CLI and the next app.",
                classes="dialog-question", id="quit-question", markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button(button_label(self.app, "Quit and stop", "quit.stop"), variant="error", id="quit-stop")
                yield Button(button_label(self.app, "Keep running", "quit.keep"), variant="primary", id="quit-keep")
                yield Button(button_label(self.app, "Stay", "quit.cancel"), id="quit-cancel")

    def on_mount(self) -> None:
        self.query_one("#quit-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choices: dict[str, QuitChoice] = {"quit-stop": "stop", "quit-keep": "keep"}
        self.dismiss(choices.get(event.button.id or ""))

    def action_answer(self, choice: QuitChoice | None) -> None:
        self.dismiss(choice)
