"""Shells of a session: several PTY terminals in tabs, each a `TerminalView` wired to a `ShellSession`.

A shell is spawned at the terminal's exact size once the pane has been laid out; later size changes
resize the remote PTY (the widget debounces them). The output arrives over `attach` (binary frames fed
straight to the emulator) or, when attach is refused, over `stdout/stream`: the border says which.
Keys typed in a terminal go to the program, Esc included; `ctrl+]` leaves the terminal and the pane's own keys
(`t` new shell, `w` close, `enter` back in) work again. A single shell has the whole pane (no tab bar of one).

Shells outlive the session screen, as tmux windows outlive a detached client: leaving the screen detaches
them, and reopening the session reattaches those still running (the app keeps the list: `ShellRecords`).
`w` closes a shell at once when it sits idle at its prompt, and asks first when it runs something.
Quitting the app hangs its shells up (HUP), as closing a terminal window does.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from bbrowse.client import BrowserClient, ClientError, LinkStalled, NotFound, SessionGone, VmGoingAway
from bbrowse.tui.app_services import services
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.panes.base import SessionPane
from bbrowse.tui.shell_session import ShellRecord, ShellRecords, ShellSession
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.tui.textual_private import keymap_of

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

    def __init__(self, session_id: str, title: str, pane_id: str, *, records: ShellRecords | None = None,
                 reattach: ShellRecord | None = None) -> None:
        """`reattach`: a shell started earlier and still running, followed again instead of a new spawn."""
        self.terminal = TerminalView(send_input=self._write, on_pty_resize=self._pty_resized)
        super().__init__(title, self.terminal, id=pane_id)
        self.session_id = session_id
        self.base_title = title
        self.shell: ShellSession | None = None
        self.records = records
        self.reattach = reattach
        #: The session was deleted: the pane says so and offers no restart.
        self.gone = False
        #: The VM closed the attach as going away (1001): its reason ("" when none), None otherwise.
        self.going_away: str | None = None

    def on_mount(self) -> None:
        app = services(self)
        self.terminal.prediction = app.settings.shell.predict
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
            services(self).connection_ok()  # said again when a stalled link answers

    async def _write(self, data: bytes) -> None:
        if self.shell is not None:
            await self.shell.write(data)

    def _pty_resized(self, cols: int, rows: int) -> None:
        if self.shell is None:
            return
        if self.shell.process_id is None and self.reattach is not None:
            record, self.reattach = self.reattach, None
            self._reattach(record, cols, rows)
        else:
            self._fit(cols, rows)

    @work(group="shell-size")
    async def _fit(self, cols: int, rows: int) -> None:
        """The first size starts the shell (`ShellSession.fit`), later ones resize it."""
        shell = self.shell
        assert shell is not None  # made in on_mount, before the terminal reports its size
        try:
            started = await shell.fit(cols, rows)
        except ClientError as error:
            if await session_gone(services(self).connected_client(), self.session_id):
                self._show_gone()  # deleted while its shell was starting: said as for a running shell
                return
            services(self).report_error(error, "Could not start the shell")
            self.terminal.show_exit(None)
            return
        if not started:
            return
        if shell.path is None and shell.process_id is not None:
            self._show_state(f"process {shell.process_id[:8]}")
        if shell.process_id is not None and self.records is not None:
            self.records.add(shell.client.base_url, self.session_id,
                             ShellRecord(shell.process_id, shell.marker, self.base_title))
        services(self).connection_ok()

    @work(exclusive=True, group="shell-start")
    async def _reattach(self, record: ShellRecord, cols: int, rows: int) -> None:
        shell = self.shell
        assert shell is not None
        self.terminal.reset()
        self._show_state(f"process {record.process_id[:8]} · reattached")
        await shell.reattach(record.process_id, record.marker, cols, rows)

    def _exited(self, code: int | None) -> None:
        self._forget()
        self._after_exit(code)

    def _forget(self) -> None:
        """Out of the list of shells to reattach (it ended, or the user closed it)."""
        if self.shell is not None and self.shell.process_id is not None and self.records is not None:
            self.records.remove(self.shell.client.base_url, self.session_id, self.shell.process_id)

    @work(exclusive=True, group="shell-exit")
    async def _after_exit(self, code: int | None) -> None:
        """Offer a restart only when there is something to restart in: a deleted session (e.g. `bbrowse rm`
        elsewhere, which hangs the shell up with 129) says so instead; a VM going away says that."""
        if await session_gone(services(self).connected_client(), self.session_id):
            self._show_gone()
            return
        if self.going_away is not None:
            reason = f" ({self.going_away})" if self.going_away else ""
            self.terminal.feed(GOING_AWAY_BANNER.format(reason=reason).encode())
            self._show_state("VM going away")
            return
        self.terminal.show_exit(code)
        self._show_state(f"exited {code}" if code is not None else "ended")

    def _show_gone(self) -> None:
        self.gone = True
        self.terminal.feed(GONE_BANNER)
        self._show_state("session deleted")
        if self.terminal.has_focus:  # nothing to type into: out of the terminal, esc then goes back
            self.terminal.post_message(TerminalView.LeaveRequested(self.terminal))

    def _error(self, error: BaseException) -> None:
        if isinstance(error, VmGoingAway):  # the pane says it; the service itself still answers
            self.going_away = error.reason
            return
        if isinstance(error, SessionGone | NotFound):  # found on reattaching: the exit follows and says it
            return
        if isinstance(error, LinkStalled):  # the border says it until the shell is attached again
            self._show_state("link stalled: reattaching when it answers")
            services(self).link_stalled()
            return
        services(self).report_error(error, "Shell")

    @on(TerminalView.RestartRequested)
    def _restart(self) -> None:
        if self.gone:
            return
        assert self.shell is not None  # a restart follows an exit: the shell was made
        cols, rows = self.terminal.terminal_size
        self.shell.process_id = None
        self.terminal.reset()
        self._fit(cols, rows)

    @on(TerminalView.InputFailed)
    def _input_failed(self, event: TerminalView.InputFailed) -> None:
        services(self).report_error(event.error, "Input not delivered")

    async def close(self) -> None:
        """Hang the shell up and forget it."""
        if self.shell is not None:
            self._forget()
            await self.shell.close()

    async def detach(self) -> None:
        """Stop showing the shell; it keeps running on the instance, to be reattached."""
        if self.shell is not None:
            await self.shell.detach()

    async def on_unmount(self) -> None:
        """Leaving the session screen detaches the shell (it keeps running); quitting the app hangs it up.
        (Here, not in the pane's unmount: by then the pane's children are gone.)"""
        if not self.app.is_running:  # the app is shutting down
            await self.close()
        else:
            await self.detach()


#: By binding id (`key_hints`): a remapped key shows as remapped.
EMPTY_HINT = "No shell open. Press {shells.new} or {shells.focus} for a new one."
OPENING_HINT = "Opening the shell (or reattaching those still running)…"


@dataclass
class ShellsFound(Message):
    """The shells of this session still running (to reattach), found when the pane opened."""

    alive: list[ShellRecord]


@dataclass
class ShellClosed(Message):
    """A shell was closed (hung up): its tab goes."""

    tab: ShellTab


class ShellsPane(SessionPane, can_focus=True):
    """Focusable itself: with no shell open (or out of a lone shell's terminal) `t` and `enter` still work."""

    BINDINGS = [
        Binding("t", "new_shell", "New shell", id="shells.new"),
        Binding("w", "close_shell", "Close shell", id="shells.close"),
        Binding("enter,i", "focus_terminal", "Into terminal", id="shells.focus"),
    ]

    DEFAULT_CSS = """
    ShellsPane { height: 1fr; }
    ShellsPane TabbedContent { height: 1fr; }
    ShellsPane #shell-tabs.single ContentTabs { display: none; }
    ShellsPane #shells-empty { height: 1fr; content-align: center middle; color: $text-muted; }
    ShellsPane:focus #shells-empty { color: $text; }
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self._numbers = itertools.count(1)
        self.records = ShellRecords()

    def compose(self) -> ComposeResult:
        yield Static(OPENING_HINT, id="shells-empty")
        yield TabbedContent(id="shell-tabs")

    def on_mount(self) -> None:
        self._sync_empty()
        self._open_shells()

    @work(exclusive=True, group="shells-open")
    async def _open_shells(self) -> None:
        """Find the shells of this session still running (left by a session screen since closed)."""
        client = self.client
        alive = []
        started = time.monotonic()
        for record in self.records.list(client.base_url, self.session_id):
            try:
                status = await client.processes.status(self.session_id, record.process_id)
            except ClientError:
                status = None
            if status is not None and status.state == "running":
                alive.append(record)
            else:
                self.records.remove(client.base_url, self.session_id, record.process_id)
        self.log(f"shells: {len(alive)} to reattach, checked in {time.monotonic() - started:.2f} s")
        self.post_message(ShellsFound(alive))

    @on(ShellsFound)
    async def _shells_found(self, message: ShellsFound) -> None:
        """Reattach the shells still running, else open a new one."""
        self.query_one("#shells-empty", Static).update(hint_text(EMPTY_HINT, keymap_of(self.app)))
        if not message.alive:
            await self._add_tab(focus=False)  # the session screen decides where the keyboard starts
            return
        for record in message.alive:
            await self._add_tab(record, focus=False)
        count = len(message.alive)
        self.notify(f"{count} shell{'s' if count != 1 else ''} still running, reattached", title="Shells", timeout=4)

    @property
    def _tabs(self) -> TabbedContent:
        return self.query_one("#shell-tabs", TabbedContent)

    def _sync_empty(self) -> None:
        count = len(self.query(ShellTab))
        self.query_one("#shells-empty").display = count == 0
        tabs = self._tabs
        tabs.display = count > 0
        tabs.set_class(count == 1, "single")  # one shell: no tab bar, the terminal gets its rows
        focused = self.screen.focused if self.is_attached else None
        if focused is not None and self in focused.ancestors and not focused.display:
            self.focus()

    async def _add_tab(self, reattach: ShellRecord | None = None, *, focus: bool = True) -> ShellTab:
        number = next(self._numbers)
        pane_id = f"shell-{number}"
        title = reattach.title if reattach is not None else f"shell {number}"
        tab = ShellTab(self.session_id, title, pane_id, records=self.records, reattach=reattach)
        tabs = self._tabs
        await tabs.add_pane(tab)
        tabs.active = pane_id
        self._sync_empty()
        if focus:
            tab.terminal.focus()
        return tab

    async def action_new_shell(self) -> None:
        await self._add_tab()

    def action_close_shell(self) -> None:
        active = self._tabs.active_pane
        if isinstance(active, ShellTab) and active.id is not None:
            self._close_asking(active)

    @work(exclusive=True, group="shells-close")
    async def _close_asking(self, tab: ShellTab) -> None:
        """Close at once when the shell is idle at its prompt; ask first when it runs something (tmux asks)."""
        busy = await tab.shell.busy() if tab.shell is not None else None
        if busy is not None:
            question = f"{tab.base_title} {busy}. Close it anyway? Its programs are hung up (SIGHUP)."
            if not await self.app.push_screen_wait(ConfirmScreen(question, "Close")):
                return
        await tab.close()
        self.post_message(ShellClosed(tab))

    @on(ShellClosed)
    async def _shell_closed(self, message: ShellClosed) -> None:
        tab = message.tab
        if tab.is_attached and tab.id is not None:
            await self._tabs.remove_pane(tab.id)
        self._sync_empty()
        if not self.query(ShellTab):
            self.focus()  # the hint names t and enter; both work from here

    def focus_default(self) -> None:
        """Called when the tab is entered: straight into the active terminal (a new shell when none is open)."""
        active = self._tabs.active_pane
        if isinstance(active, ShellTab):
            active.terminal.focus()
        else:
            self.run_worker(self.action_new_shell(), group="shells-new")

    async def action_focus_terminal(self) -> None:
        active = self._tabs.active_pane
        if isinstance(active, ShellTab):
            active.terminal.focus()
        else:
            await self.action_new_shell()

    @on(TerminalView.LeaveRequested)
    def _leave(self) -> None:
        tabs = self._tabs
        if tabs.has_class("single"):
            self.focus()
        else:
            tabs.query_one(Tabs).focus()
