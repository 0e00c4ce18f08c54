"""The bbrowse Textual app: connects (or starts the embedded service), then shows the sessions.

The service target is resolved in a worker thread while a spinner shows, so the first frame is
drawn at once. Connection health is tracked here: screens report each call's outcome with
`connection_ok()` / `connection_lost()`, the header shows the state, and a notification marks each
transition, so a lost service never crashes the app and is noticed when it comes back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import LoadingIndicator, Static

from bbrowse.client import BrowserClient, ClientError, ServiceError
from bbrowse.target import Target, resolve_target
from bbrowse.tui.widgets.service_bar import ConnectionState, ServiceBar


def describe_error(error: BaseException) -> str:
    """`conflict (409): a browser session named 'x' already exists`, or the error's own text."""
    if isinstance(error, ServiceError):
        return f"{error.code} ({error.status}): {error.message}"
    return str(error) or type(error).__name__


class BbrowseScreen(Screen):
    """A screen with the service bar on top, kept in step with the app's connection state."""

    #: Shown in the service bar after "bbrowse │ … │ state │".
    CRUMBS: tuple[str, ...] = ("Sessions",)

    def compose_bar(self) -> ComposeResult:
        yield ServiceBar()

    def on_mount(self) -> None:
        bar = self.query_one(ServiceBar)
        bar.crumbs = self.crumbs()
        self.watch(self.app, "connection_state", lambda state: setattr(bar, "state", state))
        self.watch(self.app, "service_label", lambda label: setattr(bar, "service_label", label))

    def crumbs(self) -> tuple[str, ...]:
        return self.CRUMBS


class StartingScreen(Screen):
    """What shows while the embedded service starts: a spinner and what is happening."""

    DEFAULT_CSS = """
    StartingScreen { align: center middle; }
    StartingScreen Static { width: auto; }
    StartingScreen LoadingIndicator { height: 3; }
    """

    def compose(self) -> ComposeResult:
        yield LoadingIndicator()
        yield Static("Connecting to the browser service…", id="starting-message")


class BbrowseApp(App):
    """Keyboard-driven browser sessions: tables, shells, replays."""

    TITLE = "bbrowse"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("question_mark", "toggle_help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True, show=False),
    ]

    connection_state: reactive[ConnectionState] = reactive("starting")
    service_label: reactive[str] = reactive("")

    def __init__(self, target: Target | None = None, resolve: Callable[[], Target] = resolve_target) -> None:
        super().__init__()
        self.target = target
        self._resolve = resolve
        self.client: BrowserClient | None = None
        #: The last sessions filter, remembered across visits of the sessions screen.
        self.last_filter = ""

    def on_mount(self) -> None:
        if self.target is not None:
            self._connected(self.target)
        else:
            self.push_screen(StartingScreen())
            self._start_target()

    @work(thread=True, exclusive=True, group="target")
    def _start_target(self) -> None:
        try:
            target = self._resolve()
        except Exception as error:
            self.call_from_thread(self._target_failed, error)
            return
        self.call_from_thread(self._connected, target)

    def _target_failed(self, error: BaseException) -> None:
        self.query_one("#starting-message", Static).update(
            f"Could not reach or start the browser service:\n{describe_error(error)}\n\nPress ctrl+q to quit."
        )
        self.connection_state = "reconnecting"

    def _connected(self, target: Target) -> None:
        from bbrowse.tui.screens.sessions import SessionsScreen

        self.target = target
        self.client = BrowserClient(config=target.config)
        self.service_label = target.label
        self.connection_state = "connected"
        if isinstance(self.screen, StartingScreen):
            self.switch_screen(SessionsScreen())
        else:
            self.push_screen(SessionsScreen())

    # connection health ------------------------------------------------------

    def connection_ok(self) -> None:
        if self.connection_state == "reconnecting":
            self.notify(f"Reconnected to {self.service_label}", title="Service back")
        self.connection_state = "connected"

    def connection_lost(self, error: BaseException) -> None:
        if self.connection_state != "reconnecting":
            self.notify(f"{describe_error(error)}\nRetrying in the background…", title="Service unreachable",
                        severity="error", timeout=8)
        self.connection_state = "reconnecting"

    def report_error(self, error: BaseException, title: str = "Request failed") -> None:
        """Show a service error as a notification with its code and message; never raise."""
        if isinstance(error, ClientError) and not isinstance(error, ServiceError):
            self.connection_lost(error)
            return
        self.notify(describe_error(error), title=title, severity="error", timeout=8)

    # help and palette -------------------------------------------------------

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action bound on the current screen and its focused widgets, plus the app's own."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for node in [*(screen.focused.ancestors_with_self if screen.focused else []), screen]:
            for binding in getattr(node, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                    continue
                seen.add(binding.action)
                yield SystemCommand(
                    binding.description,
                    f"{binding.description} (key: {binding.key})",
                    _runner(node, binding.action),
                )

    async def on_unmount(self) -> None:
        if self.target is not None:
            self.target.close()


def _runner(node, action: str) -> Callable[[], object]:
    async def run() -> None:
        await node.run_action(action)

    return run


def run_app() -> None:
    # textual-image asks the terminal about kitty/sixel support when imported, which is only
    # possible before Textual takes the terminal over: import the screenshot widget now.
    import bbrowse.tui.widgets.screenshot_view  # noqa: F401

    BbrowseApp().run()
