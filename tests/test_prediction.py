"""The predicted-echo engine on a real terminal core (both cores), with a hand-driven clock: no service.

A "remote side" here is the test feeding what a shell would echo; `stdin` calls coming back are `acked`."""

from __future__ import annotations

import pytest
from terminal_cores import CORE_PARAMS, use_core

from bbrowse.tui.terminal.cells import UNDERLINE
from bbrowse.tui.terminal.core import TerminalCore
from bbrowse.tui.terminal.prediction import ECHO_GRACE, EXPIRY_SECONDS, Predictor, overlay_runs


@pytest.fixture(autouse=True, params=CORE_PARAMS)
def core_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_core(request, monkeypatch)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


class Pane:
    """A core, its predictor, and the bookkeeping the widget does around them."""

    def __init__(self, mode: str = "auto", rtt: float = 0.1) -> None:
        self.clock = Clock()
        self.core = TerminalCore(40, 6)
        self.core.feed(b"$ ")
        self.predictor = Predictor(self.core, mode, clock=self.clock)  # type: ignore[arg-type]
        self.predictor.rtt_sample(rtt)
        self.in_flight: list[int] = []

    def type(self, data: bytes) -> None:
        self.predictor.key(data)
        self.predictor.sent(len(data))
        self.in_flight.append(len(data))

    def ack(self) -> None:
        """The oldest `stdin` call in flight came back."""
        self.predictor.acked(self.in_flight.pop(0))

    def ack_all(self) -> None:
        while self.in_flight:
            self.ack()

    def output(self, data: bytes) -> None:
        self.core.feed(data)
        self.predictor.cull()

    def drawn(self, row: int = 0) -> str:
        """Row `row` as the pane draws it: the screen with the guesses shown over it."""
        line = self.core.line_text(row).ljust(self.core.cols)
        for col, (char, _underlined) in self.predictor.overlay(row).items():
            line = line[:col] + char + line[col + 1:]
        return line.rstrip()


def test_an_epoch_is_drawn_once_the_echo_confirmed_one_of_its_guesses_then_each_key_at_once() -> None:
    pane = Pane()
    pane.type(b"l")
    assert pane.drawn() == "$", "the first key of an epoch waits for the program to echo"
    pane.clock.tick(0.1)
    pane.output(b"l")
    pane.type(b"s")
    assert pane.drawn() == "$ ls", "confirmed: the next key is drawn before its echo"
    assert pane.predictor.cursor() == (4, 0)
    pane.type(b" ")
    pane.type(b"-")
    assert pane.drawn() == "$ ls -"
    pane.output(b"s -")
    assert pane.drawn() == "$ ls -"
    # echoed: the screen itself shows it (a blank typed on a blank proves nothing: it waits for its ack)
    assert set(pane.predictor.overlay(0).values()) <= {(" ", True)}
    assert pane.predictor.stats.wrong == 0


def test_guesses_are_underlined_above_80_ms_and_not_drawn_below_30_ms_in_auto() -> None:
    slow = Pane(rtt=0.1)
    slow.type(b"a")
    slow.output(b"a")
    slow.type(b"b")
    assert slow.predictor.overlay(0) == {3: ("b", True)}
    medium = Pane(rtt=0.05)
    medium.type(b"a")
    medium.output(b"a")
    medium.type(b"b")
    assert medium.predictor.overlay(0) == {3: ("b", False)}
    fast = Pane(rtt=0.005)
    fast.type(b"a")
    fast.output(b"a")
    fast.type(b"b")
    assert fast.predictor.overlay(0) == {}, "a fast link: the echo comes within a frame anyway"
    always = Pane(mode="always", rtt=0.005)
    always.type(b"a")
    always.output(b"a")
    always.type(b"b")
    assert always.predictor.overlay(0) == {3: ("b", False)}
    never = Pane(mode="never", rtt=0.3)
    never.type(b"a")
    never.output(b"a")
    never.type(b"b")
    assert never.predictor.overlay(0) == {} and never.predictor.stats.guessed == 0


def test_a_wrong_guess_is_taken_back_as_soon_as_the_output_contradicts_it() -> None:
    pane = Pane()
    pane.type(b"e")
    pane.output(b"e")
    pane.type(b"c")
    assert pane.drawn() == "$ ec"
    pane.clock.tick(0.1)
    pane.output(b"X")  # the program drew something else there
    assert pane.drawn() == "$ eX"
    assert pane.predictor.stats.wrong_shown == 1
    assert pane.predictor.stats.taken_back == [pytest.approx(0.1)]
    pane.type(b"z")
    assert pane.drawn() == "$ eX", "after a misprediction the next epoch waits for an echo again"


def test_a_guess_never_echoed_is_taken_back_by_the_first_output_past_its_grace_or_a_second_after() -> None:
    pane = Pane()
    pane.type(b"a")
    pane.output(b"a")  # echoed before its call came back: echoes here are not late
    pane.ack()
    pane.type(b"b")
    assert pane.drawn() == "$ ab"
    pane.clock.tick(0.1)
    pane.ack()  # the program got "b" and did not echo it
    pane.predictor.cull(output=False)
    assert pane.drawn() == "$ ab", "its echo may still be on the other connection"
    pane.clock.tick(max(ECHO_GRACE, 0.1 / 2))
    pane.predictor.cull(output=False)
    assert pane.drawn() == "$ ab", "past the grace, a late echo would be the next output"
    pane.output(b"\x07")  # the next output (a bell) does not show it
    assert pane.drawn() == "$ a"
    assert pane.predictor.stats.wrong_shown == 1

    quiet = Pane()
    quiet.type(b"a")
    quiet.output(b"a")
    quiet.ack()
    quiet.type(b"b")
    assert quiet.drawn() == "$ ab"
    quiet.ack()  # and no output ever comes
    deadline = quiet.predictor.next_deadline()
    assert deadline == pytest.approx(quiet.clock.now + EXPIRY_SECONDS)
    quiet.clock.now = deadline
    quiet.predictor.cull(output=False)
    assert quiet.drawn() == "$ a"


def test_a_guess_is_wrong_as_soon_as_a_key_typed_after_it_is_echoed() -> None:
    """The program echoes in order: the echo of a later key proves an earlier one was not echoed as guessed,
    before any grace (a misprediction gone within one round trip of its key)."""
    pane = Pane()
    pane.type(b"a")
    pane.output(b"a")
    pane.type(b"b")  # the program will not echo this one (a key it ignores)
    pane.type(b"c")
    assert pane.drawn() == "$ abc"
    pane.clock.tick(0.1)
    pane.output(b"\x1b[1Cc")  # "c" echoed where it was guessed, "b"'s cell untouched: no ack came yet
    assert pane.drawn() == "$ a c"
    assert pane.predictor.stats.wrong_shown == 1
    assert pane.predictor.stats.taken_back == [pytest.approx(0.1)]


def test_echoes_measured_late_lengthen_the_grace_so_a_correct_guess_does_not_flicker() -> None:
    """On a loaded link echoes come 120-200 ms after their `stdin` call came back: the grace follows them
    (mean + 4 deviations), so a correct guess whose echo is as late stays drawn until it comes. (Half the
    round trip, 50 ms, took each back: drawn, gone, drawn again.)"""
    pane = Pane(rtt=0.1)
    pane.type(b"a")
    pane.ack()
    pane.clock.tick(0.15)
    pane.output(b"a")  # the first echo, 150 ms after its call came back (its epoch was not drawn yet)
    for lag, char in zip((0.12, 0.2, 0.15, 0.18, 0.13, 0.2), b"bcdefg", strict=True):
        pane.type(bytes([char]))
        pane.ack()
        pane.clock.tick(lag)
        pane.predictor.cull()
        assert chr(char) in pane.drawn(), f"{chr(char)!r} taken back {lag * 1000:.0f} ms after its ack"
        pane.output(bytes([char]))
    assert pane.drawn() == "$ abcdefg"
    assert pane.predictor.stats.wrong == 0
    pane.type(b"h")  # not echoed: still taken back, by the first output past the grace
    assert pane.drawn() == "$ abcdefgh"
    pane.ack()
    pane.clock.tick(0.15)
    pane.output(b"\x07")
    assert pane.drawn() == "$ abcdefgh", "within the grace learned (at least 0.2 s)"
    pane.clock.tick(0.5)
    pane.output(b"\x07")
    assert pane.drawn() == "$ abcdefg" and pane.predictor.stats.wrong_shown == 1


def test_an_echo_that_came_after_its_guess_expired_is_measured_so_the_next_one_waits_for_it() -> None:
    """Echoes within the grace are not all there is: one that came after its guess was taken back is a late
    echo too, measured, so the grace grows past it (else it never could)."""
    pane = Pane(rtt=0.1)
    pane.type(b"a")
    pane.output(b"a")
    pane.ack()
    pane.type(b"b")
    assert pane.drawn() == "$ ab"
    pane.ack()
    pane.clock.tick(0.3)  # past the grace (50 ms): taken back...
    pane.predictor.cull()
    assert pane.drawn() == "$ a" and pane.predictor.stats.wrong_shown == 1
    pane.output(b"b")  # ... and then its echo came
    pane.type(b"c")
    pane.output(b"c")  # a new epoch, confirmed
    pane.ack()
    pane.type(b"d")
    assert pane.drawn() == "$ abcd"
    pane.ack()
    pane.clock.tick(0.25)
    pane.predictor.cull()
    assert pane.drawn() == "$ abcd", "the grace learned from the late echo of b"
    pane.output(b"d")
    assert pane.predictor.stats.wrong_shown == 1


def test_a_password_typed_after_enter_is_never_drawn_at_any_moment() -> None:
    """`read -s`: echo off. Nothing typed after Enter is drawn, whatever the program writes, and typing on
    the next prompt (echo back on) is predicted again."""
    pane = Pane()
    for char in b"read -s":
        pane.type(bytes([char]))
        pane.output(bytes([char]))
    pane.type(b"\r")
    drawn: set[str] = set()
    for index, char in enumerate(b"hunter2"):
        pane.type(bytes([char]))
        drawn.add(pane.drawn(0) + "|" + pane.drawn(1))
        if index == 1:
            pane.output(b"\r\n")  # the newline of Enter arrives while the password is typed
        pane.clock.tick(0.05)
        pane.ack_all()
        pane.predictor.cull()
        pane.clock.tick(0.05)
        pane.predictor.cull()
        drawn.add(pane.drawn(0) + "|" + pane.drawn(1))
    pane.type(b"\r")
    pane.ack_all()
    pane.output(b"\r\n$ ")
    assert not any(secret in text for text in drawn for secret in "hunter2"[:2] if text.count(secret) > 1)
    assert all("h" not in text.split("|")[1] and "u" not in text for text in drawn), drawn
    assert pane.predictor.stats.wrong_shown == 0
    pane.clock.tick(0.1)
    pane.predictor.cull()
    pane.type(b"x")
    pane.output(b"x")
    pane.type(b"y")
    assert pane.drawn(2) == "$ xy", "echo on again: predicted again"


def test_keys_typed_before_the_prompt_came_back_are_found_in_its_echo() -> None:
    pane = Pane()
    pane.type(b"a")
    pane.output(b"a")
    pane.type(b"\r")
    for char in b"ech":
        pane.type(bytes([char]))
    pane.output(b"\r\n$ e")  # the new prompt and the first blind key's echo
    assert pane.drawn(1) == "$ e"
    pane.output(b"c")  # the next one confirms the (new) epoch: "h", still in flight, is drawn
    assert pane.drawn(1) == "$ ech"
    pane.type(b"o")
    assert pane.drawn(1) == "$ echo"


def test_typing_inside_a_line_moves_the_rest_right_and_backspace_takes_a_character_back() -> None:
    pane = Pane()
    pane.output(b"ab")
    pane.type(b"x")
    pane.output(b"x")  # confirmed at the end of the line
    pane.output(b"\x1b[2D")  # the program moved the cursor left (as after an arrow)
    pane.clock.tick(1)
    pane.predictor.cull()
    assert pane.core.cursor == (3, 0)
    pane.type(b"Y")  # inside "abx": a new epoch for the cursor being known again is not needed
    pane.output(b"Ybx\x1b[2D")  # readline's echo: the character, the rest, back
    pane.type(b"Z")
    assert pane.drawn() == "$ aYZbx"
    pane.output(b"Zbx\x1b[2D")
    pane.type(b"\x7f")
    assert pane.drawn() == "$ aYbx"
    assert pane.predictor.cursor() == (4, 0)
    pane.output(b"\x08bx \x1b[3D")
    assert pane.drawn() == "$ aYbx" and not pane.predictor.overlay(0)
    assert pane.predictor.stats.wrong == 0


def test_full_screen_programs_get_the_same_rule_and_switching_screens_starts_over() -> None:
    pane = Pane()
    pane.type(b"v")
    pane.output(b"v")
    pane.type(b"i")
    assert pane.drawn() == "$ vi"
    pane.output(b"\x1b[?1049h\x1b[H\x1b[2J~\r\n~")  # vim starts; the guess goes
    assert pane.drawn() == "~"
    pane.output(b"\x1b[1;1H")
    pane.type(b"j")  # normal mode: j moves, nothing is echoed
    pane.clock.tick(0.1)
    pane.output(b"\x1b[2;1H")
    assert pane.drawn() == "~"
    pane.ack_all()
    pane.clock.tick(0.1)
    pane.predictor.cull()
    assert pane.drawn() == "~" and pane.drawn(1) == "~"
    assert pane.predictor.stats.wrong_shown == 0


def test_overlay_runs_draws_over_styled_runs_and_wide_characters() -> None:
    red = (1, -1, 0)
    plain = (-1, -1, 0)
    runs = [("$ ", red), ("中x", plain), ("   ", plain)]  # 8 columns
    assert overlay_runs(runs, {5: ("a", False)}) == [("$ ", red), ("中xa  ", plain)]
    assert overlay_runs(runs, {3: ("b", True)}) == [("$ ", red), (" ", plain), ("b", (-1, -1, UNDERLINE)),
                                                    ("x   ", plain)]
    assert overlay_runs(runs, {}) is runs
