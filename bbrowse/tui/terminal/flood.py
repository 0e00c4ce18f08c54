"""Lines that would scroll away unseen: the one shortcut the pane takes under a flood.

`yes` prints three bytes a line; every line is a scroll, and scrolling is what even a fast terminal
core does slowest (libghostty: about 10 million lines a second, so 100 MB of `yes` is several seconds
of work). When the queued output starts with many plain lines, everything before the last `keep` of
them would scroll out of both the screen and the history before anyone could see it: `plain_head`
finds it. Everything here runs in C (`bytes.translate`, `find`, `count`): the widget calls it on
megabytes of backlog between keystrokes.
"""

from __future__ import annotations

import re

# Single bytes that may appear in a plain line (UTF-8 lead and continuation bytes included).
_PLAIN = bytes([0x07, 0x08, 0x09, 0x0A, 0x0D, *range(0x20, 0x7F), *range(0x80, 0x100)])
# C1 controls written as UTF-8 (U+0080..U+009F) are not plain either.
_C1 = re.compile(rb"\xc2[\x80-\x9f]")


def first_not_plain(data: bytes | bytearray, start: int = 0) -> int:
    """Where the first byte at or after `start` that cannot be in a plain line is (len(data) if none)."""
    end = len(data)
    rest = data.translate(None, _PLAIN) if start == 0 else bytes(memoryview(data)[start:]).translate(None, _PLAIN)
    if rest:
        end = min(data.find(bytes([byte]), start) for byte in set(rest))
    lead = data.find(b"\xc2", start, end)
    if lead >= 0:
        found = _C1.search(data, lead, end + 1)
        if found is not None:
            end = min(end, found.start())
    return end


def line_end_before(data: bytes | bytearray, end: int, count: int) -> int:
    """The position of the `count`-th LF counting back from `end` (exclusive), or -1 if fewer."""
    window = max(4096, count * 8)
    while True:  # a window holding enough line ends
        start = max(0, end - window)
        if data.count(b"\n", start, end) >= count:
            break
        if start == 0:
            return -1
        window *= 4
    low, high = start, end  # the largest position with `count` line ends from it to the end
    while high - low > 1:
        middle = (low + high) // 2
        if data.count(b"\n", middle, end) >= count:
            low = middle
        else:
            high = middle
    return low


def plain_head(data: bytes | bytearray, keep: int, plain_end: int | None = None) -> int:
    """Bytes at the start of `data` that can be dropped (0 if none): whole plain lines, the last one
    ending in CR LF (so the cursor is at the start of a line whatever came before), followed by at
    least `keep` more plain lines. `plain_end`, when known, is `first_not_plain(data)`.

    A plain line holds printable text, TAB, BS, BEL, CR and LF only. Dropping the head leaves the state
    drawing it would have left, provided the terminal is between sequences and plain lines scroll the
    whole screen (no scroll region or margins): the kept lines overwrite every row and fill the history.
    `TerminalCore.skippable_prefix` checks those conditions on the core before using this."""
    if keep < 1 or len(data) < 2 * keep:
        return 0
    end = first_not_plain(data) if plain_end is None else plain_end
    last_kept = line_end_before(data, end, keep)
    if last_kept < 0:
        return 0
    crlf = data.rfind(b"\r\n", 0, last_kept)
    return crlf + 2 if crlf >= 0 else 0
