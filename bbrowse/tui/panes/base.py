"""The base of a session screen's panes: which session they show, its client, and where the keyboard goes."""

from __future__ import annotations

from textual.containers import Vertical

from bbrowse.client import BrowserClient
from bbrowse.tui.app_services import services


class SessionPane(Vertical):
    """A tab of the session screen (shells, logs, files, screenshot, replays), made for one session."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    @property
    def client(self) -> BrowserClient:
        """The client of the service the session lives on (the app's, through `AppServices`)."""
        return services(self).connected_client()

    def focus_default(self) -> None:
        """Give the keyboard to the pane's main widget: the session screen calls it when the tab is shown
        and nothing in it had the focus before."""
        raise NotImplementedError(f"{type(self).__name__} says which of its widgets takes the keyboard")
