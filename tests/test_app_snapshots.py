"""SVG snapshots pinning the layout of the sessions screen, the new-session form, a session screen and a
shell pane, at 80×24 (the smallest terminal the app promises to work in) and 160×45.

Deterministic by construction: fixed sessions and a fixed clock for the table, fixed lines in a log
pane, fixed bytes fed to the terminal; no service is involved (the live behaviour is tested against
a real service in test_app_sessions.py, test_app_keyboard.py and test_app_shell.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from textual import events
from textual.app import App, ComposeResult

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.tui.widgets.log_view import LogPanel
from bbrowse.wire import Browser

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


def fixed_browsers() -> list[Browser]:
    rows = [("checkout-flow", "k2w8x1c0q9m3v7b5n4z6a1s2", 3600, True, 75),
            ("search-crawler", "p0o9i8u7y6t5r4e3w2q1a2s3", 300, True, 640),
            (None, "zz9yy8xx7ww6vv5uu4tt3ss2", 86400, False, 7300)]
    return [
        Browser(session_id=sid, cdp_ws_url="ws://127.0.0.1:9222/devtools/browser/x", headless=headless,
                stealth=False, timeout_seconds=timeout, name=name, created_at=NOW - timedelta(seconds=age))
        for name, sid, timeout, headless, age in rows
    ]


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("BBROWSE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("TZ", "UTC")


class FixedSessionsApp(BbrowseApp):
    """The real app, showing a fixed sessions table instead of connecting anywhere."""

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # the base class would connect to a service
        self.service_label = "embedded · http://127.0.0.1:7780"
        self.connection_state = "connected"
        self.push_screen(SessionsScreen(fixed_browsers(), live=False, clock=lambda: NOW))


def test_sessions_screen(snap_compare) -> None:
    assert snap_compare(FixedSessionsApp(target=None), terminal_size=(110, 16))


@pytest.mark.parametrize("size", SIZES)
def test_sessions_screen_at(snap_compare, size) -> None:
    assert snap_compare(FixedSessionsApp(target=None), terminal_size=size)


class FormApp(FixedSessionsApp):
    def on_mount(self, event: events.Mount) -> None:
        super().on_mount(event)
        self.push_screen(CreateSessionScreen())


async def steady_cursor(pilot) -> None:
    """The focused field's cursor drawn on, not blinking (a blink would make the picture differ run to run)."""
    from textual.widgets import Input

    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_new_session_form_at(snap_compare, size) -> None:
    assert snap_compare(FormApp(target=None), terminal_size=size, run_before=steady_cursor)


LOG_LINES = [f"2026-11-21 10:00:{i:02d} INFO  GET /browsers/k2w8x1c0q9m3v7b5n4z6a1s2/fs/file_info 200 ({i} ms)"
             for i in range(30)] + ["2026-11-21 10:00:30 \x1b[31mERROR\x1b[0m could not connect: renderer crashed"]


class FixedLogsPane(LogsPane):
    """The Logs tab with one pane of fixed lines and no stream."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, open_default=False)

    async def on_mount(self) -> None:
        panel = LogPanel("chromium", "chromium", capacity=1000, id="log-1")
        await self.query_one("#logs-panels").mount(panel)
        self.add_class("has-panels")
        panel.add_class("active")
        panel.view.append_lines(LOG_LINES)
        panel.connection = "● live"
        panel.focus_view()


class SessionApp(FixedSessionsApp):
    """A session screen on its Logs tab, with fixed content."""

    def on_mount(self, event: events.Mount) -> None:
        super().on_mount(event)
        self.push_screen(SessionScreen(fixed_browsers()[0], initial_tab="logs", panes={"logs": FixedLogsPane},
                                       keep_alive=False))


@pytest.mark.parametrize("size", SIZES)
def test_session_screen_at(snap_compare, size) -> None:
    assert snap_compare(SessionApp(target=None), terminal_size=size)


def test_sessions_screen_empty_state(snap_compare) -> None:
    class Empty(BbrowseApp):
        def on_mount(self, event: events.Mount) -> None:
            event.prevent_default()
            self.service_label = "embedded · http://127.0.0.1:7780"
            self.connection_state = "connected"
            self.push_screen(SessionsScreen([], live=False, clock=lambda: NOW))

    assert snap_compare(Empty(target=None), terminal_size=(90, 12))


SHELL_OUTPUT = (
    b"\x1b[1;32mroot@vm\x1b[0m:\x1b[1;34m~/work\x1b[0m# ls --color\r\n"
    b"\x1b[1;34mdocs\x1b[0m  \x1b[1;32mrun.sh\x1b[0m  notes.txt  \x1b[38;5;208morange\x1b[0m  "
    b"\x1b[38;2;255;0;128mtruecolour\x1b[0m\r\n"
    b"\x1b[1mbold\x1b[0m \x1b[3mitalic\x1b[0m \x1b[4munderline\x1b[0m \x1b[7mreverse\x1b[0m "
    + "日本語\r\n".encode()
    + b"\x1b[1;32mroot@vm\x1b[0m:\x1b[1;34m~/work\x1b[0m# "
)


class ShellApp(App):
    CSS = "TerminalView { height: 1fr; border: round $accent; }"

    def compose(self) -> ComposeResult:
        terminal = TerminalView()
        terminal.border_title = "shell 1 · process 4f909cfe"
        yield terminal

    async def on_mount(self) -> None:
        terminal = self.query_one(TerminalView)
        terminal.focus()
        terminal.feed(SHELL_OUTPUT)
        await terminal.wait_drained()


def test_shell_pane(snap_compare) -> None:
    async def settle(pilot) -> None:
        await pilot.app.query_one(TerminalView).wait_drained()
        await pilot.pause(0.1)

    assert snap_compare(ShellApp(), terminal_size=(80, 10), run_before=settle)


async def test_at_80x24_the_columns_the_form_buttons_and_the_session_name_fit() -> None:
    from textual.widgets import DataTable

    from bbrowse.tui.widgets.service_bar import ServiceBar

    app = FixedSessionsApp(target=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        widths = {key.value: column.get_render_width(table) for key, column in table.columns.items()}
        assert sum(widths.values()) <= table.scrollable_content_region.width, widths  # no column off screen
        for key in ("timeout", "state"):  # shrunk last: read in full
            column = table.columns[key]
            assert column.auto_width or column.width >= column.content_width, key
        assert not table.show_horizontal_scrollbar

        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, CreateSessionScreen)
        dialog = form.query_one("#create-form").region
        for button in ("#create", "#cancel"):
            region = form.query_one(button).region
            assert dialog.contains_region(region) and region.bottom <= 24, (button, region, dialog)

    app = SessionApp(target=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        bar = app.screen.query_one(ServiceBar)
        assert str(bar.render()).endswith("Sessions › checkout-flow")
