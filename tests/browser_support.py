"""For tests that drive a real browser session (no tests here): whether this machine has a Chromium,
the mark that skips such a test where it has none, a session made for a fixture's lifetime, and its
Chromium processes (in its sandbox or not).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psutil
import pytest

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")


@contextlib.asynccontextmanager
async def browser_session(http: httpx.AsyncClient, **body: Any) -> AsyncIterator[dict]:
    """A new session (`POST /browsers` with `body`; its answer) while the block runs, deleted after.

    A session starts a Chromium, which costs seconds: fixtures that share one across a module use this.
    """
    r = await http.post("/browsers", json=body)
    assert r.status_code == 200, r.text
    try:
        yield r.json()
    finally:
        await http.delete(f"/browsers/{r.json()['session_id']}")


def browser_process(service, sid: str) -> psutil.Process:
    """The session's main Chromium process: the one whose parent is not a Chromium of it (the service, or the
    nsenter that started it in the session's sandbox)."""
    processes = session_processes(service, sid)
    pids = {p.pid for p in processes}
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            if proc.ppid() not in pids:
                return proc
    raise AssertionError(f"no Chromium of session {sid} among the service's descendants")


def session_processes(service, sid: str) -> list[psutil.Process]:
    """The session's Chromium processes: those of its profile (`--user-data-dir`), which in a sandbox is the same
    path in every session, so there they are the ones whose root is the session's sandbox (its /workspace is ours)."""
    directory = service.state_dir / "service" / "sessions" / sid
    host_profile = str(directory / "chromium-profile")
    work = os.stat(directory / "work")
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or ()
        if any(host_profile in arg for arg in args):
            found.append(proc)
        elif any(arg == "--user-data-dir=/root/.config/chromium" for arg in args):
            with contextlib.suppress(OSError):
                inside = os.stat(f"/proc/{proc.pid}/root/workspace")
                if (inside.st_dev, inside.st_ino) == (work.st_dev, work.st_ino):
                    found.append(proc)
    return found
