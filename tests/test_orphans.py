"""No orphans: what a service spawned ends when the service is SIGKILLed, PTY or not, grandchildren too.

The children here ignore their stdio and SIGHUP, so nothing but the service's guardian ends them: a
pipe-backed `sleep 1000` (the case the parent-death signal did not cover), one behind a shell that
waits on it, a PTY program ignoring SIGHUP, and a background grandchild in the PTY's job-control group.
"""

from __future__ import annotations

import os
import signal
import time

import httpx
import psutil
from conftest import start_service

NO_CHROMIUM = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}


def gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_sigkilled_service_leaves_no_child_behind(tmp_path):
    handle = start_service(tmp_path / "state", extra_env=NO_CHROMIUM)
    try:
        with httpx.Client(base_url=handle.url, headers=handle.headers, timeout=30) as http:
            sid = http.post("/browsers", json={"timeout_seconds": 600}).json()["session_id"]
            spawns = [
                {"command": "sleep", "args": ["1000"]},
                {"command": "sh", "args": ["-c", "trap '' HUP TERM; sleep 1001 & wait"]},
                {"command": "sh", "args": ["-c", "trap '' HUP; exec sleep 1002"], "allocate_tty": True},
                {"command": "bash", "args": ["-ic", "trap '' HUP; sleep 1003 & wait"], "allocate_tty": True},
            ]
            for body in spawns:
                r = http.post(f"/browsers/{sid}/process/spawn", json=body)
                assert r.status_code == 200, r.text
            service = psutil.Process(handle.pid)
            deadline = time.monotonic() + 20
            sleeps: list[psutil.Process] = []
            while time.monotonic() < deadline and len(sleeps) < 4:
                # (`sleep infinity` is the pid 2 of the session's sandbox: it goes too, checked below.)
                sleeps = [p for p in service.children(recursive=True)
                          if p.name() == "sleep" and p.cmdline()[1:] != ["infinity"]]
                time.sleep(0.05)
            assert sorted(p.cmdline()[1] for p in sleeps) == ["1000", "1001", "1002", "1003"]
            descendants = service.children(recursive=True)

        os.kill(handle.pid, signal.SIGKILL)
        handle.process.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(gone(p) for p in descendants):
            time.sleep(0.05)
        left = [(p.pid, p.info) for p in psutil.process_iter(["name", "cmdline"]) if p in descendants and not gone(p)]
        assert left == [], f"outlived the service: {left}"
        log = (handle.state_dir / "service" / "logs" / "bbrowse.log").read_text()
        assert f"bbrowse guardian: the service (pid {handle.pid}) is gone; ended" in log
    finally:
        if handle.process.poll() is None:
            handle.process.kill()
            handle.process.wait(10)
