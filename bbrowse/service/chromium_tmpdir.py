"""Each Chromium's own TMPDIR: made with its service's lock in it, removed when that Chromium stops, and swept
at the next start when the service that made it was killed.

Chromium makes `org.chromium.Chromium.XXXXXX` in its TMPDIR for its singleton socket and, killed, never
removes it (28,998 of them had piled up in one machine's /tmp). A running service removes the directory when
its Chromium stops; a SIGKILLed service cannot. So each directory holds a lock file that its service keeps
locked (`flock`): the kernel lets go of the lock when the service dies, whatever else still runs, and a
service starting later removes every directory whose lock it can take. Several services may share one
`/tmp`: a directory whose lock is held belongs to one that runs, and is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
import time

from bbrowse.service.chromium_command import CHROMIUM_TMPDIR_PREFIX, chromium_tmpdir_parent

log = logging.getLogger("bbrowse.service")

#: The lock file in each directory, locked while the service that made it runs.
OWNER_FILE = ".bbrowse-owner"
#: A directory without a lock file (left by a version before this one) is removed once it is this old.
UNOWNED_AFTER_SECONDS = 3600.0


class ChromiumTmpdir:
    """One Chromium's TMPDIR, locked by this service until `remove()`.

    The lock file is made and locked under a temporary name and then renamed into place, so a sweeping
    service never finds it there unlocked (between the two it finds no lock file, and a directory that
    new is not old enough to be taken for a leftover).
    """

    def __init__(self, parent: str | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=CHROMIUM_TMPDIR_PREFIX, dir=parent or chromium_tmpdir_parent())
        making = os.path.join(self.path, OWNER_FILE + ".new")
        self._lock = os.open(making, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        os.rename(making, os.path.join(self.path, OWNER_FILE))

    def remove(self) -> None:
        """Remove the directory and everything Chromium left in it, then let go of the lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)


async def sweep_at_start() -> None:
    """The service's startup step: `sweep()` off the event loop (a /tmp may hold many thousands of entries)."""
    await asyncio.to_thread(sweep)


def sweep(parent: str | None = None) -> int:
    """Remove the directories left in `parent` by services that are gone; how many were removed."""
    parent = parent or chromium_tmpdir_parent()
    now = time.time()
    removed = 0
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(CHROMIUM_TMPDIR_PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False) and _remove_if_abandoned(entry.path, now):
                removed += 1
    if removed:
        log.info("removed %d Chromium temporary directories left in %s by a service that was killed",
                 removed, parent)
    return removed


def _remove_if_abandoned(path: str, now: float) -> bool:
    try:
        lock = os.open(os.path.join(path, OWNER_FILE), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        if now - os.stat(path, follow_symlinks=False).st_mtime < UNOWNED_AFTER_SECONDS:
            return False  # being made right now, or too recent to tell
        shutil.rmtree(path, ignore_errors=True)
        return True
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its service runs
        shutil.rmtree(path, ignore_errors=True)
        return True
    finally:
        os.close(lock)
