"""Times, lengths of time and sizes as short text for people: table cells, status lines, messages.

The app and the scriptable commands both print sessions, replays and files, so they share these and
say the same thing the same way. Nothing here knows either of them (no Textual, no click), and none of
these takes None: what an unknown value reads as is the caller's (`—` in the app, `-` in a command's
table, which scripts split on whitespace).
"""

from __future__ import annotations

from datetime import UTC, datetime

_UNITS = (("d", 86400), ("h", 3600), ("m", 60))


def relative_time(moment: datetime, now: datetime | None = None) -> str:
    """`12s ago`, `5m ago`, `3h ago`, `2d ago`: how long ago, in its largest whole unit. A moment without
    a time zone is UTC (as the service writes them); one later than `now` (a clock ahead) is `0s ago`."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in _UNITS:
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def absolute_time(moment: datetime) -> str:
    """`2026-11-21 09:58:45`, in the local time zone."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def elapsed(start: datetime, end: datetime | None = None, now: datetime | None = None) -> str:
    """`45s`, `1m05s`, `2h03m`: the time from `start` to `end`, or to now while it runs (a recording)."""
    seconds = max(0, int(((end or now or datetime.now(UTC)) - start).total_seconds()))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def duration(seconds: int) -> str:
    """`90s`, `5m`, `24h`: a length of time (a session's timeout) in the largest unit that divides it."""
    if seconds and seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds and seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def human_bytes(size: int, *, compact: bool = False) -> str:
    """`136 B`, `4.0 KiB`, `1.5 GiB` (binary units) for a sentence or a status line; `compact` is the
    `ls -lh` form for a column of a table: `136B`, `4.0K`, `1.5G`."""
    value = float(size)
    unit = "B"
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            break
        value /= 1024
    if unit == "B":
        return f"{value:.0f}B" if compact else f"{value:.0f} B"
    return f"{value:.1f}{unit}" if compact else f"{value:.1f} {unit}iB"
