"""The keyboard belongs to the user: a session opens on its tab bar, tabs switch from anywhere (alt+digit,
digits outside a terminal, the mouse), a terminal gets every key and `ctrl+]` leaves it; focus never
lands where keys do nothing. Against a real service with real PTYs, driven with Pilot."""

from __future__ import annotations

import httpx
import pytest
from app_support import hold_off_session_watch, make_app, screen_shown, type_text, wait_for
from conftest import session_area
from textual.widgets import DataTable, Tree

from bbrowse.tui.app import BbrowseApp
from bbrowse.tui.panes.files import FilesPane
from bbrowse.tui.panes.logs import LogsPane
from bbrowse.tui.panes.screenshot import ScreenshotPane
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen
from bbrowse.tui.terminal.widget import TerminalView
from bbrowse.wire import Browser


@pytest.fixture(scope="module")
async def browser(browserless_http: httpx.AsyncClient):
    """On the service with no Chromium: shells, logs and files need no browser."""
    r = await browserless_http.post("/browsers", json={"timeout_seconds": 900})
    yield Browser.model_validate(r.json())
    await browserless_http.delete(f"/browsers/{r.json()['session_id']}")


@pytest.fixture
async def chromium_browser(http: httpx.AsyncClient):
    """With Chromium, for the test that shows the Screenshot tab (a real browser's picture)."""
    r = await http.post("/browsers", json={"timeout_seconds": 900})
    yield Browser.model_validate(r.json())
    await http.delete(f"/browsers/{r.json()['session_id']}")


def terminal_text(terminal: TerminalView) -> str:
    """What the terminal draws, row by row (through the widget, whatever emulator is behind it)."""
    return "\n".join("".join(segment.text for segment in terminal.render_line(y)).rstrip()
                     for y in range(terminal.size.height))


def focus_inside(app, widget) -> bool:
    focused = app.focused
    return focused is not None and (focused is widget or widget in focused.ancestors)


async def open_session(pilot, app, browser: Browser) -> tuple[SessionScreen, ShellTab]:
    await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
    app.push_screen(SessionScreen(browser))
    await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and bool(app.screen.query(ShellTab)))
    screen = app.screen
    tab = screen.query_one(ShellTab)
    await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
    await wait_for(pilot, lambda: terminal_text(tab.terminal).rstrip().endswith(("#", "$")), what="prompt")
    return screen, tab


async def test_a_session_opens_on_its_tab_bar_digits_switch_tabs_and_enter_goes_into_the_shell(
    service, chromium_browser: Browser
) -> None:
    app = make_app(service)
    async with app.run_test(size=(120, 34)) as pilot:
        screen, tab = await open_session(pilot, app, chromium_browser)
        await wait_for(pilot, lambda: screen.tab_bar.has_focus, what="the tab bar has the keyboard")
        assert not tab.terminal.has_focus
        prompt_line = terminal_text(tab.terminal).rstrip().split("\n")[-1]

        await pilot.press("4")  # the Screenshot tab, and nothing typed into the shell
        await wait_for(pilot, lambda: screen.tabbed.active == "screenshot")
        await wait_for(pilot, lambda: focus_inside(app, screen.query_one(ScreenshotPane)), what="pane has keys")
        await pilot.press("1")
        await wait_for(pilot, lambda: screen.tabbed.active == "shells" and screen.tab_bar.has_focus)
        assert terminal_text(tab.terminal).rstrip().split("\n")[-1] == prompt_line  # no "4", no "1"

        await pilot.press("enter")  # one key away
        await wait_for(pilot, lambda: tab.terminal.has_focus, what="into the shell")
        await type_text(pilot, "echo typed-$((40+2))")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "\ntyped-42" in terminal_text(tab.terminal), what="the shell got the keys")

        # the mouse picks a tab too
        await pilot.click("#--content-tab-files")
        await wait_for(pilot, lambda: screen.tabbed.active == "files" and bool(screen.query(FilesPane)))


async def test_alt_digits_switch_tabs_from_inside_a_terminal_and_back_on_shells_enter_goes_in(
    browserless_service, browser: Browser
) -> None:
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 34)) as pilot:
        screen, tab = await open_session(pilot, app, browser)
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus)
        await pilot.press("alt+2")
        await wait_for(pilot, lambda: screen.tabbed.active == "logs", what="alt+2 from inside the shell")
        await wait_for(pilot, lambda: focus_inside(app, screen.query_one(LogsPane)))
        await pilot.press("alt+1")  # as `1` does: the tab bar, never straight into the terminal
        await wait_for(pilot, lambda: screen.tabbed.active == "shells" and screen.tab_bar.has_focus,
                       what="back on the Shells tab bar")
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus, what="enter: back in the shell")
        await pilot.press("2")  # a digit inside the terminal is the program's
        await wait_for(pilot, lambda: terminal_text(tab.terminal).rstrip().endswith("2"), what="2 typed")
        assert screen.tabbed.active == "shells"


async def test_ctrl_right_bracket_leaves_the_terminal_and_esc_reaches_the_program_at_once(
    browserless_service, browser: Browser
) -> None:
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 34)) as pilot:
        _screen, tab = await open_session(pilot, app, browser)
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus)
        # the shell shows what it reads: cat -v prints ESC as ^[, at once
        await type_text(pilot, "cat -v")
        await pilot.press("enter")
        await pilot.press("escape", "escape", "enter")
        await wait_for(pilot, lambda: "^[^[" in terminal_text(tab.terminal), timeout=5, what="two Esc delivered")
        assert tab.terminal.has_focus and isinstance(app.screen, SessionScreen)  # Esc Esc does not leave
        await pilot.press("ctrl+d")
        await pilot.press("ctrl+right_square_bracket")
        await wait_for(pilot, lambda: not tab.terminal.has_focus, what="ctrl+] left the terminal")
        assert isinstance(app.screen, SessionScreen)
        bindings = {binding.id for binding in TerminalView.BINDINGS if getattr(binding, "id", None)}
        assert "terminal.leave" in bindings


async def test_focus_in_files_stays_on_the_tree_after_opening_a_file(browserless_service, browser: Browser) -> None:
    area = session_area(browserless_service, browser.session_id, "files")  # the session's sandbox sees no tmp_path
    (area / "a.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    (area / "b.txt").write_text("bee\n")
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 34)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        app.push_screen(SessionScreen(browser, initial_tab="files"))
        await wait_for(pilot, lambda: screen_shown(app, SessionScreen) and bool(app.screen.query(FilesPane)))
        pane = app.screen.query_one(FilesPane)
        tree = pane.query_one(Tree)
        await wait_for(pilot, lambda: tree.has_focus)
        await pilot.press("g")
        await type_text(pilot, str(area), then="enter")
        await wait_for(pilot, lambda: tree.root_path == str(area) and tree.has_focus and any(
            str(node.label).endswith("a.txt") for node in tree.root.children))
        while not str(tree.cursor_node.label).endswith("a.txt"):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.viewer.path == str(area / "a.txt"))
        assert tree.has_focus  # the arrows still move in the tree
        await pilot.press("down")
        assert str(tree.cursor_node.label).endswith("b.txt")
        # tab goes to the viewer; wherever the focus stops in the pane, its keys work (x toggles hex)
        stops = []
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            if focused is None or not focus_inside(app, pane) or focused in stops:
                continue
            stops.append(focused)
            before = pane.viewer.hex_forced
            await pilot.press("x")
            await wait_for(pilot, lambda before=before: pane.viewer.hex_forced != before, what=f"x on {focused!r}")
        assert pane.viewer.lines in stops


def visible(widget) -> bool:
    return widget.display and all(ancestor.display for ancestor in widget.ancestors if hasattr(ancestor, "display"))


async def test_the_sessions_table_takes_the_keys_back_after_the_form_on_an_empty_list(tmp_path, monkeypatch) -> None:
    """On a service of its own (an empty list) with no Chromium (the subject is focus, not the browser: a
    session starts at once); the app's watch of the session shown checks every 0.5 s, not 5 to 30 s (that
    watch is test_app_newcomer_screens')."""
    from conftest import start_service, stop_service

    monkeypatch.setattr(BbrowseApp, "SESSION_WATCH_SECONDS", 0.5)
    monkeypatch.setattr(BbrowseApp, "SESSION_WATCH_LONGEST", 1.0)
    empty = start_service(tmp_path / "empty-state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    try:
        app = make_app(empty)
        async with app.run_test(size=(120, 34)) as pilot:
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen) and app.screen._loaded)
            await pilot.press("slash", "escape")  # the filter box opened and closed on the empty list
            assert app.focused is None or visible(app.focused)
            await pilot.press("n")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "CreateSessionScreen")
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                           and app.screen.query_one(DataTable).row_count == 1, timeout=30)
            table = app.screen.query_one(DataTable)
            await wait_for(pilot, lambda: table.has_focus, what="the table has the keys")
            assert app.focused is None or visible(app.focused)
            # enter opens the session at once (not swallowed by a hidden filter box)
            await pilot.press("enter")
            await wait_for(pilot, lambda: screen_shown(app, SessionScreen))
            created = app.screen.browser
            sessions_screen = app.screen_stack[-2]
            async with httpx.AsyncClient(base_url=empty.url, headers=empty.headers) as http:
                await http.delete(f"/browsers/{created.session_id}")  # deleted elsewhere
            # the app's watch of the session notices and the table underneath knows before the user leaves
            await wait_for(pilot, lambda: created.session_id not in sessions_screen._browsers)
            await pilot.press("escape")
            await wait_for(pilot, lambda: screen_shown(app, SessionsScreen)
                           and app.screen.query_one(DataTable).row_count == 0)
            assert app.focused is None or visible(app.focused)
            await pilot.press("n")  # the screen's keys still work
            await wait_for(pilot, lambda: type(app.screen).__name__ == "CreateSessionScreen")
    finally:
        stop_service(empty)


async def test_a_session_deleted_elsewhere_says_so_in_the_shell_and_offers_no_restart(
    browserless_service, browserless_http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shell pane learns of the delete first here. The app's own watch of the session shown (every 5 to
    30 s: notice, back to the table; test_app_newcomer_screens) is held off, as it would take the screen
    away before the pane could say anything. No Chromium: the subject is the shell."""
    service, http = browserless_service, browserless_http
    hold_off_session_watch(monkeypatch)
    browser = Browser.model_validate((await http.post("/browsers", json={"timeout_seconds": 600})).json())
    app = make_app(service)
    async with app.run_test(size=(120, 34)) as pilot:
        screen, tab = await open_session(pilot, app, browser)
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus)
        assert (await http.delete(f"/browsers/{browser.session_id}")).status_code in (200, 204)  # `bbrowse rm`
        await wait_for(pilot, lambda: "session was deleted" in terminal_text(tab.terminal), what="the pane says so")
        text = terminal_text(tab.terminal)
        assert "restart" not in text.replace("nothing to restart", "") and not tab.terminal.exited
        assert "session deleted" in str(tab.terminal.border_title)
        await wait_for(pilot, lambda: not tab.terminal.has_focus, what="out of the dead terminal")
        process_id = tab.shell.process_id
        tab.terminal.focus()
        await pilot.press("r")  # no restart (it would forget the process at once and ask for a new one)
        assert tab.gone and tab.shell.process_id == process_id
        await pilot.press("ctrl+right_square_bracket")
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), what="esc goes back")
        assert screen is not app.screen


def test_a_lone_esc_is_told_from_an_escape_sequence_in_25_ms_not_100() -> None:
    import textual.constants

    import bbrowse.tui.app  # noqa: F401  (sets the delay when imported, unless ESCDELAY is set)

    assert "ESCDELAY" in __import__("os").environ or textual.constants.ESCAPE_DELAY <= 0.025
