"""Children that end with the service: the parent-death signal.

Every child the service starts runs in its own session (so it can be signalled as a group), which
also means it would outlive a service that is killed without cleaning up (SIGKILL, OOM killer): a
Chromium nobody can reach, or a spawned `sleep 1000` whose process id no client can name any more.
`die_with_service` (a `preexec_fn`) asks the kernel to SIGKILL the child when the service dies. Chromium,
Xvfb and PTY-backed processes use it; pipe-backed processes do not (see `process_launch`).
It applies to the child itself, not to what the child starts later (a `nohup` grandchild lives on),
and it survives exec (except of set-user-ID programs) and the switch to `as_user`, which happens before it.
"""

from __future__ import annotations

import ctypes
import signal
import sys

_PR_SET_PDEATHSIG = 1
try:
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:
    _LIBC = None


def die_with_service() -> None:  # pragma: no cover - runs in the child between fork and exec
    """`preexec_fn`: SIGKILL this child if the service dies without cleaning up."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
