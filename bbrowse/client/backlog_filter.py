"""After a reconnect, drop the output the service sends again that the client has already shown.

`bbrowse serve` (default mode) starts every new `attach` or `stdout/stream` reader with a backlog (the
last MiB or so of output), which after a reconnect would be printed a second time; Kernel's VM (and
`--kernel-compat`) keeps none. The client cannot ask which kind of service it has, so it looks: it keeps
the tail of what it showed (`RecentOutput`), and after a reconnect holds the first output back
(`BacklogFilter`) until it can tell whether that begins with a repeat of the tail.
"""

from __future__ import annotations

from collections import deque

#: How much of the output shown is remembered: more than any backlog `bbrowse serve` sends (1 MiB).
RECENT_BYTES = 2 * 1024 * 1024
#: A pause this long after a reconnect means the backlog, if any, has arrived.
QUIET_SECONDS = 0.15
NEEDLE_BYTES = 64
MAX_CANDIDATES = 32


class RecentOutput:
    """The last `limit` bytes (or a little more) of output shown, kept as the chunks they came in."""

    def __init__(self, limit: int = RECENT_BYTES) -> None:
        self.limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def add(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        while self._size - len(self._chunks[0]) >= self.limit:
            self._size -= len(self._chunks.popleft())

    def tail(self) -> bytes:
        return b"".join(self._chunks)[-self.limit:]

    def __len__(self) -> int:
        return min(self._size, self.limit)


class BacklogFilter:
    """Holds back output after a reconnect until it knows which part repeats `recent`.

    A repeat (a backlog) is dropped and the rest shown; output that is no repeat is shown whole. It
    decides as soon as it has seen as much as it remembers, or when the output pauses (`QUIET_SECONDS`):
    a backlog arrives in one burst, so a pause means it is complete.
    """

    def __init__(self, recent: bytes) -> None:
        self._recent = recent
        self._pending = bytearray()
        #: True once decided: from then on `feed` passes everything through.
        self.done = not recent
        #: How many bytes were dropped as a repeat (for tests and logs).
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        """The bytes to show now (b"" while still undecided)."""
        if self.done:
            return data
        self._pending += data
        if len(self._pending) >= len(self._recent) + NEEDLE_BYTES:
            return self.flush()
        return b""

    def flush(self) -> bytes:
        """Decide with what has arrived (the output paused): the new part of it."""
        if self.done:
            return b""
        self.done = True
        pending, self._pending = bytes(self._pending), bytearray()
        repeated = _repeated_prefix(self._recent, pending)
        self.dropped = repeated
        self._recent = b""
        return pending[repeated:]


def _repeated_prefix(recent: bytes, pending: bytes) -> int:
    """The length of the longest prefix of `pending` that ends with (all it covers of) `recent`; 0 if none.

    The backlog's repeated part ends where the old output ended. Candidates are found by searching for the
    last `NEEDLE_BYTES` of `recent` and checked against as much of it as they cover; the longest that
    checks wins. Output that repeats itself (`yes`) matches at many places: any of them gives the same
    screen, and at most `MAX_CANDIDATES` are checked."""
    if not recent or not pending:
        return 0
    needle = recent[-NEEDLE_BYTES:]
    end = len(pending)
    for _ in range(MAX_CANDIDATES):
        found = pending.rfind(needle, 0, end)
        if found < 0:
            return 0
        q = found + len(needle)  # the candidate end of the repeated part
        covered = min(q, len(recent))
        if pending[q - covered:q] == recent[len(recent) - covered:]:
            return q
        end = q - 1
    return 0
