"""Shells of a session: several PTY terminals in tabs, each a `TerminalView` wired to a `ShellSession`.

A shell is spawned at the terminal's exact size once the pane has been laid out; later size changes
resize the remote PTY (the widget debounces them). The output arrives over `attach` (binary frames fed
straight to the emulator) or, when attach is refused, over `stdout/stream`: the border says which.
Keys typed in a terminal go to the program, Esc included; `ctrl+]` leaves the terminal and the pane's own keys
(`t` new shell, `w` close, `enter` back in) work again.
"""

from __future__ import annotations

import itertools

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from bbrowse.client import BrowserClient, ClientError, NotFound, SessionGone, VmGoingAway
from bbrowse.tui.app_services import services
from bbrowse.tui.panes.base import SessionPane
from bbrowse.tui.shell_session import ShellSession
from bbrowse.tui.terminal.widget import TerminalView

GONE_BANNER = (b"\r\n\x1b[0m\x1b[1;7m the session was deleted \xe2\x80\x94 nothing to restart here;"
               b" esc: back to the sessions \x1b[0m")
#: The session's VM closed the attach with 1001 (Kernel's VM shutting down); {reason} is what it said.
GOING_AWAY_BANNER = "\r\n\x1b[0m\x1b[1;7m the session's VM is going away{reason} \u2014 the shell ended with it \x1b[0m"


async def session_gone(client: BrowserClient, session_id: str) -> bool:
    """True when the session answers 410 (deleted) or 404; a service that cannot say counts as not gone."""
    try:
        await client.sessions.get(session_id)
    except (SessionGone, NotFound):
        return True
    except ClientError:
        return False
    return False


class ShellTab(TabPane):
    """One shell: its terminal and the remote process behind it."""

    DEFAULT_CSS = """
    ShellTab { padding: 0; }
    ShellTab TerminalView { height: 1fr; border: round $primary-darken-2; }
    ShellTab TerminalView:focus { border: round $accent; }
    """

    def __init__(self, session_id: str, title: str, pane_id: str) -> None:
        self.terminal = TerminalView(send_input=self._write, on_pty_resize=self._pty_resized)
        super().__init__(title, self.terminal, id=pane_id)
        self.session_id = session_id
        self.base_title = title
        self.shell: ShellSession | None = None
        #: The session was deleted: the pane says so and offers no restart.
        self.gone = False
        #: The VM closed the attach as going away (1001): its reason ("" when none), None otherwise.
        self.going_away: str | None = None

    def on_mount(self) -> None:
        app = services(self)
        self.shell = ShellSession(
            app.connected_client(),
            self.session_id,
            on_output=self.terminal.write,
            on_exit=self._exited,
            on_error=self._error,
            on_path=self._path_changed,
            command=app.shell_command,
        )

    def _show_state(self, state: str) -> None:
        self.terminal.border_title = f"{self.base_title} · {state}"

    def _path_changed(self, path: str) -> None:
        """The border names the output path: "attach" (the WebSocket) or "stream" (stdout/stream)."""
        if self.shell is not None and self.shell.process_id is not None:
            self._show_state(f"process {self.shell.process_id[:8]} · {path}")

    async def _write(self, data: bytes) -> None:
        if self.shell is not None:
            await self.shell.write(data)

    def _pty_resized(self, cols: int, rows: int) -> None:
        if self.shell is None:
            return
        if self.shell.process_id is None:
            self._start(cols, rows)
        else:
            self._resize(cols, rows)

    @work(exclusive=True, group="shell-start")
    async def _start(self, cols: int, rows: int) -> None:
        shell = self.shell
        assert shell is not None  # made in on_mount, before the terminal reports its size
        self.terminal.reset()
        try:
            await shell.start(cols, rows)
        except ClientError as error:
            services(self).report_error(error, "Could not start the shell")
            self.terminal.show_exit(None)
            return
        if shell.path is None and shell.process_id is not None:
            self._show_state(f"process {shell.process_id[:8]}")
        services(self).connection_ok()

    @work(group="shell-resize")
    async def _resize(self, cols: int, rows: int) -> None:
        assert self.shell is not None  # resized only once started
        await self.shell.resize(cols, rows)

    def _exited(self, code: int | None) -> None:
        self._after_exit(code)

    @work(exclusive=True, group="shell-exit")
    async def _after_exit(self, code: int | None) -> None:
        """Offer a restart only when there is something to restart in: a deleted session (e.g. `bbrowse rm`
        elsewhere, which hangs the shell up with 129) says so instead; a VM going away says that."""
        if self.going_away is not None:
            reason = f" ({self.going_away})" if self.going_away else ""
            self.terminal.feed(GOING_AWAY_BANNER.format(reason=reason).encode())
            self._show_state("VM going away")
            return
        if await session_gone(services(self).connected_client(), self.session_id):
            self.gone = True
            self.terminal.feed(GONE_BANNER)
            self._show_state("session deleted")
            if self.terminal.has_focus:  # nothing to type into: out of the terminal, esc then goes back
                self.terminal.post_message(TerminalView.LeaveRequested(self.terminal))
            return
        self.terminal.show_exit(code)
        self._show_state(f"exited {code}" if code is not None else "ended")

    def _error(self, error: BaseException) -> None:
        if isinstance(error, VmGoingAway):
            self.going_away = error.reason
        services(self).report_error(error, "Shell")

    @on(TerminalView.RestartRequested)
    def _restart(self) -> None:
        if self.gone:
            return
        assert self.shell is not None  # a restart follows an exit: the shell was made
        cols, rows = self.terminal.terminal_size
        self.shell.process_id = None
        self._start(cols, rows)

    @on(TerminalView.InputFailed)
    def _input_failed(self, event: TerminalView.InputFailed) -> None:
        services(self).report_error(event.error, "Input not delivered")

    async def close(self) -> None:
        if self.shell is not None:
            await self.shell.close()


class ShellsPane(SessionPane):
    BINDINGS = [
        Binding("t", "new_shell", "New shell", id="shells.new"),
        Binding("w", "close_shell", "Close shell", id="shells.close"),
        Binding("enter,i", "focus_terminal", "Into terminal", id="shells.focus"),
    ]

    DEFAULT_CSS = """
    ShellsPane { height: 1fr; }
    ShellsPane TabbedContent { height: 1fr; }
    ShellsPane #shells-empty { height: 1fr; content-align: center middle; color: $text-muted; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self._numbers = itertools.count(1)

    def compose(self) -> ComposeResult:
        yield Static("No shells. Press t to open one.", id="shells-empty")
        yield TabbedContent(id="shell-tabs")

    async def on_mount(self) -> None:
        await self.action_new_shell()

    def _sync_empty(self) -> None:
        has_tabs = bool(self.query(ShellTab))
        self.query_one("#shells-empty").display = not has_tabs
        self.query_one("#shell-tabs").display = has_tabs

    async def action_new_shell(self) -> None:
        number = next(self._numbers)
        pane_id = f"shell-{number}"
        tab = ShellTab(self.session_id, f"shell {number}", pane_id)
        tabs = self.query_one("#shell-tabs", TabbedContent)
        await tabs.add_pane(tab)
        tabs.active = pane_id
        self._sync_empty()
        tab.terminal.focus()

    async def action_close_shell(self) -> None:
        tabs = self.query_one("#shell-tabs", TabbedContent)
        active = tabs.active_pane
        if not isinstance(active, ShellTab) or active.id is None:
            return
        await active.close()
        await tabs.remove_pane(active.id)
        self._sync_empty()

    def focus_default(self) -> None:
        """Called when the tab is shown: straight into the active terminal."""
        self.action_focus_terminal()

    def action_focus_terminal(self) -> None:
        active = self.query_one("#shell-tabs", TabbedContent).active_pane
        if isinstance(active, ShellTab):
            active.terminal.focus()

    @on(TerminalView.LeaveRequested)
    def _leave(self) -> None:
        self.query_one("#shell-tabs", TabbedContent).query_one(Tabs).focus()

    async def on_unmount(self) -> None:
        for tab in self.query(ShellTab):
            await tab.close()
