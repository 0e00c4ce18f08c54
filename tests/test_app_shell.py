"""The shell pane end to end: the app, a real PTY on the local service, a real emulator.

Each test types into the focused terminal with Pilot, exactly as a user would, and reads what the
emulator holds (the widget draws that state). The shell has a fixed prompt (bash without rc files,
PS1 set), so nothing depends on the host name, the user or the length of the temp path. Most tests
run against the default service and against `--kernel-compat` (both with no Chromium: a shell needs no
browser), where PTY output exists only on the attach WebSocket. What the terminal core decides
in the pane (colours, the alternate screen, ctrl-c reaching the program) also runs on the Python core
(`core_target`, `core`); what is transport only (attach, sizes, reattach, several shells) runs on the
default core. The flood test stays on the default core: the Python core's ctrl-c under `yes` took
1.7-8.4 s on a machine at load 25-40, too near its bound (test_terminal_widget floods both cores
without the app).
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import shutil
import time
from pathlib import Path

import pytest
from app_support import make_app, type_text, wait_for
from conftest import session_area
from terminal_cores import CORE_PARAMS, use_core

from bbrowse.client import BrowserClient
from bbrowse.config import ShellSettings, defaults
from bbrowse.tui.panes.shells import ShellTab
from bbrowse.tui.screens.session import SessionScreen
from bbrowse.tui.terminal.cells import DEFAULT
from bbrowse.tui.terminal.core import ENV, core_status
from bbrowse.wire import Browser

PROMPT = "PROMPT>"
#: Without libghostty every pane has the Python core.
ENV_FORCES_PYTHON = core_status()[0] == "python"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


@pytest.fixture(scope="module")
async def default_browser(browserless_service):
    client = BrowserClient(browserless_service.url, browserless_service.token)
    browser = await client.sessions.create(timeout_seconds=900)
    yield browser
    await client.sessions.delete(browser.session_id)


@pytest.fixture(scope="module")
async def compat_browser(browserless_compat_service):
    client = BrowserClient(browserless_compat_service.url, browserless_compat_service.token)
    browser = await client.sessions.create(timeout_seconds=900)
    yield browser
    await client.sessions.delete(browser.session_id)


@pytest.fixture(params=["default", "compat"])
def target(request, browserless_service, browserless_compat_service, default_browser, compat_browser):
    """(service handle, browser, mode): the default service, then --kernel-compat."""
    if request.param == "default":
        return browserless_service, default_browser, "default"
    return browserless_compat_service, compat_browser, "compat"


@pytest.fixture(params=["default", "compat", "python"])
def core_target(request, monkeypatch, browserless_service, browserless_compat_service, default_browser,
                compat_browser):
    """As `target`, and the default service once more with the Python terminal core."""
    if request.param == "python":
        monkeypatch.setenv(ENV, "python")
        return browserless_service, default_browser, "default, Python core"
    if request.param == "default":
        return browserless_service, default_browser, "default"
    return browserless_compat_service, compat_browser, "compat"


@pytest.fixture(params=CORE_PARAMS)
def core(request, monkeypatch) -> str:
    """Each terminal core in turn (the app's panes build theirs from the setting)."""
    return use_core(request, monkeypatch)


def shell_app(service):
    settings = defaults().model_copy(update={"shell": ShellSettings(command=SHELL)})
    return make_app(service, settings=settings)


def screen_text(tab: ShellTab) -> str:
    return "\n".join(tab.terminal.core.display)


def prompt_shown(tab: ShellTab) -> bool:
    return screen_text(tab).rstrip().endswith(PROMPT)


async def open_shell(pilot, app, browser: Browser) -> ShellTab:
    app.push_screen(SessionScreen(browser))
    await wait_for(pilot, lambda: bool(app.screen.query(ShellTab)), what="shell tab")
    tab = app.screen.query_one(ShellTab)
    await wait_for(pilot, lambda: tab.shell is not None and tab.shell.running, what="shell started")
    if not tab.terminal.has_focus:  # a session opens on its tab bar; enter goes into the shell
        await pilot.press("enter")
        await wait_for(pilot, lambda: tab.terminal.has_focus, what="terminal focused")
    await wait_for(pilot, lambda: prompt_shown(tab), what="prompt")
    return tab


async def type_line(pilot, line: str) -> None:
    await type_text(pilot, line, then="enter")


def border(tab: ShellTab) -> str:
    return str(tab.terminal.border_title)


async def test_echo_colour_and_exit_code_over_attach(core_target) -> None:
    service, browser, mode = core_target
    app = shell_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        assert (tab.terminal.core.name == "python") == ("Python" in mode or ENV_FORCES_PYTHON)
        assert tab.shell.path == "attach" and border(tab).endswith("· attach"), border(tab)
        await type_line(pilot, "echo hi-$((6*7))")
        await wait_for(pilot, lambda: "\nhi-42" in screen_text(tab), what="hi echoed")

        await type_line(pilot, "printf '\\033[31mred\\033[0m\\n'")
        emulator = tab.terminal.core

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
        assert "exited 3" in border(tab)


async def test_pty_size_follows_the_pane(target) -> None:
    service, browser, _ = target
    app = shell_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        cols, rows = tab.terminal.terminal_size
        await type_line(pilot, "stty size")
        await wait_for(pilot, lambda: f"\n{rows} {cols}" in screen_text(tab), what="initial stty size")

        await pilot.resize_terminal(120, 36)
        await wait_for(pilot, lambda: tab.terminal.terminal_size != (cols, rows), what="pane resized")
        new_cols, new_rows = tab.terminal.terminal_size
        await wait_for(pilot, lambda: tab.shell._size == (new_cols, new_rows), what="remote resized")
        await type_line(pilot, "tput cols")
        await wait_for(pilot, lambda: f"\n{new_cols}\n" in screen_text(tab) + "\n", what="tput cols")


def page_in(service, browser: Browser) -> Path:
    """A file for a pager or an editor, in a fresh directory of the (module's) session: str() is the path the
    shell is given, writing acts on the same file from outside (a sandboxed session sees no tmp_path)."""
    return session_area(service, browser.session_id, f"t-{secrets.token_hex(4)}") / "page.txt"


def drop_attach(service, tab: ShellTab) -> None:
    """The service drops the pane's attach connection (its end shut down: no close frame)."""
    from socket_drop import DropUnsupportedError, client_connections, drop_connections

    port = tab.shell.output.connection.local_address[1]
    try:
        assert drop_connections(service.pid, client_connections(os.getpid(), port)) == 1
    except DropUnsupportedError as exc:
        pytest.skip(f"cannot drop the service's socket here: {exc}")


@pytest.mark.parametrize("editor", ["vim", "less"])
async def test_a_full_screen_program_repaints_after_the_service_drops_the_attach(target, editor) -> None:
    service, browser, _ = target
    if shutil.which(editor) is None:
        pytest.skip(f"{editor} is not installed")
    page = page_in(service, browser)
    app = shell_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        # A line exactly as wide as the pane's terminal: on one row only when drawn at that width.
        wide_line = "W" * (tab.terminal.core.cols - 1) + "Z"
        page.write_text(wide_line + "\n" + "".join(f"page line {i}\n" for i in range(200)))
        command = f"vim -u NONE -N -n {page}" if editor == "vim" else f"less {page}"
        await type_line(pilot, command)
        await wait_for(pilot, lambda: tab.terminal.core.alternate_screen_active, what="alt screen on")
        await wait_for(pilot, lambda: "page line 0" in screen_text(tab), what=f"{editor} drew the file")

        drop_attach(service, tab)
        tab.terminal.feed(b"\x1b[2J")  # a blank screen: only a repaint by the program can bring the page back
        await tab.terminal.wait_drained()
        assert "page line 0" not in screen_text(tab)
        await wait_for(pilot, lambda: tab.shell.output.reconnects == 1, what="reattached")
        await wait_for(pilot, lambda: "page line 0" in screen_text(tab), what=f"{editor} repainted")
        assert tab.shell.path == "attach" and border(tab).endswith("· attach")

        if editor == "vim":  # still the same program, still typing into it
            await pilot.press("i")
            await type_text(pilot, "edited-after-drop ", then="escape")
            await type_line(pilot, ":wq")
        else:
            # The nudge is one column less, then the real size back, and less 590 drops a key that comes
            # while it repaints (test_cli_shell's editor test has the figures): type once the page is drawn
            # at the real width again, the wide line whole on one row and less's prompt at the bottom.
            def drawn_at_the_real_width() -> bool:
                rows = [row.rstrip() for row in tab.terminal.core.display]
                return wide_line in rows and rows[-1] == ":"
            await wait_for(pilot, drawn_at_the_real_width, what="less drew the page at the real width")
            await pilot.press("q")
        await wait_for(pilot, lambda: not tab.terminal.core.alternate_screen_active, what="alt screen off")
        await wait_for(pilot, lambda: prompt_shown(tab), what="prompt after the editor")
        await type_line(pilot, "exit 4")
        await wait_for(pilot, lambda: tab.terminal.exited, what="exit shown")
        assert tab.terminal.exit_code == 4
    if editor == "vim":
        assert page.read_text().startswith(f"edited-after-drop {wide_line}\npage line 0\n")


async def test_when_attach_is_taken_the_pane_reads_the_stream_and_says_so(browserless_service,
                                                                         default_browser) -> None:
    """Someone else holds the process's one attach when the pane reconnects: it falls back to
    stdout/stream (bbrowse serve fills it for PTYs too) and the border says "stream"."""
    app = shell_app(browserless_service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, default_browser)
        sid, pid = default_browser.session_id, tab.shell.process_id
        route = app.client.routes.get(sid)
        host, port = route.base_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(b"bbrowse-test-key").decode()
        writer.write((f"GET /vm/{sid}/process/{pid}/attach?jwt={route.jwt} HTTP/1.1\r\nHost: {host}\r\n"
                      f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        await writer.drain()  # our attach request is at the service before the pane's reattach can be
        drop_attach(browserless_service, tab)
        status = await asyncio.wait_for(reader.readline(), 15)
        assert b" 101 " in status, status
        try:
            await wait_for(pilot, lambda: tab.shell.path == "stream", what="fell back to the stream")
            assert border(tab).endswith("· stream"), border(tab)
            await type_line(pilot, "echo on-the-$((1+1))-stream")
            await wait_for(pilot, lambda: "\non-the-2-stream" in screen_text(tab), what="output via the stream")
            await type_line(pilot, "exit 6")
            await wait_for(pilot, lambda: tab.terminal.exited, what="exit shown")
            assert tab.terminal.exit_code == 6
        finally:
            writer.close()


async def test_alternate_screen_restores_and_ctrl_c_interrupts(browserless_service, default_browser, core) -> None:
    page = page_in(browserless_service, default_browser)
    page.write_text("".join(f"alt-screen line {i}\n" for i in range(200)))
    app = shell_app(browserless_service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, default_browser)
        assert tab.terminal.core.name == core
        await type_line(pilot, "echo before-less")
        await wait_for(pilot, lambda: "\nbefore-less" in screen_text(tab))
        before = screen_text(tab)

        await type_line(pilot, f"less {page}")
        await wait_for(pilot, lambda: tab.terminal.core.alternate_screen_active, what="alt screen on")
        await wait_for(pilot, lambda: "alt-screen line 0" in screen_text(tab), what="less drew the file")
        await pilot.press("q")
        await wait_for(pilot, lambda: not tab.terminal.core.alternate_screen_active, what="alt screen off")
        assert "alt-screen line 5" not in screen_text(tab)
        # every line that was on the screen before less is back where it was
        before_lines = before.rstrip().split("\n")[:-1]
        assert screen_text(tab).split("\n")[: len(before_lines)] == before_lines

        # printed by the process ctrl-c stops, once it is in the foreground with SIGINT's default action (a
        # ctrl-c reaching bash's forked child before it execs is lost)
        await type_line(pilot, "sh -c 'echo sleeping-now; exec sleep 100'; echo sl\"\"ept")
        await wait_for(pilot, lambda: "\nsleeping-now" in screen_text(tab), what="sleep started")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: prompt_shown(tab), what="prompt after ctrl-c")
        await type_line(pilot, "echo after-$?")
        await wait_for(pilot, lambda: "after-130" in screen_text(tab), what="sleep interrupted")
        assert "slept" not in screen_text(tab)


async def test_several_shells_at_once(browserless_service, default_browser) -> None:
    app = shell_app(browserless_service)
    async with app.run_test(size=(100, 30)) as pilot:
        first = await open_shell(pilot, app, default_browser)
        await type_line(pilot, "export WHO=first")
        first.terminal.action_leave()
        await wait_for(pilot, lambda: not first.terminal.has_focus, what="left the terminal")
        assert isinstance(app.screen, SessionScreen)
        app.screen.query_one("ShellsPane").focus()
        await app.screen.query_one("ShellsPane").action_new_shell()
        await wait_for(pilot, lambda: len(app.screen.query(ShellTab)) == 2, what="second shell")
        second = next(tab for tab in app.screen.query(ShellTab) if tab is not first)
        await wait_for(pilot, lambda: second.shell is not None and second.shell.running, what="second started")
        await wait_for(pilot, lambda: prompt_shown(second), what="second prompt")
        await wait_for(pilot, lambda: second.terminal.has_focus, what="second focused")
        await type_line(pilot, "echo who=${WHO:-nobody}")
        await wait_for(pilot, lambda: "who=nobody" in screen_text(second), what="separate shell")
        assert first.shell.process_id != second.shell.process_id and first.shell.running
        app.screen.query_one("ShellsPane").action_close_shell()  # idle at its prompt: closed without asking
        await wait_for(pilot, lambda: len(app.screen.query(ShellTab)) == 1, what="shell closed")


async def test_ctrl_c_answers_at_once_while_yes_floods_the_pane(target) -> None:
    service, browser, mode = target
    app = shell_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        tab = await open_shell(pilot, app, browser)
        await type_line(pilot, "yes flood-line")
        await wait_for(pilot, lambda: screen_text(tab).count("flood-line") > 20, what="flood on screen")
        await pilot.pause(1.0)  # a second of flood queued up between the process and the pane
        started = time.monotonic()
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: prompt_shown(tab), timeout=15, what="prompt after ctrl-c")
        elapsed = time.monotonic() - started
        await type_line(pilot, "echo stopped-$?")
        await wait_for(pilot, lambda: "stopped-130" in screen_text(tab), timeout=15, what="yes interrupted")
        print(f"[{mode}] ctrl-c under flood until the prompt: {elapsed:.2f} s")
        assert elapsed < 5.0, f"ctrl-c took {elapsed:.1f} s to take effect under flood"
