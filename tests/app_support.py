"""Helpers shared by the app's Pilot tests: an app on a given service, and bounded waiting."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.keys import REPLACED_KEYS
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.footer import BbrowseFooter
from bbrowse.tui.textual_private import character_to_key, notifications, unicode_name_from_key


def make_app(service, **options) -> BbrowseApp:
    """The real app connected to `service` (a ServiceHandle from conftest) as a remote profile."""
    return BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), **options)


def screen_shown(app, screen_type: type[Screen]) -> bool:
    """The app's current screen is a `screen_type` with its widgets composed and mounted (a pushed screen is the
    current one before its widgets exist)."""
    return isinstance(app.screen, screen_type) and app.screen.is_mounted


async def wait_for(pilot, predicate: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    """Let the app run until `predicate()` holds (bounded), instead of sleeping a fixed time.

    A widget the predicate asks for that is not there yet (`NoMatches`: made but not yet composed, say) is
    a condition not met yet, as for a person looking at the screen; one that never comes still fails here.
    """
    for _ in range(int(timeout / 0.05)):
        try:
            if predicate():
                return
        except NoMatches:
            pass
        await pilot.pause(0.05)
    app = pilot.app
    shown = "; ".join(f"{n.title}: {n.message[:120]}" for n in notifications(app))
    raise AssertionError(f"{what} not met within {timeout} s (screen {app.screen!r}; notifications: {shown or 'none'})")


async def type_text(pilot, text: str, then: str | None = None) -> None:
    """Type `text` into the focused widget as a quick typist does, then press the key `then` (e.g. "enter").

    `pilot.press` waits for the app to go idle after every key (two sleeps of 20 ms at least): 80 characters
    take 5 s even in an app holding one `Input`, and the suite types many paths and command lines. Here the
    characters are the same key events `pilot.press` makes (built as Textual's `App._press_keys` does), sent
    in order, with one wait at the end. Characters only: a key that is a binding (ctrl+u, tab) is handled on
    its way up the widget tree, after characters sent behind it, so it goes alone through `pilot.press`, and
    a key that moves the focus is waited for before typing.
    """
    for character in text:
        key = character if character.isalnum() else character_to_key(character)
        try:
            char: str | None = unicodedata.lookup(unicode_name_from_key(REPLACED_KEYS.get(key, key)))
        except KeyError:
            char = character
        event = events.Key(key, char)
        event.set_sender(pilot.app)
        pilot.app.post_message(event)  # in order (the driver's `send_message` schedules each one separately)
    await pilot.pause()  # the app has handed the keys to the focused widget
    await pilot.pause()  # and the widget has handled them
    if then is not None:
        await pilot.press(then)


def hold_off_session_watch(monkeypatch) -> None:
    """The app's watch of the session shown asks nothing: for tests where a pane must be the first to learn that
    the session is gone. (A longer period is not enough: the watch also looks at once when a session screen
    comes into view, at its next tick, which can fall after the test's delete.)"""
    monkeypatch.setattr(BbrowseApp, "_check_shown_session", lambda app: app._session_watch.done())


async def wait_for_notification(pilot, text: str, timeout: float = 15.0) -> str:
    """Until a notification shown by the app contains `text`; that notification's message. (`notify` posts a
    message to the app, so a notification appears a moment after the code that raised it has run.)"""
    for _ in range(int(timeout / 0.05)):
        messages = [n.message for n in notifications(pilot.app)]
        for message in messages:
            if text in message:
                return message
        await pilot.pause(0.05)
    raise AssertionError(f"no notification with {text!r} within {timeout} s; shown: {messages}")


class PaneScreen(Screen):
    """A screen holding one pane in a tab, as the session screen does, for testing a pane alone."""

    def __init__(self, pane, title: str, tab_id: str) -> None:
        super().__init__()
        self.pane = pane
        self.title_text = title
        self.tab_id = tab_id

    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane(self.title_text, id=self.tab_id):
                yield self.pane
        yield BbrowseFooter()


def use_downloads_dir(monkeypatch, tmp_path) -> Path:
    """Point the XDG download directory (`user-dirs.dirs`, as platformdirs reads it) at a folder of this
    test that does not exist yet: saving must create it."""
    config = tmp_path / "xdg-config"
    config.mkdir(exist_ok=True)
    downloads = tmp_path / "my downloads"
    (config / "user-dirs.dirs").write_text(f'XDG_DOWNLOAD_DIR="{downloads}"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return downloads


async def accept_save_dialog(pilot, app, *, path: str | None = None) -> None:
    """Wait for the save dialog; optionally type another path; press enter."""
    from bbrowse.tui.dialogs.save import SaveScreen

    await wait_for(pilot, lambda: screen_shown(app, SaveScreen), what="save dialog")
    if path is not None:
        field = app.screen.query_one("#save-path")
        field.value = path
    await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, SaveScreen), what="save dialog closed")
