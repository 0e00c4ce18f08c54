"""The Shells tab as a newcomer meets it (issue 22): closing the last shell, `w` on a busy shell, the keys
that come back to the tab, a lone shell with the whole pane, and shells that outlive the session screen.
Against a real service with real PTYs, driven with Pilot."""

from __future__ import annotations

import httpx
import pytest
from app_support import make_app, screen_shown, type_text, wait_for
from textual.widgets import Tabs

from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.dialogs.confirm import ConfirmScreen
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.panes.shells import EMPTY_HINT, ShellsPane, ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.shell_session import busy_from_probe
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.tui.textual_private import screen_lines
from bbrowse.wire import Browser

PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


@pytest.fixture
async def browser(browserless_http: httpx.AsyncClient):
    """A fresh session on the service without Chromium: shells need no browser."""
    r = await browserless_http.post("/browsers", json={"timeout_seconds": 900})
    yield Browser.model_validate(r.json())
    await browserless_http.delete(f"/browsers/{r.json()['session_id']}")


def shell_app(service):
    return make_app(service, settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))


def screen_text(app) -> str:
    """What the whole screen shows, row by row, as a person reads it."""
    return "\n".join(screen_lines(app.screen))


def terminal_text(tab: ShellTab) -> str:
    return "\n".join(tab.terminal.core.display)


async def open_session(pilot, app, browser: Browser) -> SessionScreen:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    app.push_screen(SessionScreen(browser))
    await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and bool(app.screen.query(ShellTab)))
    return app.screen


async def into_shell(pilot, screen: SessionScreen) -> ShellTab:
    """Enter from the tab bar into the active shell, once its prompt shows."""
    tab = screen.query_one(ShellsPane)._tabs.active_pane
    assert isinstance(tab, ShellTab)
    await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
    await wait_for(pilot, lambda: terminal_text(tab).rstrip().endswith(PROMPT), what="prompt")
    if not tab.terminal.has_focus:
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus, what="into the shell")
    return tab


def focused_in_terminal(app) -> bool:
    return isinstance(app.focused, TerminalView)


async def test_close_the_last_shell_then_t_and_enter_and_a_busy_shell_asks_first(
    browserless_service, browser
) -> None:
    app = shell_app(browserless_service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_session(pilot, app, browser)
        pane = screen.query_one(ShellsPane)
        tab = await into_shell(pilot, screen)
        # a lone shell has the whole pane: no "shell 1" tab bar above it (item 18)
        assert not pane._tabs.query_one(Tabs).display or not pane._tabs.query_one(Tabs).region
        assert tab.terminal.terminal_size[1] >= 24 - 7, tab.terminal.terminal_size

        # busy: a program in the foreground; w asks, n keeps it (item 12)
        await type_text(pilot, "sleep 300", then="enter")
        await pilot.press("ctrl+right_square_bracket")
        await wait_for(pilot, lambda: not focused_in_terminal(app), what="out of the terminal")
        await pilot.press("w")
        await wait_for(pilot, lambda: screen_shown(app, ConfirmScreen), what="w asks about the busy shell")
        assert "running a program" in app.screen.question
        await pilot.press("n")
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen))
        assert tab.is_attached and tab.shell is not None and tab.shell.running

        # idle at its prompt: w closes at once; the tab then says what to do (item 3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: terminal_text(tab).rstrip().endswith(PROMPT), what="prompt after ctrl-c")
        await pilot.press("ctrl+right_square_bracket")
        await wait_for(pilot, lambda: not focused_in_terminal(app))
        await pilot.press("w")
        await wait_for(pilot, lambda: not pane.query(ShellTab), what="closed without a question")
        assert isinstance(app.screen, SessionScreen)
        await wait_for(pilot, lambda: EMPTY_HINT.split(".")[0] in screen_text(app), what="the hint shows")
        assert pane.has_focus
        await pilot.press("t")
        await wait_for(pilot, lambda: len(pane.query(ShellTab)) == 1, what="t opens a shell")
        tab = await into_shell(pilot, screen)
        await type_text(pilot, "exit", then="enter")
        await wait_for(pilot, lambda: tab.shell is not None and tab.shell.exited, what="shell exited")
        await pilot.press("ctrl+right_square_bracket")
        await pilot.press("w")
        await wait_for(pilot, lambda: not pane.query(ShellTab), what="an exited shell closes at once")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(pane.query(ShellTab)) == 1, what="enter opens a shell")
        # and from the session's tab bar, enter on an empty Shells tab opens one too
        await into_shell(pilot, screen)
        await pilot.press("ctrl+right_square_bracket")
        await pilot.press("w")
        await wait_for(pilot, lambda: not pane.query(ShellTab))
        await pilot.press("2", "1")  # Logs, back to Shells: the tab bar
        await wait_for(pilot, lambda: screen.tabbed.active == "shells" and screen.tab_bar.has_focus)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(pane.query(ShellTab)) == 1, what="enter from the tab bar")


async def test_1_and_alt_1_land_on_the_tab_bar_and_shells_outlive_the_session_screen(
    browserless_service, browser
) -> None:
    service = browserless_service  # the service of `browser`
    app = shell_app(service)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_session(pilot, app, browser)
        tab = await into_shell(pilot, screen)
        await type_text(pilot, "export MARK=kept-$((20+22)); sleep 600 &", then="enter")
        # one key, one result (item 4): from the terminal or from another tab, 1 and alt+1 end on the tab bar
        for keys in (["alt+2", "alt+1"], ["alt+2", "1"], ["alt+1"]):
            await pilot.press("enter") if not tab.terminal.has_focus and screen.tab_bar.has_focus else None
            await pilot.press(*keys)
            await wait_for(pilot, lambda: screen.tabbed.active == "shells" and screen.tab_bar.has_focus,
                           what=f"{keys} lands on the tab bar")
            assert not focused_in_terminal(app)
        before = terminal_text(tab)
        await pilot.press("P")  # the next app key is the app's, not typed into the shell
        await pilot.pause(0.3)
        assert "P" not in terminal_text(tab).replace(before, "")
        while app.screen is not screen:
            await pilot.press("escape")
        assert screen.query(LogsPane)

        # leaving the session screen detaches its shell; reopening reattaches it (item 5)
        process_id = tab.shell.process_id
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        screen = await open_session(pilot, app, browser)
        again = screen.query_one(ShellTab)
        await wait_for(pilot, lambda: again.shell is not None and again.shell.process_id == process_id,
                       what="the same shell reattached")
        await pilot.press("enter")
        await wait_for(pilot, lambda: again.terminal.has_focus)
        await type_text(pilot, "echo $MARK; jobs", then="enter")
        await wait_for(pilot, lambda: "kept-42" in terminal_text(again) and "sleep 600" in terminal_text(again),
                       what="its variable and its job are still there")
    # quitting the app hangs its shells up: nothing left to reattach
    async with httpx.AsyncClient(base_url=service.url, headers=service.headers) as http:
        for _ in range(100):
            state = (await http.get(f"/browsers/{browser.session_id}/process/{process_id}/status")).json()
            if state.get("state") != "running":
                break
            await __import__("asyncio").sleep(0.05)
        assert state.get("state") != "running"


def test_busy_probe_reading() -> None:
    assert busy_from_probe("1\n") is None
    assert busy_from_probe("2\n") == "is running a program (1 process)"
    assert busy_from_probe("0\n") == "may be running a program"


async def test_a_resize_on_the_alternate_screen_keeps_the_picture_until_the_program_repaints() -> None:
    """vim in the pane: a resize showed a blank pane until vim's repaint came back (100-200 ms each time)."""
    from textual.app import App

    class One(App):
        def compose(self):
            yield TerminalView()

    app = One()
    async with app.run_test(size=(60, 12)) as pilot:
        terminal = app.query_one(TerminalView)

        def row(y: int) -> str:
            return "".join(segment.text for segment in terminal.render_line(y)).rstrip()

        terminal.feed(b"\x1b[?1049h\x1b[H\x1b[2Jan editor's first line")
        await wait_for(pilot, lambda: row(0) == "an editor's first line", what="drawn")
        before = terminal.terminal_size
        await pilot.resize_terminal(50, 10)
        await pilot.pause()
        assert terminal.terminal_size != before
        assert row(0) == "an editor's first line"  # not a blank frame while the program has not answered
        terminal.feed(b"\x1b[H\x1b[2Jrepainted at 50")
        await wait_for(pilot, lambda: row(0) == "repainted at 50", what="the repaint shows")
