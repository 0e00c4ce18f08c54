"""The Logs tab of a session: several live log panes side by side, each following a file or a supervised program.

`o` opens a pane (a small form: a supervised program from `logs.supervisors`, or a path on the instance
completed from `list_files`), `x` closes the focused one, `z` shows only the focused one. The first time
the tab is shown it opens the session's Chromium log (or the service's own log when there is none).

Each pane's stream is a worker of its `LogPanel`, so closing the pane (or the session screen) cancels
it. Following is the client's `Logs.follow`: a stalled link is noticed (the pane says "link stalled"), a
broken stream is reopened with the client's one backoff, each gap is marked, and for a file the lines
written meanwhile are shown after the mark, in order, none twice.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import time
from collections.abc import Awaitable
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Button, Input, Label, OptionList, RadioButton, RadioSet, Static

from bbrowse.client import BrowserClient, ClientError
from bbrowse.client.errors import ConnectionLost
from bbrowse.client.logs import LIVE, RECONNECTING, STALLED, LogGap
from bbrowse.tui.app_services import describe_error, services, settings_of
from bbrowse.tui.dialogs.base import Dialog, button_label
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.panes.base import HintLine, SessionPane, answer
from bbrowse.tui.textual_private import keymap_of
from bbrowse.tui.widgets.log_view import LogPanel, LogView
from bbrowse.wire import LOGS_SOURCE_NOT_AVAILABLE, LogSource

#: Existing lines shown when a pane opens (`tail`, a bbrowse serve extension; other services ignore it).
DEFAULT_HISTORY = 1000
#: The stream loop hands the event loop back at least this often, so keys are answered during a flood.
YIELD_EVERY_EVENTS = 512
#: Supervised program opened by default, when the session has it.
DEFAULT_PROGRAM = "chromium"

HINT = ("{logs.open} open · {logs.close} close · {logs.zoom} zoom · {logs.search} search · "
        "{logs.next_match}/{logs.previous_match} next · {logs.filter} filter · {logs.wrap} wrap · "
        "{logs.timestamps} time · {logs.json} json · {logs.copy} copy · {logs.save} save")


@dataclass(frozen=True)
class LogTarget:
    """What a pane follows: a supervised program by name, or a file by absolute path."""

    source: LogSource
    name: str
    history: int = DEFAULT_HISTORY

    @property
    def label(self) -> str:
        return self.name

    @property
    def slug(self) -> str:
        """A file-name-safe short name: the program, or the file's base name."""
        base = self.name if self.source is LogSource.SUPERVISOR else posixpath.basename(self.name.rstrip("/"))
        return re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._") or "log"


@dataclass
class ProgramsListed(Message):
    """The supervised programs the open-log form offers, or why the service gave none."""

    names: list[str] | ClientError


class SupervisorLogsUnavailable(Message):
    """The service keeps no supervisor logs (Kernel's VM, `bbrowse serve --kernel-compat`): it answered a
    supervisor stream with one `logs source not available` event and ended it."""

    def __init__(self, target: LogTarget) -> None:
        super().__init__()
        self.target = target


#: By binding id (`key_hints`), as every text here that names a key.
UNAVAILABLE_NOTE = ("This service keeps no supervisor logs (as Kernel's VM): its programs log to files. "
                    "Press {logs.open} and choose a file on the instance.")


async def follow_log(panel: LogPanel, client: BrowserClient, session_id: str, target: LogTarget, *,
                     read_history: bool = False) -> None:
    """Stream `target` into `panel` until cancelled, across drops and stalls (`Logs.follow`: reconnecting,
    marking each gap, and for a file showing the lines written meanwhile).

    `read_history`: the service ignores `tail` (Kernel's VM), so a file's last lines are read with `read_file`
    once the stream has begun (`tail_from_file`), joined to it with no line missed or twice."""
    feed = panel.feed  # the worker writes to the feed; the panel draws it
    push = feed.line
    feed.state("connecting…")

    def state(now: str, reason: str | None) -> None:
        if now == LIVE:
            feed.state("● live")
            services(panel).connection_ok()
        elif now == STALLED:
            feed.state(f"link stalled: {reason}" if reason else "link stalled")
            services(panel).link_stalled()
        elif now == RECONNECTING:
            feed.state(f"reconnecting ({reason})" if reason else "reconnecting…")
            services(panel).connection_lost(ConnectionLost(reason or "the log stream dropped"))

    try:
        events = client.logs.follow(
            session_id,
            source=target.source,
            path=target.name if target.source is LogSource.PATH else None,
            supervisor_process=target.name if target.source is LogSource.SUPERVISOR else None,
            tail=target.history or None,
            tail_from_file=read_history,
            on_state=state,
        )
        count = 0
        last = ""
        stamp, seconds = None, 0.0
        async for item in events:
            if isinstance(item, LogGap):
                feed.gap(item.seconds)
                continue
            if item.timestamp != stamp:  # lines read together share their timestamp
                stamp, seconds = item.timestamp, item.timestamp.timestamp()
            push(item.message, seconds)
            last = item.message
            count += 1
            if count % YIELD_EVERY_EVENTS == 0:
                await asyncio.sleep(0)
    except ClientError as error:  # only what another try would not change: a missing file or session...
        feed.state(f"stopped: {describe_error(error)}")
        if not feed.lines_written:  # say it where the lines would be, not only in a toast
            feed.note([f"Could not open {target.label}: {describe_error(error)}"])
            services(panel).report_error(error, f"Could not open the log {target.label}")
        return
    # The service said once that it has no such log and ended the stream (Kernel's VM).
    if target.source is LogSource.SUPERVISOR and last.strip() == LOGS_SOURCE_NOT_AVAILABLE:
        keymap = keymap_of(panel.app)
        feed.state(hint_text("not available on this service: {logs.open} opens a file log", keymap))
        feed.note([hint_text(UNAVAILABLE_NOTE, keymap)])
        panel.post_message(SupervisorLogsUnavailable(target))
    else:
        feed.state(f"stopped: {last.strip()}" if last else "stopped")


class PathSuggester(Suggester):
    """Completes an absolute path on the instance from `list_files` of the directory being typed."""

    #: A directory listing is reused for this long while the user types.
    LISTING_SECONDS = 5.0

    def __init__(self, client: BrowserClient, session_id: str) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.client = client
        self.session_id = session_id
        self._listings: dict[str, tuple[float, list[tuple[str, bool]]]] = {}
        #: Listings on their way: the Input asks for a suggestion at every key, so a quick typist (or a
        #: paste) would otherwise send one `list_files` of the same directory per character.
        self._fetching: dict[str, asyncio.Future[list[tuple[str, bool]]]] = {}

    async def _listing(self, directory: str) -> list[tuple[str, bool]]:
        cached = self._listings.get(directory)
        if cached is not None and time.monotonic() - cached[0] < self.LISTING_SECONDS:
            return cached[1]
        fetching = self._fetching.get(directory)
        if fetching is None:
            fetching = self._fetching[directory] = asyncio.ensure_future(self._fetch(directory))
            fetching.add_done_callback(lambda done: self._fetched(directory, done))
        # Shielded: the Input drops a suggestion that is out of date, which must not cancel the others' listing.
        return await asyncio.shield(fetching)

    def _fetched(self, directory: str, done: asyncio.Future[list[tuple[str, bool]]]) -> None:
        self._fetching.pop(directory, None)
        if not done.cancelled():
            done.exception()  # seen here too: every key that waited for it may have gone on meanwhile

    async def _fetch(self, directory: str) -> list[tuple[str, bool]]:
        try:
            files = await self.client.fs.list_files(self.session_id, directory)
        except ClientError:
            entries: list[tuple[str, bool]] = []
        else:
            entries = sorted((f.name, f.is_dir) for f in files)
        self._listings[directory] = (time.monotonic(), entries)
        return entries

    async def get_suggestion(self, value: str) -> str | None:
        if not value.startswith("/"):
            return None
        directory, _, prefix = value.rpartition("/")
        directory = directory or "/"
        for name, is_dir in await self._listing(directory):
            if name.startswith(prefix) and (name != prefix or is_dir):
                completed = posixpath.join(directory, name) + ("/" if is_dir else "")
                return completed if completed != value else None
        return None


class Choice(RadioButton):
    """A radio button whose off state is empty: Textual draws it as a dim ●, which reads as a second
    choice made (in ANSI colours, and in any text capture)."""

    @property
    def _button(self) -> Content:
        self.BUTTON_INNER = "●" if self.value else " "
        return super()._button


class OpenLogScreen(Dialog[LogTarget | None]):
    """Choose what a new pane follows: a supervised program, or a file path (with completion)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="logs_open.cancel"),
        Binding("ctrl+s", "submit", "Open", id="logs_open.submit"),
    ]
    DEFAULT_CSS = """
    OpenLogScreen #open-log-programs { height: auto; max-height: 8; }
    OpenLogScreen #open-log-path { display: none; }
    OpenLogScreen.path #open-log-path { display: block; }
    OpenLogScreen.path #open-log-programs { display: none; }
    OpenLogScreen #open-log-error { color: $error; height: auto; }
    OpenLogScreen RadioSet { width: 100%; }
    """

    def __init__(self, client: BrowserClient, session_id: str, *, files_only: bool = False) -> None:
        """`files_only`: the service keeps no supervisor logs: the form opens on the file choice and says why."""
        super().__init__()
        self.client = client
        self.session_id = session_id
        self.files_only = files_only

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="open-log-form"):
            yield Static("Open a log", classes="dialog-title")
            if self.files_only:
                yield Static("This service keeps no supervisor logs: open a file on the instance.",
                             id="open-log-note", markup=False)
            with RadioSet(id="open-log-source"):
                yield Choice("Supervised program", value=True, id="source-supervisor")
                yield Choice("File on the instance", id="source-path")
            yield OptionList(id="open-log-programs")
            yield Input(placeholder="/absolute/path/to/file.log  (→ completes)", id="open-log-path",
                        suggester=PathSuggester(self.client, self.session_id))
            yield Label("Lines of history")
            yield Input(str(DEFAULT_HISTORY), id="open-log-history", type="integer")
            yield Static("", id="open-log-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(button_label(self.app, "Open", "logs_open.submit"), variant="primary", id="open-log-open")
                yield Button(button_label(self.app, "Cancel", "logs_open.cancel"), id="open-log-cancel")

    def on_mount(self) -> None:
        if self.files_only:
            self.query_one("#source-path", RadioButton).value = True
            self.set_class(True, "path")
            self.query_one("#open-log-path", Input).focus()
            return
        self.query_one("#open-log-programs", OptionList).focus()
        self._load_programs()

    @work(exclusive=True, group="open-log-programs")
    async def _load_programs(self) -> None:
        self.post_message(ProgramsListed(await answer(self.client.logs.supervisors(self.session_id))))

    @on(ProgramsListed)
    def _programs_listed(self, message: ProgramsListed) -> None:
        names = message.names
        if isinstance(names, ClientError):
            self.query_one("#open-log-error", Static).update(
                f"No list of supervised programs ({describe_error(names)}); open a file instead."
            )
            self.query_one("#source-path", RadioButton).value = True
            return
        programs = self.query_one("#open-log-programs", OptionList)
        programs.add_options(names)
        if names:
            programs.highlighted = names.index(DEFAULT_PROGRAM) if DEFAULT_PROGRAM in names else 0

    @property
    def by_path(self) -> bool:
        return self.query_one("#source-path", RadioButton).value

    @on(RadioSet.Changed, "#open-log-source")
    def _source_changed(self) -> None:
        self.set_class(self.by_path, "path")
        self.query_one("#open-log-path" if self.by_path else "#open-log-programs").focus()

    @on(OptionList.OptionSelected, "#open-log-programs")
    @on(Input.Submitted)
    @on(Button.Pressed, "#open-log-open")
    def action_submit(self) -> None:
        error = self.query_one("#open-log-error", Static)
        history_text = self.query_one("#open-log-history", Input).value.strip()
        if not history_text:
            error.update("Lines of history is required: 0 for none, up to 1,000,000.")
            return
        try:
            history = int(history_text)
        except ValueError:
            error.update("Lines of history must be a whole number.")
            return
        if not 0 <= history <= 1_000_000:
            error.update("Lines of history must be between 0 and 1,000,000.")
            return
        if self.by_path:
            path = self.query_one("#open-log-path", Input).value.strip()
            if not path.startswith("/"):
                error.update("Type an absolute path, e.g. /var/log/syslog.")
                return
            self.dismiss(LogTarget(LogSource.PATH, path, history))
            return
        programs = self.query_one("#open-log-programs", OptionList)
        if programs.highlighted is None:
            error.update("Choose a program (or switch to a file).")
            return
        name = str(programs.get_option_at_index(programs.highlighted).prompt)
        self.dismiss(LogTarget(LogSource.SUPERVISOR, name, history))

    @on(Button.Pressed, "#open-log-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class LogsPane(SessionPane, can_focus=True):
    """The session screen's "Logs" tab: log panes side by side; self-contained, needs only the client.

    Focusable itself, so `o` works while no pane is open; the focus goes to a pane's lines otherwise.
    """

    BINDINGS = [
        Binding("o", "open", "Open log", id="logs.open"),
        Binding("x", "close", "Close log", id="logs.close"),
        Binding("z", "zoom", "Zoom pane", id="logs.zoom", show=False),
    ]
    DEFAULT_CSS = """
    LogsPane { height: 1fr; }
    LogsPane #logs-hint { height: 1; color: $text-muted; padding: 0 1; }
    LogsPane #logs-panels { height: 1fr; }
    LogsPane #logs-panels LogPanel { width: 1fr; }
    LogsPane #logs-empty { height: 1fr; content-align: center middle; text-align: center; color: $text-muted; }
    LogsPane.has-panels #logs-empty { display: none; }
    LogsPane.zoomed #logs-panels LogPanel { display: none; }
    LogsPane.zoomed #logs-panels LogPanel.active { display: block; }
    """

    def __init__(self, session_id: str, *, open_default: bool = True, capacity: int | None = None) -> None:
        super().__init__(session_id)
        self.open_default = open_default
        self.capacity = capacity
        self._shown = False
        self._count = 0
        #: The service answered a supervisor stream with "not available": `o` offers files only.
        self.supervisor_logs_unavailable = False
        #: What each pane (by id) follows: (source, name), so the same log is not opened twice.
        self._targets: dict[str, tuple[LogSource, str]] = {}

    def compose(self) -> ComposeResult:
        yield HintLine(HINT, id="logs-hint")
        yield Static(
            hint_text("No log open.\nPress {logs.open} to open one: a supervised program (bbrowse, chromium, …) or a "
                      "file on the instance.", keymap_of(self.app)),
            id="logs-empty", markup=False,
        )
        yield Horizontal(id="logs-panels")

    @property
    def panels(self) -> list[LogPanel]:
        return list(self.query_one("#logs-panels").query_children(LogPanel))

    @property
    def current(self) -> LogPanel | None:
        """The pane holding the focus, else the one marked active, else the last one."""
        focused = self.screen.focused
        panels = self.panels
        for panel in panels:
            if focused is not None and (focused is panel or panel in focused.ancestors):
                return panel
        return next((p for p in panels if p.has_class("active")), panels[-1] if panels else None)

    def on_show(self) -> None:
        if not self._shown:
            self._shown = True
            if self.open_default and not self.panels:
                self._open_default()
        focused = self.screen.focused
        if focused is None or not focused.region:  # nothing (visible) has the focus: take it
            self.focus_default()

    @work(exclusive=True, group="logs-default")
    async def _open_default(self) -> None:
        try:
            names = await self.client.logs.supervisors(self.session_id)
        except ClientError:
            return  # e.g. a service without the extension: the empty state says how to open one
        if names and not self.panels:
            name = DEFAULT_PROGRAM if DEFAULT_PROGRAM in names else names[0]
            await self.open_log(LogTarget(LogSource.SUPERVISOR, name))

    async def open_log(self, target: LogTarget, *, focus: bool = True) -> LogPanel:
        """Add a pane following `target` and start its stream; a log already open is focused instead."""
        for panel in self.panels:
            if self._targets.get(panel.id or "") == (target.source, target.name):
                self._activate(panel)
                if focus:
                    panel.focus_view()
                self.notify(f"{target.label} is already open", timeout=3, markup=False)
                return panel
        self._count += 1
        client, session_id = self.client, self.session_id
        # a service without supervisor logs is Kernel's VM (or --kernel-compat): no `tail` there either
        read_history = self.supervisor_logs_unavailable

        def feed(panel: LogPanel) -> Awaitable[None]:
            return follow_log(panel, client, session_id, target, read_history=read_history)

        capacity = self.capacity or settings_of(self).logs.buffer_lines  # [logs] buffer_lines
        panel = LogPanel(target.label, target.slug, feed=feed, capacity=capacity, id=f"log-{self._count}")
        self._targets[panel.id or ""] = (target.source, target.name)
        await self.query_one("#logs-panels").mount(panel)
        self.add_class("has-panels")
        self._activate(panel)
        if focus:
            panel.focus_view()
        return panel

    def _activate(self, panel: LogPanel) -> None:
        for other in self.panels:
            other.set_class(other is panel, "active")

    @on(LogView.Changed)
    def _stop_changed(self, event: LogView.Changed) -> None:
        event.stop()

    def on_descendant_focus(self, event) -> None:
        for panel in self.panels:
            if panel is event.widget or panel in event.widget.ancestors:
                self._activate(panel)
                return

    @on(SupervisorLogsUnavailable)
    def _supervisor_logs_unavailable(self, event: SupervisorLogsUnavailable) -> None:
        event.stop()
        if not self.supervisor_logs_unavailable:
            self.supervisor_logs_unavailable = True
            note = hint_text(UNAVAILABLE_NOTE, keymap_of(self.app))
            self.notify(note, title=f"No supervisor log {event.target.name}", timeout=10, markup=False)

    def action_open(self) -> None:
        def opened(target: LogTarget | None) -> None:
            if target is not None:
                self.run_worker(self.open_log(target), group="logs-open")

        screen = OpenLogScreen(self.client, self.session_id, files_only=self.supervisor_logs_unavailable)
        self.app.push_screen(screen, opened)

    async def action_close(self) -> None:
        panel = self.current
        if panel is None:
            self.notify("No log open", severity="warning", timeout=3)
            return
        panels = self.panels
        index = panels.index(panel)
        await panel.remove()
        rest = self.panels
        self.set_class(bool(rest), "has-panels")
        if rest:
            following = rest[min(index, len(rest) - 1)]
            self._activate(following)
            following.focus_view()
        else:
            self.remove_class("zoomed")
            self.focus()

    def action_zoom(self) -> None:
        if self.current is None:
            return
        self._activate(self.current)
        self.toggle_class("zoomed")

    def focus_default(self) -> None:
        """Give the focus to the active pane's lines, or to this pane while none is open."""
        current = self.current
        if current is None:
            self.focus()
        elif current.query(LogView):
            current.focus_view()
        else:  # mounted a moment ago, its lines not composed yet
            self.call_after_refresh(current.focus_view)

