"""Broadcast typing: a shell on each selected session, side by side, every key going to all of them.

Like tmux's `synchronize-panes`: while broadcast is on, a key typed in the focused pane is encoded by
each pane's own terminal (its modes: cursor keys, bracketed paste) and sent to each shell still running.
The bar on top always says whether keys go to all shells or to the focused one only. Each pane's border
names its session and, once its shell ends, the exit code. `ctrl+]` leaves the terminals; then `b`
switches broadcast on and off, the arrows pick a pane, `enter` goes back in, `esc` closes the screen
(its shells are hung up, as closing terminal windows does).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.reactive import var
from textual.widgets import Static

from bbrowse.client import ClientError
from bbrowse.tui.app_services import services
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.screens.base import BbrowseScreen
from bbrowse.tui.shell_session import ShellSession
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.tui.textual_private import keymap_of
from bbrowse.wire import Browser

#: How the state line names the switch, by binding id (a remapped key shows as remapped).
SWITCH_HINT = "{terminal.leave} then {broadcast.toggle}"


class BroadcastTerminal(TerminalView):
    """A terminal of the broadcast screen: while broadcast is on, its keys and pastes go to every pane."""

    RESTART_HINT = ""  # its shell is not restarted here: the exit banner offers nothing

    def __init__(self, browser: Browser) -> None:
        super().__init__(send_input=self._write, on_pty_resize=self._pty_resized)
        self.browser = browser
        self.label = browser.name or browser.session_id
        self.shell: ShellSession | None = None
        self.border_title = f"{self.label} · starting"

    def on_mount(self) -> None:
        app = services(self)
        self.shell = ShellSession(app.connected_client(), self.browser.session_id, on_output=self.write,
                                  on_exit=self._exited, on_error=self._error, command=app.shell_command)

    def _broadcast_screen(self) -> BroadcastScreen | None:
        screen = self.screen
        return screen if isinstance(screen, BroadcastScreen) and screen.broadcasting else None

    async def on_key(self, event: events.Key) -> None:
        """Runs before TerminalView's own handler; broadcasting, it handles the key for every pane."""
        screen = self._broadcast_screen()
        if screen is None or event.key in ("shift+pageup", "shift+pagedown") or len(screen.terminals) < 2:
            return  # TerminalView's handler: this pane only
        event.stop()
        event.prevent_default()  # TerminalView's handler is not run
        if self.exited and event.key == "escape":
            self.post_message(self.LeaveRequested(self))
            return
        for terminal in screen.terminals:
            terminal.type_key(event.key, event.character)

    def on_paste(self, event: events.Paste) -> None:
        screen = self._broadcast_screen()
        if screen is None or not event.text:
            return
        event.stop()
        event.prevent_default()
        from bbrowse.tui.terminal.keys import encode_paste

        for terminal in screen.terminals:
            if not terminal.exited:
                terminal._send(encode_paste(event.text, terminal.core.bracketed_paste))

    def type_key(self, key: str, character: str | None) -> None:
        """`key` as this pane's program expects it (its terminal's modes), sent unless it has ended."""
        if self.exited:
            return
        data = self.core.encode_key(key, character)
        if data is not None:
            if self.core.scroll_offset:
                self.core.scroll_to_bottom()
            self._send(data)

    async def _write(self, data: bytes) -> None:
        if self.shell is not None:
            await self.shell.write(data)

    def _pty_resized(self, cols: int, rows: int) -> None:
        if self.shell is not None:
            self._fit(cols, rows)

    @work(group="broadcast-size")
    async def _fit(self, cols: int, rows: int) -> None:
        """The first size starts the shell (`ShellSession.fit`), later ones resize it."""
        assert self.shell is not None
        try:
            started = await self.shell.fit(cols, rows)
        except ClientError as error:
            self.border_title = f"{self.label} · could not start: {error}"
            self.show_exit(None)
            return
        if started:
            self.border_title = f"{self.label} · running"

    def _exited(self, code: int | None) -> None:
        self.show_exit(code)
        self.border_title = f"{self.label} · exit {code}" if code is not None else f"{self.label} · ended"
        screen = self.screen if self.is_attached else None
        if isinstance(screen, BroadcastScreen):
            screen.show_state()

    def _error(self, error: BaseException) -> None:
        self.notify(str(error) or type(error).__name__, title=f"Shell on {self.label}", severity="error",
                    markup=False)

    @on(events.Unmount)
    async def _hang_up(self) -> None:
        """Closing the screen (or quitting) hangs the shell up, as closing a terminal window does."""
        if self.shell is not None:
            with contextlib.suppress(Exception):
                await self.shell.close()


class BroadcastScreen(BbrowseScreen):
    PALETTE_NAME = "Broadcast"
    CRUMBS = ("Sessions", "Broadcast")
    AUTO_FOCUS = ""
    #: The footer inside a pane names no tab keys: this screen has no tabs.
    TAB_SWITCH_HINT = ""
    BINDINGS = [
        Binding("b", "toggle_broadcast", "Broadcast on/off", id="broadcast.toggle"),
        Binding("enter,i", "enter_terminal", "Into terminal", id="broadcast.enter"),
        Binding("left", "pick(-1)", "Previous pane", show=False, id="broadcast.previous"),
        Binding("right", "pick(1)", "Next pane", show=False, id="broadcast.next"),
        Binding("escape", "back", "Close", id="broadcast.back"),
    ]

    #: Whether a key goes to every shell; the state line says it (its watcher).
    broadcasting: var[bool] = var(True, init=False)

    DEFAULT_CSS = """
    BroadcastScreen #broadcast-state { height: 1; padding: 0 1; }
    BroadcastScreen #broadcast-state.-on { background: $error; color: $text; text-style: bold; }
    BroadcastScreen #broadcast-state.-off { background: $panel; color: $text-muted; }
    BroadcastScreen #broadcast-grid { height: 1fr; }
    BroadcastScreen BroadcastTerminal { height: 1fr; }
    """

    def __init__(self, browsers: Sequence[Browser]) -> None:
        super().__init__()
        self.browsers = list(browsers)
        self.terminals = [BroadcastTerminal(b) for b in self.browsers]
        self._picked = 0

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        yield Static("", id="broadcast-state", markup=False)
        grid = Grid(*self.terminals, id="broadcast-grid")
        columns = min(len(self.terminals), 3) or 1
        grid.styles.grid_size_columns = columns
        grid.styles.grid_size_rows = -(-len(self.terminals) // columns) or 1
        yield grid
        yield BbrowseFooter()

    def on_mount(self) -> None:
        if self.terminals:
            self.terminals[0].focus()
        self.call_after_refresh(self.show_state)  # once the focus is in the first pane (no "enter: into" then)

    def show_state(self) -> None:
        running = sum(1 for t in self.terminals if not t.exited)
        line = self.query_one("#broadcast-state", Static)
        if self.terminals and not running:
            line.update(f"every shell has ended ({len(self.terminals)}) · esc closes")
            line.set_class(False, "-on")
            line.set_class(True, "-off")
            return
        keymap = keymap_of(self.app)
        switch = hint_text(SWITCH_HINT, keymap)
        if self.broadcasting:
            text = f"BROADCAST ON · every key goes to {running} of {len(self.terminals)} shells · {switch}: off"
        else:
            text = f"broadcast off · keys go to the focused shell only · {switch}: on"
        if self.focused is None and self.terminals:
            text += f" · {hint_text('{broadcast.enter}', keymap)}: into {self.terminals[self._picked].label}"
        line.update(text)
        line.set_class(self.broadcasting, "-on")
        line.set_class(not self.broadcasting, "-off")

    def watch_broadcasting(self) -> None:
        self.show_state()

    def action_toggle_broadcast(self) -> None:
        self.broadcasting = not self.broadcasting

    def action_enter_terminal(self) -> None:
        if self.terminals:
            self.terminals[self._picked].focus()
            self.call_after_refresh(self.show_state)

    def action_pick(self, delta: int) -> None:
        if self.terminals:
            self._picked = (self._picked + delta) % len(self.terminals)
            self.show_state()

    @on(TerminalView.LeaveRequested)
    def _leave(self, event: TerminalView.LeaveRequested) -> None:
        if isinstance(event.terminal, BroadcastTerminal) and event.terminal in self.terminals:
            self._picked = self.terminals.index(event.terminal)
        self.set_focus(None)
        self.show_state()

    @on(TerminalView.RestartRequested)
    def _no_restart(self) -> None:
        self.notify("Close this screen (esc) and broadcast again for new shells", timeout=4)

    def action_back(self) -> None:
        self.dismiss()
