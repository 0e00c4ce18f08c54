"""Reaps children of the service that their owner left unreaped: a zombie kept for a minute is collected.

Every child the service starts has an owner that collects its exit: the event loop's process transport
(Chromium, Xvfb, ffmpeg, xdotool) or the PTY process's pidfd (what clients spawn). Still, a stray can be
left (docs/reliability.md, Soak), and a service running for weeks would pile such pids up. As an init
process does, the service collects such strays itself: a child seen as
a zombie at two looks `INTERVAL_SECONDS` apart is reaped and named in the service log, so the leak shows
and costs nothing. An owner that is merely slow is never robbed: every owner reaps within milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from bbrowse.service.guardian import process_table

log = logging.getLogger("bbrowse.service")

#: Time between two looks; a zombie seen at both is reaped.
INTERVAL_SECONDS = 30.0


def zombie_children(parent: int) -> dict[int, str]:
    """pid -> name of every zombie whose parent is `parent` (from /proc/<pid>/stat)."""
    found: dict[int, str] = {}
    for pid, comm, fields in process_table():
        with contextlib.suppress(IndexError, ValueError):
            if fields[0] == b"Z" and int(fields[1]) == parent:
                found[pid] = comm.decode(errors="replace")
    return found


class StrayReaper:
    """Looks for zombie children every `interval` seconds and reaps those it saw at the look before."""

    def __init__(self, interval: float = INTERVAL_SECONDS, parent: int | None = None) -> None:
        self.interval = interval
        self.parent = os.getpid() if parent is None else parent
        #: Zombies seen at the last look, not reaped yet.
        self.seen: dict[int, str] = {}
        #: How many strays were reaped so far.
        self.reaped = 0
        self._task: asyncio.Task[None] | None = None

    def look(self) -> list[str]:
        """One look: reap the zombies that were already zombies at the last one; remember the new ones.
        Returns what was reaped, as `name (pid)`."""
        now = zombie_children(self.parent)
        reaped = []
        for pid, name in now.items():
            if self.seen.get(pid) != name:
                continue
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped.append(f"{name} ({pid})")
        self.seen = {pid: name for pid, name in now.items() if f"{name} ({pid})" not in reaped}
        if reaped:
            self.reaped += len(reaped)
            log.warning("reaped %d child process(es) left unreaped by their owner for over %.0f s: %s",
                        len(reaped), self.interval, ", ".join(reaped))
        return reaped

    async def start(self) -> None:
        self._task = asyncio.create_task(self._every_interval(), name="stray-reaper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await asyncio.to_thread(self.look)
            except Exception:
                log.exception("looking for unreaped children failed; the next look runs as planned")
