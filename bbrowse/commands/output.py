"""How the scriptable commands print: one-line errors, JSON, plain aligned tables, human times and sizes.

Errors are one line on stderr, `error: <code> (<status>): <message>` when the service answered and
`error: <code>: <message>` when it never did (connection, configuration, local files), so a script can
grep the code and a person reads the message. Text from the service is printed as it is (never as markup).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

#: Exit status of a failed command (usage errors are 2, click's convention).
EXIT_FAILURE = 1
EXIT_USAGE = 2


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def print_error(code: str, message: str, status: int | None = None) -> None:
    where = f"{code} ({status})" if status is not None else code
    sys.stderr.write(f"error: {where}: {one_line(message)}\n")
    sys.stderr.flush()


def jsonable(value: Any) -> Any:
    """Wire models (and lists of them) as the JSON the service sent, without unset fields."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def print_json(value: Any, *, compact: bool = False) -> None:
    """JSON on stdout; indented for people, `compact` for one object per line (JSON Lines)."""
    text = json.dumps(jsonable(value), separators=(",", ":")) if compact else json.dumps(jsonable(value), indent=2)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, show_header: bool = True) -> str:
    """Columns padded with two spaces, like `docker ps` or `kubectl get`: readable and easy to `awk`."""
    rows = [[str(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = []
    for row in [list(headers), *rows] if show_header else rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def relative_time(moment: datetime | None, now: datetime | None = None) -> str:
    """`just now`, `42s ago`, `5m ago`, `3h ago`, `2d ago` (or `in 5m` for a clock that runs ahead)."""
    if moment is None:
        return "-"
    now = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (now - moment).total_seconds()
    if abs(seconds) < 2:
        return "just now"
    text = duration(abs(seconds))
    return f"{text} ago" if seconds > 0 else f"in {text}"


def duration(seconds: float) -> str:
    """Largest whole unit: `45s`, `10m`, `3h`, `2d` (with one more unit when it is not round: `1h30m`)."""
    seconds = int(seconds)
    for size, unit, smaller, small_unit in ((86400, "d", 3600, "h"), (3600, "h", 60, "m"), (60, "m", 1, "s")):
        if seconds >= size:
            whole, rest = divmod(seconds, size)
            extra = rest // smaller
            return f"{whole}{unit}{extra}{small_unit}" if extra and whole < 10 else f"{whole}{unit}"
    return f"{seconds}s"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{int(value)}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{size}B"  # pragma: no cover - the loop always returns


def local_time(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a raw descriptor (no Python buffering: output shows up as it arrives)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
