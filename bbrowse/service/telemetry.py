"""Telemetry of each session: a bounded, numbered log of events, kept on disk with the session's folder.

`TelemetryLog` numbers events (`seq`, from 1, never reused), holds the newest in memory (bounded by count
and bytes) for `telemetry/events` and `telemetry/stream`, and appends each as one JSON line to
`sessions/<id>/telemetry.jsonl` (rotated once past `DISK_BYTES`), which retention removes with the
folder. A deleted session's log is read back from that file, so its events outlive it as its replays do.

`TelemetryManager` ties logs to sessions: the settings of create and `PATCH` (`wire.telemetry`), the
CDP monitor of each capturing session (`telemetry_cdp`), and the control and connection events the
HTTP layer reports (`telemetry_http`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import pydantic_core

from bbrowse.service.errors import bad_request
from bbrowse.service.sessions import Session, SessionManager
from bbrowse.timeouts import bounded
from bbrowse.wire import BrowserCreateRequest
from bbrowse.wire.telemetry import (
    MASK,
    MASKED_HEADERS,
    TelemetryRequest,
    TelemetryRequestError,
    request_for,
    resolve_on_create,
    resolve_on_update,
)

log = logging.getLogger("bbrowse.telemetry")

FILE_NAME = "telemetry.jsonl"
#: What one session's log keeps in memory: the newest events, by count and by encoded size.
MEMORY_EVENTS = 50_000
MEMORY_BYTES = 32 << 20
#: The file is rotated (one previous file kept) past this size.
DISK_BYTES = 64 << 20
#: Captured strings are cut at this many bytes, as Kernel's are.
STRING_CAP = 8192
TRUNCATED_MARK = "...[truncated]"
#: Buffered lines reach the file at least this often.
FLUSH_SECONDS = 0.5

#: One stored event: (seq, ts in µs, category, type, envelope JSON).
Stored = tuple[int, int, str, str, bytes]
#: Compact JSON for what `pydantic_core` cannot encode (a lone surrogate); one encoder, not one a call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def json_line(value: Any) -> bytes:
    """Compact UTF-8 JSON, as `json.dumps` writes it, five times faster (`pydantic_core`); a lone surrogate (a
    JavaScript string may hold one) as its JSON escape `\\udxxx`."""
    try:
        return pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError:
        return _encode(value).encode("utf-8", "backslashreplace")


def now_us() -> int:
    return time.time_ns() // 1000


def cap(value: Any) -> tuple[Any, bool]:
    """`value` with every string cut at `STRING_CAP` bytes; and whether anything was cut."""
    if isinstance(value, str):
        if len(value) <= STRING_CAP // 4 or len(value.encode(errors="surrogatepass")) <= STRING_CAP:
            return value, False
        cut = value.encode(errors="surrogatepass")[: STRING_CAP - len(TRUNCATED_MARK)].decode(errors="ignore")
        return cut + TRUNCATED_MARK, True
    if isinstance(value, dict):
        out, any_cut = {}, False
        for key, item in value.items():
            out[key], cut_here = cap(item)
            any_cut |= cut_here
        return out, any_cut
    if isinstance(value, list):
        items = [cap(item) for item in value]
        return [item for item, _ in items], any(cut for _, cut in items)
    return value, False


def mask_headers(headers: Any) -> dict[str, str] | None:
    """Header values as strings, with `Authorization`, `Cookie` and `Set-Cookie` masked."""
    if not isinstance(headers, dict):
        return None
    return {name: MASK if name.lower() in MASKED_HEADERS else str(value) for name, value in headers.items()}


class TelemetryLog:
    """The numbered events of one session; see the module docstring."""

    def __init__(self, path: Path, categories: frozenset[str] = frozenset(), *, writable: bool = True) -> None:
        self.path = path
        self.categories = categories
        self.seq = 0
        self.closed = not writable
        self._events: list[Stored] = []
        self._bytes = 0
        self._file: Any = None
        self._file_bytes = 0
        self._writable = writable
        self._waiter: asyncio.Future[None] | None = None
        self._dirty = False

    # reading back ---------------------------------------------------------------

    @classmethod
    def load(cls, path: Path, categories: frozenset[str] = frozenset(), *, writable: bool) -> TelemetryLog:
        """The log a file (and its rotated predecessor) holds; continues numbering after it when `writable`."""
        found = cls(path, categories, writable=writable)
        for part in (path.with_name(path.name + ".1"), path):
            with contextlib.suppress(OSError):
                with part.open("rb") as lines:
                    for line in lines:
                        found._keep_line(line.rstrip(b"\n"))
        return found

    def _keep_line(self, line: bytes) -> None:
        try:
            envelope = json.loads(line)
            event = envelope["event"]
            stored = (int(envelope["seq"]), int(event["ts"]), str(event["category"]), str(event["type"]), line)
        except (ValueError, KeyError, TypeError):
            return  # a line cut by a crash
        if stored[0] <= self.seq:
            return
        self.seq = stored[0]
        self._append(stored)

    # writing --------------------------------------------------------------------

    def wants(self, category: str) -> bool:
        return not self.closed and category in self.categories

    def add(self, category: str, type_: str, data: dict[str, Any] | None, *, kind: str = "cdp",
            source_event: str | None = None, ts: int | None = None) -> int | None:
        """Record one event if its category is captured; its seq, or None."""
        if not self.wants(category):
            return None
        event: dict[str, Any] = {"category": category, "type": type_, "ts": ts or now_us(),
                                 "source": {"kind": kind, "event": source_event} if source_event else {"kind": kind}}
        if data is not None:
            event["data"] = {k: v for k, v in data.items() if v is not None}
        self.seq += 1
        envelope = {"seq": self.seq, "event": event}
        line = json_line(envelope)
        if len(line) > STRING_CAP and data is not None:
            # Only a line longer than the cap can hold a string longer than it (JSON only adds to a string).
            event["data"], truncated = cap(event["data"])
            if truncated:
                event["truncated"] = True
                line = json_line(envelope)
        self._append((self.seq, event["ts"], category, type_, line))
        self._write(line)
        self._wake()
        return self.seq

    def _append(self, stored: Stored) -> None:
        self._events.append(stored)
        self._bytes += len(stored[4])
        if len(self._events) > MEMORY_EVENTS + MEMORY_EVENTS // 8 or self._bytes > MEMORY_BYTES:
            # At least an eighth at once, so eviction costs O(1) per event over time.
            drop = min(max(len(self._events) - MEMORY_EVENTS, len(self._events) // 8, 1), len(self._events) - 1)
            self._bytes -= sum(len(s[4]) for s in self._events[:drop])
            del self._events[:drop]

    def _write(self, line: bytes) -> None:
        if not self._writable:
            return
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("ab", buffering=1 << 16)
                self._file_bytes = self._file.tell()
            self._file.write(line)
            self._file.write(b"\n")
            self._file_bytes += len(line) + 1
            self._dirty = True
            if self._file_bytes > DISK_BYTES:
                self._file.close()
                self._file = None
                self.path.replace(self.path.with_name(self.path.name + ".1"))
        except OSError as exc:
            log.warning("telemetry of %s not written: %s", self.path.parent.name, exc)
            self._writable = False

    def flush(self) -> None:
        if self._file is not None and self._dirty:
            with contextlib.suppress(OSError):
                self._file.flush()
            self._dirty = False

    def close(self) -> None:
        """No more events (the session ended): the file is flushed and closed, streams end."""
        self.closed = True
        self.flush()
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        self._wake()

    # queries --------------------------------------------------------------------

    @property
    def first_seq(self) -> int:
        return self._events[0][0] if self._events else self.seq + 1

    def after(self, seq: int, limit: int = 2000) -> list[Stored]:
        """Up to `limit` events numbered after `seq`, oldest first (from the oldest kept if `seq` is older)."""
        if not self._events:
            return []
        start = max(seq + 1 - self._events[0][0], 0)
        return self._events[start : start + limit]

    def index_of(self, seq: int) -> int:
        """Where the event numbered `seq` is (or would be) in memory."""
        if not self._events:
            return 0
        return min(max(seq - self._events[0][0], 0), len(self._events))

    def first_index_at(self, ts: int) -> int:
        """The first event at or after `ts` (µs): events are in seq order, and ts follow it."""
        lo, hi = 0, len(self._events)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._events[mid][1] < ts:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @property
    def events(self) -> list[Stored]:
        return self._events

    async def wait(self, after: int, timeout: float) -> None:
        """Until an event numbered after `after` exists, the log closes, or `timeout` passes."""
        if self.seq > after or self.closed:
            return
        if self._waiter is None or self._waiter.done():
            self._waiter = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await bounded(asyncio.shield(self._waiter), timeout)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class TelemetryManager:
    """Each session's `TelemetryLog` and CDP monitor; the settings of create and `PATCH`."""

    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions
        self._logs: dict[str, TelemetryLog] = {}
        self._monitors: dict[str, Any] = {}
        #: The last deleted session's log read back from disk, with the file's size when read.
        self._ended: tuple[str, int, TelemetryLog] | None = None
        self._flusher: asyncio.Task[None] | None = None

    def install(self) -> None:
        """Hook into the session manager: validate first, start before the browser (to see its first page)."""
        self.sessions.validators.append(self.validate)
        self.sessions.on_create.insert(0, self.on_create)
        self.sessions.on_delete.append(self.on_delete)

    # settings ---------------------------------------------------------------------

    @staticmethod
    def validate(request: BrowserCreateRequest) -> None:
        try:
            resolve_on_create(request.telemetry)
        except TelemetryRequestError as exc:
            raise bad_request(str(exc), field=exc.field) from None

    def categories(self, session: Session) -> frozenset[str]:
        return resolve_on_create(session.request.telemetry)

    async def update(self, session: Session, request: TelemetryRequest | None) -> None:
        """`PATCH /browsers/{id}` with `telemetry`: the new categories, kept in the session's record."""
        try:
            new = resolve_on_update(request, self.categories(session))
        except TelemetryRequestError as exc:
            raise bad_request(str(exc), field=exc.field) from None
        session.request = session.request.model_copy(update={"telemetry": request_for(new)})
        with contextlib.suppress(OSError):
            session.save_record()
        await self._apply(session, new)

    # session hooks ----------------------------------------------------------------

    async def on_create(self, session: Session) -> None:
        path = session.workdir.parent / FILE_NAME
        categories = self.categories(session)
        self._logs[session.session_id] = TelemetryLog.load(path, categories, writable=True)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_forever(), name="telemetry-flush")
        await self._apply(session, categories)

    async def on_delete(self, session: Session) -> None:
        monitor = self._monitors.pop(session.session_id, None)
        if monitor is not None:
            await monitor.stop()
        telemetry = self._logs.pop(session.session_id, None)
        if telemetry is not None:
            telemetry.close()

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        for telemetry in self._logs.values():
            telemetry.flush()

    async def _apply(self, session: Session, categories: frozenset[str]) -> None:
        from bbrowse.service.telemetry_cdp import CdpMonitor

        telemetry = self._logs.get(session.session_id)
        if telemetry is None:
            return
        before = telemetry.categories
        telemetry.categories = categories
        monitor = self._monitors.get(session.session_id)
        if monitor is not None and CdpMonitor.domains(before) != CdpMonitor.domains(categories):
            await monitor.stop()
            self._monitors.pop(session.session_id, None)
            monitor = None
        if monitor is None and CdpMonitor.domains(categories):
            monitor = CdpMonitor(session, telemetry)
            self._monitors[session.session_id] = monitor
            monitor.start()
        elif monitor is None and categories & {"system"}:
            monitor = CdpMonitor(session, telemetry)  # only watches the browser process
            self._monitors[session.session_id] = monitor
            monitor.start()

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            for telemetry in list(self._logs.values()):
                telemetry.flush()

    # lookups ----------------------------------------------------------------------

    def log_of(self, session: Session) -> TelemetryLog:
        """The session's log: live while it runs, read back from its file once it has ended."""
        live = self._logs.get(session.session_id)
        if live is not None:
            return live
        path = session.workdir.parent / FILE_NAME
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        if self._ended is not None and self._ended[:2] == (session.session_id, size):
            return self._ended[2]
        ended = TelemetryLog.load(path, writable=False)
        self._ended = (session.session_id, size, ended)
        return ended

    def live_log(self, id_or_name: str) -> TelemetryLog | None:
        session = self.sessions.find(id_or_name)
        if session is None or not session.active:
            return None
        return self._logs.get(session.session_id)
