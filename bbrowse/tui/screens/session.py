"""One session: tabs for its shells and replays (logs, files and screenshots arrive with the next app issue).

`esc` goes back to the sessions table, except inside a terminal, where keys belong to the remote
program and a double `esc` leaves the terminal first.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, TabbedContent, TabPane

from bbrowse.tui.app import BbrowseScreen
from bbrowse.tui.panes.replays import ReplaysPane
from bbrowse.tui.panes.shells import ShellsPane
from bbrowse.wire import Browser


class SessionScreen(BbrowseScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="session.back"),
        Binding("1", "show_tab('shells')", "Shells", id="session.tab_shells", show=False),
        Binding("2", "show_tab('replays')", "Replays", id="session.tab_replays", show=False),
    ]

    def __init__(self, browser: Browser) -> None:
        super().__init__()
        self.browser = browser

    @property
    def session_id(self) -> str:
        return self.browser.session_id

    def crumbs(self) -> tuple[str, ...]:
        label = self.browser.name or self.browser.session_id
        if self.browser.name:
            label = f"{self.browser.name} ({self.browser.session_id})"
        return ("Sessions", label)

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with TabbedContent(id="session-tabs"):
            with TabPane("Shells [1]", id="shells"):
                yield ShellsPane(self.session_id)
            with TabPane("Replays [2]", id="replays"):
                yield ReplaysPane(self.session_id)
        yield Footer()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
