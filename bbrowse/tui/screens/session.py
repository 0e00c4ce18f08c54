"""One session: tabs for its shells, logs, files, screenshot and replays.

Panes are mounted the first time their tab is shown, so opening a session starts only the shell,
and a pane's streams and timers belong to it (they stop when the screen closes). `esc` goes back to
the sessions table, except inside a terminal, where keys belong to the remote program and a double
`esc` leaves the terminal first.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane

from bbrowse.tui.app import BbrowseScreen
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.panes.replays import ReplaysPane
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.panes.shells import ShellsPane
from bbrowse.wire import Browser

#: (tab id, label, pane factory), in tab order; digits 1..5 switch to them.
TABS: tuple[tuple[str, str, Callable[[str], Widget]], ...] = (
    ("shells", "Shells", ShellsPane),
    ("logs", "Logs", LogsPane),
    ("files", "Files", FilesPane),
    ("screenshot", "Screenshot", ScreenshotPane),
    ("replays", "Replays", ReplaysPane),
)


class SessionScreen(BbrowseScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="session.back"),
        *(
            Binding(str(number), f"show_tab('{tab_id}')", label, id=f"session.tab_{tab_id}", show=False)
            for number, (tab_id, label, _) in enumerate(TABS, start=1)
        ),
    ]

    def __init__(self, browser: Browser, initial_tab: str = "shells") -> None:
        super().__init__()
        self.browser = browser
        self.initial_tab = initial_tab

    @property
    def session_id(self) -> str:
        return self.browser.session_id

    def crumbs(self) -> tuple[str, ...]:
        if self.browser.name:
            return ("Sessions", f"{self.browser.name} ({self.browser.session_id})")
        return ("Sessions", self.browser.session_id)

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with TabbedContent(id="session-tabs", initial=self.initial_tab):
            for number, (tab_id, label, _) in enumerate(TABS, start=1):
                yield TabPane(f"{label} [{number}]", id=tab_id)
        yield Footer()

    async def on_mount(self) -> None:
        await self._show(self.initial_tab)

    @on(TabbedContent.TabActivated)
    async def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane is not None and event.pane.id:
            await self._show(event.pane.id)

    async def _show(self, tab_id: str) -> None:
        """Mount the tab's pane on first view, then hand it the keyboard so its keys work at once."""
        pane = self.query_one(f"#{tab_id}", TabPane)
        if not pane.children:
            factory = next(factory for known, _, factory in TABS if known == tab_id)
            await pane.mount(factory(self.session_id))  # composed before anything asks for its widgets
        content = pane.children[0]
        focus = getattr(content, "focus_default", None) or getattr(content, "focus_active", None)
        if callable(focus):
            self.call_after_refresh(focus)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
