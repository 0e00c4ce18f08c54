"""The create-session form: name, start URL, headless, timeout. Errors from the service show inline."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, Switch

from bbrowse.client import ClientError
from bbrowse.tui.app import describe_error
from bbrowse.wire import Browser


class CreateSessionScreen(ModalScreen[Browser | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="create.cancel"),
        Binding("ctrl+s", "submit", "Create", id="create.submit"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="create-form"):
            yield Static("New browser session", classes="dialog-title")
            yield Label("Name (optional, unique)")
            yield Input(placeholder="e.g. checkout-flow", id="name")
            yield Label("Start URL (optional)")
            yield Input(placeholder="https://example.com", id="start-url")
            yield Label("Inactivity timeout, seconds (10–259200)")
            yield Input("300", id="timeout", type="integer")
            with Horizontal(classes="switch-row"):
                yield Switch(value=True, id="headless")
                yield Label("Headless")
            yield Static("", id="create-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Create (ctrl+s)", variant="primary", id="create")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#create")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        self._create()

    @work(exclusive=True, group="create-session")
    async def _create(self) -> None:
        error = self.query_one("#create-error", Static)
        timeout_text = self.query_one("#timeout", Input).value.strip()
        try:
            timeout = int(timeout_text) if timeout_text else None
        except ValueError:
            error.update("Timeout must be a whole number of seconds.")
            return
        error.update("Creating…")
        try:
            browser = await self.app.client.sessions.create(
                name=self.query_one("#name", Input).value.strip() or None,
                start_url=self.query_one("#start-url", Input).value.strip() or None,
                headless=self.query_one("#headless", Switch).value,
                timeout_seconds=timeout,
            )
        except ClientError as exc:
            error.update(describe_error(exc))
            return
        self.dismiss(browser)
