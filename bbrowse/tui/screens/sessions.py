"""The sessions table: live, filterable, with create, delete and open.

The table refreshes in place while it is shown (every couple of seconds, less often while nothing
changes: `bbrowse.tui.polling`): rows are keyed by session id and only changed cells are rewritten, so
the cursor and the scroll position stay where the user left them. While the service does not answer,
the table is dimmed and a line says since when it has not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import DataTable, Input, Static

from bbrowse.client import ClientError
from bbrowse.humanize import absolute_time, duration, relative_time
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.live_table import ColumnFit, ellipsized, fit_columns, sync_rows
from bbrowse.tui.polling import Poller
from bbrowse.tui.screens.base import BbrowseScreen
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.selection import SelectionActions
from bbrowse.tui.textual_private import keymap_of
from bbrowse.wire import Browser, SessionStatusFilter

REFRESH_SECONDS = 2.0
#: The longest wait between two refreshes while nothing changes.
LONGEST_REFRESH_SECONDS = 10.0

COLUMNS = (("name", "Name"), ("id", "ID"), ("created", "Created"), ("headless", "Headless"),
           ("timeout", "Timeout"), ("state", "State"))
#: When the table is narrow (80 columns): the creation time gives way first, then Headless, the name
#: and the id; the state and the timeout keep their width longest.
FITS = (ColumnFit("created", 0, 8), ColumnFit("headless", 1, 3), ColumnFit("name", 2, 8), ColumnFit("id", 3, 10),
        ColumnFit("timeout", 4, 4), ColumnFit("state", 5, 6))

class SessionsTable(DataTable):
    """The sessions table: enter opens the highlighted session, and the footer says so (DataTable's own
    enter, hidden, took the footer's place of the screen's "⏎ Open" as soon as the table had focus)."""

    BINDINGS = [Binding("enter", "screen.open", "Open", show=True)]


def session_cells(browser: Browser, now: datetime | None = None, *, selected: bool = False) -> dict[str, str | Text]:
    """The cells of one session's row: `Text` (remote text is never parsed as markup) that ends with an
    ellipsis when its column is narrowed; a selected session's name starts with ✓."""
    created = f"{relative_time(browser.created_at, now)}  {absolute_time(browser.created_at)}"
    state = Text("deleted", style="red") if browser.deleted_at else Text("active", style="green")
    cells: dict[str, Text] = {
        "name": Text(("✓ " if selected else "") + (browser.name or "—"), style="bold" if selected else ""),
        "id": Text(browser.session_id),
        "created": Text(created),
        "headless": Text("yes" if browser.headless else "no"),
        "timeout": Text(duration(browser.timeout_seconds)),
        "state": state,
    }
    if browser.deleted_at:  # an ended session (listed with `a`): dimmed
        for cell in cells.values():
            cell.stylize("dim")
    return {key: ellipsized(value) for key, value in cells.items()}


def _shown(browsers: dict[str, Browser]) -> dict[str, tuple[object, ...]]:
    """What the table shows of each session (not its URLs, whose tokens are minted afresh at every read)."""
    return {key: (b.name, b.created_at, b.headless, b.timeout_seconds, b.deleted_at) for key, b in browsers.items()}


def matches(browser: Browser, needle: str) -> bool:
    needle = needle.strip().lower()
    return not needle or needle in browser.session_id.lower() or needle in (browser.name or "").lower()


class SessionsScreen(SelectionActions, BbrowseScreen):
    PALETTE_NAME = "Sessions"
    #: Not Textual's "first focusable widget" on resume, which counts a hidden (display: none) filter box
    #: as focusable: the keys then went into it. `_keep_focus_in_view` decides instead.
    AUTO_FOCUS = ""
    BINDINGS = [
        Binding("n", "create", "New session", id="sessions.create"),
        Binding("d", "delete", "Delete", id="sessions.delete"),
        Binding("enter", "open", "Open", id="sessions.open", show=True),
        Binding("slash", "filter", "Filter", id="sessions.filter"),
        Binding("a", "toggle_ended", "Show ended", id="sessions.show_ended"),
        # many at once (not in the footer, which has no room at 80 columns; the palette and ? list them)
        Binding("space", "select", "Select", id="sessions.select", show=False),
        Binding("w", "wall", "Session wall", id="sessions.wall", show=False),
        Binding("S", "screenshot_selected", "Screenshot each", id="sessions.screenshots", show=False),
        Binding("R", "record_selected", "Record on each (again: stop)", id="sessions.record", show=False),
        Binding("b", "broadcast", "Broadcast typing", id="sessions.broadcast", show=False),
        # not in the footer (it is refreshed while shown; at 80 columns the footer has no room for it)
        Binding("r", "refresh", "Refresh", id="sessions.refresh", show=False),
        Binding("escape", "clear_filter", "Clear filter", id="sessions.clear_filter", show=False),
        Binding("q", "app.quit", "Quit", id="sessions.quit"),
    ]

    #: Ended (deleted) sessions are listed too (`a`): their replays and events are kept.
    show_ended: var[bool] = var(False, init=False)

    def __init__(
        self,
        browsers: Iterable[Browser] | None = None,
        *,
        live: bool = True,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`browsers` pre-fills the table (live: as just listed, so the first ask waits); `live=False` never asks
        the service (fixed layouts, snapshots); `clock` gives "now" for the relative times."""
        super().__init__()
        self._browsers: dict[str, Browser] = {b.session_id: b for b in browsers or ()}
        self._loaded = browsers is not None
        #: Shown with what was just listed: the first showing asks nothing more.
        self._just_listed = browsers is not None and live
        self._live = live
        self._clock = clock
        self._poller = Poller(self, self.refresh_sessions, every=REFRESH_SECONDS, longest=LONGEST_REFRESH_SECONDS)
        #: A session screen is being opened (until this screen is shown again).
        self._opening = False
        self._offered_open = True  # whether the footer offers "Open" (refreshed when rows come or go)
        #: Sessions deleted from this table (their leaving the list is no news).
        self._deleted_here: set[str] = set()
        #: When the table last matched the service (shown while the service does not answer).
        self._fresh_at: datetime | None = None
        #: Ids of the sessions selected (`space`) for actions on many at once; the wall shares it.
        self.selection: set[str] = set()

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with Vertical(id="sessions-body"):
            yield Input(placeholder="filter by name or id (enter to apply, esc to clear)", id="filter")
            yield Static("", id="sessions-stale", markup=False)
            yield SessionsTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="sessions-empty")
        yield BbrowseFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        filter_input = self.query_one("#filter", Input)
        last_filter = services(self).last_filter
        filter_input.value = last_filter
        filter_input.display = bool(last_filter)
        self._apply()
        table.focus()
        self.watch(self.app, "connection_state", self._connection_changed)
        if self._live:
            self._poller.start(answered=self._just_listed)
            if self._just_listed:
                self._fresh_at = self._clock()

    def _connection_changed(self, state: str) -> None:
        """Lost: the table is what it was, dimmed, and a line says so. Back: asked again at once."""
        stale = state != "connected" and self._loaded
        self.set_class(stale, "-stale")
        line = self.query_one("#sessions-stale", Static)
        line.display = stale
        if stale:
            since = f" since {self._fresh_at.astimezone().strftime('%H:%M:%S')}" if self._fresh_at else ""
            line.update(f"The service is not answering: this list has not been updated{since}.")
        elif state == "connected" and self._live and not self._just_listed:
            self._poller.poke()

    def on_resize(self) -> None:
        """The terminal changed size: fit the columns once the table has its new width."""
        self.call_after_refresh(lambda: fit_columns(self.query_one(DataTable), FITS))

    def on_screen_resume(self) -> None:
        self._opening = False
        if self._loaded and self.query(DataTable):
            self._apply()  # back from the wall: its selection shows
        self._keep_focus_in_view()
        self.call_after_refresh(self._keep_focus_in_view)  # after a dismissed form's callback changed the table
        if self._live and not self._just_listed:
            self._poller.poke()
        self._just_listed = False

    # data -----------------------------------------------------------------

    @work(exclusive=True, group="sessions-refresh")
    async def refresh_sessions(self) -> None:
        app = services(self)
        try:
            status = SessionStatusFilter.ALL if self.show_ended else None
            browsers = [b async for b in app.connected_client().sessions.list(page_size=100, status=status)]
        except ClientError as error:
            self._poller.done(error=error)
            app.report_error(error, "Could not list sessions")
            return
        except BaseException:
            self._poller.done()
            raise
        fresh = {b.session_id: b for b in browsers}
        self._poller.done(changed=_shown(fresh) != _shown(self._browsers) or not self._loaded)
        self._fresh_at = self._clock()
        app.connection_ok()
        if self._loaded:
            self._say_ended([b for key, b in self._browsers.items() if key not in fresh])
        self._browsers = fresh
        self._loaded = True
        if not self.is_attached or not all(self.query(part) for part in (DataTable, "#filter", "#sessions-empty")):
            return  # the screen closed (or is being taken apart) while the request was in flight
        self._apply()

    def forget_sessions(self) -> None:
        """Another service took the place of the one listed: its list comes next, with no "ended" notices."""
        self._loaded = False

    def _say_ended(self, gone: list[Browser]) -> None:
        """Sessions that left the list without this app deleting them ended (timed out, deleted elsewhere):
        say so once, instead of letting their rows vanish unexplained."""
        already: set[str] = getattr(self.app, "_ended_sessions", set())  # said by their own screen already
        gone = [b for b in gone if b.session_id not in self._deleted_here and b.session_id not in already]
        if not gone:
            return
        names = ", ".join(b.name or b.session_id for b in gone[:5]) + (" …" if len(gone) > 5 else "")
        self.notify(f"{names}: timed out or deleted elsewhere.", markup=False, severity="warning",
                    title="Session ended" if len(gone) == 1 else f"{len(gone)} sessions ended", timeout=10)

    def _apply(self) -> None:
        """Bring the table in line with `_browsers` and the filter, touching only what changed."""
        table = self.query_one(DataTable)
        needle = self.query_one("#filter", Input).value
        wanted = [b for b in self._browsers.values() if matches(b, needle)]
        now = self._clock()
        self.selection.intersection_update(self._browsers)
        sync_rows(table, {b.session_id: session_cells(b, now, selected=b.session_id in self.selection) for b in wanted},
                  [key for key, _ in COLUMNS])
        fit_columns(table, FITS)
        self._show_empty_state()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """"Open" is offered only while there is a row to open."""
        if action == "open":
            return any(table.row_count for table in self.query(DataTable))
        return True

    def _show_empty_state(self) -> None:
        table = self.query_one(DataTable)
        empty = self.query_one("#sessions-empty", Static)
        if bool(table.row_count) != self._offered_open:  # the footer's "Open" follows (not on every poll)
            self._offered_open = bool(table.row_count)
            self.refresh_bindings()
        if table.row_count:
            empty.display = False
            table.display = True
            self._keep_focus_in_view()
            return
        table.display = False
        empty.display = True
        self._keep_focus_in_view()
        if not self._loaded:
            empty.update("Loading sessions…")
        elif self._browsers:
            empty.update(hint_text("No session matches the filter. Press {sessions.clear_filter} to clear it, "
                                   "{sessions.filter} to change it.", keymap_of(self.app)))
        else:
            empty.update(hint_text("No browser sessions yet.\n\nPress {sessions.create} to create one, {app.help} for "
                                   "help.", keymap_of(self.app)))

    def _keep_focus_in_view(self) -> None:
        """The keyboard goes to the table when it is shown, and never stays on a hidden widget.

        When the table hides (the list became empty) Textual would move the focus to the next
        focusable widget, which can be the hidden filter box: the screen's keys then typed into it.
        """
        table = self.query_one(DataTable)
        filter_input = self.query_one("#filter", Input)
        focused = self.focused
        if focused is filter_input and filter_input.display:
            return  # the user is typing a filter
        if table.display:
            if focused is not table:
                table.focus()
        elif focused is not None:
            self.set_focus(None)  # no widget: the screen's own keys (n, /, q) work

    def selected(self) -> Browser | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return self._browsers.get(row_key.value) if row_key.value is not None else None

    # filter ---------------------------------------------------------------

    def action_filter(self) -> None:
        filter_input = self.query_one("#filter", Input)
        filter_input.display = True
        filter_input.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        services(self).last_filter = event.value
        self._apply()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self._leave_filter()

    def action_clear_filter(self) -> None:
        filter_input = self.query_one("#filter", Input)
        filter_input.value = ""
        filter_input.display = False
        self._leave_filter()

    def _leave_filter(self) -> None:
        """Out of the filter box: to the table, or to no widget while the table is hidden (empty)."""
        table = self.query_one(DataTable)
        if table.display:
            table.focus()
        else:
            self.set_focus(None)

    # actions --------------------------------------------------------------

    def action_refresh(self) -> None:
        self._poller.poke()

    def action_toggle_ended(self) -> None:
        self.show_ended = not self.show_ended

    def watch_show_ended(self) -> None:
        """List ended sessions too, or active ones only again (the ended leaving the list are no news)."""
        self._loaded = False
        self.notify("Showing ended sessions too" if self.show_ended else "Showing active sessions only",
                    timeout=3)
        if self._live:
            self._poller.poke()

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        # imported when a session is first opened: its shells pane loads the terminal emulator (pyghostty),
        # which takes longer than everything the sessions table needs
        from bbrowse.tui.screens.session import SessionScreen

        browser = self.selected()
        if browser is None or self._opening:
            return  # an ended session opens too: read-only, its replays and events (SessionScreen)
        # enter reaches both the screen's binding and the table's RowSelected when focus is between them:
        # one session screen, not two stacked
        self._opening = True
        self.app.push_screen(SessionScreen(browser))

    def action_create(self) -> None:
        def created(browser: Browser | None) -> None:
            if browser is None:
                return
            self._browsers[browser.session_id] = browser
            self._loaded = True
            self._apply()
            table = self.query_one(DataTable)
            if browser.session_id in table.rows:
                table.move_cursor(row=table.get_row_index(browser.session_id))
            self.notify(f"Created {browser.name or browser.session_id}", title="Session created")

        self.app.push_screen(CreateSessionScreen(), created)

    def action_delete(self) -> None:
        if self.selection:
            self.action_delete_selected()
            return
        browser = self.selected()
        if browser is None or browser.deleted_at:
            return
        label = browser.name or browser.session_id

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._delete(browser)

        self.app.push_screen(
            ConfirmScreen(f"Delete session {label}?\nIts processes, browser and recordings stop.", "Delete"),
            confirmed,
        )

    @work(group="sessions-delete")
    async def _delete(self, browser: Browser) -> None:
        self._deleted_here.add(browser.session_id)
        try:
            await services(self).connected_client().sessions.delete(browser.session_id)
        except ClientError as error:
            services(self).report_error(error, "Could not delete")
            return
        self._browsers.pop(browser.session_id, None)
        self._apply()
        self.notify(f"Deleted {browser.name or browser.session_id}")

    # many at once ---------------------------------------------------------

    def acted_on(self) -> list[Browser]:
        """The selected sessions, else the one under the cursor."""
        chosen = [b for key, b in self._browsers.items() if key in self.selection]
        current = self.selected()
        return chosen or ([current] if current is not None else [])

    def deleting(self, session_ids: Iterable[str]) -> None:
        self._deleted_here.update(session_ids)

    def forget(self, session_ids: Iterable[str]) -> None:
        for session_id in session_ids:
            self._browsers.pop(session_id, None)
            self.selection.discard(session_id)
        if self.is_attached and self.query(DataTable):
            self._apply()

    def action_select(self) -> None:
        """Select the session under the cursor (again: unselect) and move to the next row."""
        browser = self.selected()
        if browser is None:
            return
        self.selection.symmetric_difference_update({browser.session_id})
        self._apply()
        table = self.query_one(DataTable)
        if table.cursor_row < table.row_count - 1:
            table.move_cursor(row=table.cursor_row + 1)
        count = len(self.selection)
        self.notify(f"{count} selected: d delete · S screenshot each · R record · b broadcast · w wall"
                    if count else "Nothing selected", timeout=3)

    def action_wall(self) -> None:
        """The sessions shown here (the filter applies) as live tiles."""
        from bbrowse.tui.screens.wall import WallScreen  # loaded when first asked for (start-up time)

        needle = self.query_one("#filter", Input).value
        self.app.push_screen(WallScreen(self._browsers.values(), self.selection,
                                        matches=lambda browser: matches(browser, needle) and not browser.deleted_at,
                                        live=self._live, host=self))
