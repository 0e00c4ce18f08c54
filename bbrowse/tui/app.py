"""The bbrowse Textual app: connects (or starts the embedded service), then shows the sessions.

The service target is resolved in a worker thread while a spinner shows, so the first frame is
drawn at once. Connection health is tracked here: screens report each call's outcome with
`connection_ok()` / `connection_lost()`, the header shows the state, and a notification marks each
transition, so a lost service never crashes the app and is noticed when it comes back.

Settings (`bbrowse.config`) arrive ready-made: the app registers every theme (shipped and the user's),
applies the configured theme and `[keys]` keymap, reports a broken file as a notification, and can
switch to another profile. Nothing is destroyed as a side effect: switching away from the embedded
service leaves it running (switching back finds it again, with its sessions, through its discovery
file); quitting stops the embedded service this app started in the background (the terminal is back
at once) and asks first when that would end sessions, saying how many.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import CommandListItem, CommandPalette, SimpleCommand, SimpleProvider
from textual.dom import DOMNode
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.widgets import LoadingIndicator, Static
from textual.worker import get_current_worker

from bbrowse import launcher
from bbrowse.client import (
    BrowserClient,
    ClientConfig,
    ClientError,
    NotFound,
    ServiceError,
    SessionGone,
    close_shared_clients,
)
from bbrowse.config import (
    DEFAULT_SHELL,
    Profile,
    Settings,
    defaults,
    load_app_settings,
    save_theme,
)
from bbrowse.launcher import EmbeddedService
from bbrowse.paths import config_file, user_themes_dir
from bbrowse.startup import resume_collection
from bbrowse.target import Target, resolve_soon, target_for
from bbrowse.timeouts import bounded
from bbrowse.tui import warm_up
from bbrowse.tui.app_services import describe_error
from bbrowse.tui.loaded import loaded_class
from bbrowse.tui.palette import (
    BbrowseCommands,
    BbrowsePalette,
    PaletteCommand,
    global_commands,
    screen_commands,
    typed_character,
)
from bbrowse.tui.polling import Poller
from bbrowse.tui.screens.base import BbrowseScreen
from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.quit import QuitChoice, QuitScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.textual_private import (
    QuickExitDriver,
    driver_of,
    set_escape_delay,
    set_screen_update_period,
    until_settled,
    version_problem,
)
from bbrowse.tui.themes import choose_theme, load_themes, shipped_themes_dir
from bbrowse.tui.widgets.service_bar import ConnectionState
from bbrowse.wire import Browser

if TYPE_CHECKING:
    from bbrowse.tui.app_services import AppServices
    from bbrowse.tui.polling import Poller
from bbrowse.tui.palette import PaletteHost

#: Textual repaints dirty screens on a 60 Hz timer, so a key's echo waited up to 16.7 ms for its
#: turn. Widgets that stream (terminal, logs) coalesce their own frames to ≤ 60 a second, so a
#: faster screen timer only cuts latency: it costs nothing while nothing is dirty.
SCREEN_UPDATE_SECONDS = 1 / 240
set_screen_update_period(SCREEN_UPDATE_SECONDS)

#: Textual holds a lone Esc this long to tell it from the first byte of an escape sequence (ncurses'
#: `ESCDELAY`). Its default, 100 ms, was most of what a vim user waited on every Esc in the shell pane;
#: a terminal writes a sequence in one go, so 25 ms (vim's own `ttimeoutlen`) tells them apart. A
#: user's `ESCDELAY` (in ms, as for ncurses programs) still wins.
ESCAPE_DELAY_SECONDS = 0.025
if "ESCDELAY" not in os.environ:
    set_escape_delay(ESCAPE_DELAY_SECONDS)


class StartingScreen(BbrowseScreen):
    """While the service is found or started: the bar (state "starting"), a spinner and what is happening."""

    CRUMBS = ("Connecting",)
    DEFAULT_CSS = """
    StartingScreen { align: center middle; }
    StartingScreen #starting-message { width: 100%; text-align: center; }
    StartingScreen LoadingIndicator { height: 3; }
    """

    def __init__(self, message: str = "Connecting to the browser service…") -> None:
        super().__init__()
        self.message = message
        #: Keys typed while connecting, for the screen that follows (type-ahead, as a shell keeps it).
        self.typed: list[events.Key] = []
        #: Still connecting (keys are kept); False once connecting failed (the keys then act here: P, ctrl+q).
        self.connecting = True

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        yield LoadingIndicator()
        yield Static(self.message, id="starting-message", markup=False)

    def on_key(self, event: events.Key) -> None:
        if self.connecting:
            self.typed.append(events.Key(event.key, event.character))
            event.stop()
            event.prevent_default()


class BbrowseApp(App):
    """Keyboard-driven browser sessions: tables, shells, replays."""

    TITLE = "bbrowse"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live in other modules
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = {BbrowseCommands}
    #: Seconds the quit question waits for the embedded service to count its sessions.
    COUNT_SESSIONS_SECONDS = 2.0
    BINDINGS = [
        Binding("question_mark", "toggle_help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True, show=False),
        Binding("P", "switch_profile", "Profile", id="app.switch_profile"),
    ]

    connection_state: reactive[ConnectionState] = reactive("starting")
    service_label: reactive[str] = reactive("")

    def __init__(
        self,
        target: Target | None = None,
        resolve: Callable[[], Target] | None = None,
        *,
        settings: Settings | None = None,
        user_themes: Path | None = None,
        config_path: Path | None = None,
        problems: Sequence[str] = (),
        driver_class: type | None = None,
    ) -> None:
        """`settings`: what is in effect (default: the built-in defaults with the environment applied, no
        file). `user_themes`: a directory of the user's theme files. `config_path`: where a theme picked
        in the palette is saved (None: not saved). `problems`: lines to show as notifications at start.
        `driver_class`: the terminal driver (`run_app` gives the quick-exit one)."""
        super().__init__(driver_class=driver_class)
        self.settings = settings if settings is not None else defaults()
        self.target = target
        self._resolve = resolve or (lambda: target_for(self.settings.active_profile))
        self.client: BrowserClient | None = None
        #: The last sessions filter, remembered across visits of the sessions screen.
        self.last_filter = ""
        self._user_themes = user_themes
        self._config_path = config_path
        self._problems = list(problems)
        self._saved_theme: str | None = None
        #: Embedded services this app started, by pid: they outlive a profile switch, and are stopped
        #: (in the background) when the app quits, unless the user chose to keep them running.
        self.started_services: dict[int, EmbeddedService] = {}
        self.keep_services_running = False
        #: Set when the app quits: a recovery thread's wait ends at once instead of holding the exit up.
        self._quitting = threading.Event()
        self._atexit_registered = False
        self._session_watch = Poller(self, self._check_shown_session,  # type: ignore[arg-type]
                                     visible=lambda: self._shown_session_screen() is not None,
                                     every=self.SESSION_WATCH_SECONDS, longest=self.SESSION_WATCH_LONGEST)
        #: Sessions seen to end while their screen was open (their later errors are not shown).
        self._ended_sessions: set[str] = set()
        #: The target whose lost service `_recover` is looking for.
        self._recovering: Target | None = None

    def get_key_display(self, binding: Binding) -> str:
        """As Textual writes a key, but a key named after its character is that character (`™`, not
        `trade_mark_sign`), in the footer and the keys panel alike."""
        if not binding.key_display:
            modifiers, key = binding.parse_key()
            character = typed_character(key)
            if character is not None and not character.isascii() and character.isprintable():
                return "+".join([*modifiers, character])
        return super().get_key_display(binding)

    @property
    def shell_command(self) -> tuple[str, ...]:
        """The program the shells pane runs: `[shell] command`, else bash when the instance has it, else sh."""
        return self.settings.shell.command or DEFAULT_SHELL

    def on_mount(self) -> None:
        self._session_watch.start()
        self._apply_themes()
        self._apply_keymap()
        for problem in self._problems:
            self.notify(problem, title="Configuration", severity="warning", timeout=12, markup=False)
        if self.target is not None:
            self._connected(self.target)
        else:
            self.push_screen(StartingScreen())
            self._start_target()

    @work(thread=True, exclusive=True, group="target")
    def _start_target(self) -> None:
        # What the first listing loads that the app has not (httpx's transport, made with the first client, and
        # the asyncio backend of its connections): 0.08 CPU-s, spent while the service starts, not after it answers.
        import httpcore  # noqa: F401

        with contextlib.suppress(ImportError):  # anyio's own module: named here only to load it early
            import anyio._backends._asyncio  # noqa: F401

        try:
            target = self._resolve()
        except Exception as error:
            self.call_from_thread(self._target_failed, error)
            return
        self.call_from_thread(self._connected, target)

    def _target_failed(self, error: BaseException) -> None:
        # App.query_one looks in the default screen only: ask the starting screen itself
        screen = next((s for s in reversed(self.screen_stack) if isinstance(s, StartingScreen)), None)
        if screen is not None:
            screen.connecting = False
            screen.query_one(LoadingIndicator).display = False
            screen.query_one("#starting-message", Static).update(
                f"Could not reach or start the browser service:\n{describe_error(error)}\n\n"
                "Press P to pick another profile, ctrl+q to quit."
            )
        else:
            self.notify(describe_error(error), title="Could not connect", severity="error", markup=False)
        self.connection_state = "failed"  # nothing is retried: the user picks a profile or fixes the file

    def _connected(self, target: Target) -> None:
        embedded = target.embedded
        if embedded is not None:
            if embedded.owned:
                self.started_services[embedded.pid] = embedded
                if not self._atexit_registered:  # a crash still stops what this app started
                    atexit.register(self._stop_started_services)
                    self._atexit_registered = True
            elif embedded.pid in self.started_services:
                target.embedded = self.started_services[embedded.pid]  # switched back: still ours
        self.target = target
        if target.profile and target.profile in self.settings.profiles:
            self.settings = self.settings.model_copy(update={"profile": target.profile})
        self.client = BrowserClient(config=target.config)
        self.service_label = target.label
        self.connection_state = "connected"
        listed, target.first_listing = target.first_listing, None  # as it was a moment ago: used once
        for browser in listed or ():
            self.client.routes.learn(browser)
        sessions = SessionsScreen(listed)
        if isinstance(self.screen, StartingScreen):
            typed = self.screen.typed
            self.switch_screen(sessions)
            if typed:
                sessions.call_after_refresh(self._type_ahead, typed)
        else:
            self.push_screen(sessions)
        self.set_timer(warm_up.AFTER_SECONDS, warm_up.warm_up_soon, name="warm-up")

    @work(group="type-ahead", exclusive=True)
    async def _type_ahead(self, keys: list[events.Key]) -> None:
        """Keys typed while connecting, given to the screen now shown one by one, each once the app has handled
        the one before (a key that moves the focus, `/`, has moved it by then)."""
        for key in keys:
            self.post_message(key)
            await until_settled(self)

    def connected_client(self) -> BrowserClient:
        """The client of the service in use, for the screens and panes (`AppServices`). They exist only while
        there is one: switching profiles closes them before it drops the client."""
        if self.client is None:
            raise RuntimeError("not connected to a browser service")
        return self.client

    # connection health ------------------------------------------------------

    def connection_ok(self) -> None:
        if self.connection_state == "stalled":
            self.notify(f"The link to {self.service_label} is back", title="Link back")
        if self.connection_state == "reconnecting":
            self.notify(f"Reconnected to {self.service_label}", title="Service back")
        self.connection_state = "connected"

    def link_stalled(self) -> None:
        if self.connection_state == "connected":
            self.connection_state = "stalled"  # back to "connected" at the next answer (`connection_ok`)

    def connection_lost(self, error: BaseException) -> None:
        if self.target is None or self.connection_state in ("starting", "failed"):
            return  # a late answer of a service being left: nothing to find again
        if self.connection_state != "reconnecting":
            where = "The embedded service" if self.target.kind == "embedded" else "The service"
            self.notify(f"{where} at {self.target.config.base_url} is not answering. What is shown is dimmed "
                        "until it is back; looking for it in the background…",
                        title="Service unreachable", severity="error", timeout=10, markup=False)
        self.connection_state = "reconnecting"
        if self._recovering is not self.target:  # one search per outage, not one per failed request
            self._recovering = self.target
            self._recover(self.target)

    # finding the service again ------------------------------------------------

    #: Seconds between two looks for a lost service (the first ones sooner).
    RECOVER_WAITS = (0.5, 1.0, 2.0, 3.0)
    #: Seconds an embedded profile waits for another service to appear (`bbrowse serve` started again by
    #: hand) after its own has stopped, before it starts one itself.
    ADOPT_GRACE_SECONDS = 3.0

    @work(thread=True, exclusive=True, group="recover")
    def _recover(self, lost: Target) -> None:
        """Until the service answers again: the same one back (say so), or, for an embedded profile whose
        service has stopped, the one now named by the discovery file wherever it listens, else a new one."""
        worker = get_current_worker()
        gone_since: float | None = None
        for attempt in itertools.count():
            if self._quitting.wait(self.RECOVER_WAITS[min(attempt, len(self.RECOVER_WAITS) - 1)]):
                return
            if worker.is_cancelled or self.target is not lost:
                return
            if launcher.answers(lost.config.base_url, lost.config.token):
                self.call_from_thread(self._recovered, lost, None, "")
                return
            embedded = lost.embedded
            if lost.kind != "embedded" or embedded is None or embedded.running:
                continue  # a remote service, or ours still runs (busy, or paused): keep asking the same one
            found = launcher.find_running()
            if found is not None and found.url != lost.config.base_url:
                message = (f"The embedded service at {lost.config.base_url} stopped; reconnected to the one now "
                           f"at {found.url}.")
                self.call_from_thread(self._recovered, lost, self._embedded_target(lost, found), message)
                return
            gone_since = gone_since if gone_since is not None else time.monotonic()
            if time.monotonic() - gone_since < self.ADOPT_GRACE_SECONDS:
                continue
            try:
                started = launcher.start_embedded()
            except launcher.LaunchError as error:
                self.call_from_thread(self._recover_failed, lost, error)
                return
            message = (f"The embedded service at {lost.config.base_url} stopped (its sessions ended with it); "
                       f"started a new one at {started.url}.")
            self.call_from_thread(self._recovered, lost, self._embedded_target(lost, started), message)
            return

    @staticmethod
    def _embedded_target(lost: Target, service: EmbeddedService) -> Target:
        return Target(config=ClientConfig(base_url=service.url, token=service.token), kind="embedded",
                      embedded=service, profile=lost.profile)

    def _recover_failed(self, lost: Target, error: BaseException) -> None:
        self._recovering = None
        if self.target is lost:
            self.notify(f"{describe_error(error)}\nPress P to pick a profile, or r to try again.",
                        title="Could not start the embedded service", severity="error", timeout=15, markup=False)

    def _recovered(self, lost: Target, target: Target | None, message: str) -> None:
        """The lost service answers again (`target` None), or another one took its place: connect to it, leave
        the screens of sessions that lived on the old one, and say what happened."""
        self._recovering = None
        if self.target is not lost:
            return
        if target is None:
            self.connection_ok()
            return
        if target.embedded is not None and target.embedded.owned:
            self.started_services[target.embedded.pid] = target.embedded
            if not self._atexit_registered:
                atexit.register(self._stop_started_services)
                self._atexit_registered = True
        self.target = target
        self.client = BrowserClient(config=target.config)
        self.service_label = target.label
        for screen in self.screen_stack:
            if isinstance(screen, SessionsScreen):
                screen.forget_sessions()  # they were the old service's: their absence is no news
        self.connection_state = "connected"
        self.notify(message, title="Service found again", timeout=12, markup=False)
        self.run_worker(self._leave_old_sessions(), group="leave-old-sessions", exclusive=True)

    async def _leave_old_sessions(self) -> None:
        """Back to the sessions table when a session screen of the old service is open."""
        from bbrowse.tui.screens.session import SessionScreen

        if not any(isinstance(screen, SessionScreen) for screen in self.screen_stack):
            return
        while len(self.screen_stack) > 1 and not isinstance(self.screen, SessionsScreen):
            await self.pop_screen()

    def report_error(self, error: BaseException, title: str = "Request failed") -> None:
        """Show a service error as a notification with its code and message; never raise.

        A session that ended (410) while its screen is open is said once, for the screen (`session_ended`),
        not once per tab; what its panes report about it afterwards, late or not, is not shown."""
        if isinstance(error, ClientError) and not isinstance(error, ServiceError):
            self.connection_lost(error)
            return
        ended = self._ended_session_of(error)
        if ended is not None:
            self.session_ended(ended)
            return
        self._session_watch.poke()  # a failure in a session's tab: is the session itself still there?
        self.notify(describe_error(error), title=title, severity="error", timeout=8)

    def _ended_session_of(self, error: BaseException) -> str | None:
        """The id of an open (or already ended) session that `error` says is gone."""
        from bbrowse.tui.screens.session import SessionScreen

        url = getattr(error, "url", None) or ""
        for session_id in self._ended_sessions:
            if session_id in url:
                return session_id
        if not isinstance(error, SessionGone):
            return None
        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen) and screen.session_id in url and not screen.ended:
                return screen.session_id  # (on an ended one's read-only screen, a refusal is shown as such)
        return None

    def session_ended(self, session_id: str) -> None:
        """The session shown ended (timed out, deleted elsewhere): one notice, and back to the sessions table."""
        from bbrowse.tui.screens.session import SessionScreen

        if session_id in self._ended_sessions:
            return
        screens = [s for s in self.screen_stack if isinstance(s, SessionScreen) and s.session_id == session_id]
        if screens and all(s.ended for s in screens):
            return  # opened read-only on an ended session: no news, it stays (and its refusals are shown)
        self._ended_sessions.add(session_id)
        if not screens:
            return
        name = screens[0].browser.name or session_id
        self.notify(f"Session {name} has ended: it timed out or was deleted elsewhere. Its processes, files and "
                    "browser are gone; its replays are still listed by the service.",
                    title="Session ended", severity="warning", timeout=15, markup=False)
        self.run_worker(self._leave_session_screens(session_id), group="leave-ended", exclusive=True)

    #: How often the session shown is checked for having ended (less often while it runs on).
    SESSION_WATCH_SECONDS, SESSION_WATCH_LONGEST = 5.0, 30.0

    def _shown_session_screen(self):  # -> SessionScreen | None (imported late, as everywhere here)
        """The session screen a person sees: the top screen, or under dialogs only."""
        # None opened yet: asked at start-up, which need not load every pane for the answer.
        SessionScreen = loaded_class("bbrowse.tui.screens.session", "SessionScreen")  # noqa: N806
        if SessionScreen is None:
            return None

        for screen in reversed(self.screen_stack):
            if isinstance(screen, SessionScreen):
                return screen
            if not isinstance(screen, ModalScreen):
                return None
        return None

    @work(group="session-watch", exclusive=True)
    async def _check_shown_session(self) -> None:
        """Whether the session shown still runs: a timed-out or deleted session is said at once, not found
        later as scattered errors of its tabs."""
        screen = self._shown_session_screen()
        if screen is None or self.client is None or screen.ended:
            self._session_watch.done()
            return
        session_id = screen.session_id
        try:
            browser = await self.client.sessions.get(session_id)
        except (SessionGone, NotFound):
            self._session_watch.done(changed=True)
            self.session_ended(session_id)
            return
        except ClientError as error:
            self._session_watch.done(error=error)
            return
        except BaseException:
            self._session_watch.done()
            raise
        self._session_watch.done()
        if browser.deleted_at is not None:
            self.session_ended(session_id)

    async def _leave_session_screens(self, session_id: str) -> None:
        from bbrowse.tui.screens.session import SessionScreen

        while any(isinstance(s, SessionScreen) and s.session_id == session_id for s in self.screen_stack[1:]):
            top = self.screen
            if isinstance(top, QuitScreen):
                return  # the user is quitting: leave the stack to the quit dialog
            await self.pop_screen()

    # themes and keys --------------------------------------------------------

    def _apply_themes(self) -> None:
        """Register the shipped and the user's themes, then switch to the configured one (or the default)."""
        loaded = load_themes([shipped_themes_dir(), self._user_themes])
        for theme in loaded.themes.values():
            self.register_theme(theme)
        for skipped in loaded.problems:
            self.notify(f"Skipped a theme file: {skipped}", title="Theme", severity="warning", timeout=12,
                        markup=False)
        name, problem = choose_theme(self.settings.theme, self.available_themes)
        if problem:
            self.notify(problem, title="Theme", severity="warning", timeout=12, markup=False)
        self.theme = name
        self._saved_theme = name
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        """Remember a theme picked in the palette in the config file (when there is one to write)."""
        if theme.name == self._saved_theme:
            return
        self._saved_theme = theme.name
        self.settings = self.settings.model_copy(update={"theme": theme.name})
        if self._config_path is None:
            return
        try:
            save_theme(self._config_path, theme.name)
        except OSError as error:
            self.notify(f"Could not save the theme to {self._config_path}: {error.strerror or error}",
                        title="Theme", severity="warning", markup=False)

    def _apply_keymap(self) -> None:
        keys = self.settings.keys
        if not keys:
            return
        self.set_keymap(keys)
        unknown = sorted(set(keys) - known_binding_ids())
        if unknown:
            self.notify(f"[keys] names no binding {', '.join(unknown)}; ids are listed in docs/configuration.md",
                        title="Configuration", severity="warning", timeout=12, markup=False)

    def action_command_palette(self) -> None:
        """Textual's palette, with a footer of its own (`BbrowsePalette`)."""
        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(BbrowsePalette(id="--command-palette"))

    def search_commands(self, commands: Sequence[CommandListItem], placeholder: str = "Search for commands…"):
        """A list of commands in the palette (profiles, themes), with a footer of its own."""
        provider = SimpleProvider(self.screen, list(commands))  # an instance, as Textual's own search_commands
        return self.push_screen(BbrowsePalette(providers=[provider], placeholder=placeholder))  # type: ignore[list-item]

    def search_themes(self) -> None:
        """The theme picker ("Change theme…"): every theme, the one in use marked "(current)"."""
        current = self.theme
        commands = []
        for name, theme in sorted(self.available_themes.items()):
            description = getattr(theme, "description", "") or ("dark" if theme.dark else "light")
            commands.append(SimpleCommand(name, _later(self._pick_theme, name),
                                          ("(current) · " if name == current else "") + description))
        self.search_commands(commands, placeholder="Search for themes…")

    def _pick_theme(self, name: str) -> None:
        self.theme = name

    # profiles -----------------------------------------------------------------

    def action_switch_profile(self) -> None:
        """Pick a profile in the palette; the choice reconnects."""
        current = self.settings.profile
        commands = [
            SimpleCommand(name, _later(self.switch_profile, name),
                          profile.describe() + ("  (current)" if name == current else ""))
            for name, profile in sorted(self.settings.profiles.items())
        ]
        self.search_commands(commands, placeholder="Switch to profile…")

    def switch_profile(self, name: str) -> None:
        """Leave the current target (an embedded service keeps running, sessions and all) and connect as `name`."""
        profile = self.settings.profiles.get(name)
        if profile is None:
            self.notify(f"No profile named {name!r}", severity="error", markup=False)
            return
        self.run_worker(self._switch(profile), group="switch-profile", exclusive=True)

    async def _switch(self, profile: Profile) -> None:
        self.settings = self.settings.model_copy(update={"profile": profile.name})
        self.connection_state = "starting"
        self.service_label = f"profile {profile.name} · {profile.describe()}"
        # Quiet the screens about to close first: their timers would start refreshes, and a refresh that
        # resumes while the screen's children are being removed would find its table gone.
        for screen in self.screen_stack[1:]:
            for node in screen.walk_children(with_self=True):
                for timer in list(getattr(node, "_timers", ())):  # Textual has no public "stop all timers"
                    timer.stop()
        for worker in list(self.workers):
            if worker.node is not self:
                worker.cancel()
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        await self.push_screen(StartingScreen(f"Switching to profile {profile.name}…"))
        self.target, self.client = None, None
        await close_shared_clients()
        self._reconnect(profile)

    @work(thread=True, exclusive=True, group="target")
    def _reconnect(self, profile: Profile) -> None:
        # The old target is left as it is: a remote one has nothing to close, and an embedded service
        # keeps running (this app stops one it started when it quits).
        try:
            target = target_for(profile)
        except Exception as error:
            self.call_from_thread(self._target_failed, error)
            return
        self.call_from_thread(self._connected, target)

    # help and palette -------------------------------------------------------

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def palette_commands(self, screen: Screen) -> Iterable[PaletteCommand]:
        """What the command palette lists: the global actions, then every action of `screen`."""
        entries = [
            ("New session…", "Create a browser session, from any screen · key n on the sessions table",
             self.action_new_session),
            ("Sessions", "Back to the sessions table", self.action_show_sessions),
            ("Session wall", "Every session (or those the filter shows) as live tiles · key w on the sessions table",
             self.action_show_wall),
            ("Switch profile…", "Connect to another service: embedded, cloud or one of your profiles · key P",
             self.action_switch_profile),
            ("Change theme…", "Pick a theme; the choice is saved in the config file", self.action_change_theme),
            ("Keys", "Show or hide the keys of the focused widget · key ?", self.action_toggle_help),
            ("Quit", "Quit bbrowse · key ctrl+q", self.action_quit),
        ]
        commands = global_commands(entries)
        yield from commands
        yield from screen_commands(screen, skip_actions=GLOBAL_ACTIONS)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette's commands as Textual's system commands (what `palette_commands` lists)."""
        for command in self.palette_commands(screen):
            yield SystemCommand(command.title, command.help, command.run)

    def action_new_session(self) -> None:
        """The create form, from any screen; the sessions table lists the new session."""
        if self.client is None:
            self.notify("Not connected to a service yet", severity="warning")
            return
        if isinstance(self.screen, SessionsScreen):
            self.screen.action_create()
            return

        def created(browser: Browser | None) -> None:
            if browser is not None:
                self.notify(f"Created {browser.name or browser.session_id}; it is listed under Sessions",
                            title="Session created", markup=False)

        self.push_screen(CreateSessionScreen(), created)

    async def action_show_sessions(self) -> None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, SessionsScreen):
            await self.pop_screen()

    async def action_show_wall(self) -> None:
        """The session wall, over the sessions table (whose filter and selection it uses)."""
        await self.action_show_sessions()
        if isinstance(self.screen, SessionsScreen):
            self.screen.action_wall()

    # quitting ----------------------------------------------------------------

    def _running_started_services(self) -> list[EmbeddedService]:
        return [service for service in self.started_services.values() if service.running]

    async def _count_sessions(self, services: Sequence[EmbeddedService]) -> int:
        """Active sessions of `services` (a service that does not answer in time counts none)."""

        async def count(service: EmbeddedService) -> int:
            current = self.target is not None and self.target.embedded is service
            # the app's own client when it is that service: its connection is open already
            client = self.client if current and self.client is not None else BrowserClient(
                config=ClientConfig(base_url=service.url, token=service.token))
            return len([b async for b in client.sessions.list(page_size=100)])

        total = 0
        for service in services:
            try:
                total += await bounded(count(service), self.COUNT_SESSIONS_SECONDS)
            except (ClientError, TimeoutError, OSError):
                continue
        return total

    async def action_quit(self) -> None:
        """Quit; when that would end sessions (the embedded service this app started stops), ask first."""
        if isinstance(self.screen, QuitScreen):
            self.screen.dismiss("stop")  # ctrl+q twice: quit and stop
            return
        services = self._running_started_services()
        sessions = await self._count_sessions(services) if services else 0
        if not sessions:
            self.exit()
            return

        def chosen(choice: QuitChoice | None) -> None:
            if choice is None:
                return
            self.keep_services_running = choice == "keep"
            self.exit()

        self.push_screen(QuitScreen(sessions, ", ".join(service.url for service in services)), chosen)

    def exit(self, *args, **kwargs) -> None:
        """Quit: the quick-exit driver then restores the terminal without waiting for its input thread."""
        self._quitting.set()
        driver = driver_of(self)
        if isinstance(driver, QuickExitDriver):
            driver.quitting = True
        super().exit(*args, **kwargs)

    def _stop_started_services(self) -> None:
        """Ask every embedded service this app started to stop, without waiting: it finishes in the background
        (browsers closed, recordings finalised) while the terminal is already the user's again."""
        if self.keep_services_running:
            return
        for service in self.started_services.values():
            try:
                service.stop(wait=False)
            except OSError:
                continue

    async def on_unmount(self) -> None:
        self._stop_started_services()


#: Actions the palette lists among the global commands, so not again under a screen.
GLOBAL_ACTIONS = {"quit", "app.quit", "switch_profile", "app.switch_profile", "toggle_help", "app.toggle_help"}

if TYPE_CHECKING:
    # Never run: mypy proves here that the app gives its screens, panes and widgets all that `AppServices`
    # promises, and the palette what it asks (they reach the app through those protocols, not this module).

    def _app_services(app: BbrowseApp) -> AppServices:
        return app

    def _palette_host(app: BbrowseApp) -> PaletteHost:
        return app


def _later(function: Callable[[str], object], argument: str) -> Callable[[], object]:
    return lambda: function(argument)


def known_binding_ids() -> set[str]:
    """Every `Binding(id=...)` of the app's screens, panes and widgets (and Textual's own)."""
    # The session screen imports every pane, widget and dialog, so their classes exist to be walked. It is
    # imported here, not at the top, for the reason `SessionsScreen.action_open` gives: it is slow to load.
    import bbrowse.tui.screens.broadcast
    import bbrowse.tui.screens.session
    import bbrowse.tui.screens.wall  # noqa: F401

    ids: set[str] = set()
    pending: list[type] = [DOMNode]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        ids.update(b.id for b in cls.__dict__.get("BINDINGS", ()) if isinstance(b, Binding) and b.id)
    return ids


def run_app(settings: Settings | None = None, problems: Sequence[str] = (),
            pending: Future[Target] | None = None) -> None:
    """Run the app until it quits. `pending`: the service being found or started meanwhile
    (`target.resolve_soon`, which `bbrowse` calls before importing this module)."""
    if settings is None:
        settings, problems = load_app_settings()
    if pending is None:
        pending = resolve_soon(settings.active_profile)
    problems = [*problems, *filter(None, [version_problem()])]
    from bbrowse.tui import graphics_probe

    if graphics_probe.answers() is None:
        # textual-image asks the terminal itself when imported, which is only possible before Textual takes the
        # terminal over: import the image widget now. With the probe's answers it asks nothing: imported when used.
        import bbrowse.tui.widgets.image_view  # noqa: F401

    driver = driver_class()
    if driver is not None:
        driver.typed_ahead = graphics_probe.typed_ahead()
    app = BbrowseApp(resolve=pending.result, settings=settings, user_themes=user_themes_dir(),
                     config_path=config_file(), problems=problems, driver_class=driver)
    stop_services_on_signals(app)
    resume_collection()  # paused by `bbrowse` while the app loaded (`bbrowse.startup`)
    app.run()
    leave_at_once(app)  # a service still being started is not waited for either


def driver_class() -> type[QuickExitDriver] | None:
    """The quick-exit driver on Linux terminals; Textual's own choice elsewhere."""
    return QuickExitDriver if sys.platform.startswith("linux") else None


def leave_at_once(app: BbrowseApp) -> None:
    """The terminal is the user's again: end the process now. The interpreter's own teardown of the app's
    objects (finalizers, garbage collection, joining Textual's input thread) took 0.5–0.8 s before the
    shell prompt came back. What must happen still does: the embedded service is asked to stop, logs and
    output are flushed."""
    import logging

    app._stop_started_services()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue
    os._exit(app.return_code or 0)


def stop_services_on_signals(app: BbrowseApp) -> None:
    """A closed terminal (SIGHUP) or a `kill` (SIGTERM) ends the app as quitting does: the embedded service it
    started is asked to stop (in the background), then the signal takes its default course."""
    import signal

    def stop_then_die(signum: int, _frame: object) -> None:
        app._stop_started_services()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, stop_then_die)
