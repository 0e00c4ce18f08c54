"""The session wall: every session (or those matching the sessions filter) as live tiles, 2×2 up to 4×4.

The grid fits the terminal (a tile needs about 38×10 cells); more sessions than tiles page. Only the
tiles of the page shown pull frames, and none while another screen covers the wall (a session opened
from it), so sessions out of view cost nothing. Arrows move (past an edge onto the next page),
PgUp/PgDn page, `enter` opens the session, `space` selects, `esc` goes back. The selection is the
sessions table's: `d`, `S`, `R` and `b` act on it (`bbrowse.tui.screens.selection`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.message import Message
from textual.widgets import Static

from bbrowse.client import ClientError
from bbrowse.client.threaded_screencast import ThreadedScreencast
from bbrowse.tui import bulk
from bbrowse.tui.app_services import services
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.screens.base import BbrowseScreen
from bbrowse.tui.screens.selection import SelectionActions
from bbrowse.tui.textual_private import keymap_of
from bbrowse.tui.widgets.tile import (
    FirstPictures,
    FrameSource,
    SessionTile,
    SourceFor,
    TileState,
    drop_warm,
    frame_source,
    warm_screencast,
)
from bbrowse.wire import Browser

#: The smallest tile, in cells (border included): the grid has as many columns and rows as fit, 2 to 4.
TILE_WIDTH = 38
TILE_HEIGHT = 10
#: Seconds between two listings of the sessions while the wall is shown.
LIST_SECONDS = 3.0


@dataclass
class SessionsListed(Message):
    """The sessions listed now that match the filter (the list worker's report; the mounted wall draws it)."""

    browsers: list[Browser]


def grid_shape(width: int, height: int, count: int = 16) -> tuple[int, int]:
    """(columns, rows) of tiles for `count` sessions on a wall of width×height cells: as many as fit, 2×2 to
    4×4, and no more than the sessions need (five sessions on a big terminal: 3×2 larger tiles)."""
    most_columns, most_rows = max(2, min(4, width // TILE_WIDTH)), max(2, min(4, height // TILE_HEIGHT))
    columns = max(2, min(most_columns, math.ceil(math.sqrt(count))))
    return columns, max(2, min(most_rows, math.ceil(count / columns)))


class WallScreen(SelectionActions, BbrowseScreen):
    PALETTE_NAME = "Wall"
    CRUMBS = ("Sessions", "Wall")
    AUTO_FOCUS = ""
    BINDINGS = [
        Binding("left", "move(-1, 0)", "Left", show=False, id="wall.left"),
        Binding("right", "move(1, 0)", "Right", show=False, id="wall.right"),
        Binding("up", "move(0, -1)", "Up", show=False, id="wall.up"),
        Binding("down", "move(0, 1)", "Down", show=False, id="wall.down"),
        Binding("pagedown", "page(1)", "Next page", show=False, id="wall.next_page"),
        Binding("pageup", "page(-1)", "Previous page", show=False, id="wall.previous_page"),
        Binding("enter", "open", "Open", id="wall.open"),
        Binding("space", "select", "Select", id="wall.select"),
        Binding("d", "delete_selected", "Delete", id="wall.delete"),
        Binding("S", "screenshot_selected", "Screenshots", id="wall.screenshots"),
        Binding("R", "record_selected", "Record", id="wall.record"),
        Binding("b", "broadcast", "Broadcast", id="wall.broadcast"),
        Binding("escape", "back", "Back", id="wall.back"),
    ]

    DEFAULT_CSS = """
    WallScreen #wall-status { height: 1; padding: 0 1; color: $text-muted; }
    WallScreen #wall-grid { height: 1fr; grid-gutter: 0 0; }
    WallScreen #wall-empty { height: 1fr; content-align: center middle; color: $text-muted; display: none; }
    """

    def __init__(self, browsers: Iterable[Browser], selection: set[str] | None = None, *,
                 matches: Callable[[Browser], bool] = lambda browser: True,
                 source_for: SourceFor | None = None, live: bool = True,
                 host: SelectionActions | None = None) -> None:
        """`browsers`: what the sessions table lists (kept up to date here while shown); `selection`: the
        table's set of selected ids (shared, changed in place); `matches`: the table's filter; `host`: the
        sessions table, told what is deleted here."""
        super().__init__()
        self.browsers: list[Browser] = [b for b in browsers if matches(b)]
        self.selection = selection if selection is not None else set()
        self.matches = matches
        self.states: dict[str, TileState] = {}
        self.cursor = 0
        self._live = live
        self._host = host
        self._source_for = source_for
        self._tiles: list[SessionTile] = []
        self._first_pictures = FirstPictures(on_all=self._page_pictured)
        #: Screencasts started as the wall opens, by session, until a tile takes its own (`warm_screencast`).
        self._warm: dict[str, asyncio.Task[ThreadedScreencast]] = {}
        self._covered = False
        #: When `w` was pressed, and when every tile of the first page had a frame on screen, with the process's
        #: CPU time then (benchmarks).
        self.opened_at = time.monotonic()
        self.full_at: float | None = None
        self.full_cpu = 0.0
        width, height = self.app.size
        self.shape = grid_shape(width, height - 3, len(self.browsers))  # the screen's size, before it is laid out
        if live and source_for is None:  # the first page's screencasts start now, before the wall is even composed
            client = services(self).connected_client()
            self._warm = {b.session_id: warm_screencast(client, b)
                          for b in self.browsers[:self.per_page] if not b.deleted_at}

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        yield Static("", id="wall-status", markup=False)
        # the tiles are composed with the screen (one layout for the wall as it opens, not one more per mount)
        self._tiles = self._new_tiles()
        grid = Grid(*self._tiles, id="wall-grid")
        grid.styles.grid_size_columns, grid.styles.grid_size_rows = self.shape
        yield grid
        empty = "No session to show. Press {wall.back} to go back, {sessions.create} there to create one."
        yield Static(hint_text(empty, keymap_of(self.app)), id="wall-empty", markup=False)
        yield BbrowseFooter()

    async def on_mount(self) -> None:
        await self._reshape()
        self._show_page()
        self.set_interval(1.0, self._tick)
        if self._live:
            self.set_interval(LIST_SECONDS, self._refresh_list)

    def source_for(self, browser: Browser, size: Callable[[], tuple[int, int]]) -> FrameSource:
        if self._source_for is not None:
            return self._source_for(browser, size)
        return frame_source(services(self).connected_client(), browser, size, self._warm.pop(browser.session_id, None))

    # layout ------------------------------------------------------------------

    @property
    def per_page(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def page(self) -> int:
        return self.cursor // self.per_page

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.browsers) // self.per_page))

    async def _build_grid(self) -> None:

        grid = self.query_one("#wall-grid", Grid)
        for tile in self._tiles:
            tile.stop()
        await grid.remove_children()
        grid.styles.grid_size_columns, grid.styles.grid_size_rows = self.shape
        self._tiles = self._new_tiles()
        await grid.mount_all(self._tiles)

    def _new_tiles(self) -> list[SessionTile]:
        return [SessionTile(i, source_for=self.source_for, first_pictures=self._first_pictures)
                for i in range(self.per_page)]

    def _fitting_shape(self) -> tuple[int, int]:
        return grid_shape(self.size.width, self.size.height - 3, len(self.browsers))

    async def _reshape(self) -> bool:
        """A grid for the terminal's size and the number of sessions now; True when it changed."""
        shape = self._fitting_shape()
        if shape == self.shape or not self._tiles:
            return False
        self.shape = shape
        await self._build_grid()
        return True

    async def on_resize(self) -> None:
        if await self._reshape():
            self._show_page()

    def _show_page(self) -> None:
        """Bind the page's sessions to the tiles; those that left the page stop pulling, the new ones start."""
        if self.browsers:
            self.cursor = max(0, min(self.cursor, len(self.browsers) - 1))
        else:
            self.cursor = 0
        first = self.page * self.per_page
        shown = self.browsers[first:first + self.per_page]
        client = services(self).connected_client() if self._live else None
        for index, tile in enumerate(self._tiles):
            browser = shown[index] if index < len(shown) else None
            state = self.states.setdefault(browser.session_id, TileState()) if browser is not None else None
            tile.show_session(browser, state, selected=browser is not None and browser.session_id in self.selection)
            tile.set_class(browser is not None and first + index == self.cursor, "-cursor")
            if client is not None and browser is not None and not self._covered:
                tile.start(client)
        self._first_pictures.expect(self._tiles)
        self.query_one("#wall-grid").display = bool(self.browsers)
        self.query_one("#wall-empty").display = not self.browsers
        self._status()

    def _status(self) -> None:
        columns, rows = self.shape
        parts = [f"{bulk.plural(len(self.browsers), 'session')}", f"{columns}×{rows}"]
        if self.pages > 1:
            parts.append(f"page {self.page + 1}/{self.pages} ({{wall.previous_page}}/{{wall.next_page}})")
        if self.selection:
            parts.append(f"{len(self.selection)} selected ({{wall.delete}} delete · {{wall.screenshots}} screenshots · "
                         "{wall.record} record · {wall.broadcast} broadcast)")
        else:
            parts.append("{wall.select} selects")
        self.query_one("#wall-status", Static).update(hint_text(" · ".join(parts), keymap_of(self.app)), layout=False)

    def _tick(self) -> None:
        """Once a second: the idle times and badges move on."""
        for tile in self._tiles:
            tile.redraw_labels()

    def _page_pictured(self) -> None:
        """Every tile of the page shown has its first frame: once the screen shows them, the first full wall is
        noted and the tiles take frames again (their next frames would delay that screen)."""
        self.call_after_refresh(self._page_on_screen)

    def _page_on_screen(self) -> None:
        if self.full_at is None:
            self.full_at, self.full_cpu = time.monotonic(), time.process_time()
        self._first_pictures.release()

    def pictures_shown(self) -> bool:
        """Every tile of the page shown has a picture: a frame, or the last one drawn of its session."""
        shown = [t for t in self._tiles if t.browser is not None]
        return bool(shown) and all(t.canvas.image is not None for t in shown)

    def first_frames_drawn(self) -> bool:
        """Every tile of the page shown has drawn a frame."""
        shown = [t for t in self._tiles if t.browser is not None]
        return bool(shown) and all(t.state.frames for t in shown)

    # list --------------------------------------------------------------------

    @work(exclusive=True, group="wall-list")
    async def _refresh_list(self) -> None:
        """Sessions come and go while the wall is shown: the list is asked for, `_sessions_listed` follows it."""
        if self._covered:
            return
        try:
            listed = [b async for b in services(self).connected_client().sessions.list(page_size=100)]
        except ClientError:
            return  # the sessions table says it; the tiles keep what they show
        self.post_message(SessionsListed([b for b in listed if self.matches(b)]))

    @on(SessionsListed)
    async def _sessions_listed(self, message: SessionsListed) -> None:
        """The tiles follow the sessions listed (and the grid, their count)."""
        fresh = message.browsers
        if self._covered or [b.session_id for b in fresh] == [b.session_id for b in self.browsers]:
            return
        current = self.current()
        self.browsers = fresh
        if current is not None:
            ids = [b.session_id for b in fresh]
            if current.session_id in ids:
                self.cursor = ids.index(current.session_id)
        self.selection.intersection_update(b.session_id for b in fresh)
        await self._reshape()
        self._show_page()

    def deleting(self, session_ids: Iterable[str]) -> None:
        if self._host is not None:
            self._host.deleting(session_ids)

    def forget(self, session_ids: Iterable[str]) -> None:
        gone = set(session_ids)
        if self._host is not None:
            self._host.forget(gone)
        self.browsers = [b for b in self.browsers if b.session_id not in gone]
        self.selection.difference_update(gone)
        for session_id in gone:
            self.states.pop(session_id, None)
        self._show_page()

    # keys --------------------------------------------------------------------

    def current(self) -> Browser | None:
        return self.browsers[self.cursor] if 0 <= self.cursor < len(self.browsers) else None

    def acted_on(self) -> list[Browser]:
        chosen = [b for b in self.browsers if b.session_id in self.selection]
        current = self.current()
        return chosen or ([current] if current is not None else [])

    def action_move(self, dx: int, dy: int) -> None:
        if not self.browsers:
            return
        # row-major: left/right step through the sessions, up/down by a row; past a page's edge onto the next
        target = max(0, min(len(self.browsers) - 1, self.cursor + dx + dy * self.shape[0]))
        self._move_to(target)

    def action_page(self, delta: int) -> None:
        if self.browsers:
            self._move_to(max(0, min(len(self.browsers) - 1, (self.page + delta) * self.per_page)))

    def _move_to(self, target: int) -> None:
        page = self.page
        self.cursor = target
        if self.page != page:
            self._show_page()
            return
        first = page * self.per_page
        for index, tile in enumerate(self._tiles):
            tile.set_class(tile.browser is not None and first + index == self.cursor, "-cursor")
        self._status()

    def action_select(self) -> None:
        current = self.current()
        if current is None:
            return
        if current.session_id in self.selection:
            self.selection.discard(current.session_id)
        else:
            self.selection.add(current.session_id)
        tile = self._tiles[self.cursor - self.page * self.per_page]
        tile.show_session(current, self.states.get(current.session_id), selected=current.session_id in self.selection)
        self._status()

    def action_open(self) -> None:
        from bbrowse.tui.screens.session import SessionScreen

        current = self.current()
        if current is not None:
            self.app.push_screen(SessionScreen(current))

    def action_back(self) -> None:
        self.dismiss()

    # cost nothing while covered ------------------------------------------------

    def on_screen_suspend(self) -> None:
        self._covered = True
        for tile in self._tiles:
            tile.stop()

    def on_screen_resume(self) -> None:
        if self._covered:
            self._covered = False
            self._show_page()

    async def on_unmount(self) -> None:
        for tile in self._tiles:
            tile.stop()
        warm, self._warm = self._warm, {}  # those no tile took (a session that ended meanwhile)
        await asyncio.gather(*(drop_warm(task) for task in warm.values()))

