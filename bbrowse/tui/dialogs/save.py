"""The save dialog: shows where a file will go (the download directory) and lets the user change it.

Every save in the app (log, file, screenshot, replay) asks here first. The field holds the full
proposed path; enter saves, esc cancels. A relative path is taken from the download directory, a
directory gets the proposed name, missing directories are created, and a taken name becomes
`name (1).ext`: nothing is ever overwritten. The dialog answers with the path to write, free at
that moment (the writer still commits with `saving.commit`, which never replaces a file).
"""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from bbrowse.tui.dialogs.base import Dialog, button_label
from bbrowse.tui.saving import download_dir, free_name, resolve_target


class SaveScreen(Dialog[Path | None]):
    """Ask where to save `default_name`; dismissed with the chosen free path, or None."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="save.cancel"),
        Binding("ctrl+s", "submit", "Save", id="save.submit"),
    ]

    def __init__(self, title: str, default_name: str, *, what: str = "") -> None:
        """`title`: e.g. "Save log"; `default_name`: the proposed file name; `what`: a line about the content."""
        super().__init__()
        self.title_text = title
        self.default_name = default_name
        self.what = what
        self.directory = download_dir()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="save-form"):
            yield Static(self.title_text, classes="dialog-title", markup=False)
            if self.what:
                yield Static(self.what, id="save-what", markup=False)
            yield Label("Save to")
            yield Input(str(free_name(self.directory, self.default_name)), id="save-path", select_on_focus=False)
            yield Static("A name that is taken gets (1), (2)…: nothing is overwritten.", id="save-note",
                         markup=False)
            yield Static("", id="save-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (enter)", variant="primary", id="save-ok")
                yield Button(button_label(self.app, "Cancel", "save.cancel"), id="save-cancel")

    def on_mount(self) -> None:
        field = self.query_one("#save-path", Input)
        field.focus()
        self.call_after_refresh(field.action_end)  # the name, at the end of the path, in view

    @on(Input.Submitted, "#save-path")
    @on(Button.Pressed, "#save-ok")
    def action_submit(self) -> None:
        typed = self.query_one("#save-path", Input).value
        try:
            target = resolve_target(typed, self.default_name, self.directory)
        except ValueError as error:
            self.query_one("#save-error", Static).update(str(error).capitalize() + ".")
            return
        except OSError as error:
            self.query_one("#save-error", Static).update(
                f"Cannot save there: {error.strerror or error} ({error.filename or typed})")
            return
        self.dismiss(target)

    @on(Button.Pressed, "#save-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
