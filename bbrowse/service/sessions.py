"""Browser sessions: identity, naming, paging, inactivity timeout and teardown.

A session owns a working directory, its supervised logs, and what the other managers keep on it (typed
fields: browser, sandbox, input, processes, watches). They hook in through `SessionManager.on_create`
(after a session is registered) and `on_delete` (when it ends) rather than the manager knowing them.

Each session is recorded in `<sessions dir>/<id>/session.json`. A service that was killed finds the
records of the sessions it had when it starts again and `restore`s them under the same id and name
with a new browser (processes and recordings, which lived in memory, are gone). A record of a format
`version` this bbrowse does not read is skipped with one log line and left on disk. An ended session
stays known (410) until retention removes its files and `forget`s it.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import logging
import os
import secrets
import shutil
import string
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bbrowse.service.errors import conflict, not_found, session_gone
from bbrowse.wire import Browser, BrowserCreateRequest, BrowserViewport, SessionStatusFilter
from bbrowse.wire.telemetry import config_for, resolve_on_create

if TYPE_CHECKING:
    from bbrowse.service.chromium import ChromiumBrowser
    from bbrowse.service.computer import SessionInput
    from bbrowse.service.fs_watch import Watch
    from bbrowse.service.processes import ManagedProcess
    from bbrowse.service.sandbox import Sandbox

log = logging.getLogger("bbrowse.sessions")

_ID_ALPHABET = string.ascii_lowercase + string.digits

#: Local default viewport when a create request names none (documented in the README).
DEFAULT_VIEWPORT = BrowserViewport(width=1280, height=800)

#: How often the reaper looks for idle sessions.
REAP_INTERVAL_SECONDS = 1.0

#: For tests of what keeps a session alive: a number > 0 that every session's inactivity timeout is multiplied by
#: (0.2: a 10 s timeout ends after 2 s idle), so they need not wait Kernel's 10 s minimum. Unset: 1.
IDLE_SCALE_ENV = "BBROWSE_IDLE_TIMEOUT_SCALE"


def idle_timeout_scale() -> float:
    raw = os.environ.get(IDLE_SCALE_ENV)
    if raw is None:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = 0.0
    if not 0 < scale < float("inf"):
        raise SystemExit(f"{IDLE_SCALE_ENV}={raw!r}: give a number above 0")
    return scale


#: The file in a session's directory that lets a restarted service bring the session back.
RECORD_FILE = "session.json"
#: The record format this bbrowse writes, and the ones it reads (a record without `version` is 1).
RECORD_VERSION = 1
READABLE_RECORD_VERSIONS = (1,)


def new_session_id() -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(24))


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Session:
    session_id: str
    request: BrowserCreateRequest
    created_at: datetime
    workdir: Path
    logdir: Path
    cdp_ws_url: str = ""
    browser_live_view_url: str | None = None
    deleted_at: datetime | None = None
    last_activity: float = field(default_factory=time.monotonic)
    streams_open: int = 0
    #: Kernel's rule (--kernel-compat): only CDP, live view and computer-controls calls are activity;
    #: shells, process streams, logs and files are not, and a plain request does not reset the clock.
    kernel_activity: bool = False
    # What the other managers keep per session (set by their on_create hooks, or on first use).
    browser: ChromiumBrowser | None = None
    sandbox: Sandbox | None = None
    input: SessionInput | None = None
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    watches: dict[str, Watch] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        return self.request.name

    @property
    def viewport(self) -> BrowserViewport:
        return self.request.viewport or DEFAULT_VIEWPORT

    @property
    def active(self) -> bool:
        return self.deleted_at is None

    def drop_state(self) -> None:
        """Forget what the managers kept on the session (its browser, sandbox, input, processes, watches)."""
        self.browser = self.sandbox = self.input = None
        self.processes = {}
        self.watches = {}

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    @contextlib.contextmanager
    def in_use(self, control: bool = False) -> Iterator[None]:
        """Hold the session open while a stream (SSE, attach) is connected: that is activity too.

        `control`: a CDP client or a computer-controls call, the only activity under Kernel's rule.
        """
        if self.kernel_activity and not control:
            yield
            return
        self.streams_open += 1
        try:
            yield
        finally:
            self.streams_open -= 1
            self.touch()

    def idle_seconds(self) -> float:
        if self.streams_open:
            return 0.0
        return time.monotonic() - self.last_activity

    @property
    def record_path(self) -> Path:
        return self.workdir.parent / RECORD_FILE

    def save_record(self) -> None:
        """Write the record atomically (a crash mid-write leaves the old one, never half a file)."""
        record = {
            "version": RECORD_VERSION,
            "session_id": self.session_id,
            "request": self.request.model_dump(mode="json", exclude_none=True),
            "created_at": self.created_at.isoformat(),
            "deleted_at": self.deleted_at.isoformat() if self.deleted_at else None,
        }
        partial = self.record_path.with_suffix(".json.partial")
        partial.write_text(json.dumps(record))
        os.replace(partial, self.record_path)

    def supervisor_log(self, name: str) -> Path:
        """The file a supervised program of this session logs to (`chromium`, `recorder`, ...)."""
        return self.logdir / f"{name}.log"

    def to_wire(self) -> Browser:
        return Browser(
            session_id=self.session_id,
            cdp_ws_url=self.cdp_ws_url,
            created_at=self.created_at,
            headless=self.request.headless,
            stealth=self.request.stealth,
            timeout_seconds=self.request.timeout_seconds,
            name=self.request.name,
            start_url=self.request.start_url,
            viewport=self.viewport,
            tags=self.request.tags,
            browser_live_view_url=self.browser_live_view_url,
            deleted_at=self.deleted_at,
            telemetry=config_for(categories) if (categories := resolve_on_create(self.request.telemetry)) else None,
        )


SessionHook = Callable[[Session], Awaitable[None]]
RequestValidator = Callable[[BrowserCreateRequest], None]


class UnknownRecordVersionError(ValueError):
    """A session record in a format this bbrowse does not read; left alone, never rewritten or removed."""


def load_record(path: Path) -> Session:
    """The session a record describes; `UnknownRecordVersionError`, or OSError/ValueError/KeyError/TypeError."""
    record = json.loads(path.read_text())
    if not isinstance(record, dict):
        raise TypeError("not a JSON object")
    version = record.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version not in READABLE_RECORD_VERSIONS:
        readable = ", ".join(map(str, READABLE_RECORD_VERSIONS))
        raise UnknownRecordVersionError(
            f"session record {path} has format version {version!r}, which this bbrowse does not read "
            f"(it reads {readable})"
        )
    return _session_from_record(record, path.parent)


def _session_from_record(record: dict, base: Path) -> Session:
    if record["session_id"] != base.name:
        raise ValueError(f"names session {record['session_id']!r} but lies in {base.name!r}")
    deleted = record.get("deleted_at")
    return Session(
        session_id=record["session_id"],
        request=BrowserCreateRequest.model_validate(record["request"]),
        created_at=datetime.fromisoformat(record["created_at"]),
        workdir=base / "work",
        logdir=base / "logs",
        deleted_at=datetime.fromisoformat(deleted) if deleted else None,
    )


class SessionManager:
    def __init__(self, root: Path, service_log: Path, kernel_activity: bool = False) -> None:
        self.root = root
        self.kernel_activity = kernel_activity
        self.service_log = service_log
        self._sessions: dict[str, Session] = {}
        self._by_name: dict[str, str] = {}
        #: Run before anything is created: raise a ServiceError to refuse the request.
        self.validators: list[RequestValidator] = []
        self.on_create: list[SessionHook] = []
        self.on_delete: list[SessionHook] = []
        self._reaper: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._idle_scale = idle_timeout_scale()

    # lookup -----------------------------------------------------------------

    def find(self, id_or_name: str) -> Session | None:
        session = self._sessions.get(id_or_name)
        if session is None:
            sid = self._by_name.get(id_or_name)
            session = self._sessions.get(sid) if sid else None
        return session

    def get(self, id_or_name: str, *, include_deleted: bool = False) -> Session:
        """The session, marked active; 404 when unknown, 410 when it has ended."""
        session = self.find(id_or_name)
        if session is None:
            raise not_found(f"browser session {id_or_name!r} not found")
        if not session.active and not include_deleted:
            ended = f"{session.deleted_at:%Y-%m-%dT%H:%M:%SZ}"
            raise session_gone(f"browser session {session.session_id} ended at {ended}")
        if session.active and not session.kernel_activity:
            session.touch()
        return session

    def list(self, status: SessionStatusFilter, query: str | None) -> list[Session]:
        sessions = sorted(self._sessions.values(), key=lambda s: s.created_at)
        if status is SessionStatusFilter.ACTIVE:
            sessions = [s for s in sessions if s.active]
        elif status is SessionStatusFilter.DELETED:
            sessions = [s for s in sessions if not s.active]
        if query:
            needle = query.lower()
            sessions = [s for s in sessions if needle in s.session_id or needle in (s.name or "").lower()]
        return sessions

    # lifecycle --------------------------------------------------------------

    async def create(self, request: BrowserCreateRequest) -> Session:
        for validate in self.validators:
            validate(request)
        async with self._lock:
            if request.name and self._name_taken(request.name):
                raise conflict(f"a browser session named {request.name!r} already exists")
            session_id = new_session_id()
            base = self.root / session_id
            session = Session(
                session_id=session_id,
                request=request,
                created_at=utcnow(),
                workdir=base / "work",
                logdir=base / "logs",
                kernel_activity=self.kernel_activity,
            )
            session.workdir.mkdir(parents=True, exist_ok=True)
            session.logdir.mkdir(parents=True, exist_ok=True)
            session.save_record()
            self._sessions[session_id] = session
            if request.name:
                self._by_name[request.name] = session_id
        try:
            # Not idle while its browser starts, however long that takes: idle from when it is ready.
            with session.in_use(control=True):
                for hook in self.on_create:
                    await hook(session)
        except BaseException:
            await self.delete(session, reason="failed to start")
            raise
        log.info("session %s created (name=%s, timeout=%ss)", session_id, request.name, request.timeout_seconds)
        return session

    def _name_taken(self, name: str) -> bool:
        sid = self._by_name.get(name)
        return sid is not None and self._sessions[sid].active

    async def delete(self, session: Session, reason: str = "deleted") -> None:
        if not session.active:
            return
        session.deleted_at = utcnow()
        with contextlib.suppress(OSError):
            session.save_record()
        if session.name and self._by_name.get(session.name) == session.session_id:
            del self._by_name[session.name]
        for hook in self.on_delete:
            try:
                await hook(session)
            except Exception:
                log.exception("teardown hook failed for session %s", session.session_id)
        # What the hooks hung on the session (its browser, input, watches) is of no more use: every route of
        # an ended session but the replay ones answers 410. Dropped now, not with the record at retention.
        session.drop_state()
        shutil.rmtree(session.workdir, ignore_errors=True)
        log.info("session %s ended (%s)", session.session_id, reason)

    async def restore(self) -> builtins.list[Session]:  # `list` in this class is the method
        """Bring back the sessions a killed service left running (startup hook); the restored ones.

        A record that cannot be read is skipped (and logged); a session whose browser cannot be
        started again ends as it would have at creation. Sessions start their browsers concurrently.
        """
        found: list[Session] = []
        for record in sorted(self.root.glob(f"*/{RECORD_FILE}")):
            try:
                session = load_record(record)
            except UnknownRecordVersionError as exc:
                log.warning("%s; skipped and left on disk as it is", exc)
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("session record %s is unreadable, skipped: %s", record, exc)
                continue
            if not session.active or session.session_id in self._sessions:
                continue
            session.kernel_activity = self.kernel_activity
            if session.name and self._name_taken(session.name):
                log.warning("session %s not restored: its name %r is taken", session.session_id, session.name)
                continue
            session.workdir.mkdir(parents=True, exist_ok=True)
            session.logdir.mkdir(parents=True, exist_ok=True)
            self._sessions[session.session_id] = session
            if session.name:
                self._by_name[session.name] = session.session_id
            found.append(session)
        results = await asyncio.gather(*(self._start_restored(s) for s in found))
        return [s for s, ok in zip(found, results, strict=True) if ok]

    async def _start_restored(self, session: Session) -> bool:
        try:
            for hook in self.on_create:
                await hook(session)
        except Exception as exc:
            log.warning("session %s could not be restored: %s", session.session_id, exc)
            await self.delete(session, reason="could not be restored after a restart")
            return False
        log.info("session %s restored after the service restarted (name=%s)", session.session_id, session.name)
        return True

    def forget(self, session_id: str) -> bool:
        """Drop an ended session from memory once its files are gone (then 404 instead of 410); False if active."""
        session = self._sessions.get(session_id)
        if session is None or session.active:
            return False
        del self._sessions[session_id]
        return True

    def active_ids(self) -> set[str]:
        return {sid for sid, s in self._sessions.items() if s.active}

    def is_active(self, session_id: str) -> bool:
        session = self._sessions.get(session_id)
        return session is not None and session.active

    async def delete_all(self) -> None:
        for session in list(self._sessions.values()):
            await self.delete(session, reason="service stopping")

    # inactivity -------------------------------------------------------------

    def start_reaper(self) -> None:
        self._reaper = asyncio.create_task(self._reap_forever(), name="session-reaper")

    async def stop_reaper(self) -> None:
        if self._reaper:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL_SECONDS * min(self._idle_scale, 1.0))
            for session in list(self._sessions.values()):
                if session.active and session.idle_seconds() > session.request.timeout_seconds * self._idle_scale:
                    await self.delete(session, reason=f"idle for more than {session.request.timeout_seconds}s")
