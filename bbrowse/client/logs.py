"""Log streams: a file on the instance (`source=path`) or a supervised program (`source=supervisor`).

`Logs.follow` follows a log across drops and stalls, for the app's log panes and `bbrowse logs` alike:
a stream quiet for `PROBE_AFTER_SECONDS` is checked by a one-shot call (Kernel's SSE sends no heartbeat,
so silence proves nothing); a call unanswered within `PROBE_TIMEOUT_SECONDS` means the link stalled, and
the stream is dropped. Reconnects follow `retry.reconnect_delay`. Each gap is marked (`LogGap`), and for a
file the lines written meanwhile are read back with `read_file` (the stream has no offset): the file's
lines after the last ones shown, in order, then the new stream with the lines both carried skipped. A
service that ignores `tail` (Kernel's VM) gets the same join at the start: the file's last lines are read
once the stream has begun, so no line written between the two is missed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict, Unpack

from bbrowse.client.decode import json_body, validate
from bbrowse.client.errors import ClientError, IncompleteStream, LinkStalled, ProtocolError
from bbrowse.client.retry import STABLE_SECONDS, is_permanent, reconnect_delay
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Transport, segment
from bbrowse.timeouts import bounded
from bbrowse.wire import LOGS_SOURCE_NOT_AVAILABLE, LogEvent, LogSource

#: A one-shot read of a supervised program's log ends after this long without an event.
QUIET_SECONDS = 2.0
#: A followed stream quiet this long is checked with a call; one unanswered this long means a stalled link
#: (a stall is noticed within 4 + 4 s).
PROBE_AFTER_SECONDS = 4.0
PROBE_TIMEOUT_SECONDS = 4.0
#: A stream without an answer or a refusal this long after its request is said to be live.
LIVE_GRACE_SECONDS = 0.2
#: Lines shown last, kept to find the place in the file where a gap starts.
SEEN_LINES = 8
#: After a reconnect, the file is read after the new stream's first line, or after this long without one.
FIRST_LINE_WAIT_SECONDS = 1.0
#: After a reconnect, the new stream's lines are compared with the gap's read back for this long at most.
OVERLAP_WAIT_SECONDS = 1.0
#: The longest gap read back from a file (its last lines when more were written meanwhile).
MAX_GAP_LINES = 200_000

#: The one line Kernel's VM sends, then ends, for a log it does not have (a supervisor, a file it cannot open).
KERNEL_REFUSALS = (LOGS_SOURCE_NOT_AVAILABLE, "failed to open log path")
#: What `Logs.follow` tells `on_state`: the stream is being opened, flowing, or the link is down.
CONNECTING, LIVE, STALLED, RECONNECTING = "connecting", "live", "stalled", "reconnecting"


class LogOf(TypedDict, total=False):
    """Which log, as every `Logs` call takes it: a file on the instance (`source=path`, the default, with
    `path`) or a supervised program (`source=supervisor`, with `supervisor_process`)."""

    source: LogSource | str
    path: str | None
    supervisor_process: str | None


def _log_params(log: LogOf) -> dict[str, Any]:
    """The query parameters naming `log`."""
    params: dict[str, Any] = {"source": str(log.get("source", LogSource.PATH))}
    if (path := log.get("path")) is not None:
        params["path"] = path
    if (supervisor := log.get("supervisor_process")) is not None:
        params["supervisor_process"] = supervisor
    return params


@dataclass(frozen=True)
class LogGap:
    """A mark in a followed log where the link was down for `seconds`. `recovered`: how many of the lines
    written meanwhile follow (read back from the file); None when they cannot be (a supervised program's log)."""

    seconds: float
    recovered: int | None
    #: The file was truncated or replaced meanwhile: what follows is its content now, from its start.
    rewritten: bool = False


class Logs:
    def __init__(self, transport: Transport, read_file: Callable[[str, str], AsyncIterator[bytes]] | None = None) \
            -> None:
        self._t = transport
        self._read_file = read_file

    async def existing(self, id_or_name: str, *, tail: int | None = None, **log: Unpack[LogOf]) \
            -> AsyncIterator[LogEvent]:
        """The lines the log has now, then the end, on any service: a one-shot read.

        Kernel's VM never ends a `follow=false` stream (it polls the file until the client leaves) and
        keeps a partial last line back, so a file (`source=path`) is read with `read_file` and split into
        lines here, all of them, each stamped with the time it was read. A supervised program's log is
        streamed with `follow=false` and ends when the service ends it or after `QUIET_SECONDS` without
        an event. `tail` keeps the last `tail` lines."""
        path = log.get("path")
        if str(log.get("source", LogSource.PATH)) == LogSource.PATH and path is not None \
                and self._read_file is not None:
            lines = self._file_lines(id_or_name, path)
        else:
            lines = self._quiet_end(self.stream(id_or_name, follow=False, tail=tail, **log))
        if tail is None:
            async for event in lines:
                yield event
            return
        kept: collections.deque[LogEvent] = collections.deque(maxlen=tail)
        async for event in lines:
            kept.append(event)
        for event in kept:
            yield event

    async def _file_lines(self, id_or_name: str, path: str) -> AsyncIterator[LogEvent]:
        assert self._read_file is not None  # checked by `existing`
        pending = b""
        async for chunk in self._read_file(id_or_name, path):
            pending += chunk
            *whole, pending = pending.split(b"\n")
            now = datetime.now(UTC)
            for line in whole:
                yield LogEvent(message=line.decode("utf-8", "surrogateescape"), timestamp=now)
        if pending:
            yield LogEvent(message=pending.decode("utf-8", "surrogateescape"), timestamp=datetime.now(UTC))

    @staticmethod
    async def _quiet_end(stream: Stream[LogEvent]) -> AsyncIterator[LogEvent]:
        async with contextlib.aclosing(stream):
            events = aiter(stream)
            while True:
                try:
                    event = await bounded(anext(events), QUIET_SECONDS)
                except (StopAsyncIteration, TimeoutError):
                    return
                yield event

    def stream(self, id_or_name: str, *, follow: bool = True, tail: int | None = None, retry: bool = True,
               **log: Unpack[LogOf]) -> Stream[LogEvent]:
        """One `LogEvent` per line. With `follow=False` the iteration ends after the existing lines;
        with `follow=True` it starts at the end of the log and runs until closed. Unknown path or name:
        `NotFound` on `async with` or the first iteration. `tail` (a bbrowse serve extension, not sent
        unless given) first sends the last `tail` existing lines. `retry=False`: a failure to open is raised at
        once (for a caller that reconnects on its own and must know of every gap)."""
        params = {**_log_params(log), "follow": "true" if follow else "false"}
        if tail is not None:
            params["tail"] = tail
        return Stream(self._events(id_or_name, params, retry))

    async def _events(self, id_or_name: str, params: dict[str, Any], retry: bool = True) \
            -> AsyncGenerator[LogEvent, None]:
        what = f"log stream {params.get('path') or params.get('supervisor_process') or ''}".strip()
        route = f"/browsers/{segment(id_or_name)}/logs/stream"
        async with self._t.open_stream("GET", route, params=params, sse=True, idempotent=retry) as response:
            yield OPENED
            async for payload in iter_sse_json(response, what):
                yield validate(LogEvent, payload, what)

    def follow(
        self,
        id_or_name: str,
        *,
        tail: int | None = None,
        tail_from_file: bool = False,
        on_state: Callable[[str, str | None], object] = lambda state, reason: None,
        **log: Unpack[LogOf],
    ) -> AsyncIterator[LogEvent | LogGap]:
        """Follow a log until closed, across drops and stalls: `LogEvent`s, and a `LogGap` where the link was
        down, followed (for a file) by the lines written meanwhile. `on_state(state, reason)` hears of each
        change (`CONNECTING`, `LIVE`, `STALLED`, `RECONNECTING`). A refusal that would not change on another try
        (the file or the session missing) is raised. A stream that answers only "logs source not available"
        or "failed to open log path" (Kernel's VM) yields that line and ends.

        `tail`: the last `tail` existing lines first. `tail_from_file`: the service ignores `tail` (Kernel's VM),
        so a file's last lines are read with `read_file` once the stream has begun, then the stream's lines
        follow, the lines both carried once."""
        return _Follower(self, id_or_name, log, tail, tail_from_file, on_state).run()

    async def supervisors(self, id_or_name: str) -> list[str]:
        """bbrowse serve extension: the names `source=supervisor` accepts (`bbrowse` first).

        Kernel's cloud has no such route and answers `NotFound`."""
        response = await self._t.request("GET", f"/browsers/{segment(id_or_name)}/logs/supervisors", idempotent=True)
        names = json_body(response, "list supervisors")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ProtocolError(f"list supervisors: expected an array of names, got {names!r:.200}")
        return names


class _Follower:
    def __init__(self, logs: Logs, id_or_name: str, log: LogOf, tail: int | None, tail_from_file: bool,
                 on_state: Callable[[str, str | None], object]) -> None:
        self.logs = logs
        self.id_or_name = id_or_name
        self.log = log
        self.path = log.get("path")
        self.tail = tail
        self.on_state = on_state
        self.by_file = (str(log.get("source", LogSource.PATH)) == LogSource.PATH and self.path is not None
                        and logs._read_file is not None)
        #: The file's last `tail` lines are still to be read (the service ignores `tail`), joined to the stream.
        self.history_pending = self.by_file and tail_from_file and bool(tail)
        #: The last lines shown (non-empty), to find where a gap starts in the file.
        self.seen: collections.deque[str] = collections.deque(maxlen=SEEN_LINES)
        #: The file's size when following began: a gap before any line was shown starts there.
        self.start_size: int | None = None
        #: `LIVE` was said for the stream open now.
        self.live = False

    def _stream(self, tail: int | None) -> Stream[LogEvent]:
        return self.logs.stream(self.id_or_name, follow=True, tail=tail, retry=False, **self.log)

    async def _probe(self) -> bool:
        route = f"/browsers/{segment(self.id_or_name)}"
        if self.path is not None:
            return await self.logs._t.probe(f"{route}/fs/file_info", params={"path": self.path},
                                            timeout=PROBE_TIMEOUT_SECONDS)
        return await self.logs._t.probe(route, timeout=PROBE_TIMEOUT_SECONDS)

    async def _size(self) -> int | None:
        if self.path is None:
            return None
        try:
            response = await self.logs._t.request("GET", f"/browsers/{segment(self.id_or_name)}/fs/file_info",
                                                  params={"path": self.path}, idempotent=True)
            body = json_body(response, "file info")
        except ClientError:
            return None
        size = body.get("size_bytes") if isinstance(body, dict) else None
        return size if isinstance(size, int) else None

    async def run(self) -> AsyncIterator[LogEvent | LogGap]:
        failures = 0
        lost_at: float | None = None
        first = True
        self.on_state(CONNECTING, None)
        if self.by_file and not self.history_pending:
            self.start_size = await self._size()
        while True:
            queue: asyncio.Queue[LogEvent | BaseException | None] = asyncio.Queue()
            tail = self.tail if first and not self.history_pending else None
            reader = asyncio.ensure_future(self._read(self._stream(tail), queue))
            opened = time.monotonic()
            try:
                if lost_at is not None or self.history_pending:
                    async for item in self._join(lost_at, queue):
                        self.history_pending = False
                        if isinstance(item, LogEvent) and item.message:
                            self.seen.append(item.message)
                        yield item
                    lost_at = None
                first = False
                async for event in self._events(queue):
                    if event.message:
                        self.seen.append(event.message)
                    yield event
                return  # the service ended the stream on purpose (see `_events`)
            except LinkStalled as error:
                reason = str(error)
                self.on_state(STALLED, reason)
            except ClientError as error:
                if is_permanent(error):
                    raise
                reason = str(error)
                self.on_state(RECONNECTING, reason)
            finally:
                self.live = False
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader
            if lost_at is None:
                lost_at = time.monotonic()
            if time.monotonic() - opened > STABLE_SECONDS:
                failures = 0
            waited = 0.0
            while True:  # wait for the link: a stream opened through a stalled one would hang
                # a probe left unanswered for seconds has waited its turn: the next one goes at once
                await asyncio.sleep(max(0.0, reconnect_delay(failures) - waited))
                failures += 1
                asked = time.monotonic()
                if await self._probe():
                    break
                waited = time.monotonic() - asked

    async def _read(self, stream: Stream[LogEvent], queue: asyncio.Queue[LogEvent | BaseException | None]) -> None:
        try:
            async with stream as events:
                await queue.put(_OPENED)
                async for event in events:
                    await queue.put(event)
            await queue.put(None)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # handed to the follower, which decides
            await queue.put(error)

    async def _next(self, queue: asyncio.Queue[LogEvent | BaseException | None]) -> LogEvent | None:
        """The next event; None at the stream's end. Quiet for too long: the link is checked. The stream
        counts as live once it answered, or `LIVE_GRACE_SECONDS` after its request without a refusal (Kernel
        sends the headers only with the first event)."""
        quiet_since = time.monotonic()
        while True:
            wait = PROBE_AFTER_SECONDS - (time.monotonic() - quiet_since)
            if not self.live:
                wait = min(wait, LIVE_GRACE_SECONDS)
            try:
                item = await bounded(queue.get(), max(wait, 0.001))
            except TimeoutError:
                if not self.live:
                    self._say_live()
                    continue
                if not await self._probe():
                    raise LinkStalled(f"no answer from the service within {PROBE_TIMEOUT_SECONDS:g} s") from None
                quiet_since = time.monotonic()
                continue
            if isinstance(item, BaseException):
                raise item
            self._say_live()
            if item is _OPENED:
                continue
            return item

    def _say_live(self) -> None:
        if not self.live:
            self.live = True
            self.on_state(LIVE, None)

    async def _events(self, queue: asyncio.Queue[LogEvent | BaseException | None]) -> AsyncIterator[LogEvent]:
        count = 0
        while True:
            event = await self._next(queue)
            if event is None:
                if count == 1 and self.seen and self.seen[-1].strip() in KERNEL_REFUSALS:
                    return  # Kernel's VM said once that it has no such log, and ended: nothing to follow
                raise IncompleteStream("log stream: ended by the service")
            count += 1
            yield event

    async def _join(self, lost_at: float | None, queue: asyncio.Queue[LogEvent | BaseException | None]) \
            -> AsyncIterator[LogEvent | LogGap]:
        """Where a new stream meets the lines shown. After a gap (`lost_at`: when the link was lost): its mark,
        then for a file the lines written meanwhile, read back. At the start of a file whose service ignores
        `tail`: its last `tail` lines, read back. The new stream's copies of those lines are skipped."""
        history = self.history_pending
        if not self.by_file:
            if lost_at is not None:
                yield LogGap(time.monotonic() - lost_at, None)
            return
        # The file is read once the new stream has begun: after its first line (then the lines read end with
        # that line and the few written since), or after `FIRST_LINE_WAIT_SECONDS` without one (a quiet log:
        # the stream has begun by then, and its first lines that repeat the end of the file are skipped).
        first: LogEvent | None = None
        ended: LogEvent | BaseException | None = _OPENED
        deadline = time.monotonic() + FIRST_LINE_WAIT_SECONDS
        while first is None and ended is _OPENED:
            try:
                item = await bounded(queue.get(), max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                break
            if item is None or isinstance(item, BaseException):
                ended = item
            elif item is not _OPENED:
                first = item
        lines, rewritten = await self._lines_since_seen(max(MAX_GAP_LINES, self.tail or 0) if history
                                                        else MAX_GAP_LINES)
        # The stream's lines that the file read carried too: wait (briefly) until they tell which they are.
        early: list[LogEvent] = [first] if first is not None else []
        anchored = first is not None and first.message != "" and first.message in lines
        overlap_deadline = time.monotonic() + OVERLAP_WAIT_SECONDS
        while ended is _OPENED and lines:
            messages = [e.message for e in early if e.message]
            if anchored:
                skip = _overlap_from(lines, messages)
                if skip <= len(messages):
                    break
            elif not _overlap_possible(lines, messages):
                break
            try:
                item = await bounded(queue.get(), max(overlap_deadline - time.monotonic(), 0.001))
            except TimeoutError:
                break
            if item is None or isinstance(item, BaseException):
                ended = item
            elif item is not _OPENED:
                early.append(item)
        if ended is not _OPENED:
            await queue.put(ended)  # the reader has ended: nothing comes after it
        messages = [e.message for e in early if e.message]
        skip = _overlap_from(lines, messages) if anchored else _overlap(lines, messages)
        carried = lines[:len(lines) - skip]
        if history:
            carried = carried[-self.tail:] if self.tail else []
        elif lost_at is not None:
            yield LogGap(time.monotonic() - lost_at, len(carried), rewritten)
        now = datetime.now(UTC)
        for line in carried:
            yield LogEvent(message=line, timestamp=now)
        for event in early:  # the stream's copies of the lines left out of `carried`
            yield event

    async def _lines_since_seen(self, limit: int = MAX_GAP_LINES) -> tuple[list[str], bool]:
        """The file's complete, non-empty lines after the last ones shown, and whether those were not found
        (the file was truncated or replaced: then all its lines), at most the last `limit`."""
        assert self.logs._read_file is not None and self.path is not None
        kept: collections.deque[str] = collections.deque(maxlen=limit)
        anchor = list(self.seen)[-3:]
        window: collections.deque[str] = collections.deque(maxlen=max(len(anchor), 1))
        found = False
        offset = 0
        pending = b""
        start = self.start_size if not anchor else None
        async for chunk in self.logs._read_file(self.id_or_name, self.path):
            pending += chunk
            *whole, pending = pending.split(b"\n")  # a partial last line is left for the stream
            for raw in whole:
                begins = offset
                offset += len(raw) + 1
                if not raw or (start is not None and begins < start):
                    continue
                line = raw.decode("utf-8", "surrogateescape")
                kept.append(line)
                window.append(line)
                if anchor and line == anchor[-1] and list(window) == anchor:
                    kept.clear()  # the gap starts after the last place the lines shown last are found
                    found = True
        if not anchor:
            return list(kept), bool(start and offset < start)
        return list(kept), not found


def _overlap_from(lines: list[str], early: list[str]) -> int:
    """How many of `early` (the new stream's first lines, read back after the first of them arrived) are the end
    of `lines`: the smallest k with lines[-k] == early[0] whose lines agree with `early` as far as both go (the
    file was read just after that line, so it is one of the last; a line that repeats earlier in the file is
    not taken for it). 0 when none."""
    n = len(lines)
    if not early:
        return 0
    for k in range(1, n + 1):
        if lines[n - k] == early[0] and lines[n - k:n - k + min(k, len(early))] == early[:k]:
            return k
    return 0


def _overlap(lines: list[str], early: list[str]) -> int:
    """How many of `early` (the new stream's first lines) are the end of `lines` (the gap read back): the
    largest k with early[:k] == lines[-k:]."""
    for k in range(min(len(lines), len(early)), 0, -1):
        if early[:k] == lines[-k:]:
            return k
    return 0


def _overlap_possible(lines: list[str], early: list[str]) -> bool:
    """Whether more of the new stream's lines could still turn out to repeat the end of `lines`: some
    suffix of `lines` longer than `early` begins with `early`."""
    n = len(lines)
    return any(lines[n - k:n - k + len(early)] == early for k in range(len(early) + 1, n + 1))


_OPENED: Any = object()
