"""The lines of one log pane: a bounded ring, views over it, and the row layout the pane scrolls through.

Plain classes with no Textual in them, so they are tested (and benchmarked) without an app running.
`LogBuffer` keeps the last lines with no object per line, so memory is flat once it is full. Every entry
has a sequence number (`seq`) that never changes as old lines drop off the front, so caches and the cursor
are keyed by seq. `AllLines` and `MatchIndex` are the two views the pane shows (every entry, or those
matching a query, never a copy of the text), in absolute positions that never shift; `RowMap` maps rows
to entries several rows tall (wrapped or pretty-printed lines).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, compress, islice, repeat

from bbrowse.tui.ansi_text import ANSI_ESCAPE

#: Lines kept by default; older ones are dropped (and counted in `LogBuffer.dropped`).
DEFAULT_CAPACITY = 100_000


def strip_ansi(line: str) -> str:
    """`line` without its escape sequences: the text a user sees (and searches)."""
    return ANSI_ESCAPE.sub("", line) if "\x1b" in line else line


def gap_text(seconds: float) -> str:
    """The text of a gap marker inserted when a stream reconnects."""
    return f"── reconnected after {seconds:.0f} s; lines may be missing ──"


class LogBuffer:
    """The last `capacity` lines of a log, each with a timestamp (seconds since the epoch, 0.0 if unknown).

    Lines are plain `str` in a preallocated ring, timestamps one float each in an `array('d')`: about the
    text itself + 16 bytes a line, however many lines go through. A gap marker is an entry like a line
    (its text says what happened) whose seq is remembered in `gaps`; the pane draws it differently and
    search skips it.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._lines: list[str] = []
        self._times = array("d")
        self._origin = 0  # the seq stored in slot 0 of the ring
        #: seq of the oldest entry kept, and the seq the next entry will get.
        self.first_seq = 0
        self.end_seq = 0
        #: Lines dropped off the front because the buffer was full.
        self.dropped = 0
        #: seqs of gap markers still in the buffer.
        self.gaps: set[int] = set()

    def __len__(self) -> int:
        return self.end_seq - self.first_seq

    # adding -------------------------------------------------------------

    def append(self, line: str, timestamp: float = 0.0) -> int:
        """Add one line; its seq."""
        self.append_many([line], [timestamp])
        return self.end_seq - 1

    def append_many(self, lines: Sequence[str], timestamps: Sequence[float] | float = 0.0) -> range:
        """Add lines in one go (a batch costs a couple of slice assignments); the range of their seqs."""
        count = len(lines)
        if not count:
            return range(self.end_seq, self.end_seq)
        if isinstance(timestamps, (int, float)):
            times = array("d", [float(timestamps)]) * count
        else:
            if len(timestamps) != count:
                raise ValueError("one timestamp per line")
            times = timestamps if isinstance(timestamps, array) else array("d", timestamps)
        start_seq = self.end_seq
        cap = self.capacity
        self.end_seq = start_seq + count
        if count > cap:  # only the last `cap` of this batch can stay
            lines, times = lines[count - cap :], times[count - cap :]
        stored_from = self.end_seq - len(lines)  # seq of lines[0]
        filled = len(self._lines)
        if filled < cap and filled + len(lines) <= cap and stored_from == self._origin + filled:
            self._lines.extend(lines)  # still growing
            self._times.extend(times)
        else:
            if filled < cap:  # wrap from now on: give the ring its full size
                self._lines.extend([""] * (cap - filled))
                self._times.extend(array("d", bytes(8 * (cap - filled))))
            slot = (stored_from - self._origin) % cap
            while lines:
                take = min(len(lines), cap - slot)
                self._lines[slot : slot + take] = lines[:take]
                self._times[slot : slot + take] = times[:take]
                lines, times = lines[take:], times[take:]
                slot = 0
        overflow = self.end_seq - self.first_seq - cap
        if overflow > 0:
            self.first_seq += overflow
            self.dropped += overflow
            if self.gaps:
                self.gaps = {seq for seq in self.gaps if seq >= self.first_seq}
        return range(start_seq, self.end_seq)

    def add_gap(self, seconds: float, timestamp: float = 0.0) -> int:
        """Insert a marker saying the stream was cut for `seconds` and lines may be missing; its seq."""
        seq = self.append(gap_text(seconds), timestamp)
        if seq >= self.first_seq:
            self.gaps.add(seq)
        return seq

    def clear(self) -> None:
        """Forget every line (seqs keep counting, so caches keyed by seq stay valid)."""
        self._lines = []
        self._times = array("d")
        self.first_seq = self._origin = self.end_seq
        self.gaps.clear()

    # reading ------------------------------------------------------------

    def _slot(self, seq: int) -> int:
        if not self.first_seq <= seq < self.end_seq:
            raise IndexError(f"seq {seq} is not in the buffer ({self.first_seq}..{self.end_seq - 1})")
        return (seq - self._origin) % self.capacity

    def line(self, seq: int) -> str:
        return self._lines[self._slot(seq)]

    def timestamp(self, seq: int) -> float:
        return self._times[self._slot(seq)]

    def is_gap(self, seq: int) -> bool:
        return seq in self.gaps

    def __getitem__(self, index: int) -> str:
        """The line at `index` (0 = oldest kept, -1 = newest)."""
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("log buffer index out of range")
        return self.line(self.first_seq + index)

    def iter_lines(self, start_seq: int | None = None, end_seq: int | None = None) -> Iterator[str]:
        """Lines with seqs in [start_seq, end_seq), oldest first, without copying the whole buffer."""
        start = self.first_seq if start_seq is None else max(start_seq, self.first_seq)
        end = self.end_seq if end_seq is None else min(end_seq, self.end_seq)
        if start >= end:
            return iter(())
        a, b = self._slot(start), self._slot(end - 1) + 1
        if a < b:
            return iter(self._lines[a:b])
        return iter(self._lines[a:] + self._lines[:b])

    def __iter__(self) -> Iterator[str]:
        return self.iter_lines()

    def snapshot(self) -> list[str]:
        """All lines, oldest first (a list of references, not of copies: cheap even when full)."""
        return list(self.iter_lines())

    # search -------------------------------------------------------------

    def search(self, query: str, start_seq: int | None = None, *, reverse: bool = False) -> Iterator[int]:
        """seqs of lines containing `query` (case-insensitive, escapes ignored), found lazily from `start_seq`.

        Forward from `start_seq` (default: the oldest line), or backward from it (default: the newest).
        Gap markers never match.
        """
        matches = line_matcher(query)
        if reverse:
            top = self.end_seq - 1 if start_seq is None else min(start_seq, self.end_seq - 1)
            seqs: Iterable[int] = range(top, self.first_seq - 1, -1)
        else:
            seqs = range(self.first_seq if start_seq is None else max(start_seq, self.first_seq), self.end_seq)
        gaps = self.gaps
        for seq in seqs:
            if seq >= self.first_seq and seq not in gaps and matches(self.line(seq)):
                yield seq

    def match_spans(self, seq: int, query: str) -> list[tuple[int, int]]:
        """Where `query` occurs in the visible text of line `seq` (character offsets, case-insensitive)."""
        if not query:
            return []
        pattern = re.compile(re.escape(query), re.IGNORECASE)
        return [m.span() for m in pattern.finditer(strip_ansi(self.line(seq)))]


def line_matcher(query: str) -> Callable[[str], bool]:
    """A fast case-insensitive substring test on the visible text of a line (escape sequences ignored)."""
    needle = query.lower()
    strip = ANSI_ESCAPE.sub

    def matches(line: str) -> bool:
        if "\x1b" in line:
            line = strip("", line)
        return needle in line.lower()

    return matches


class AllLines:
    """Every entry of the buffer; a position is the seq itself."""

    def __init__(self, buffer: LogBuffer) -> None:
        self.buffer = buffer

    @property
    def first_pos(self) -> int:
        return self.buffer.first_seq

    @property
    def end_pos(self) -> int:
        return self.buffer.end_seq

    def __len__(self) -> int:
        return len(self.buffer)

    def seq_at(self, pos: int) -> int:
        return pos

    def pos_at_or_after(self, seq: int) -> int:
        return max(seq, self.first_pos)

    def update(self) -> int:
        """Nothing to catch up on; 0 for symmetry with `MatchIndex.update`."""
        return 0


class MatchIndex:
    """The seqs of the buffer's entries that match `query` (an `array('q')`): a filtered view and the list
    of search hits (`n`/`N` and the match count).

    Kept up to date incrementally: `update()` tests only the entries added since the last call and
    forgets the ones that dropped off the buffer, so following a busy log with a filter costs one
    substring test per new line. `keep_gaps` also lists gap markers (a filtered view shows them;
    search skips them).
    """

    def __init__(self, buffer: LogBuffer, query: str, *, keep_gaps: bool = False) -> None:
        self.buffer = buffer
        self.query = query
        self.keep_gaps = keep_gaps
        self._matches = line_matcher(query)
        self._needle = query.lower()
        self._seqs = array("q")
        self._head = 0  # first live entry of `_seqs`
        self._base = 0  # positions compacted away before `_seqs[0]`
        self._scanned = buffer.first_seq
        self.update()

    @property
    def first_pos(self) -> int:
        return self._base + self._head

    @property
    def end_pos(self) -> int:
        return self._base + len(self._seqs)

    def __len__(self) -> int:
        return len(self._seqs) - self._head

    def __iter__(self) -> Iterator[int]:
        return iter(self._seqs[self._head :])

    def seq_at(self, pos: int) -> int:
        return self._seqs[pos - self._base]

    def pos_at_or_after(self, seq: int) -> int:
        """Position of the first match with a seq >= `seq` (`end_pos` if none)."""
        return self._base + bisect_left(self._seqs, seq, self._head)

    def pos_of(self, seq: int) -> int | None:
        pos = self.pos_at_or_after(seq)
        return pos if pos < self.end_pos and self.seq_at(pos) == seq else None

    def next_after(self, seq: int) -> int | None:
        """The first matching seq after `seq`, or None."""
        index = bisect_right(self._seqs, seq, self._head)
        return self._seqs[index] if index < len(self._seqs) else None

    def prev_before(self, seq: int) -> int | None:
        """The last matching seq before `seq`, or None."""
        index = bisect_left(self._seqs, seq, self._head)
        return self._seqs[index - 1] if index > self._head else None

    def first(self) -> int | None:
        return self._seqs[self._head] if len(self) else None

    def last(self) -> int | None:
        return self._seqs[-1] if len(self) else None

    def update(self) -> int:
        """Catch up with the buffer; how many matches were added."""
        buffer = self.buffer
        first = buffer.first_seq
        if self._head < len(self._seqs) and self._seqs[self._head] < first:
            self._head = bisect_left(self._seqs, first, self._head)
        if self._head > 4096 and self._head * 2 > len(self._seqs):
            self._base += self._head
            del self._seqs[: self._head]
            self._head = 0
        start = max(self._scanned, first)
        end = buffer.end_seq
        self._scanned = end
        if start >= end:
            return 0
        before = len(self._seqs)
        self._seqs.extend(self._scan(start, end))
        return len(self._seqs) - before

    def _scan(self, start: int, end: int) -> list[int]:
        """Matching seqs in [start, end), in order.

        The common case runs at C speed (`compress` over `map`s of `str.lower` and `in`, no Python
        frame per line); only lines with escape sequences, which can hide or fake a match, are
        looked at one by one.
        """
        buffer = self.buffer
        lines = list(buffer.iter_lines(start, end))
        seqs = range(start, end)
        found = list(compress(seqs, map(str.__contains__, map(str.lower, lines), repeat(self._needle))))
        escaped = list(compress(seqs, map(str.__contains__, lines, repeat("\x1b"))))
        if escaped:
            hidden = set(escaped)
            found = [seq for seq in found if seq not in hidden]
            found.extend(seq for seq in escaped if self._matches(lines[seq - start]))
            found.sort()
        gaps = [seq for seq in buffer.gaps if start <= seq < end]
        if gaps:
            found = [seq for seq in found if seq not in buffer.gaps]
            if self.keep_gaps:
                found = sorted(found + gaps)
        return found


class RowMap:
    """Rows of a view whose entries are one or more rows tall (wrapped lines, pretty-printed JSON).

    Holds the running total of rows by absolute position, so row -> entry is a bisect and dropping
    entries off the front (`trim`) only moves an offset.
    """

    def __init__(self, first_pos: int = 0) -> None:
        self._base = first_pos
        self._cum = array("q", [0])  # rows before position base + k
        self._first = first_pos

    @property
    def end_pos(self) -> int:
        return self._base + len(self._cum) - 1

    def extend(self, heights: Iterable[int]) -> None:
        """Add the heights of the next entries (positions `end_pos`, `end_pos + 1`, ...)."""
        self._cum.extend(islice(accumulate(heights, initial=self._cum[-1]), 1, None))

    def trim(self, first_pos: int) -> int:
        """Forget entries before `first_pos`; how many rows they took."""
        first_pos = min(max(first_pos, self._first), self.end_pos)
        removed = self._cum[first_pos - self._base] - self._cum[self._first - self._base]
        self._first = first_pos
        k = first_pos - self._base
        if k > 4096 and k * 2 > len(self._cum):
            del self._cum[:k]
            self._base = first_pos
        return removed

    @property
    def rows(self) -> int:
        return self._cum[-1] - self._cum[self._first - self._base]

    def locate(self, row: int) -> tuple[int, int]:
        """(position, row within that entry) of view row `row`."""
        top = self._cum[self._first - self._base]
        k = bisect_right(self._cum, top + row, self._first - self._base) - 1
        k = min(k, len(self._cum) - 2)
        return self._base + k, top + row - self._cum[k]

    def row_of(self, pos: int) -> int:
        """The first view row of the entry at `pos`."""
        pos = min(max(pos, self._first), self.end_pos)
        return self._cum[pos - self._base] - self._cum[self._first - self._base]

    def height(self, pos: int) -> int:
        k = pos - self._base
        return self._cum[k + 1] - self._cum[k]

    def absolute_row(self, pos: int) -> int:
        """A row number of the entry at `pos` that does not change as entries drop off the front."""
        return self._cum[pos - self._base]

    @property
    def top_absolute_row(self) -> int:
        """`absolute_row` of the first entry: absolute row - this = view row."""
        return self._cum[self._first - self._base]
