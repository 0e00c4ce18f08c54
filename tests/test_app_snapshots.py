"""SVG snapshots pinning the layout of the sessions screen and of a shell pane.

Deterministic by construction: fixed sessions and a fixed clock for the table, fixed bytes fed to
the terminal; no service is involved (the live behaviour is tested against a real service in
test_app_sessions.py and test_app_shell.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from textual import events
from textual.app import App, ComposeResult

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.wire import Browser

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
