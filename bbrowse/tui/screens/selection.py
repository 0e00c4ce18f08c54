"""Actions on the selected sessions (the sessions table's and the wall's): delete, a screenshot of each,
recording on each, broadcast typing. Its own module so the sessions table loads neither the wall nor the
terminal widget before they are asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from textual import work
from textual.screen import Screen

from bbrowse.tui import bulk
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.wire import Browser


class SelectionActions:
    """Actions on the selected sessions (else the one under the cursor), for a screen that says which
    those are (`acted_on`) and what went (`forget`)."""

    def acted_on(self) -> list[Browser]:
        raise NotImplementedError

    def forget(self, session_ids: Iterable[str]) -> None:
        raise NotImplementedError

    def deleting(self, session_ids: Iterable[str]) -> None:
        """About to delete these: their leaving the list is no news."""

    def _push(self, screen: Screen, callback: Callable | None = None) -> None:
        self._node().app.push_screen(screen, callback)

    def action_delete_selected(self) -> None:
        browsers = [b for b in self.acted_on() if not b.deleted_at]
        if not browsers:
            return
        if len(browsers) == 1:
            what = f"session {bulk.label(browsers[0])}"
        else:
            names = ", ".join(bulk.label(b) for b in browsers[:4]) + (" …" if len(browsers) > 4 else "")
            what = f"{len(browsers)} sessions ({names})"

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._delete_many(browsers)

        self._push(ConfirmScreen(f"Delete {what}?\nTheir processes, browsers and recordings stop.", "Delete"),
                   confirmed)

    @work(group="bulk-delete")
    async def _delete_many(self, browsers: list[Browser]) -> None:
        node = self._node()
        self.deleting(b.session_id for b in browsers)
        outcome = await bulk.delete_all(services(node).connected_client(), browsers)
        self.forget(b.session_id for b in outcome.done)
        self._say(f"Deleted {bulk.plural(len(outcome.done), 'session')}", outcome, "Could not delete")

    def action_screenshot_selected(self) -> None:
        browsers = [b for b in self.acted_on() if not b.deleted_at]
        if browsers:
            self._screenshots(browsers, bulk.screenshots_folder())

    @work(group="bulk-screenshot")
    async def _screenshots(self, browsers: list[Browser], folder: Path) -> None:
        outcome = await bulk.screenshot_all(services(self._node()).connected_client(), browsers, folder)
        self._say(f"{bulk.plural(len(outcome.done), 'screenshot')} saved in {folder}", outcome,
                  "Some screenshots failed")

    def action_record_selected(self) -> None:
        browsers = [b for b in self.acted_on() if not b.deleted_at]
        if browsers:
            self._record(browsers)

    @work(group="bulk-record")
    async def _record(self, browsers: list[Browser]) -> None:
        started, outcome = await bulk.toggle_recording_all(services(self._node()).connected_client(), browsers)
        verb = "started" if started else "stopped"
        self._say(f"Recording {verb} on {bulk.plural(len(outcome.done), 'session')}", outcome,
                  f"Recording not {verb} everywhere")

    def action_broadcast(self) -> None:
        from bbrowse.tui.screens.broadcast import BroadcastScreen  # the terminal widget: loaded when first used

        browsers = [b for b in self.acted_on() if not b.deleted_at]
        if browsers:
            self._push(BroadcastScreen(browsers))

    def _node(self) -> Screen:
        assert isinstance(self, Screen)
        return self

    def _say(self, done: str, outcome: bulk.Outcome, failed_title: str) -> None:
        node = self._node()
        if outcome.done or not outcome.failed:
            node.notify(done, markup=False, timeout=6)
        if outcome.failed:
            node.notify(outcome.failures(), title=f"{failed_title} ({len(outcome.failed)})", severity="error",
                        markup=False, timeout=10)
