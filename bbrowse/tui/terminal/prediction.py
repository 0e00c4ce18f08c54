"""Predicted echo for the shell pane, mosh's way (Winstein & Balakrishnan, USENIX ATC 2012).

Each key typed is guessed on the pane's terminal state and drawn before the program echoes it, but only
once the program has echoed a guess since the last Enter, arrow or control key: a `read -s`, `sudo` or
`passwd` prompt (echo off) never confirms one, so its keys are never drawn (VS Code's typeahead,
microsoft/vscode #110109 and #128530, drew guesses in vim and during `sudo`). A wrong guess is taken back
at once. Guesses are drawn on a slow link only (`mode` auto), underlined on a slower one.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rich.cells import cell_len

from .cells import UNDERLINE, Attr, Run

if TYPE_CHECKING:
    from .core import TerminalCore

Mode = Literal["auto", "always", "never"]
MODES: tuple[Mode, ...] = ("auto", "always", "never")

#: Guesses are drawn while the smoothed round trip of `stdin` calls is above the high mark, until it falls
#: below the low one; underlined above FLAG_TRIGGER_HIGH (down to LOW): mosh's thresholds.
SRTT_TRIGGER_LOW = 0.020
SRTT_TRIGGER_HIGH = 0.030
FLAG_TRIGGER_LOW = 0.050
FLAG_TRIGGER_HIGH = 0.080
#: A guess unconfirmed this long is a glitch: guesses are drawn even on a fast link (mosh).
GLITCH_THRESHOLD = 0.250
GLITCH_REPAIR_COUNT = 10
GLITCH_REPAIR_MININTERVAL = 0.150
#: After a key's `stdin` call came back, how long its echo may still take at least (it travels on another
#: connection); more when echoes were measured coming later.
ECHO_GRACE = 0.030

#: A guess past its grace is judged by the next output; with no output at all, this long after its ack.
EXPIRY_SECONDS = 1.0
#: Guesses expired are watched this long for a late echo, the last this many.
EXPIRED_SECONDS = 2.0
EXPIRED_KEPT = 8

BACKSPACES = (b"\x7f", b"\x08")


@dataclass(slots=True)
class Cell:
    """One guessed cell: `char` at (`col`, `row`); `originals`: what the cell may show before the echo."""

    col: int
    row: int
    char: str
    originals: set[str]
    credit: bool  # its echo confirms the epoch (a blank, or a char already there, proves nothing)
    done: bool = False


@dataclass(slots=True)
class Guess:
    """What one key is guessed to do: cells, and where the cursor ends up."""

    epoch: int
    offset: int  # bytes sent to the program up to and including this key's
    made: float
    cursor: tuple[int, int]
    typed: str | None  # the character typed (None: a backspace)
    cells: list[Cell] = field(default_factory=list)
    acked_at: float | None = None
    shown_at: float | None = None  # when it was first drawn


@dataclass(slots=True)
class Stats:
    """What the engine did (for the bench and tests): keys guessed, guesses shown, confirmed, taken back."""

    guessed: int = 0
    confirmed: int = 0
    wrong: int = 0  # guesses that turned out wrong
    wrong_shown: int = 0  # of those, ones that had been drawn (a misprediction the user saw)
    taken_back: list[float] = field(default_factory=list)  # seconds from a drawn wrong guess's key to its removal
    #: Each drawn wrong guess: what was guessed, what the cell showed, and whether it was only its expiry.
    wrong_cases: list[str] = field(default_factory=list)


class Predictor:
    """The prediction engine of one terminal pane, on its terminal state (whichever core).

    A printable key is drawn at the cursor (the rest of the line shifted right when typed inside it),
    backspace takes one back. A guess belongs to an *epoch*; it is drawn only once the remote side has
    echoed one guess of its epoch exactly (the cell turned from what it was into the guessed character
    after the guess was made). Enter, arrows, control keys and anything else not guessed start a new
    epoch, so nothing is drawn until the program shows it echoes; full-screen programs get the same rule
    (and switching screens starts over). `mode`: auto, always (whatever the round trip) or never.
    """

    def __init__(self, core: TerminalCore, mode: Mode = "auto", clock: Callable[[], float] = time.monotonic) -> None:
        self.core = core
        self._mode: Mode = mode
        self.clock = clock
        self.srtt: float | None = None
        self.stats = Stats()
        self._srtt_trigger = False
        self._flagging = False
        self._glitch = 0
        self._last_quick = 0.0
        self._epoch = 1
        self._confirmed = 0
        self._guesses: list[Guess] = []
        self._sent = 0
        self._acked = 0
        self._last_ack = 0.0
        #: How late echoes come after their `stdin` call came back: smoothed, and its mean deviation.
        self._echo_lag: float | None = None
        self._echo_lag_var = 0.0
        #: Bytes sent up to the newest key whose guess was confirmed by its echo: keys before it were echoed.
        self._echoed = 0
        #: Guesses expired lately (cells unchanged after the grace): one echoed after all was a late echo,
        #: measured too (else only echoes within the grace would be, and the grace would never grow).
        self._expired: list[Guess] = []
        #: When output was last fed.
        self._output_at = 0.0
        #: The cursor is not known after an unguessed key: the printable keys typed since, matched
        #: against the echo left of the cursor to find it again.
        self._blind: list[str] = []
        self._unknown = False
        self._alternate = bool(core.alternate_screen_active)
        self._dirty: set[int] = set()
        self._rows: dict[int, list[str]] = {}  # screen rows read since the last output

    # ------------------------------------------------------------------ settings and measures

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"prediction mode {mode!r} is not one of {', '.join(MODES)}")
        self._mode = mode
        if mode == "never":
            self.reset()
        self._mark_all()

    def rtt_sample(self, seconds: float) -> None:
        """A round trip measured (a `stdin` call): smoothed as TCP does (RFC 6298, 1/8)."""
        self.srtt = seconds if self.srtt is None else self.srtt + (seconds - self.srtt) / 8
        shown, flagged = self.showing, self._flagging
        if self.srtt > SRTT_TRIGGER_HIGH:
            self._srtt_trigger = True
        elif self._srtt_trigger and self.srtt <= SRTT_TRIGGER_LOW and not self._guesses:
            self._srtt_trigger = False
        if self.srtt > FLAG_TRIGGER_HIGH:
            self._flagging = True
        elif self.srtt <= FLAG_TRIGGER_LOW:
            self._flagging = False
        if (shown, flagged) != (self.showing, self._flagging):
            self._mark_all()

    @property
    def showing(self) -> bool:
        """Confirmed guesses are drawn now (the mode, the round trip, a recent glitch)."""
        if self._mode == "never":
            return False
        return self._mode == "always" or self._srtt_trigger or self._glitch > 0

    @property
    def flagging(self) -> bool:
        """Drawn guesses are underlined (a slow link, or a long glitch)."""
        return self._flagging or self._glitch > GLITCH_REPAIR_COUNT

    @property
    def active(self) -> bool:
        return bool(self._guesses)

    @property
    def confirmed(self) -> bool:
        """The program echoed a guess of the current epoch: the next key is drawn at once (when showing)."""
        return self._epoch <= self._confirmed and not self._unknown

    # ------------------------------------------------------------------ input

    def sent(self, size: int) -> None:
        """`size` bytes were handed to the program's stdin (keys, pastes, replies: all of them, in order)."""
        self._sent += size

    def acked(self, size: int, now: float | None = None) -> None:
        """A `stdin` call of `size` bytes came back: those bytes reached the program."""
        now = self.clock() if now is None else now
        self._acked = min(self._sent, self._acked + size)
        self._last_ack = now
        for guess in self._guesses:
            if guess.acked_at is None and guess.offset <= self._acked:
                guess.acked_at = now

    def key(self, data: bytes, now: float | None = None) -> None:
        """A key about to be sent as `data` (call before `sent`): guess what it does."""
        if self._mode == "never":
            return
        now = self.clock() if now is None else now
        core = self.core
        offset = self._sent + len(data)
        text = _printable(data)
        if text is None and data not in BACKSPACES:
            self._become_unknown()
            return
        if core.alternate_screen_active != self._alternate:
            self._screen_switched()
        if not core.cursor_visible or core.scroll_offset:
            self._become_unknown(text)
            return
        base = self._base(now)
        if base is None:
            if text is not None:
                self._blind.append(text)
            else:
                self._blind = []
            return
        if text is not None:
            self._guess_char(text, base, offset, now)
        else:
            self._guess_backspace(base, offset, now)

    def _guess_char(self, char: str, base: tuple[int, int], offset: int, now: float) -> None:
        col, row = base
        cols = self.core.cols
        shown = self._line(row, col)
        end = _end(shown, col)
        # The last column wraps, the shifted line would reach the margin, a wide character would move: not guessed.
        if end >= cols - 1 or any(len(char) != 1 or cell_len(char) != 1 for char in shown[col:end]):
            self._become_unknown(char)
            return
        guess = Guess(self._epoch, offset, now, (col + 1, row), char)
        guess.cells.append(self._cell(col, row, char))
        for x in range(col + 1, end + 1):  # typed inside the line: the rest moves right
            guess.cells.append(self._cell(x, row, shown[x - 1]))
        self._add(guess)

    def _guess_backspace(self, base: tuple[int, int], offset: int, now: float) -> None:
        col, row = base
        cols = self.core.cols
        shown = self._line(row, col - 1)
        end = _end(shown, col)
        if col == 0 or end >= cols or any(len(char) != 1 or cell_len(char) != 1 for char in shown[col - 1:end]):
            self._become_unknown()
            return
        guess = Guess(self._epoch, offset, now, (col - 1, row), None)
        for x in range(col - 1, end):  # the rest moves left
            guess.cells.append(self._cell(x, row, shown[x + 1] if x + 1 < end else " "))
        self._add(guess)

    def _cell(self, col: int, row: int, char: str) -> Cell:
        """A guess for a cell: what it may show before (its text now and every pending guess for it)."""
        originals = {self._real(col, row)}
        for guess in self._guesses:
            for cell in guess.cells:
                if not cell.done and cell.col == col and cell.row == row:
                    originals.add(cell.char)
        credit = bool(char.strip()) and char not in originals
        return Cell(col, row, char, originals, credit)

    def _add(self, guess: Guess) -> None:
        self.stats.guessed += 1
        if guess.offset <= self._acked:
            guess.acked_at = guess.made
        self._guesses.append(guess)
        if guess.epoch <= self._confirmed:
            self._dirty.update(cell.row for cell in guess.cells)

    def _base(self, now: float) -> tuple[int, int] | None:
        """Where the next key lands: after the last pending guess, else the cursor once it is known."""
        if self._unknown:
            if self._guesses:
                return None
            self._resync(now)
            if self._unknown:
                return None
        if self._guesses:
            return self._guesses[-1].cursor
        cursor = self.core.cursor
        return (cursor[0], cursor[1])

    def _become_unknown(self, typed: str | None = None) -> None:
        """An unguessed key: a new epoch, and the cursor is unknown until the output says where it is.
        `typed`: the key was a printable character, to be found in the echo with those typed after it."""
        self._epoch += 1
        if not self._unknown or typed is None:
            self._blind = []
        if typed is not None:
            self._blind.append(typed)
        self._unknown = True

    def _grace(self) -> float:
        """How long after a `stdin` call came back its echo may still arrive (it travels on another
        connection): the echoes' measured lag + 4 deviations (RFC 6298's RTO), at least half the round trip
        and `ECHO_GRACE`. Too short, and a correct guess is taken back for a late echo: a flicker."""
        floor = max(ECHO_GRACE, (self.srtt or 0) / 2)
        if self._echo_lag is None:
            return floor
        return max(floor, self._echo_lag + 4 * self._echo_lag_var)

    def _echo_lag_sample(self, lag: float) -> None:
        lag = max(0.0, lag)
        if self._echo_lag is None:
            self._echo_lag, self._echo_lag_var = lag, lag / 2
            return
        self._echo_lag_var += (abs(lag - self._echo_lag) - self._echo_lag_var) / 4
        self._echo_lag += (lag - self._echo_lag) / 8

    def _settled(self, now: float) -> bool:
        """Every byte sent reached the program and its echo had time to arrive."""
        return self._acked >= self._sent and now >= self._last_ack + self._grace()

    def _resync(self, now: float) -> None:
        """Find the cursor again: the keys typed blind were echoed left of it (the rest are guessed from
        there, in the current, unconfirmed epoch), or everything settled."""
        blind = self._blind
        col, row = self.core.cursor
        if blind:
            line = "".join(self._real(x, row) for x in range(max(0, col - len(blind)), col))
            for echoed in range(len(blind), 0, -1):
                if line.endswith("".join(blind[:echoed])):
                    self._unknown = False
                    self._blind = []
                    for char in blind[echoed:]:  # still in flight: acked with the last bytes sent
                        base = self._guesses[-1].cursor if self._guesses else (col, row)
                        self._guess_char(char, base, self._sent, now)
                        if self._unknown:
                            break
                    return
        if self._settled(now):
            self._unknown = False
            self._blind = []

    # ------------------------------------------------------------------ output

    def cull(self, now: float | None = None, output: bool = True) -> None:
        """Judge the guesses against the terminal state: after output was fed, or (`output` False: the
        screen is as when last judged) after a key, an ack or at a deadline.

        The cell shows the guess: confirmed, the epoch is shown. It shows something else: wrong, taken back
        at once (everything, if it was shown). It is unchanged while the echo of a key typed after it was
        seen (the program echoes in order), or in the first output after the key's `stdin` call came back
        and its grace passed (`_grace`; with no output at all, `EXPIRY_SECONDS` after): wrong too."""
        if output:
            self._rows.clear()
            self._output_at = self.clock() if now is None else now
            if self._expired:
                self._late_echoes(self._output_at)
        if not self._guesses:
            if self._unknown and self._mode != "never":
                self._resync(self.clock() if now is None else now)
            return
        now = self.clock() if now is None else now
        if self.core.alternate_screen_active != self._alternate:
            self._screen_switched()
            return
        rows: dict[int, list[str]] = {}
        grace = self._grace()
        for guess in self._guesses:  # the newest key echoed as guessed: every key before it was echoed too
            if guess.offset > self._echoed:
                for cell in guess.cells:
                    if cell.credit and not cell.done:
                        if cell.row not in rows:
                            rows[cell.row] = self._row(cell.row)
                        if rows[cell.row][cell.col] == cell.char:
                            self._echoed = guess.offset
        for guess in list(self._guesses):
            if guess not in self._guesses:  # removed by a reset while judging
                continue
            expired = guess.offset < self._echoed
            if guess.acked_at is not None and now >= guess.acked_at + grace:
                # past the grace: judged by the next output (a late echo comes as the next output), or at the
                # latest `EXPIRY_SECONDS` after its ack when none comes
                expired = expired or self._output_at >= guess.acked_at + grace \
                    or now >= guess.acked_at + max(grace, EXPIRY_SECONDS)
            for cell in guess.cells:
                if cell.done:
                    continue
                if cell.row not in rows:
                    rows[cell.row] = self._row(cell.row)
                current = rows[cell.row][cell.col]
                if current == cell.char and (cell.credit or expired or cell.char not in cell.originals):
                    cell.done = True
                    self._dirty.add(cell.row)
                    if cell.credit:
                        self._confirm(guess, now)
                elif current != cell.char and (current not in cell.originals or expired):
                    if current in cell.originals and guess.acked_at is not None:
                        self._expired = [*self._expired[-(EXPIRED_KEPT - 1):], guess]
                    self._wrong(guess, now, f"{cell.char!r} at column {cell.col}: the cell shows {current!r}"
                                            f"{' (expired)' if current in cell.originals else ''}")
                    break
            else:
                if all(cell.done for cell in guess.cells) and guess in self._guesses:
                    self._guesses.remove(guess)
                elif not expired and now - guess.made >= GLITCH_THRESHOLD and self._glitch < GLITCH_REPAIR_COUNT:
                    self._glitch = GLITCH_REPAIR_COUNT
                    self._mark_all()
        if not self._guesses and self._unknown:
            self._resync(now)

    def _late_echoes(self, now: float) -> None:
        """Expired guesses the output now shows after all: their echo's lag is measured (and they are let go,
        as are those older than `EXPIRED_SECONDS`)."""
        kept = []
        for guess in self._expired:
            assert guess.acked_at is not None  # only acked guesses expire
            if now - guess.acked_at > EXPIRED_SECONDS:
                continue
            if any(cell.credit and self._real(cell.col, cell.row) == cell.char for cell in guess.cells):
                self._echo_lag_sample(now - guess.acked_at)
                continue
            kept.append(guess)
        self._expired = kept

    def _confirm(self, guess: Guess, now: float) -> None:
        self.stats.confirmed += 1
        self._echo_lag_sample(now - guess.acked_at if guess.acked_at is not None else 0.0)  # 0: before its ack
        if guess.epoch > self._confirmed:
            self._confirmed = guess.epoch
            self._mark_all()
        if now - guess.made < GLITCH_THRESHOLD and self._glitch and now - self._last_quick >= GLITCH_REPAIR_MININTERVAL:
            self._glitch -= 1
            self._last_quick = now
            if not self._glitch:
                self._mark_all()

    def _wrong(self, guess: Guess, now: float, why: str) -> None:
        """A guess the output contradicts: its epoch goes (everything, if it was drawn)."""
        self.stats.wrong += 1
        if guess.shown_at is not None:
            self.stats.wrong_shown += 1
            self.stats.taken_back.append(now - guess.made)
            self.stats.wrong_cases.append(why)
            self.reset()
            return
        self._mark_all()
        killed = [other for other in self._guesses if other.epoch >= guess.epoch]
        self._guesses = [other for other in self._guesses if other.epoch < guess.epoch]
        self._become_unknown()
        for other in killed:  # their keys' echo may still come: found again from it
            if other.typed is None:
                self._blind = []
            else:
                self._blind.append(other.typed)

    def _screen_switched(self) -> None:
        self._alternate = bool(self.core.alternate_screen_active)
        self.reset()

    def reset(self) -> None:
        """Forget every guess; the next ones start a new, unconfirmed epoch once the cursor is known."""
        self._mark_all()
        self._guesses.clear()
        self._rows.clear()
        self._become_unknown()
        self._alternate = bool(self.core.alternate_screen_active)

    def forget_input(self) -> None:
        """Queued input was dropped (a new program): nothing more will be acked of it."""
        self._acked = self._sent
        self.reset()

    def next_deadline(self) -> float | None:
        """When `cull` has something to decide without new output (an expiry, a glitch, a resync)."""
        times = []
        grace = self._grace()
        for guess in self._guesses:
            if guess.acked_at is not None:
                times.append(guess.acked_at + max(grace, EXPIRY_SECONDS))
            elif self._glitch < GLITCH_REPAIR_COUNT:
                times.append(guess.made + GLITCH_THRESHOLD)
        if self._unknown and self._acked >= self._sent:
            times.append(self._last_ack + grace)
        return min(times) if times else None

    # ------------------------------------------------------------------ drawing

    def _real(self, col: int, row: int) -> str:
        if col >= self.core.cols:
            return ""
        return self._row(row)[col]

    def _row(self, row: int) -> list[str]:
        """The cells of screen row `row` ("" for the right half of a wide character). From the row's text
        in one call when it is ASCII (a cell at a time costs microseconds on libghostty)."""
        cells = self._rows.get(row)
        if cells is not None and len(cells) == self.core.cols:
            return cells
        core = self.core
        cols = core.cols
        if row >= core.rows:
            return [""] * cols
        text = core.line_text(row)
        if text.isascii():
            cells = list(text[:cols].ljust(cols))
        else:
            cells = [core.cell(x, row)[0] or "" for x in range(cols)]
        self._rows[row] = cells
        return cells

    def _line(self, row: int, start: int) -> list[str]:
        """Row `row` as the next key will find it, from column `start` on (earlier columns: ""): each
        cell's newest pending guess, else the screen ("" for the right half of a wide character)."""
        cols = self.core.cols
        line = [""] * max(0, start) + self._row(row)[max(0, start):]
        for guess in self._guesses:
            for cell in guess.cells:
                if not cell.done and cell.row == row and start <= cell.col < cols:
                    line[cell.col] = cell.char
        return line

    def _visible(self) -> list[Guess]:
        if not self.showing:
            return []
        return [guess for guess in self._guesses if guess.epoch <= self._confirmed]

    def overlay(self, row: int) -> dict[int, tuple[str, bool]]:
        """The guesses drawn on `row`: column -> (character, underlined)."""
        cells: dict[int, tuple[str, bool]] = {}
        visible = self._visible()
        if not visible:
            return cells
        flagged = self.flagging
        now = self.clock()
        for guess in visible:
            if guess.shown_at is None:
                guess.shown_at = now
            for cell in guess.cells:
                if not cell.done and cell.row == row:
                    cells[cell.col] = (cell.char, flagged)
        return cells

    def cursor(self) -> tuple[int, int] | None:
        """Where the cursor is drawn when guesses are: after the last drawn guess (None: the real one)."""
        visible = self._visible()
        return visible[-1].cursor if visible else None

    def take_dirty(self) -> set[int]:
        dirty, self._dirty = self._dirty, set()
        return dirty

    def _mark_all(self) -> None:
        for guess in self._guesses:
            self._dirty.update(cell.row for cell in guess.cells)


def _end(line: list[str], col: int) -> int:
    """The column after the last non-blank cell of `line` at or after `col` (`col` when none)."""
    for x in range(len(line) - 1, col - 1, -1):
        if line[x].strip():
            return x + 1
    return col


def _printable(data: bytes) -> str | None:
    """The character `data` types, when it is one printable character one cell wide."""
    if len(data) > 4 or not data or data[0] < 0x20 or data[0] == 0x7F:
        return None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    if len(text) != 1 or not text.isprintable() or unicodedata.combining(text) or cell_len(text) != 1:
        return None
    return text


def overlay_runs(runs: list[Run], cells: dict[int, tuple[str, bool]]) -> list[Run]:
    """`runs` (a row, covering its columns) with `cells` drawn over it: column -> (character, underlined).
    A guessed cell keeps the style of the cell it covers; half a wide character becomes a blank."""
    if not cells:
        return runs
    flat: list[tuple[str, Attr]] = []  # one entry a column; "" for the right half of a wide character
    for text, attr in runs:
        for char in text:
            flat.append((char, attr))
            if not char.isascii() and cell_len(char) == 2:
                flat.append(("", attr))
    for col, (char, underlined) in cells.items():
        if not 0 <= col < len(flat):
            continue
        old, attr = flat[col]
        if old == "" and col > 0:  # the right half of a wide character: its left half goes
            flat[col - 1] = (" ", flat[col - 1][1])
        elif col + 1 < len(flat) and flat[col + 1][0] == "":
            flat[col + 1] = (" ", flat[col + 1][1])
        flat[col] = (char, (attr[0], attr[1], attr[2] | UNDERLINE) if underlined else attr)
    out: list[Run] = []
    for char, attr in flat:
        if char == "":
            continue
        if out and out[-1][1] == attr:
            out[-1] = (out[-1][0] + char, attr)
        else:
            out.append((char, attr))
    return out
