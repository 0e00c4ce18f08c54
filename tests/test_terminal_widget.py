"""TerminalView in a small Textual app: drawing, keys in order, Esc at once, the leave chord and its
keymap, alt+digit left to the app, paste, resize debounce, scrollback, the exit banner, coalesced
frames, key latency under a flood, and a real shell in a PTY (cursor position reports answered, a
kitty graphics picture drawn)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import signal
import struct
import termios
import time
from collections.abc import Callable

import pytest
from app_support import type_text
from rich.color import Color
from terminal_cores import CORE_PARAMS, use_core
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding

from bbrowse.tui.terminal import widget as widget_module
from bbrowse.tui.terminal.widget import LEAVE_BINDING_ID, TerminalView


@pytest.fixture(autouse=True, params=CORE_PARAMS)
def core_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both terminal cores."""
    return use_core(request, monkeypatch)


class CountingView(TerminalView):
    """A TerminalView that records the refreshes it asks for (to check what gets redrawn)."""

    def __init__(self, **kwargs) -> None:
        self.refreshes: list[tuple] = []
        super().__init__(**kwargs)

    def refresh(self, *regions, **kwargs):
        self.refreshes.append(regions)
        return super().refresh(*regions, **kwargs)


class TerminalApp(App[None]):
    """One terminal pane; records what the pane sends and the messages it posts. alt+1 is an app
    binding (as the session screen's tab switching)."""

    BINDINGS = [Binding("alt+1,inverted_exclamation_mark", "first_tab", "First tab")]

    def __init__(self) -> None:
        super().__init__()
        self.first_tab = 0
        self.sent = bytearray()
        self.sent_at: list[tuple[float, bytes, int]] = []
        self.changed = asyncio.Event()
        self.resizes: list[tuple[int, int]] = []
        self.left = 0
        self.restarts = 0

    def compose(self) -> ComposeResult:
        yield CountingView(send_input=self.send_input, on_pty_resize=self.pty_resize)

    @property
    def view(self) -> CountingView:
        return self.query_one(CountingView)

    async def send_input(self, data: bytes) -> None:
        self.sent += data
        self.sent_at.append((time.perf_counter(), data, len(self.view._backlog)))
        self.changed.set()

    def pty_resize(self, cols: int, rows: int) -> None:
        self.resizes.append((cols, rows))
        self.changed.set()

    def on_terminal_view_leave_requested(self, message: TerminalView.LeaveRequested) -> None:
        self.left += 1
        self.changed.set()

    def on_terminal_view_restart_requested(self, message: TerminalView.RestartRequested) -> None:
        self.restarts += 1
        self.changed.set()

    def action_first_tab(self) -> None:
        self.first_tab += 1
        self.changed.set()


def _command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


async def until(app: TerminalApp, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait until `condition` holds: woken by the app's change event, and looking again every 50 ms anyway
    (output handed to the view may be parsed by its drain task after the event was set)."""
    deadline = time.monotonic() + timeout
    while not condition():
        remaining = deadline - time.monotonic()
        assert remaining > 0, "timed out"
        app.changed.clear()
        try:
            await asyncio.wait_for(app.changed.wait(), min(remaining, 0.05))
        except TimeoutError:
            pass


def row_text(view: TerminalView, y: int) -> str:
    return "".join(segment.text for segment in view.render_line(y)).rstrip()


async def test_output_is_drawn_with_its_colours() -> None:
    app = TerminalApp()
    async with app.run_test(size=(50, 12)) as pilot:
        view = app.view
        view.focus()
        view.feed(b"plain \x1b[31mred\x1b[0m \x1b[1;48;5;22mbold on green\x1b[0m\r\n$ ")
        await view.wait_drained()
        await pilot.pause()
        assert row_text(view, 0) == "plain red bold on green"
        styles = {segment.text: segment.style for segment in view.render_line(0)}
        assert styles["red"].color == Color.from_ansi(1)
        assert styles["bold on green"].bold and styles["bold on green"].bgcolor == Color.from_ansi(22)
        cursor_cells = [s for s in view.render_line(1) if s.style and s.style.reverse]
        assert [s.text for s in cursor_cells] == [" "]  # the cursor, after "$ "
        assert view.render_line(0).cell_length == view.size.width == 48


async def test_only_changed_rows_are_refreshed_and_frames_are_coalesced() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 12)) as pilot:
        view = app.view
        view.focus()
        view.feed(b"a\r\nb\r\nc")
        await view.wait_drained()
        await pilot.pause(0.05)
        view.refreshes.clear()
        view.feed(b"\x1b[4;1Hchanged")  # one row written; the cursor moves from row 2 to row 3
        await view.wait_drained()
        await pilot.pause(0.05)
        regions = [region for call in view.refreshes for region in call]
        assert {region.y for region in regions} == {2, 3} and all(region.height == 1 for region in regions)
        view.refreshes.clear()
        view.feed(b"\x1b[?25l\x1b[6;1Hx")  # cursor hidden: only the written row
        await view.wait_drained()
        await pilot.pause(0.05)
        regions = [region for call in view.refreshes for region in call]
        assert {region.y for region in regions} == {3, 5}

        view.refreshes.clear()
        started = time.monotonic()
        for i in range(2000):  # many small writes in a burst
            view.feed(f"line {i}\r\n".encode())
        await view.wait_drained()
        await pilot.pause(0.05)
        elapsed = time.monotonic() - started
        assert len(view.refreshes) <= elapsed * 60 + 3
        assert row_text(view, view.size.height - 2) == "line 1999"


async def test_a_synchronized_update_is_drawn_whole(monkeypatch) -> None:
    """Mode 2026: what the program draws between `?2026h` and `?2026l` shows in one go."""
    monkeypatch.setattr(widget_module, "SYNC_HOLD_SECONDS", 60.0)
    app = TerminalApp()
    async with app.run_test(size=(40, 10)):
        view = app.view
        view.feed(b"before")
        await view.wait_drained()
        assert row_text(view, 0) == "before"
        view.feed(b"\x1b[?2026h\r\x1b[Khalf of a frame")
        await view.wait_drained()
        assert row_text(view, 0) == "before"  # held while the program draws
        view.feed(b", done\x1b[?2026l")
        await view.wait_drained()
        assert row_text(view, 0) == "half of a frame, done"


async def test_keys_reach_the_program_in_order() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 10)) as pilot:
        app.view.focus()
        await pilot.press("e", "c", "h", "o", "space", "h", "i", "enter", "ctrl+c", "up", "ctrl+p", "ctrl+q")
        await until(app, lambda: len(app.sent) >= 14)
        assert bytes(app.sent) == b"echo hi\r\x03\x1b[A\x10\x11"
        app.view.feed(b"\x1b[?1h")  # DECCKM: arrows become SS3
        await app.view.wait_drained()
        await pilot.press("up", "f1", "f5")
        await until(app, lambda: app.sent.endswith(b"\x1b[15~"))
        assert bytes(app.sent).endswith(b"\x1bOA\x1bOP\x1b[15~")


async def test_escape_reaches_the_program_at_once() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 10)) as pilot:
        app.view.focus()
        await pilot.pause()
        for expected in (b"\x1b", b"\x1b\x1b"):
            posted = time.perf_counter()
            app.view.post_message(events.Key("escape", "\x1b"))
            await until(app, lambda expected=expected: app.sent == expected)
            assert app.sent_at[-1][0] - posted < 0.1  # no hold waiting for a second Esc
        await pilot.press("escape", "x")
        await until(app, lambda: app.sent == b"\x1b\x1b\x1bx")
        assert app.left == 0


async def test_ctrl_right_bracket_leaves_and_alt_digits_go_to_the_app(core_name: str) -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.view
        view.focus()
        await pilot.pause()
        # The border names the Python core (where the cores differ, people can tell which one they have).
        assert view.border_subtitle == ("ctrl+] leave" if core_name == "ghostty" else "ctrl+] leave · Python core")
        assert ("libghostty-vt" if core_name == "ghostty" else "Python core") in view.HELP
        await pilot.press("ctrl+right_square_bracket")
        await until(app, lambda: app.left == 1)
        await pilot.press("alt+1")
        await until(app, lambda: app.first_tab == 1)
        # Without the kitty protocol a terminal sends alt+1 as ESC 1, which Textual names after the
        # macOS option character (¡): still the app's, not a character for the program.
        await pilot.press("inverted_exclamation_mark")
        await until(app, lambda: app.first_tab == 2)
        await pilot.press("alt+x", "ctrl+p")  # other alt chords and the app's keys still go to the program
        await until(app, lambda: app.sent == b"\x1bx\x10")
        assert app.first_tab == 2 and app.left == 1


async def test_the_leave_chord_follows_the_keymap() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 10)) as pilot:
        app.set_keymap({LEAVE_BINDING_ID: "ctrl+g"})
        view = app.view
        view.focus()
        await pilot.pause()
        assert view.border_subtitle.startswith("ctrl+g leave")
        await pilot.press("ctrl+right_square_bracket")  # now an ordinary key: GS for the program
        await until(app, lambda: app.sent == b"\x1d")
        await pilot.press("ctrl+g")
        await until(app, lambda: app.left == 1)
        assert app.sent == b"\x1d"


async def test_paste_is_bracketed_when_the_program_asks() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.view
        view.focus()
        view.post_message(events.Paste("ls\npwd"))
        await until(app, lambda: app.sent == b"ls\rpwd")
        view.feed(b"\x1b[?2004h")
        await view.wait_drained()
        app.sent.clear()
        view.post_message(events.Paste("ls\npwd"))
        await until(app, lambda: app.sent == b"\x1b[200~ls\rpwd\x1b[201~")
        await pilot.pause()


async def test_resize_is_applied_at_once_and_reported_debounced_with_the_final_size(monkeypatch) -> None:
    # A debounce long enough that a loaded machine cannot stretch the resizes below past it.
    monkeypatch.setattr(widget_module, "RESIZE_DEBOUNCE_SECONDS", 1.0)
    app = TerminalApp()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.view
        await until(app, lambda: len(app.resizes) == 1)
        assert app.resizes == [(58, 18)]  # the pane's content area (inside its border)
        started = time.monotonic()
        for width, height in ((70, 22), (90, 30), (100, 35), (80, 25)):
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            assert view.terminal_size == (width - 2, height - 2)  # the core follows at once
        quick = time.monotonic() - started < 1.0
        await until(app, lambda: app.resizes[-1] == (78, 23))
        if quick:
            assert app.resizes == [(58, 18), (78, 23)]


async def test_scrollback_with_shift_pageup_and_the_wheel() -> None:
    app = TerminalApp()
    async with app.run_test(size=(40, 12)) as pilot:
        view = app.view
        view.focus()
        view.feed(b"".join(f"line {i}\r\n".encode() for i in range(100)))
        await view.wait_drained()
        assert row_text(view, 0) == "line 91"
        await pilot.press("shift+pageup")
        assert row_text(view, 0) == "line 82"
        view.post_message(events.MouseScrollUp(view, 1, 1, 0, 0, 0, False, False, False))
        await pilot.pause()
        assert row_text(view, 0) == "line 79"
        assert app.sent == b""
        await pilot.press("x")  # typing returns to the live screen
        await until(app, lambda: app.sent == b"x")
        assert row_text(view, 0) == "line 91"


async def test_exit_banner_and_restart() -> None:
    app = TerminalApp()
    async with app.run_test(size=(60, 10)) as pilot:
        view = app.view
        view.focus()
        view.feed(b"$ exit 3\r\n")
        await view.wait_drained()
        view.show_exit(3)
        await pilot.pause()
        assert row_text(view, view.size.height - 1).strip() == "process exited with code 3 — press r to restart"
        await pilot.press("a", "enter")
        await pilot.press("r")
        await until(app, lambda: app.restarts == 1)
        assert app.sent == b""
        view.reset()
        assert not view.exited and row_text(view, 0) == ""


async def test_keys_answer_at_once_during_a_flood(core_name: str) -> None:
    app = TerminalApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.view
        view.focus()
        await pilot.pause()
        # The flood's parsing is counted in turns (each a budget of parsing, then the loop runs keys and
        # drawing): how many went by before a key was sent says whether it waited behind the flood, on a busy
        # machine as on an idle one (a clock is stretched by whatever else runs).
        turns = 0
        turns_at_send: list[int] = []
        schedule_frame, send_input = view._schedule_frame, view.send_input

        def turn() -> None:
            nonlocal turns
            turns += 1
            schedule_frame()

        async def sent(data: bytes) -> None:
            turns_at_send.append(turns)
            await send_input(data)

        view._schedule_frame = turn  # type: ignore[method-assign]
        view.send_input = sent
        # Coloured, so no shortcut applies: every byte has to go through the core.
        chunk = b"\x1b[32my\x1b[0m\r\n" * 20_000 + b"".join(f"{i} lorem ipsum dolor\r\n".encode() for i in range(3000))
        started = time.perf_counter()
        # ~11 MB queued faster than it can be drawn (the Python core parses ~15x slower: 0.8 MB keeps the
        # test's time in line).
        for _ in range(40 if core_name == "ghostty" else 3):
            view.feed(chunk)
        latencies, waited = [], []
        for key in "abc":
            posted, turns_at_post = time.perf_counter(), turns
            app.post_message(events.Key(key, key))
            await until(app, lambda k=key: app.sent.endswith(k.encode()))
            latencies.append(app.sent_at[-1][0] - posted)
            waited.append(turns_at_send[-1] - turns_at_post)
            assert app.sent_at[-1][2] > 0  # the flood was still queued: the key did not wait for it
        app.post_message(events.Key("ctrl+c", "\x03"))
        await until(app, lambda: app.sent.endswith(b"\x03"))
        assert bytes(app.sent) == b"abc\x03"
        await view.wait_drained()
        print("key latencies during the flood (ms):", [round(x * 1000, 1) for x in latencies],
              f"turns waited {waited} of {turns}, flood {time.perf_counter() - started:.2f} s")
        # Each key is sent within a few of the turns the flood takes to go through (waiting behind it would
        # take all of them).
        assert max(waited) <= 3 < turns / 4, (waited, turns)
        await pilot.pause(0.05)
        assert row_text(view, view.size.height - 2) == "2999 lorem ipsum dolor"


async def test_a_plain_flood_ends_on_the_screen_and_history_drawing_it_all_would_give() -> None:
    """6 MB of `yes` lines written as a stream reader would: the shortcut and the pacing drop most of
    it; what shows, and the promised history, are the flood's last lines."""
    app = TerminalApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.view
        fed = 0
        real_feed = view.core.feed

        def counting_feed(data: bytes) -> None:
            nonlocal fed
            fed += len(data)
            real_feed(data)

        view.core.feed = counting_feed  # type: ignore[method-assign]
        flood_bytes = b"y\r\n" * 2_000_000 + b"".join(f"tail {i}\r\n".encode() for i in range(30))
        for start in range(0, len(flood_bytes), 65536):
            await view.write(flood_bytes[start : start + 65536])
            await asyncio.sleep(0)
        await view.wait_drained()
        await pilot.pause()
        core = view.core
        assert core.display[: core.rows - 1] == [f"tail {i}" for i in range(30 - (core.rows - 1), 30)]
        history = core.scrollback_text()
        assert len(history) >= core.scrollback_limit
        assert history[-(30 - (core.rows - 1)) :] == [f"tail {i}" for i in range(30 - (core.rows - 1))]
        assert set(history[-core.scrollback_limit : -(30 - (core.rows - 1))]) == {"y"}
        assert fed < len(flood_bytes) / 2  # most of it never went through the core


async def test_a_big_backlog_that_cannot_be_skipped_still_drains() -> None:
    """Just over the skip threshold with too few lines to skip, or full of escapes: drawn in full."""
    app = TerminalApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.view
        rows = view.core.rows + view.core.scrollback_limit + 5
        view.feed(b"".join(f"{i:06d} {'lorem ipsum dolor sit amet ' * 2}\r\n".encode() for i in range(rows)))
        view.feed(b"".join(f"\x1b[3{i % 8}mcolour {i}\x1b[0m\r\n".encode() for i in range(30_000)))
        await asyncio.wait_for(view.wait_drained(), 60)
        await pilot.pause()
        assert row_text(view, view.size.height - 2) == "colour 29999"
        assert view.core.scrollback_text()[-1] == f"colour {29999 - (view.core.rows - 1)}"


@pytest.fixture
def shell_pane() -> Callable[[TerminalApp], asyncio.Future]:
    """Wire a pane to bash in a local PTY (what the app does with the service's process API).

    The reader is removed from the loop it was added to before its descriptor is closed: the tests share
    one event loop, and a closed descriptor left registered is a stale key in its selector, which breaks
    whatever gets that number next (a reader added there is never woken; a socket connect fails)."""
    children: list[tuple[int, int, asyncio.AbstractEventLoop]] = []

    async def start(app: TerminalApp) -> tuple[int, int]:
        view = app.view
        cols, rows = view.terminal_size
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child
            # A test worker may run with SIGINT ignored, and an ignored signal stays ignored across exec.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execvpe("bash", ["bash", "--norc", "--noprofile"], dict(os.environ, TERM="xterm-256color", PS1="$ "))
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        loop = asyncio.get_running_loop()
        children.append((pid, fd, loop))

        def readable() -> None:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                _, status = os.waitpid(pid, 0)
                view.show_exit(os.waitstatus_to_exitcode(status))
                app.changed.set()
                return
            view.feed(data)
            app.changed.set()

        async def send(data: bytes) -> None:
            os.write(fd, data)

        def resize(cols: int, rows: int) -> None:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            app.pty_resize(cols, rows)

        view.send_input = send
        view.on_pty_resize = resize
        loop.add_reader(fd, readable)
        return pid, fd

    yield start
    for pid, fd, loop in children:
        loop.remove_reader(fd)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


async def test_a_real_shell_echo_ctrl_c_resize_and_exit(shell_pane) -> None:
    app = TerminalApp()
    async with app.run_test(size=(70, 16)) as pilot:
        view = app.view
        view.focus()
        await until(app, lambda: len(app.resizes) == 1)
        shell, fd = await shell_pane(app)
        await until(app, lambda: view.core.display[0] == "$")
        await type_text(pilot, "echo hi", then="enter")
        await until(app, lambda: "hi" in view.core.display)
        await type_text(pilot, "printf '\\e[31mred\\e[0m\\n'", then="enter")
        await until(app, lambda: "red" in view.core.display)
        y = view.core.display.index("red")
        assert view.core.cell(0, y)[1][0] == 1  # drawn red
        await type_text(pilot, "sleep 100", then="enter")
        # ctrl-c once sleep runs in the foreground (exec'ed, not a forked bash still setting up its signals):
        # typed before, it would interrupt bash reading the line, or be lost in the fork.
        await until(app, lambda: os.tcgetpgrp(fd) != shell and _command_of(os.tcgetpgrp(fd)) == "sleep")
        await pilot.press("ctrl+c")
        await until(app, lambda: view.core.display[view.core.cursor_y] == "$")
        await pilot.resize_terminal(90, 20)
        await until(app, lambda: app.resizes[-1] == (88, 18))
        await type_text(pilot, "tput cols", then="enter")
        await until(app, lambda: "88" in view.core.display)
        await type_text(pilot, "exit 3", then="enter")
        await until(app, lambda: view.exited)
        assert view.exit_code == 3
        await pilot.pause()
        assert "exited with code 3" in row_text(view, view.size.height - 1)


async def test_a_program_asking_for_the_cursor_position_gets_its_answer(shell_pane) -> None:
    """The reply goes back through the same input path as keys: bash reads it from its terminal.

    Echo is off before the question, as a real program does it (raw mode first): a reply that came back
    before `read` had turned echo off would otherwise be echoed in front of the line the test looks for."""
    app = TerminalApp()
    async with app.run_test(size=(70, 16)) as pilot:
        view = app.view
        view.focus()
        await until(app, lambda: len(app.resizes) == 1)
        await shell_pane(app)
        await until(app, lambda: view.core.display[0] == "$")
        ask = "stty -echo; printf '\\e[6n'; IFS= read -rsd R pos; stty echo"
        await type_text(pilot, f"clear; echo one; echo two; {ask}; echo \"cpr=${{pos#*[}}\"")
        await pilot.press("enter")
        await until(app, lambda: any(line.startswith("cpr=") for line in view.core.display))
        display = view.core.display
        row = next(y for y, line in enumerate(display) if line.startswith("cpr="))
        assert display[row] == f"cpr={row + 1};1"  # where the cursor was when printf asked
        assert display[row - 2 : row] == ["one", "two"]


KITTY_SCRIPT = r'''
import base64, io, sys
from PIL import Image

def send(control, data):
    payload = base64.standard_b64encode(data).decode()
    chunks = [payload[i : i + 4096] for i in range(0, len(payload), 4096)] or [""]
    for n, chunk in enumerate(chunks):
        more = 1 if n < len(chunks) - 1 else 0
        head = f"{control},m={more}" if n == 0 else f"m={more}"
        sys.stdout.write(f"\x1b_G{head};{chunk}\x1b\\")

# raw RGB, 4x4: the top half red, the bottom half blue, on 4 cells of one row
send("a=T,f=24,s=4,v=4,c=4,r=1,q=2", bytes([255, 0, 0] * 8 + [0, 0, 255] * 8))
sys.stdout.write("\r\n\r\n")
# a PNG, 40x40 green, on 6 cells of 3 rows
png = io.BytesIO()
Image.new("RGB", (40, 40), (0, 200, 0)).save(png, format="PNG")
send("a=T,f=100,c=6,r=3,q=2", png.getvalue())
sys.stdout.write("\r\n\r\n\r\n\r\npictures drawn\r\n")
sys.stdout.flush()
'''


def _cells_drawn_with(view: TerminalView, top: tuple[int, int, int], bottom: tuple[int, int, int]) -> list[tuple]:
    """(x, y) of cells drawn as a half block with these two pixel colours."""
    found = []
    for y in range(view.core.rows):
        x = 0
        for segment in view.render_line(y):
            style = segment.style
            if segment.text and set(segment.text) == {"▀"} and style and style.color and style.bgcolor:
                if style.color.triplet == top and style.bgcolor.triplet == bottom:
                    found.extend((x + i, y) for i in range(len(segment.text)))
            x += segment.cell_length
    return found


async def test_a_kitty_graphics_picture_is_drawn_in_the_pane(shell_pane, tmp_path, core_name: str) -> None:
    if core_name == "python":
        pytest.skip("the Python core has no kitty graphics (README: where the cores differ)")
    import sys

    script = tmp_path / "picture.py"
    script.write_text(KITTY_SCRIPT)
    app = TerminalApp()
    async with app.run_test(size=(70, 16)) as pilot:
        view = app.view
        view.focus()
        await until(app, lambda: len(app.resizes) == 1)
        await shell_pane(app)
        await until(app, lambda: view.core.display[0] == "$")
        await type_text(pilot, f"clear; {sys.executable} {script}", then="enter")
        await until(app, lambda: "pictures drawn" in view.core.display)
        await view.wait_drained()
        await pilot.pause()
        # After `clear` the script draws from the top: a picture moves the cursor past its last cell.
        assert view.core.display.index("pictures drawn") == 8
        assert _cells_drawn_with(view, (255, 0, 0), (0, 0, 255)) == [(x, 0) for x in range(4)]
        green = _cells_drawn_with(view, (0, 200, 0), (0, 200, 0))
        assert sorted(green) == [(x, y) for x in range(6) for y in range(2, 5)]
        assert app.sent == b"".join(app.sent.split(b"\x1b_G"))  # q=2: no acknowledgements sent back
