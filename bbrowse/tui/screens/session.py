"""One session: tabs for its shells, logs, files, screenshot, replays and events.

Panes are mounted the first time their tab is shown, so opening a session starts only the shell,
and a pane's streams and timers belong to it (they stop when the screen closes). Keys follow terminal
tabs and k9s: opening a session lands on its tab bar, not inside the terminal, so the next key meant
for the app is never typed into the remote program (`SessionScreen` says how focus moves).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from bbrowse.client import KeepAlive
from bbrowse.tui.app_services import services
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.panes.base import SessionPane
from bbrowse.tui.panes.events import EventsPane
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.panes.replays import ReplaysPane
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.panes.shells import ShellsPane
from bbrowse.tui.screens.base import BbrowseScreen
from bbrowse.tui.terminal.widget import alt_digit_keys
from bbrowse.wire import Browser

#: Makes a tab's pane for a session id (a pane class, or a test's fixed pane).
PaneFactory = Callable[[str], SessionPane]

#: (tab id, label, pane factory), in tab order; alt+1..alt+5 (and 1..5) switch to them.
TABS: tuple[tuple[str, str, PaneFactory], ...] = (
    ("shells", "Shells", ShellsPane),
    ("logs", "Logs", LogsPane),
    ("files", "Files", FilesPane),
    ("screenshot", "Screenshot", ScreenshotPane),
    ("replays", "Replays", ReplaysPane),
    ("events", "Events", EventsPane),
)

#: The tab whose home is the tab bar: its pane is a terminal, where keys would go to the program.
TERMINAL_TABS = frozenset({"shells"})
#: The tabs an ended (deleted) session still has: the service keeps its replays and events.
KEPT_TABS = ("replays", "events")


class EndedPane(SessionPane):
    """In place of a tab that needs a live session, on an ended session's screen: one line saying so."""

    def compose(self) -> ComposeResult:
        yield Static("The session has ended: its shells, logs, files and browser are gone. "
                     "Its replays (5) and events (6) are kept.", classes="ended-line", markup=False)

    def focus_default(self) -> None:
        screen = self.screen
        if isinstance(screen, SessionScreen):
            screen.tab_bar.focus()


class SessionScreen(BbrowseScreen):
    """A session's tabs. `1`–`5` and the arrows on the tab bar pick a tab, `enter` goes into the shown
    pane (into the shell on Shells), `esc` goes back to the sessions table. `alt+1`…`alt+5` switch tabs
    from anywhere, inside a terminal too; plain `1`–`5` wherever focus is not in a terminal or a text
    field; a click on a tab works too. Inside a terminal every key goes to the program; `ctrl+]` leaves.

    A tab shown again gets back the focus it had, except a terminal tab: Shells, however picked, lands on
    the tab bar. A tab picked with a number key takes the keyboard, one picked with the arrows leaves it
    on the tab bar.
    """

    PALETTE_NAME = "Session"
    AUTO_FOCUS = ""  # not Textual's "first focusable widget": the screen decides (the tab bar, or the tab's pane)
    BINDINGS = [
        Binding("escape", "back", "Back", id="session.back"),
        Binding("enter", "enter_pane", "Into tab", id="session.enter"),
        *(
            Binding(f"{alt_digit_keys(number)},{number}", f"show_tab('{tab_id}')", f"{label} tab",
                    id=f"session.tab_{tab_id}", show=False)
            for number, (tab_id, label, _) in enumerate(TABS, start=1)
        ),
    ]

    def __init__(self, browser: Browser, initial_tab: str = "shells", *,
                 panes: Mapping[str, PaneFactory] | None = None, keep_alive: bool = True) -> None:
        """`panes` replaces some tabs' pane factories and `keep_alive=False` holds no CDP connection (fixed
        content for snapshots, with no service)."""
        super().__init__()
        self.browser = browser
        self.initial_tab = initial_tab
        self._factories = {tab_id: (panes or {}).get(tab_id, factory) for tab_id, _, factory in TABS}
        if self.ended:  # read-only: what the service keeps after the session ended
            self._factories.update({tab_id: EndedPane for tab_id, _, _ in TABS if tab_id not in KEPT_TABS})
            if initial_tab not in KEPT_TABS:
                self.initial_tab = KEPT_TABS[0]
        #: The widget that last had the focus in each tab, given back when the tab is shown again.
        self._focus_in_tab: dict[str, Widget] = {}
        #: Set by the number keys: the next shown tab takes the keyboard even from the tab bar.
        self._take_focus = False
        #: The tab shown last (TabbedContent also announces the initial tab, which on_mount shows).
        self._current_tab: str | None = None
        self._keepalive: KeepAlive | None = None
        self._keep_alive = keep_alive and not self.ended  # an ended session has nothing to keep alive

    @property
    def session_id(self) -> str:
        return self.browser.session_id

    @property
    def ended(self) -> bool:
        """Opened on an ended (deleted) session: read-only, its replays and events only."""
        return self.browser.deleted_at is not None

    def crumbs(self) -> tuple[str, ...]:
        name = f"{self.browser.name} ({self.browser.session_id})" if self.browser.name else self.browser.session_id
        return ("Sessions", f"{name} · ended" if self.ended else name)

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with TabbedContent(id="session-tabs", initial=self.initial_tab):
            for number, (tab_id, label, _) in enumerate(TABS, start=1):
                yield TabPane(f"{label} {number}", id=tab_id)
        yield BbrowseFooter()

    @property
    def tabbed(self) -> TabbedContent:
        return self.query_one("#session-tabs", TabbedContent)

    @property
    def tab_bar(self) -> Tabs:
        """The session's own tab bar (not a pane's inner tabs, such as the shells')."""
        return self.tabbed.query_children(Tabs).first()

    async def on_mount(self) -> None:
        # A CDP connection held while the session is shown: on Kernel only CDP, live-view and computer
        # calls are activity, so a person in its shell or files would otherwise see it reaped.
        if self._keep_alive:
            self._keepalive = KeepAlive(services(self).connected_client(), self.session_id)
            self._keepalive.start()
        await self._show(self.initial_tab, focus_pane=self.initial_tab not in TERMINAL_TABS)

    async def on_unmount(self) -> None:
        if self._keepalive is not None:
            await self._keepalive.aclose()  # left: the session's own timeout applies again

    @on(TabbedContent.TabActivated, "#session-tabs")
    async def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        if event.pane is None or not event.pane.id or event.pane.id == self._current_tab:
            return
        take, self._take_focus = self._take_focus, False
        await self._show(event.pane.id, focus_pane=take or not self.tab_bar.has_focus)

    def _remember_focus(self) -> None:
        """Before leaving the shown tab: remember where the focus is in it, to give it back later.

        Taken when the user switches (not from focus events, which a pane's own start-up focus, such as
        a new shell's terminal, would also leave behind)."""
        focused = self.focused
        tab = self.palette_tab_of(focused) if focused is not None else None
        if focused is not None and tab is not None and tab[0] == self._current_tab:
            self._focus_in_tab[tab[0]] = focused

    async def _show(self, tab_id: str, *, focus_pane: bool) -> None:
        """Mount the tab's pane on first view; then give it the keyboard (or leave it on the tab bar)."""
        self._current_tab = tab_id
        pane = self.query_one(f"#{tab_id}", TabPane)
        first_view = not pane.children
        if first_view:
            await pane.mount(self._factories[tab_id](self.session_id))  # composed before anything asks for it
        if focus_pane:
            self.call_after_refresh(self._focus_pane, tab_id, first_view=first_view)
        else:
            self.call_after_refresh(self._focus_tab_bar)

    def _focus_tab_bar(self) -> None:
        self.tab_bar.focus()

    def _focus_pane(self, tab_id: str, *, into: bool = False, first_view: bool = False) -> None:
        """The widget the tab had, else the pane's default; a terminal tab always lands on the tab bar,
        unless `into` (enter), which goes into the pane (the shell)."""
        if self.tabbed.active != tab_id:
            return
        pane = self.query_one(f"#{tab_id}", TabPane)
        remembered = None if first_view else self._focus_in_tab.get(tab_id)
        if tab_id in TERMINAL_TABS and not into:
            self._focus_tab_bar()
            return
        if not into and remembered is not None and remembered.is_attached and remembered.focusable \
                and pane in remembered.ancestors:
            remembered.focus()
            return
        content = pane.children[0] if pane.children else None
        if isinstance(content, SessionPane):
            content.focus_default()

    async def open_tab(self, tab_id: str) -> Widget:
        """Show `tab_id` (mounting its pane if needed) and return its pane: for the palette's commands."""
        pane = self.query_one(f"#{tab_id}", TabPane)
        if self.tabbed.active != tab_id:
            self._remember_focus()
            self._take_focus = True
            self.tabbed.active = tab_id
        if not pane.children:
            await self._show(tab_id, focus_pane=True)
        return pane.children[0]

    def palette_tab_of(self, widget: Widget) -> tuple[str, str] | None:
        """(tab id, label) of the tab holding `widget`, for the palette."""
        labels = {tab_id: label for tab_id, label, _ in TABS}
        for ancestor in widget.ancestors_with_self:
            if isinstance(ancestor, TabPane) and ancestor.id in labels and ancestor.parent is not None \
                    and ancestor.parent.parent is self.tabbed:
                return ancestor.id, labels[ancestor.id]
        return None

    def palette_tabs(self) -> list[tuple[str, str, PaneFactory]]:
        """The tabs whose pane is not mounted yet (their actions open the tab first)."""
        return [(tab_id, label, self._factories[tab_id]) for tab_id, label, _ in TABS
                if not self.query_one(f"#{tab_id}", TabPane).children]

    def action_back(self) -> None:
        self.app.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`enter` goes into the tab only from the tab bar (the footer shows it only there)."""
        if action == "enter_pane":
            return self.focused is None or self.focused is self.tab_bar
        return True

    def action_enter_pane(self) -> None:
        """enter on the tab bar: into the shown tab (into the shell on Shells)."""
        active = self.tabbed.active
        if active:
            self._focus_pane(active, into=True)

    def action_show_tab(self, tab: str) -> None:
        if self.tabbed.active == tab:
            self._focus_pane(tab)
            return
        self._remember_focus()
        self._take_focus = True
        self.tabbed.active = tab
