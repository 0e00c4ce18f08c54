"""Children that end with the service: the guardian, and the parent-death signal.

Every child runs in its own session (signalled as a group), so it would outlive a service killed
without cleaning up (SIGKILL, the OOM killer). Two mechanisms: `watch_child(pid)` tells the guardian
about every spawned process and ffmpeg; `die_with_service` is a `preexec_fn` for the children forked
anyway (PTY children, Chromium, Xvfb).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger("bbrowse.lifetime")

_PR_SET_PDEATHSIG = 1
try:
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:
    _LIBC = None

GUARDIAN_SCRIPT = Path(__file__).with_name("guardian.py")


def die_with_service() -> None:  # pragma: no cover - runs in the child between fork and exec
    """`preexec_fn`: SIGKILL this child if the service dies without cleaning up (the kernel's parent-death
    signal, for children forked anyway). It covers the child alone, not its own children."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _service_log_file() -> str | None:
    """The service log's path (the guardian says there what it ended), if logging goes to a file."""
    for handler in logging.getLogger("bbrowse").handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None


class Guardian:
    """The service's side of the guardian: starts it on first use, tells it each child's pid."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self._pipe: int | None = None
        self._lock = threading.Lock()
        self._owner = 0
        #: Pids not written yet (the pipe was full), sent with the next one.
        self._backlog = b""

    @property
    def available(self) -> bool:
        return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")

    def watch(self, pid: int) -> None:
        """Have the guardian end `pid`'s session if the service dies; never raises (a failure is logged)."""
        if not self.available:
            return
        with self._lock:
            self._backlog += b"%d\n" % pid
            for _ in range(2):
                try:
                    if self._pipe is None or self._owner != os.getpid():
                        self._start()
                    assert self._pipe is not None
                    written = os.write(self._pipe, self._backlog)
                    self._backlog = self._backlog[written:]
                    return
                except BlockingIOError:
                    return  # the pipe is full (the guardian reads it every quarter second): sent with the next
                except OSError as exc:  # the guardian died (someone killed it): start another one
                    log.warning("guardian unavailable (%s); starting a new one", exc)
                    self._close()
            log.error("no guardian: process %d may outlive a killed service", pid)

    def _start(self) -> None:
        self._close()
        read_end, write_end = os.pipe()  # both close-on-exec: no child inherits the write end
        log_file = _service_log_file()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARDIAN_SCRIPT), str(os.getpid()), *([log_file] if log_file else [])],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                close_fds=True, start_new_session=True,  # a signal to the service's group spares it
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)  # a stalled guardian must never stall the event loop
        self._pipe = write_end
        self._owner = os.getpid()
        log.info("guardian started (pid %d): children of this service end when it does", self.process.pid)

    def _close(self) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
            self._pipe = None
        if self.process is not None:
            self.process.poll()  # reap it if it has ended
            self.process = None

    def stop(self, timeout: float = 5.0) -> None:
        """Close the pipe (the guardian ends what is left and exits) and reap it."""
        with self._lock:
            process = self.process
            self._close()
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)


#: The service's one guardian.
GUARDIAN = Guardian()


def watch_child(pid: int) -> None:
    """Make sure the child `pid` (and its session) ends when the service does, even by SIGKILL.

    A write of a few bytes to the guardian (`guardian.py`) right after the child started, so spawns keep
    CPython's vfork path (a `preexec_fn` forks in full; the cost is in docs/decisions.md). When the
    service dies the guardian SIGKILLs every process left in those sessions, grandchildren included."""
    GUARDIAN.watch(pid)
