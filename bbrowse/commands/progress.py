"""A progress bar for downloads, drawn on stderr only when stderr is a terminal.

Scripts and logs never see it; a person watching a long download does. The bar is transient: it
disappears when the download ends, leaving only what the command prints.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from bbrowse.transfer import Progress


def wanted(*, stdout_too: bool = False) -> bool:
    """True when a bar would reach a person: stderr is a terminal (and, with `stdout_too`, stdout is not,
    so the bar does not fight with data written to the same screen)."""
    if not sys.stderr.isatty():
        return False
    return not (stdout_too and sys.stdout.isatty())


@contextmanager
def transfer(description: str, total: int | None, *, show: bool = True) -> Iterator[Progress]:
    """Yield `progress(bytes_done_so_far)` (`bbrowse.transfer`'s, the client's), to pass to `pour`,
    `save_stream` or an upload. With `total` unknown the bar pulses and still counts bytes and speed."""
    if not show:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = progress.add_task(description, total=total)  # before start: the first frame already shows it
    with progress:
        yield lambda done: progress.update(task, completed=done)
