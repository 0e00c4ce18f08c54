"""The programs the service runs for itself (Chromium, Xvfb, ffmpeg): their output file, their end, how they ended.

Each runs in a process group of its own (`start_new_session=True`), so ending one ends what it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path


def append_fd(path: Path) -> int:
    """A file descriptor appending to `path`, for a child's output; the caller closes it after the spawn."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


async def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the whole process group (renderers, zygotes, GPU process) and reap the leader.

    No graceful SIGTERM: the profile is thrown away (or reused after a crash anyway), and a prompt
    stop keeps session deletes and service shutdown fast.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()


async def kill_and_reap(process: asyncio.subprocess.Process | None) -> None:
    """SIGKILL one helper (not its group) if it still runs, and reap it; never raises."""
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(Exception):
            await process.wait()


def describe_exit(returncode: int) -> str:
    """How a process ended, for logs and errors: `exited with code 1`, `killed by SIGKILL`."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with code {returncode}"

