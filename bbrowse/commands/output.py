"""How the scriptable commands print: one-line errors, JSON, plain aligned tables (times and sizes in
them come from `bbrowse.humanize`, as in the app).

Errors are one line on stderr, `error: <code> (<status>): <message>` when the service answered and
`error: <code>: <message>` when it never did (connection, configuration, local files), so a script can
grep the code and a person reads the message. Text from the service is printed as it is (never as markup).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
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


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a raw descriptor (no Python buffering: output shows up as it arrives)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
