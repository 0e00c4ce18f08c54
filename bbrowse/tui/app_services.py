"""What the app gives the screens, panes and widgets it hosts, as one typed protocol.

The app module imports the screens (which import the panes, which import the widgets), so none of them
may import the app back. They ask `services(self)` for the running app as an `AppServices` instead: what
they may use of it is written down here, and mypy checks both sides (`BbrowseApp` implements the
protocol, the callers use nothing else). Textual's own `App` API (`push_screen`, `notify`, `theme`…) is
not part of it: that is asked of `self.app` as in any Textual program.

The two helpers every layer needs to show a failure or to read the configuration live here too, for
the same reason: `describe_error` and `settings_of`.
"""

from __future__ import annotations

from typing import Protocol, cast

from textual.dom import DOMNode

from bbrowse.client import BrowserClient, ServiceError
from bbrowse.config import Settings


class AppServices(Protocol):
    """What panes, screens and widgets may ask of the app (`BbrowseApp` provides it)."""

    #: The sessions screen's filter, remembered across its visits.
    last_filter: str

    @property
    def settings(self) -> Settings:
        """The settings in effect (`settings_of` reads them from any app, with defaults elsewhere)."""
        ...

    @property
    def shell_command(self) -> tuple[str, ...]:
        """The program a new shell runs."""
        ...

    def connected_client(self) -> BrowserClient:
        """The client of the service in use; an error when there is none (no screen past the starting one
        lives then)."""
        ...

    def report_error(self, error: BaseException, title: str = "Request failed") -> None:
        """Show a failed request as a notification (a lost connection marks the connection lost); never raise."""
        ...

    def connection_ok(self) -> None:
        """A request went through: the connection state is "connected" again (notified when it was lost)."""
        ...

    def connection_lost(self, error: BaseException) -> None:
        """The service did not answer: the connection state is "reconnecting" (notified once per outage)."""
        ...

    def link_stalled(self) -> None:
        """A long-lived connection went silent and the service did not answer a check: "link stalled"."""
        ...


def services(node: DOMNode) -> AppServices:
    """The running app of `node`, as what it provides to the widgets it hosts."""
    return cast(AppServices, node.app)


def describe_error(error: BaseException) -> str:
    """`conflict (409): a browser session named 'x' already exists`, or the error's own text."""
    if isinstance(error, ServiceError):
        return f"{error.code} ({error.status}): {error.message}"
    return str(error) or type(error).__name__


#: What widgets hosted by another app (a test's) read as settings.
DEFAULT_SETTINGS = Settings()


def settings_of(node: DOMNode) -> Settings:
    """The running app's settings (`AppServices.settings`), or the defaults in any other app."""
    settings: Settings | None = getattr(node.app, "settings", None)
    return settings or DEFAULT_SETTINGS
