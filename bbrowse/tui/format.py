"""Small, pure formatting helpers for tables: relative times, durations, sizes."""

from __future__ import annotations

from datetime import UTC, datetime


def relative_time(when: datetime | None, now: datetime | None = None) -> str:
    """`12s ago`, `5m ago`, `3h ago`, `2d ago`; `—` when unknown."""
    if when is None:
        return "—"
    now = now or datetime.now(UTC)
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def absolute_time(when: datetime | None) -> str:
    if when is None:
        return "—"
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def duration(start: datetime | None, end: datetime | None, now: datetime | None = None) -> str:
    """`1m05s`; a running span (no end) counts up to now."""
    if start is None:
        return "—"
    end = end or now or datetime.now(UTC)
    seconds = max(0, int((end - start).total_seconds()))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def human_seconds(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
