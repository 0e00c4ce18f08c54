"""The base of a session screen's panes: which session they show, its client, and where the keyboard goes."""

from __future__ import annotations

from typing import ClassVar

from textual.containers import Vertical
from textual.widget import Widget

from bbrowse.client import BrowserClient
from bbrowse.tui.app_services import services


class SessionPane(Vertical):
    """A tab of the session screen (shells, logs, files, screenshot, replays), made for one session."""

    #: The children (selectors or widget types) that a reply arriving later is drawn into; see `in_place`.
    DRAWN_INTO: ClassVar[tuple[str | type[Widget], ...]] = ()

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    @property
    def client(self) -> BrowserClient:
        """The client of the service the session lives on (the app's, through `AppServices`)."""
        return services(self).connected_client()

    def in_place(self) -> bool:
        """Attached, with every child in `DRAWN_INTO`. When the app quits (or the session screen closes) a pane
        is still attached for a moment after its children have gone, and a worker's reply drawn into a missing
        one failed the app (the screenshot, files and replays panes, each seen in full runs)."""
        return self.is_attached and all(self.query(part) for part in self.DRAWN_INTO)

    def focus_default(self) -> None:
        """Give the keyboard to the pane's main widget: the session screen calls it when the tab is shown
        and nothing in it had the focus before."""
        raise NotImplementedError(f"{type(self).__name__} says which of its widgets takes the keyboard")
