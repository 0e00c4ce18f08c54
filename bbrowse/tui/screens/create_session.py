"""The create-session form: name, start URL, headless, timeout. Errors from the service show inline.

The form checks what it sends, as `bbrowse new` does (`bbrowse.session_options`), so the service never
has to guess: the timeout is required (a cleared field is an error, not the service's silent default)
and within 10–259200 s, and a start URL must be a URL (`https://…`, `about:blank`, `data:…`). Its
fields scroll when the terminal is short, and the buttons stay in view.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Static, Switch

from bbrowse.client import ClientError, ServiceError
from bbrowse.session_options import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    check_start_url,
    check_timeout,
)
from bbrowse.tui.app_services import describe_error, services
from bbrowse.tui.dialogs.base import Dialog, button_label
from bbrowse.wire import Browser

__all__ = ["CreateSessionScreen", "check_start_url", "check_timeout"]


class CreateSessionScreen(Dialog[Browser | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="create.cancel"),
        Binding("ctrl+s", "submit", "Create", id="create.submit"),
    ]
    #: Rows of the dialog around its fields (border, padding, title, error line and buttons), and in a short
    #: terminal, where they are compact (`Dialog`), and the footer.
    CHROME_ROWS = 12
    SHORT_CHROME_ROWS = 7

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="create-form"):
            yield Static("New browser session", classes="dialog-title")
            with VerticalScroll(id="create-fields", can_focus=False):
                yield Label("Name (optional, unique)")
                yield Input(placeholder="e.g. checkout-flow", id="name")
                yield Label("Start URL (optional)")
                yield Input(placeholder="https://example.com", id="start-url")
                yield Label(f"Inactivity timeout, seconds ({MIN_TIMEOUT}–{MAX_TIMEOUT})")
                yield Input(str(DEFAULT_TIMEOUT), id="timeout", type="integer")
                with Horizontal(classes="switch-row"):
                    yield Switch(value=True, id="headless")
                    yield Label("Headless")
            yield Static("", id="create-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(button_label(self.app, "Create", "create.submit"), variant="primary", id="create")
                yield Button(button_label(self.app, "Cancel", "create.cancel"), id="cancel")

    _creating = False

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus(scroll_visible=False)  # the first label stays in view
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Give the fields what the dialog (90% of the screen) leaves: they scroll, the buttons stay in view."""
        fields = self.query_one("#create-fields")
        if self.has_class("-short"):
            fields.styles.max_height = max(4, self.size.height - self.SHORT_CHROME_ROWS)
        else:
            fields.styles.max_height = max(4, int(self.size.height * 0.9) - self.CHROME_ROWS)
        if self.focused is self.query_one("#name", Input):
            self.call_after_refresh(fields.scroll_home, animate=False)  # its label too, not only the field

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#create")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        if self._creating:
            return  # a second enter while the first creation is on its way would create a second session
        self._creating = True
        self._create()

    def _refuse(self, field_id: str, problem: str) -> None:
        self.query_one("#create-error", Static).update(problem)
        field = self.query_one(f"#{field_id}", Input)
        field.focus()
        field.scroll_visible()

    @work(exclusive=True, group="create-session")
    async def _create(self) -> None:
        try:
            await self._create_once()
        finally:
            self._creating = False

    async def _create_once(self) -> None:
        error = self.query_one("#create-error", Static)
        start_url, problem = check_start_url(self.query_one("#start-url", Input).value)
        if problem:
            self._refuse("start-url", problem)
            return
        timeout, problem = check_timeout(self.query_one("#timeout", Input).value)
        if problem:
            self._refuse("timeout", problem)
            return
        error.update("Creating…")
        try:
            browser = await services(self).connected_client().sessions.create(
                name=self.query_one("#name", Input).value.strip() or None,
                start_url=start_url,
                headless=self.query_one("#headless", Switch).value,
                timeout_seconds=timeout,
            )
        except ServiceError as exc:
            error.update(describe_error(exc))
            return
        except ClientError as exc:  # no answer: the service stopped or is unreachable
            services(self).connection_lost(exc)
            error.update("The service is not answering, so no session was created. The app is looking for it "
                         "(top bar); try again once it says connected, or press P to pick another profile.")
            return
        self.dismiss(browser)
