"""The terminal emulator without an app: colours, attributes, wide characters, the alternate screen,
modes, split input, resize, scrollback, flood skipping; real programs in a real PTY; and tmux as an
oracle on the same bytes."""

from __future__ import annotations

import os
import pty
import random
import select
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from rich.color import Color

from bbrowse.tui.terminal.attrs import BOLD, DIM, ITALIC, REVERSE, STRIKE, UNDERLINE, describe
from bbrowse.tui.terminal.emulator import TerminalEmulator


def fed(data: bytes | str, cols: int = 40, rows: int = 10, scrollback: int = 1000) -> TerminalEmulator:
    emulator = TerminalEmulator(cols, rows, scrollback=scrollback)
    emulator.feed(data.encode() if isinstance(data, str) else data)
    return emulator


def state(emulator: TerminalEmulator) -> tuple:
    """Everything a user could see or scroll to, for comparing two emulators."""
    return (
        emulator.display,
        emulator.cursor,
        emulator.alternate_screen_active,
        emulator.scrollback_text(),
        [tuple(row.attrs) for row in emulator.lines],
        [tuple(row.attrs) for row in emulator.scrollback],
        emulator.title,
    )


# ---------------------------------------------------------------- colours and attributes


@pytest.mark.parametrize(
    ("sequence", "fg", "bg"),
    [
        ("\x1b[31m", 1, None),
        ("\x1b[97m", 15, None),
        ("\x1b[42m", None, 2),
        ("\x1b[104m", None, 12),
        ("\x1b[38;5;208m", 208, None),
        ("\x1b[48;5;17m", None, 17),
        ("\x1b[38;2;255;128;0m", (255, 128, 0), None),
        ("\x1b[48;2;1;2;3m", None, (1, 2, 3)),
        ("\x1b[38:2::10:20:30m", (10, 20, 30), None),
        ("\x1b[38:5:99m", 99, None),
        ("\x1b[31;42m", 1, 2),
        ("\x1b[31m\x1b[39m", None, None),
    ],
)
def test_colours_16_256_and_true_colour(sequence: str, fg: object, bg: object) -> None:
    emulator = fed(f"{sequence}X\x1b[0mY")
    look = describe(emulator.cell(0, 0)[1])
    assert (look["fg"], look["bg"]) == (fg, bg)
    assert emulator.cell(1, 0)[1] == (-1, -1, 0)  # reset by SGR 0


def test_attributes_set_and_reset_one_by_one() -> None:
    emulator = fed("\x1b[1;2;3;4;7;9mA\x1b[22mB\x1b[23mC\x1b[24mD\x1b[27mE\x1b[29mF")
    flags = [emulator.cell(x, 0)[1][2] for x in range(6)]
    everything = BOLD | DIM | ITALIC | UNDERLINE | REVERSE | STRIKE
    assert flags == [
        everything,
        everything & ~(BOLD | DIM),
        everything & ~(BOLD | DIM | ITALIC),
        REVERSE | STRIKE,
        STRIKE,
        0,
    ]


def test_rendered_strip_carries_the_colours() -> None:
    emulator = fed("plain \x1b[1;31mred\x1b[0m \x1b[38;2;0;128;255mblue")
    strip = emulator.render_line(0)
    assert strip.cell_length == 40
    segments = {segment.text: segment.style for segment in strip}
    assert segments["red"].color == Color.from_ansi(1) and segments["red"].bold
    assert segments["blue"].color.triplet == (0, 128, 255)
    assert segments["plain "].color is None


def test_erase_uses_the_background_colour() -> None:
    emulator = fed("\x1b[44m\x1b[2J\x1b[0mtext")
    assert describe(emulator.cell(30, 5)[1])["bg"] == 4
    assert emulator.cell(0, 0) == ("t", (-1, -1, 0))


# ---------------------------------------------------------------- characters and the cursor


def test_wide_characters_take_two_cells() -> None:
    emulator = fed("中文😀x")
    assert emulator.display[0] == "中文😀x"
    assert [emulator.cell(x, 0)[0] for x in range(7)] == ["中", "", "文", "", "😀", "", "x"]
    assert emulator.cursor == (7, 0)
    assert emulator.render_line(0).cell_length == 40


def test_wide_character_wraps_whole_at_the_right_edge() -> None:
    emulator = fed("a" * 39 + "中b", cols=40)
    assert emulator.display[0] == "a" * 39
    assert emulator.display[1] == "中b"


def test_overwriting_half_of_a_wide_character_clears_the_other_half() -> None:
    emulator = fed("中文\x1b[2Gx")
    assert emulator.display[0] == " x文"


def test_combining_marks_join_their_base_cell() -> None:
    emulator = fed("e\u0301x")
    assert emulator.cell(0, 0)[0] == "e\u0301"
    assert emulator.cursor == (2, 0)


def test_cursor_moves_and_hides() -> None:
    emulator = fed("\x1b[5;10Hhere\x1b[2A\x1b[3D")
    assert emulator.line_text(4) == " " * 9 + "here"
    assert emulator.cursor == (10, 2)
    assert emulator.cursor_visible
    emulator.feed(b"\x1b[?25l")
    assert not emulator.cursor_visible
    emulator.feed(b"\x1b[?25h")
    assert emulator.cursor_visible


def test_autowrap_and_pending_wrap() -> None:
    emulator = fed("x" * 40, cols=40)
    assert emulator.cursor == (39, 0)  # waits in the last column
    emulator.feed(b"\rA")
    assert emulator.display[:2] == ["A" + "x" * 39, ""]
    emulator.feed(b"\x1b[1;1H" + b"y" * 41)
    assert emulator.display[1] == "y"


def test_scroll_region_scrolls_only_inside_it() -> None:
    emulator = fed("".join(f"{i}\r\n" for i in range(8)) + "\x1b[3;5r\x1b[5;1H\nnew\x1b[r", rows=10)
    assert emulator.display[:8] == ["0", "1", "3", "4", "new", "5", "6", "7"]


def test_dec_line_drawing_charset() -> None:
    assert fed("\x1b(0lqk\x1b(B q").display[0] == "┌─┐ q"


# ---------------------------------------------------------------- modes and the alternate screen


def test_alternate_screen_1049_saves_and_restores_screen_and_cursor() -> None:
    emulator = fed("shell line 1\r\nshell line 2\x1b[?1049h")
    assert emulator.alternate_screen_active
    assert emulator.display == [""] * 10  # cleared on entry
    emulator.feed(b"\x1b[H\x1b[7mfull screen app\x1b[0m\x1b[10;1H~")
    assert emulator.display[0] == "full screen app"
    emulator.feed(b"\x1b[?1049l")
    assert not emulator.alternate_screen_active
    assert emulator.display[:2] == ["shell line 1", "shell line 2"]
    assert emulator.cursor == (12, 1)


@pytest.mark.parametrize("mode", [47, 1047])
def test_alternate_screen_47_and_1047(mode: int) -> None:
    emulator = fed(f"main\x1b[?{mode}hALT\x1b[?{mode}l")
    assert emulator.display[0] == "main"
    assert not emulator.alternate_screen_active


def test_alternate_screen_never_feeds_the_scrollback() -> None:
    emulator = fed("\x1b[?1049h" + "".join(f"{i}\r\n" for i in range(50)) + "\x1b[?1049l")
    assert emulator.scrollback_lines == 0
    assert emulator.scroll_view(5) == 0


def test_decckm_and_bracketed_paste_follow_their_sequences() -> None:
    emulator = fed("")
    assert not emulator.application_cursor_keys and not emulator.bracketed_paste
    emulator.feed(b"\x1b[?1h\x1b[?2004h")
    assert emulator.application_cursor_keys and emulator.bracketed_paste
    emulator.feed(b"\x1b[?1l")
    assert not emulator.application_cursor_keys and emulator.bracketed_paste
    emulator.feed(b"\x1b[?2004l")
    assert not emulator.bracketed_paste
    emulator.feed(b"\x1b[?1;2004h")  # several modes in one sequence
    assert emulator.application_cursor_keys and emulator.bracketed_paste


def test_queries_are_answered() -> None:
    emulator = fed("\x1b[3;7H\x1b[6n\x1b[c\x1b[?2004h\x1b[?2004$p")
    assert emulator.take_replies() == b"\x1b[3;7R\x1b[?1;2c\x1b[?2004;1$y"
    assert emulator.take_replies() == b""


def test_title_from_osc_0_and_2() -> None:
    emulator = fed("\x1b]0;first\x07")
    assert emulator.title == "first"
    emulator.feed(b"\x1b]2;second\x1b\\")
    assert emulator.title == "second"
    assert emulator.display[0] == ""


# ---------------------------------------------------------------- split input


def test_utf8_split_at_every_byte() -> None:
    text = "añ中😀é\u0301z".encode()
    whole = fed(text)
    for cut in range(1, len(text)):
        emulator = TerminalEmulator(40, 10)
        emulator.feed(text[:cut])
        emulator.feed(text[cut:])
        assert emulator.display == whole.display, cut


def test_escape_sequences_split_anywhere() -> None:
    data = b"a\x1b[1;31mb\x1b[0m\x1b]2;title\x07\x1b[?1049h\x1b[5;5Hc\x1b[?1049l\x1b(0q\x1b(Bd\x1bP1$r\x1b\\e"
    whole = fed(data)
    for cut in range(1, len(data)):
        emulator = TerminalEmulator(40, 10)
        emulator.feed(data[:cut])
        emulator.feed(data[cut:])
        assert state(emulator) == state(whole), cut
    one_by_one = TerminalEmulator(40, 10)
    for byte in data:
        one_by_one.feed(bytes([byte]))
    assert state(one_by_one) == state(whole)
    assert whole.display[0] == "ab─de" and whole.title == "title"


# ---------------------------------------------------------------- resize and scrollback


def test_resize_shrink_keeps_the_cursor_line_and_grow_brings_history_back() -> None:
    emulator = fed("".join(f"line {i}\r\n" for i in range(10)) + "prompt$ ", cols=20, rows=10)
    assert emulator.display[-1] == "prompt$"
    emulator.resize(12, 4)
    assert emulator.display == ["line 7", "line 8", "line 9", "prompt$"]
    assert emulator.cursor == (8, 3)
    assert emulator.scrollback_text()[-1] == "line 6"
    emulator.resize(30, 6)
    assert emulator.display == ["line 5", "line 6", "line 7", "line 8", "line 9", "prompt$"]
    assert emulator.render_line(0).cell_length == 30


def test_resize_cuts_wide_characters_cleanly() -> None:
    emulator = fed("abc中", cols=10)
    emulator.resize(4, 10)
    assert emulator.display[0] == "abc"
    assert emulator.render_line(0).cell_length == 4


def test_scrollback_keeps_the_last_lines_and_can_be_viewed() -> None:
    emulator = fed("".join(f"line {i}\r\n" for i in range(100)), cols=20, rows=5, scrollback=50)
    assert emulator.scrollback_lines == 50
    assert emulator.scrollback_text()[0] == "line 46" and emulator.scrollback_text()[-1] == "line 95"
    assert emulator.scroll_view(10) == 10
    assert "".join(s.text for s in emulator.render_line(0)).rstrip() == "line 86"
    assert emulator.scroll_view(1000) == 50  # clamped to what is kept
    emulator.feed(b"more\r\n")  # the view stays on the lines it shows
    assert emulator.scroll_offset == 50
    emulator.scroll_to_bottom()
    assert "".join(s.text for s in emulator.render_line(0)).rstrip() == "line 97"
    emulator.feed(b"\x1b[3J")
    assert emulator.scrollback_lines == 0


def test_dirty_rows_and_render_cache() -> None:
    emulator = fed("a\r\nb\r\nc")
    emulator.take_dirty()
    first = emulator.render_line(0)
    assert emulator.render_line(0) is first  # cached until the row changes
    emulator.feed(b"\x1b[4;1Hx")
    assert emulator.take_dirty() == {3}
    assert emulator.render_line(0) is first
    emulator.feed(b"\x1b[1;1Hz")
    assert emulator.render_line(0) is not first
    emulator.feed(b"\x1b[10;1H\n")  # a scroll moves every row
    assert emulator.take_dirty() == set(range(10))


# ---------------------------------------------------------------- floods


def _flood(lines: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    words = ["alpha", "beta", "中文", "\x1b[32mgreen\x1b[0m", "gamma", "x" * 50]
    out = [b"\x1b[1mbegin\x1b[0m\r\n"]
    for i in range(lines):
        if i % 5000 == 4999:
            out.append(b"\x1b[33mmarker\x1b[0m\r\n")
        else:
            plain = [w for w in words if "\x1b" not in w]
            out.append((f"{i} " + " ".join(rnd.choice(plain) for _ in range(rnd.randint(0, 12))) + "\r\n").encode())
    return b"".join(out) + b"end"


@pytest.mark.parametrize("scrollback", [0, 100, 2000])
def test_skipping_a_flood_gives_exactly_the_same_state(scrollback: int) -> None:
    prefix = _flood(30_000, seed=scrollback)
    plain_flood = b"".join(f"{i} {'word ' * (i % 17)}\r\n".encode() for i in range(20_000)) + b"y\r\n" * 50_000
    data = prefix + plain_flood
    small = TerminalEmulator(60, 20, scrollback=scrollback)
    for start in range(0, len(data), 2000):  # small feeds never skip
        small.feed(data[start : start + 2000])
    big = TerminalEmulator(60, 20, scrollback=scrollback)
    big.feed(prefix)
    skipped = big.skip_scrolled_away(plain_flood)
    assert skipped > len(plain_flood) * 0.9  # most of the flood was skipped
    big.feed(plain_flood[skipped:])
    assert state(big) == state(small)
    whole = TerminalEmulator(60, 20, scrollback=scrollback)
    whole.feed(data)  # feed() skips on its own after the last escape sequence
    assert state(whole) == state(small)


def test_the_plain_lines_path_matches_the_general_path() -> None:
    """Chunks with no escape sequence take a faster path; it must leave exactly the same state."""
    data = b"".join(f"{i:05d} {'word ' * (i % 50)}\r\n".encode() for i in range(3000))
    data += "中文字 ".encode() * 40 + b"\r\nx" * 200 + b"tab\there\r\n" + b"y" * 90
    fast = TerminalEmulator(80, 24, scrollback=300)
    general = TerminalEmulator(80, 24, scrollback=300)
    general._process = general._process_sequences  # never the plain-lines path
    for start in range(0, len(data), 4096):
        fast.feed(data[start : start + 4096])
        general.feed(data[start : start + 4096])
    assert state(fast) == state(general)
    assert [row.wrapped for row in fast.lines] == [row.wrapped for row in general.lines]


def test_a_flood_with_escapes_in_its_head_is_drawn_in_full() -> None:
    emulator = TerminalEmulator(40, 10, scrollback=10)
    data = b"\x1b[31m" + b"line\r\n" * 1000 + b"\x1b[0m" + b"line\r\n" * 1000
    assert emulator.skip_scrolled_away(data) == 0


# ---------------------------------------------------------------- hostile input

_PIECES = [
    b"\x1b[", b"\x1b]", b"\x1bP", b"\x1b(", b"\x1b", b"\x1b\x1b", b"\x1b#8", b"\x1b[?1049h", b"\x1b[?1049l",
    b"\x1b[?47h", b"\x1b[?1047l", b"\x1b[2J", b"\x1b[3J", b"\x1b[K", b"\x1b[5;10r", b"\x1b[r", b"\x1b[?6h", b"\x1b[?7l",
    b"\x1b[?7h", b"\x1b[4h", b"\x1b[4l", b"\x1b[3@", b"\x1b[2P", b"\x1b[3L", b"\x1b[2M", b"\x1b[5X", b"\x1b[3b",
    b"\x1b[2S", b"\x1b[2T", b"\x1b7", b"\x1b8", b"\x1bM", b"\x1bD", b"\x1bc", b"\x1b[99;99H", b"\x1b[0;0H",
    b"\x1b[999999999999A", b"\x1b[99999999I", b"\x1b[99999999b", b"\x1b[38;2;1;2m", b"\x1b[48:2::1:2:3m", b"\x1b[6n",
    "中文😀é\u0301\u200d\ufe0f".encode(), b"\r\n", b"\n", b"\r", b"\t", b"\x08", b"\x07", b"\x0e", b"\x0f",
    b"\x00", b"\x7f", b"\xc3", b"\xe4\xb8", b"\xff", b"\x9b", b"abc", b"x" * 100, b"\x1b]0;t\x07", b"\x1bP1$r\x1b\\",
]


@pytest.mark.parametrize("seed", range(12))
def test_random_input_keeps_the_screen_consistent(seed: int) -> None:
    """Garbage, cut sequences, huge parameters and resizes: no exception, and the invariants hold."""
    rnd = random.Random(seed)
    emulator = TerminalEmulator(rnd.randint(1, 30), rnd.randint(1, 12), scrollback=rnd.choice([0, 5, 100]))
    for _ in range(300):
        roll = rnd.random()
        if roll < 0.03:
            emulator.resize(rnd.randint(1, 30), rnd.randint(1, 12))
        elif roll < 0.05:
            emulator.scroll_view(rnd.randint(-10, 10))
        elif roll < 0.08:
            emulator.feed(bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 50))))
        else:
            emulator.feed(b"".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 6))))
        cols, rows = emulator.cols, emulator.rows
        assert 0 <= emulator.cursor_x < cols and 0 <= emulator.cursor_y < rows
        assert len(emulator.lines) == rows
        for y, row in enumerate(emulator.lines):
            assert len(row.chars) == len(row.attrs) == cols
            assert all(row.chars[x - 1] != "" for x, ch in enumerate(row.chars) if ch == "" and x)
            assert row.chars[0] != ""
            assert emulator.render_line(y, emulator.cursor_x).cell_length == cols


# ---------------------------------------------------------------- real programs in a real PTY


class PtyProgram:
    """A program in a real pseudo-terminal, its output fed to an emulator (queries answered)."""

    def __init__(self, argv: list[str], cols: int = 80, rows: int = 24) -> None:
        import fcntl
        import struct
        import termios

        self.emulator = TerminalEmulator(cols, rows)
        self.output = bytearray()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            env = dict(os.environ, TERM="xterm-256color", LESS="", LANG="C.UTF-8")
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def pump_until(self, condition, timeout: float = 15.0) -> bool:
        """Feed output until `condition(emulator)` holds; False on timeout or end of output."""
        deadline = time.monotonic() + timeout
        while not condition(self.emulator):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return False
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return condition(self.emulator)
            if not chunk:
                return condition(self.emulator)
            self.output += chunk
            self.emulator.feed(chunk)
            replies = self.emulator.take_replies()
            if replies:
                os.write(self.fd, replies)
        return True

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "pages.txt"
    path.write_text("".join(f"page line {i:03d} " + "lorem ipsum " * (i % 5) + "\n" for i in range(200)))
    return path


@pytest.mark.skipif(shutil.which("less") is None, reason="needs less")
def test_less_in_a_real_pty_restores_the_prior_screen(text_file: Path) -> None:
    program = PtyProgram(["bash", "--norc", "--noprofile", "-c",
                          f"for i in 1 2 3; do echo before less $i; done; less {text_file}; echo after less; sleep 60"])
    try:
        assert program.pump_until(lambda e: e.alternate_screen_active and "page line 000" in e.display[0])
        before = program.emulator
        assert before.display[-1].startswith(":") or "pages.txt" in before.display[-1]
        program.send(b" ")  # next page
        assert program.pump_until(lambda e: "page line 023" in e.display[0])
        program.send(b"q")
        assert program.pump_until(lambda e: not e.alternate_screen_active and "after less" in e.display)
        screen = program.emulator.display
        assert screen[:4] == ["before less 1", "before less 2", "before less 3", "after less"]
        assert program.emulator.scrollback_lines == 0  # less drew nothing into the history
    finally:
        program.close()


@pytest.mark.skipif(shutil.which("vim") is None, reason="needs vim")
def test_vim_in_a_real_pty_draws_and_restores(text_file: Path) -> None:
    program = PtyProgram(["bash", "--norc", "--noprofile", "-c",
                          f"echo shell before vim; vim -u NONE -N {text_file}; echo shell after vim; sleep 60"],
                         cols=100, rows=30)
    try:
        assert program.pump_until(lambda e: e.alternate_screen_active and e.display[0].startswith("page line 000"))
        program.send(b"Gdd:set number\r")
        assert program.pump_until(lambda e: any(line.strip().startswith("199") for line in e.display))
        program.send(b":q!\r")
        assert program.pump_until(lambda e: "shell after vim" in e.display)
        assert program.emulator.display[:2] == ["shell before vim", "shell after vim"]
    finally:
        program.close()


# ---------------------------------------------------------------- tmux as an oracle


def tmux_screen(data: bytes, cols: int, rows: int, tmp_path: Path) -> tuple[list[str], tuple[int, int], bool]:
    """What tmux shows after swallowing `data` raw: (rows of text, cursor, alternate screen on)."""
    name = uuid.uuid4().hex[:8]
    path = tmp_path / f"{name}.bin"
    path.write_bytes(data)
    sock = tmp_path / f"{name}.sock"  # a private server, its socket in the test's temporary directory
    base = ["tmux", "-S", str(sock), "-f", "/dev/null"]
    try:
        subprocess.run([*base, "new-session", "-d", "-x", str(cols), "-y", str(rows),
                        f"stty -opost -echo; cat {path}; tmux -S {sock} wait-for -S done; sleep 600"],
                       check=True, timeout=30)
        subprocess.run([*base, "wait-for", "done"], check=True, timeout=30)
        screen = subprocess.run([*base, "capture-pane", "-p", "-N"], check=True, capture_output=True, text=True,
                                timeout=30).stdout.split("\n")[:rows]
        info = subprocess.run([*base, "display-message", "-p", "#{cursor_x} #{cursor_y} #{alternate_on}"],
                              check=True, capture_output=True, text=True, timeout=30).stdout.split()
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, timeout=30)
    cursor = (min(int(info[0]), cols - 1), int(info[1]))  # tmux reports a pending wrap as one past the edge
    return [line.rstrip() for line in screen], cursor, info[2] == "1"


def _shows(text: str):
    return lambda e: any(text in line for line in e.display)


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("vim") is None, reason="needs tmux and vim")
def test_same_screen_as_tmux_for_vim_less_and_a_colour_ls(text_file: Path, tmp_path: Path) -> None:
    """Real programs' output, replayed into tmux and into the emulator: same text, cursor and screen."""
    sessions = [
        (f"vim -u NONE -N -c 'syntax on' -c 'set number' {text_file}", [
            (b"50G", lambda e: "page line 049" in e.display[e.cursor_y]),
            (b"ohello \xe4\xb8\xad\xe6\x96\x87", _shows("hello 中文")),
            (b"\x1b:split\r", lambda e: sum(text_file.name in line for line in e.display) >= 2),
        ]),
        (f"less -N {text_file}", [
            (b" ", _shows("page line 027")),
            (b"G", _shows("(END)")),
        ]),
        ("ls --color=always -la /usr/bin | head -40; printf '\\e[1;4;38;5;208mdone\\e[0m\\n'", [
            (b"", _shows("done")),
        ]),
    ]
    for command, steps in sessions:
        program = PtyProgram(["bash", "--norc", "--noprofile", "-c", f"{command}; sleep 60"], cols=90, rows=28)
        try:
            if steps[0][0]:
                assert program.pump_until(lambda e: e.alternate_screen_active and e.display[0].strip()), command
            for keys, shown in steps:
                if keys:
                    program.send(keys)
                assert program.pump_until(shown), (command, keys)
            data = bytes(program.output)
        finally:
            program.close()
        theirs, cursor, alternate = tmux_screen(data, 90, 28, tmp_path)
        ours = TerminalEmulator(90, 28)
        ours.feed(data)
        assert ours.display == theirs, command
        assert ours.cursor == cursor, command
        assert ours.alternate_screen_active == alternate, command
