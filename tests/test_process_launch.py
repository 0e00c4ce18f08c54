"""Starting a program in a session's sandbox: the wait for the program nsenter forks."""

from __future__ import annotations

import subprocess
import time

from bbrowse.service.process_launch import FORK_WAIT_SECONDS, forked_child


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def test_a_program_that_ended_at_once_does_not_hold_the_service_for_the_fork_wait() -> None:
    """The service's loop alone reaps nsenter, and it is busy in this wait: an nsenter that has already ended
    (its program too) stays a zombie meanwhile. That is the end, seen at once, not after FORK_WAIT_SECONDS
    during which every request of the service would wait."""
    nsenter_like = subprocess.Popen(["sh", "-c", "sh -c 'exit 0'; exit 3"])
    try:
        for _ in range(500):
            if _state(nsenter_like.pid) == "Z":
                break
            time.sleep(0.01)
        assert _state(nsenter_like.pid) == "Z"
        started = time.monotonic()
        assert forked_child(nsenter_like.pid, controls_tty=True) is None
        assert time.monotonic() - started < FORK_WAIT_SECONDS / 4
    finally:
        assert nsenter_like.wait(10) == 3
