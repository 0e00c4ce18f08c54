"""The base of bbrowse's full screens: the service bar on top, kept in step with the app's connection state."""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.screen import Screen

from bbrowse.tui.textual_private import forget_closed_watchers, release_render_caches
from bbrowse.tui.widgets.service_bar import ConnectionState, ServiceBar


class BbrowseScreen(Screen[None]):
    """A screen with the service bar on top, kept in step with the app's connection state.

    The bar is set up by a `Mount` handler of its own (not `on_mount`), so subclasses define their
    `on_mount`, sync or async, without calling this one: Textual runs the handlers of every class in
    the MRO, the subclass's first.
    """

    #: Shown in the service bar after "bbrowse │ … │ state │".
    CRUMBS: tuple[str, ...] = ("Sessions",)

    def compose_bar(self) -> ComposeResult:
        yield ServiceBar()

    @on(events.Mount)
    def _follow_connection(self) -> None:
        bar = self.query_one(ServiceBar)
        bar.crumbs = self.crumbs()

        def show_state(state: ConnectionState) -> None:
            bar.state = state
            # what the screen shows is not being updated: app.tcss dims it (the sessions table says since when)
            self.set_class(state == "reconnecting", "-disconnected")

        def show_label(label: str) -> None:
            bar.service_label = label

        self.watch(self.app, "connection_state", show_state)
        self.watch(self.app, "service_label", show_label)

    @on(events.Unmount)
    def _let_go(self) -> None:
        """What would keep this screen's widgets, or the lines they drew, in memory once it is closed: its watchers
        of the app (its own, its bar's) and Textual's render cache."""
        forget_closed_watchers(self.app)
        release_render_caches()

    def crumbs(self) -> tuple[str, ...]:
        return self.CRUMBS
