"""The guardian: a tiny process that ends every child of the service when the service dies, however it dies.

Run by `lifetime.Guardian` as `python -I -S guardian.py <service pid> [<service log>]` (standard library
only: it starts in milliseconds). Its stdin is a pipe only the service writes: the pid of each child it
starts, one per line. Each child leads its own session, so that pid names everything the child starts
that stays in its session. When the pipe reaches end-of-file the service is gone (exit, crash, SIGKILL,
the OOM killer), and the guardian SIGKILLs every process still in one of those sessions (a `/proc`
scan), then exits. It polls the pipe every TICK_SECONDS so that spawns never wake it, and keeps a
session only while its leader's pidfd says it can still be ours (pids are reused). A process that
leaves its session (`setsid`, a double fork) is not covered. Measurements: docs/decisions.md.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Iterator

#: How often the guardian looks at its pipe and at the leaders (the delay between the service's death and
#: the end of its children is at most this).
TICK_SECONDS = 0.25
#: How often sessions whose leader has exited are checked for being empty (a /proc scan).
PRUNE_SECONDS = 30.0
#: Kill rounds at the end: a process forking while its session is being killed is caught by the next round.
KILL_ROUNDS = 5


def process_stat(pid: int | str) -> tuple[bytes, list[bytes]] | None:
    """(comm, the fields after comm) of /proc/<pid>/stat, the fields starting with state, ppid, pgrp,
    session; None if there is no such process (any more)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    return stat[stat.find(b"(") + 1:stat.rfind(b")")], stat[stat.rfind(b")") + 2:].split()


def process_table() -> Iterator[tuple[int, bytes, list[bytes]]]:
    """(pid, comm, the fields after comm) of every process this user can see."""
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := process_stat(name)) is not None:
            yield int(name), *stat


def session_ids() -> dict[int, int]:
    """pid -> session id of every process this user can see."""
    found: dict[int, int] = {}
    for pid, _comm, fields in process_table():
        with contextlib.suppress(IndexError, ValueError):
            found[pid] = int(fields[3])
    return found


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot, /proc/<pid>/stat field 22); None if there is no such process."""
    stat = process_stat(pid)
    try:
        return None if stat is None else int(stat[1][19])
    except (IndexError, ValueError):
        return None


def ticks_now() -> int:
    """Now, in the clock ticks since boot that /proc's start times count."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def oldest_members() -> dict[int, int]:
    """session id -> when its oldest process started, for every session this user can see."""
    oldest: dict[int, int] = {}
    for _pid, _comm, fields in process_table():
        with contextlib.suppress(IndexError, ValueError):
            sid, started = int(fields[3]), int(fields[19])
            oldest[sid] = min(started, oldest.get(sid, started))
    return oldest


class Guardian:
    def __init__(self, service_pid: int, log_path: str | None = None) -> None:
        self.service_pid = service_pid
        #: The service log, opened by path when there is something to say (it may have been rotated since).
        self.log_path = log_path
        #: Session ids of the service's children; value: the leader's pidfd while it runs, else None.
        self.sessions: dict[int, int | None] = {}
        #: When each session's leader started (None: gone before it was registered).
        self.started: dict[int, int | None] = {}
        #: When each session's leader was seen gone (ticks since boot, as `start_time`).
        self.gone_at: dict[int, int] = {}
        self.by_pidfd: dict[int, int] = {}
        self.poller = select.epoll()
        self.leaders_gone = False

    def register(self, pid: int) -> None:
        if pid <= 1 or pid in self.sessions:
            return
        self.started[pid] = start_time(pid)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # already gone (and reaped), or out of descriptors: prune decides by /proc
            self.sessions[pid] = None
            self.gone_at[pid] = ticks_now()
            self.leaders_gone = True
            return
        self.sessions[pid] = pidfd
        self.by_pidfd[pidfd] = pid
        self.poller.register(pidfd, select.EPOLLIN)

    def leader_exited(self, pidfd: int) -> None:
        pid = self.by_pidfd.pop(pidfd, None)
        with contextlib.suppress(OSError):
            self.poller.unregister(pidfd)
        os.close(pidfd)
        if pid is not None:
            self.sessions[pid] = None
            self.gone_at[pid] = ticks_now()
            self.leaders_gone = True

    def prune(self) -> None:
        """Forget sessions whose leader exited and in which no process is left."""
        if not self.leaders_gone:
            return
        oldest = oldest_members()
        for sid, pidfd in list(self.sessions.items()):
            if pidfd is None and (sid not in oldest or self.reused(sid, oldest.get(sid))):
                self.forget(sid)
        self.leaders_gone = False

    def forget(self, sid: int) -> None:
        del self.sessions[sid]
        self.started.pop(sid, None)
        self.gone_at.pop(sid, None)

    def reused(self, sid: int, oldest: int | None = None) -> bool:
        """The id of this session now belongs to another one (the session emptied and its id was handed out
        again, e.g. to a shell of someone else that made a session of its own): a process has it as its pid
        and is not the leader we were told of, or, the leader gone, every process in it (`oldest`: when the
        oldest started) started after we saw the leader gone. An id is not handed out again while a process
        is in its session, so a process of ours that was in it then keeps it ours."""
        now = start_time(sid)
        if now is not None:
            return now != self.started.get(sid)
        gone = self.gone_at.get(sid)
        return gone is not None and oldest is not None and oldest > gone

    def end_all(self) -> tuple[int, int]:
        """SIGKILL every process of every session still ours; (processes killed, sessions they were in)."""
        for fd, _ in self.poller.poll(0):  # leaders that exited since the last look
            self.leader_exited(fd)
        oldest = oldest_members()
        for sid in [sid for sid in self.sessions if self.reused(sid, oldest.get(sid))]:
            self.forget(sid)
        killed: set[int] = set()
        hit: set[int] = set()
        for _ in range(KILL_ROUNDS):
            members = {pid: sid for pid, sid in session_ids().items() if sid in self.sessions}
            members.pop(os.getpid(), None)
            if not members:
                break
            for pid, sid in members.items():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                    hit.add(sid)
            time.sleep(0.01)
        return len(killed), len(hit)

    def say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        line = f"{stamp},000 WARNING bbrowse.guardian: bbrowse guardian: {message}\n"
        try:
            if self.log_path is None:
                raise OSError("no log file")
            with open(self.log_path, "a") as log:
                log.write(line)
        except OSError:
            sys.stderr.write(line)

    def run(self, source: int) -> None:
        """Look at the pipe and the leaders every TICK_SECONDS, never blocking on them: a spawn's write
        and a child's exit then wake nobody (a woken guardian would take CPU from the service right
        at the spawn, on a small machine)."""
        os.set_blocking(source, False)
        pending = b""
        next_prune = time.monotonic() + PRUNE_SECONDS
        while True:
            time.sleep(TICK_SECONDS)
            ended = False
            while True:
                try:
                    data = os.read(source, 65536)
                except BlockingIOError:
                    break
                if not data:
                    ended = True
                    break
                lines = (pending + data).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    with contextlib.suppress(ValueError):
                        self.register(int(line))
            if ended:
                killed, hit = self.end_all()
                if killed:
                    self.say(f"the service (pid {self.service_pid}) is gone; ended {killed} process(es) it had "
                             f"started, in {hit} session(s)")
                return
            for fd, _ in self.poller.poll(0):
                self.leader_exited(fd)
            if time.monotonic() >= next_prune:
                self.prune()
                next_prune = time.monotonic() + PRUNE_SECONDS


def main() -> None:
    # Terminal signals are not for us (we are in our own session anyway); only end-of-file ends the guardian.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one pidfd per running child
    service_pid = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    Guardian(service_pid, sys.argv[2] if len(sys.argv) > 2 else None).run(0)


if __name__ == "__main__":
    main()
