"""Retention: the state directory stays bounded, by age and by size, for a service that runs for weeks.

A pass (at start, every `interval`, and on SIGUSR1) rotates the service log past `log_rotate_bytes`,
removes what ended longer ago than `keep_seconds`, then, while the directory is larger than `max_bytes`,
more of the same, oldest first (`Retention._pass`). Removal forgets the session (404 instead of 410) and
its replays. The walk runs in a worker thread; the clock is injectable (`clock`; `BBROWSE_CLOCK_FILE`
for tests of a running service). docs/reliability.md has the story and the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bbrowse.humanize import human_bytes
from bbrowse.limits import RetentionLimits, format_duration, tree_size
from bbrowse.service.sessions import RECORD_FILE, SessionManager, UnknownRecordVersionError, load_record
from bbrowse.timeouts import bounded

log = logging.getLogger("bbrowse.retention")

#: Unix seconds now; injectable.
Clock = Callable[[], float]
#: Test hook: a file holding the Unix time the service's retention takes as now.
CLOCK_FILE_ENV = "BBROWSE_CLOCK_FILE"
#: Longest time between two passes; with short `keep_seconds` a pass runs every quarter of it (at least 5 s).
MAX_INTERVAL_SECONDS = 600.0
MIN_INTERVAL_SECONDS = 5.0
#: A session directory without a readable record is left alone this long (one being created has none yet).
UNRECORDED_GRACE_SECONDS = 3600.0
#: Rotated service logs kept (`bbrowse.log.1` ... `.N`), each at most `log_rotate_bytes`.
ROTATED_LOGS = 2


def system_clock() -> float:
    return time.time()


def file_clock(path: Path) -> Clock:
    """A clock that reads Unix seconds from `path` (falls back to the real time if it cannot be read)."""

    def now() -> float:
        try:
            return float(path.read_text().strip())
        except (OSError, ValueError):
            return time.time()

    return now


def clock_from_env() -> Clock:
    path = os.environ.get(CLOCK_FILE_ENV)
    return file_clock(Path(path)) if path else system_clock


def interval_for(limits: RetentionLimits) -> float:
    return min(MAX_INTERVAL_SECONDS, max(MIN_INTERVAL_SECONDS, limits.keep_seconds / 4))


def log_rotate_bytes(limits: RetentionLimits) -> int:
    """Rotate the service log at a sixteenth of the size limit, between 1 MiB and 256 MiB."""
    return min(256 * 1024**2, max(1024**2, limits.max_bytes // 16))


@dataclass
class Unit:
    """Files that go together: an ended session's directory and its replays, or one rotated log."""

    paths: list[Path]
    ended_at: float
    size: int
    session_id: str | None = None
    what: str = "session"


@dataclass
class PassReport:
    size_before: int = 0
    size_after: int = 0
    removed: list[Unit] = field(default_factory=list)
    #: Units that were due but in use (open, recording, just looked up).
    held: int = 0
    rotated_log: bool = False

    @property
    def freed(self) -> int:
        return sum(u.size for u in self.removed)

    def summary(self, limits: RetentionLimits) -> str:
        sessions = sum(1 for u in self.removed if u.what == "session")
        others = len(self.removed) - sessions
        parts = [f"{sessions} ended session(s)"]
        if others:
            parts.append(f"{others} other item(s)")
        text = (f"retention: removed {' and '.join(parts)} ({human_bytes(self.freed)}); state dir "
                f"{human_bytes(self.size_after)} of {human_bytes(limits.max_bytes)}, "
                f"ended sessions kept {format_duration(limits.keep_seconds)}")
        if self.held:
            text += f"; {self.held} due but in use, kept"
        if self.rotated_log:
            text += "; service log rotated"
        return text


def open_paths(pid: int | str = "self") -> set[str]:
    """Paths of the regular files a process has open (from /proc; empty where there is no /proc)."""
    paths: set[str] = set()
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return paths
    for name in names:
        with contextlib.suppress(OSError):
            target = os.readlink(f"{fd_dir}/{name}")
            if target.startswith("/"):
                paths.add(target.removesuffix(" (deleted)"))
    return paths


class Retention:
    """Runs retention passes over one service's state directory."""

    def __init__(
        self,
        state_dir: Path,
        sessions: SessionManager,
        limits: RetentionLimits,
        *,
        service_log: Path,
        replays=None,
        clock: Clock = system_clock,
    ) -> None:
        self.state_dir = state_dir
        self.sessions = sessions
        self.limits = limits
        self.service_log = service_log
        #: The ReplayManager (has `in_use(session_id)` and `forget_session(session_id)`), or None.
        self.replays = replays
        self.clock = clock
        self.passes = 0
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task | None = None
        self._wake = asyncio.Event()

    # running ----------------------------------------------------------------

    async def start(self) -> None:
        """One pass now (a service that was down a week catches up at once), then the timer and SIGUSR1."""
        await self.run()
        self._timer = asyncio.create_task(self._every_interval(), name="retention")
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, self._wake.set)

    async def stop(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGUSR1)
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # a late SIGUSR1 must not end a stopping service
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer

    async def _every_interval(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await bounded(self._wake.wait(), interval_for(self.limits))
            self._wake.clear()
            try:
                await self.run()
            except Exception:
                log.exception("retention pass failed; the next one runs as planned")

    async def run(self) -> PassReport:
        """One pass; concurrent calls run one after the other."""
        async with self._lock:
            active = self.sessions.active_ids()
            report = await asyncio.to_thread(self._pass, active)
            for unit in report.removed:
                if unit.session_id is not None:
                    self.sessions.forget(unit.session_id)
                    if self.replays is not None:
                        self.replays.forget_session(unit.session_id)
            self.passes += 1
            over = report.size_after > self.limits.max_bytes
            if report.removed or report.rotated_log or report.held or over:
                log.info("%s", report.summary(self.limits))
            if over:
                log.warning("retention: the state dir (%s) is over its limit of %s; what is left belongs to active "
                            "sessions or is in use", human_bytes(report.size_after), human_bytes(self.limits.max_bytes))
            log.info("retention pass %d done", self.passes)
            return report

    # one pass (worker thread) -----------------------------------------------

    def _pass(self, active: set[str]) -> PassReport:
        """Removed: an ended session's directory with its replays, unreadable session directories, orphan
        replays, rotated logs. Never touched: an active session's files, a record of an unknown format
        version, a replay recording or finalising, a file the service has open, replays looked up in the
        last minutes; when only such files are left over the limit, the log says so."""
        report = PassReport()
        report.rotated_log = self._rotate_service_log()
        now = self.clock()
        units = sorted(self._units(active, now), key=lambda u: u.ended_at)
        report.size_before = total = tree_size(self.state_dir)
        opened = open_paths()
        for unit in units:
            due = now - unit.ended_at > self.limits.keep_seconds
            if not due and total <= self.limits.max_bytes:
                continue
            if self._in_use(unit, opened):
                report.held += 1
                continue
            self._remove(unit)
            report.removed.append(unit)
            total -= unit.size
        report.size_after = max(0, total)
        return report

    def _units(self, active: set[str], now: float) -> list[Unit]:
        units: list[Unit] = []
        sessions_dir, replays_dir = self.sessions.root, self.state_dir / "replays"
        seen: set[str] = set()
        for entry in _entries(sessions_dir):
            sid = entry.name
            seen.add(sid)
            if sid in active or not entry.is_dir():
                continue
            ended = self._ended_at(entry, now)
            if ended is None:
                continue
            paths = [entry, replays_dir / sid]
            units.append(Unit(paths, ended, sum(tree_size(p) for p in paths), session_id=sid))
        for entry in _entries(replays_dir):
            if entry.name in seen or entry.name in active or not entry.is_dir():
                continue
            units.append(Unit([entry], _newest_mtime(entry), tree_size(entry), session_id=entry.name, what="replays"))
        logs = self.service_log.parent
        for n in range(1, ROTATED_LOGS + 1):
            rotated = logs / f"{self.service_log.name}.{n}"
            with contextlib.suppress(OSError):
                st = rotated.stat()
                units.append(Unit([rotated], st.st_mtime, st.st_size, what="log"))
        return units

    def _ended_at(self, directory: Path, now: float) -> float | None:
        """When the session ended (Unix seconds); None when it must be kept (active, unknown format, too new)."""
        record = directory / RECORD_FILE
        try:
            session = load_record(record)
        except UnknownRecordVersionError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            session = None
        if session is not None:
            return session.deleted_at.timestamp() if session.deleted_at is not None else None
        try:
            mtime = directory.stat().st_mtime
        except OSError:
            return None
        return mtime if now - mtime > UNRECORDED_GRACE_SECONDS else None

    def _in_use(self, unit: Unit, opened: set[str]) -> bool:
        if unit.session_id is not None and self.replays is not None and self.replays.in_use(unit.session_id):
            return True
        if unit.session_id is not None and self.sessions.is_active(unit.session_id):
            return True  # came back to life since the pass began (cannot happen today; cheap to check)
        for path in unit.paths:
            prefix = str(path)
            if any(p == prefix or p.startswith(prefix + os.sep) for p in opened):
                return True
        return False

    @staticmethod
    def _remove(unit: Unit) -> None:
        # The record goes first: a pass interrupted midway leaves a directory without one, which the
        # next pass removes, never a record whose logs are half gone.
        for path in unit.paths:
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    (path / RECORD_FILE).unlink()
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _rotate_service_log(self) -> bool:
        """`bbrowse.log` -> `.1` -> `.2` once it passes the rotation size; the log handler reopens the path."""
        try:
            if self.service_log.stat().st_size < log_rotate_bytes(self.limits):
                return False
        except OSError:
            return False
        handlers = [h for h in logging.getLogger("bbrowse").handlers
                    if isinstance(h, logging.FileHandler) and Path(h.baseFilename) == self.service_log.absolute()]
        for handler in handlers:
            handler.acquire()
        try:
            for n in range(ROTATED_LOGS, 1, -1):
                older = self.service_log.with_name(f"{self.service_log.name}.{n - 1}")
                with contextlib.suppress(OSError):
                    older.replace(self.service_log.with_name(f"{self.service_log.name}.{n}"))
            self.service_log.replace(self.service_log.with_name(f"{self.service_log.name}.1"))
            for handler in handlers:
                old, handler.stream = handler.stream, handler._open()
                with contextlib.suppress(OSError):
                    if old is not None:
                        old.close()
        except OSError as exc:
            log.warning("retention: could not rotate the service log: %s", exc)
            return False
        finally:
            for handler in handlers:
                handler.release()
        return True


def _entries(directory: Path) -> list[Path]:
    try:
        return sorted(directory.iterdir())
    except OSError:
        return []


def _newest_mtime(directory: Path) -> float:
    newest = 0.0
    with contextlib.suppress(OSError):
        newest = directory.stat().st_mtime
        for entry in directory.iterdir():
            with contextlib.suppress(OSError):
                newest = max(newest, entry.stat().st_mtime)
    return newest

