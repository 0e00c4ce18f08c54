"""The shell pane end to end: the app, a real PTY on the local service, a real emulator.

Each test types into the focused terminal with Pilot, exactly as a user would, and reads what the
emulator holds (the widget draws that state).
"""

from __future__ import annotations

import httpx
import pytest
from app_support import make_app, wait_for

from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.terminal.attrs import DEFAULT
from bbrowse.wire import Browser


@pytest.fixture(scope="module")
async def browser(http: httpx.AsyncClient):
    r = await http.post("/browsers", json={"timeout_seconds": 900})
    yield Browser.model_validate(r.json())
    await http.delete(f"/browsers/{r.json()['session_id']}")




def screen_text(tab: ShellTab) -> str:
    return "\n".join(tab.terminal.emulator.display)


async def open_shell(pilot, app, browser: Browser) -> ShellTab:
    app.push_screen(SessionScreen(browser))
    await wait_for(pilot, lambda: bool(app.screen.query(ShellTab)), what="shell tab")
    tab = app.screen.query_one(ShellTab)
    await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
    if not tab.terminal.has_focus:  # a session opens on its tab bar; enter goes into the shell
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus, what="terminal focused")
    # the prompt is drawn once bash (or sh) is ready
    await wait_for(pilot, lambda: screen_text(tab).rstrip().endswith(("#", "$")), what="prompt")
    return tab


async def type_line(pilot, line: str) -> None:
    await pilot.press(*[_key(c) for c in line], "enter")


def _key(char: str) -> str:
    names = {" ": "space", "'": "apostrophe", "$": "dollar_sign", "\\": "backslash", "|": "vertical_line",
             ";": "semicolon", "-": "minus", ">": "greater_than_sign", "/": "slash", ".": "full_stop",
             "(": "left_parenthesis", ")": "right_parenthesis", '"': "quotation_mark", "=": "equals_sign",
             "[": "left_square_bracket", "]": "right_square_bracket", "&": "ampersand", "_": "underscore",
             ":": "colon", ",": "comma", "%": "percent_sign", "*": "asterisk"}
    return names.get(char, char)




async def test_echo_colour_and_exit_code(service, browser: Browser) -> None:
    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        await type_line(pilot, "echo hi")
        await wait_for(pilot, lambda: "\nhi" in screen_text(tab), what="hi echoed")

        await type_line(pilot, "printf '\\033[31mred\\033[0m\\n'")
        emulator = tab.terminal.emulator

        def red_cell() -> bool:
            for y, line in enumerate(emulator.display):
                if line == "red":
                    char, (fg, _bg, _flags) = emulator.cell(0, y)
                    return char == "r" and fg == 1
            return False

        await wait_for(pilot, red_cell, what="a red 'red'")
        # the default colour comes back after the reset
        assert emulator.cell(0, emulator.display.index("red") + 1)[1][0] == DEFAULT

        await type_line(pilot, "exit 3")
        await wait_for(pilot, lambda: tab.terminal.exited, what="exit shown")
        assert tab.terminal.exit_code == 3
        assert "exited 3" in str(tab.terminal.border_title)


async def test_pty_size_follows_the_pane(service, browser: Browser) -> None:
    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        cols, rows = tab.terminal.terminal_size
        await type_line(pilot, "stty size")
        await wait_for(pilot, lambda: f"{rows} {cols}" in screen_text(tab), what="initial stty size")

        await pilot.resize_terminal(120, 36)
        await wait_for(pilot, lambda: tab.terminal.terminal_size != (cols, rows), what="pane resized")
        new_cols, new_rows = tab.terminal.terminal_size
        await wait_for(pilot, lambda: tab.shell._size == (new_cols, new_rows), what="remote resized")
        await type_line(pilot, "tput cols")
        await wait_for(pilot, lambda: f"\n{new_cols}\n" in screen_text(tab) + "\n", what="tput cols")


async def test_alternate_screen_restores_and_ctrl_c_interrupts(service, browser: Browser, tmp_path) -> None:
    page = tmp_path / "page.txt"
    page.write_text("".join(f"alt-screen line {i}\n" for i in range(200)))
    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        await type_line(pilot, "echo before-less")
        await wait_for(pilot, lambda: "\nbefore-less" in screen_text(tab))
        before = screen_text(tab)

        await type_line(pilot, f"less {page}")
        await wait_for(pilot, lambda: tab.terminal.emulator.alternate_screen_active, what="alt screen on")
        await wait_for(pilot, lambda: "alt-screen line 0" in screen_text(tab), what="less drew the file")
        await pilot.press("q")
        await wait_for(pilot, lambda: not tab.terminal.emulator.alternate_screen_active, what="alt screen off")
        assert "alt-screen line 5" not in screen_text(tab)
        # every line that was on the screen before less is back where it was
        before_lines = before.rstrip().split("\n")[:-1]
        assert screen_text(tab).split("\n")[: len(before_lines)] == before_lines

        await type_line(pilot, 'sleep 100; echo sl""ept')
        await pilot.pause(0.3)
        await pilot.press("ctrl+c")
        await type_line(pilot, "echo after-$?")
        await wait_for(pilot, lambda: "after-130" in screen_text(tab), what="sleep interrupted")
        assert "slept" not in screen_text(tab)


async def test_several_shells_at_once_and_leaving_with_double_escape(service, browser: Browser) -> None:
    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        first = await open_shell(pilot, app, browser)
        await type_line(pilot, "export WHO=first")
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: not first.terminal.has_focus, what="left the terminal")
        assert isinstance(app.screen, SessionScreen)  # one Esc pair leaves the pane, not the screen
        await pilot.press("t")
        await wait_for(pilot, lambda: len(app.screen.query(ShellTab)) == 2, what="second shell")
        second = next(tab for tab in app.screen.query(ShellTab) if tab is not first)
        await wait_for(pilot, lambda: second.shell is not None and second.shell.running, what="second started")
        await wait_for(pilot, lambda: screen_text(second).rstrip().endswith(("#", "$")), what="second prompt")
        assert second.terminal.has_focus
        await type_line(pilot, "echo who=${WHO:-nobody}")
        await wait_for(pilot, lambda: "who=nobody" in screen_text(second), what="separate shell")
        assert first.shell.process_id != second.shell.process_id and first.shell.running
        await pilot.press("escape", "escape")
        await pilot.press("w")
        await wait_for(pilot, lambda: len(app.screen.query(ShellTab)) == 1, what="shell closed")


async def test_ctrl_c_answers_at_once_while_yes_floods_the_pane(service, browser: Browser) -> None:
    import time

    app = make_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        await type_line(pilot, "yes flood-line")
        await wait_for(pilot, lambda: screen_text(tab).count("flood-line") > 20, what="flood on screen")
        await pilot.pause(1.0)  # a second of flood queued up between the process and the pane
        started = time.monotonic()
        await pilot.press("ctrl+c")
        await type_line(pilot, "echo stopped-$?")
        await wait_for(pilot, lambda: "stopped-130" in screen_text(tab), timeout=15, what="yes interrupted")
        elapsed = time.monotonic() - started
        print(f"ctrl-c under flood: {elapsed:.2f} s")
        assert elapsed < 5.0, f"ctrl-c took {elapsed:.1f} s to take effect under flood"
