"""The output of one PTY process, the way a terminal needs it: raw bytes, in order, until the exit code.

    output = PtyOutput(client, session_id, process_id, on_output=terminal.feed, size=(rows, cols))
    exit_code = await output.run()          # None: the process is gone and its status with it

Used by the shell pane and `bbrowse shell`. The output comes from the `attach` WebSocket (the only way
Kernel's VM gives a PTY's output), else from `stdout/stream`. Kernel's VM may end an attach with neither
an exit frame nor a close, so the process's `status` is asked beside it; a dropped connection is opened
again. Keystrokes are not this module's business: they go through `stdin`. Why: docs/decisions.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from bbrowse.client.attach import AttachSession
from bbrowse.client.backlog_filter import QUIET_SECONDS, BacklogFilter, RecentOutput
from bbrowse.client.errors import (
    ClientError,
    Conflict,
    ConnectionLost,
    IncompleteStream,
    LinkStalled,
    NotFound,
    ProtocolError,
    ServiceError,
    SessionGone,
    VmGoingAway,
)
from bbrowse.client.net import PING_TIMEOUT
from bbrowse.client.retry import STABLE_SECONDS, is_permanent, reconnect_delay
from bbrowse.timeouts import bounded
from bbrowse.wire import ProcessExitEvent, StdoutStreamEvent

if TYPE_CHECKING:
    from bbrowse.client.client import BrowserClient

ATTACH = "attach"
STREAM = "stream"
#: How long the nudged size stays before the real one is restored, unless output comes sooner.
NUDGE_SECONDS = 0.2
#: The longest the output loop runs before letting other tasks (keys, drawing) have the event loop.
TURN_SECONDS = 0.002
#: How often the process's status is asked while attached (Kernel's VM may send no exit frame, no close).
STATUS_POLL_SECONDS = 0.5
#: Once the status says exited: output still arriving is read until the socket has been quiet this long,
DRAIN_QUIET_SECONDS = 0.1
#: ... but no longer than this after the status answered.
DRAIN_MAX_SECONDS = 0.4
#: The status says the process is gone (no exit code): how long the connection may still say why.
GONE_GRACE_SECONDS = 1.0
#: A 409 on attach is retried this long before the stream: Kernel frees the previous attach only after
#: its old handler ended.
CONFLICT_RETRY_SECONDS = 4.0
#: Waits between those retries, then the last one.
CONFLICT_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8)

Output = Callable[[bytes], Awaitable[object] | None]


class PtyOutput:
    """Pumps one PTY process's output to `on_output`; `path` says where it comes from.

    - `attach` first: the WebSocket `process/{id}/attach`, through the session's VM when the client knows
      its route; binary frames go to `on_output` as they are, no JSON, no base64.
    - `stream` when attach is refused (a service without the route, any refusal but a missing process;
      a 409 only after `CONFLICT_RETRY_SECONDS`): `stdout/stream`, which `bbrowse serve` fills for PTYs too.

    A dropped connection is opened again at once, then with backoff, the `status` asked first so that an
    exit meanwhile ends the run with its code. A 1001 close (the VM shutting down) raises `VmGoingAway`,
    never reconnected. Where the service replays a backlog (`bbrowse serve`), the part already shown is
    dropped (`BacklogFilter`).
    """

    def __init__(
        self,
        client: BrowserClient,
        session_id: str,
        process_id: str,
        *,
        on_output: Output,
        size: tuple[int, int] | None = None,
        on_path: Callable[[str], object] = lambda path: None,
        on_error: Callable[[BaseException], object] = lambda error: None,
        give_up_after: float | None = None,
    ) -> None:
        """`size` is (rows, cols) as spawned. `on_output` may be async (awaited: back-pressure) or not.
        `on_error` hears of every connection problem that is retried; `give_up_after` bounds, in seconds,
        how long the service may stay unreachable before `run` raises (None: keep trying)."""
        self.client = client
        self.session_id = session_id
        self.process_id = process_id
        self.size = size
        self._on_output = on_output
        self._on_path = on_path
        self._on_error = on_error
        self._give_up_after = give_up_after
        self._recent = RecentOutput()
        self._term: AttachSession | None = None
        self._output_seen = asyncio.Event()
        self._last_output = 0.0
        #: Set to ask the service for the process's status now (`exited()` saw a sign of the end).
        self._check_now = asyncio.Event()
        #: The exit learned from `status` while attached (`_RUNNING` until then).
        self._status_exit: int | object | None = _RUNNING
        self._closing: set[asyncio.Future[None]] = set()
        #: "attach" or "stream" once connected; None before.
        self.path: str | None = None
        #: How many times the connection was opened again after a drop.
        self.reconnects = 0
        #: Why attach was refused, when the output comes from the stream (a 409 Conflict, say).
        self.refusal: BaseException | None = None

    @property
    def connection(self) -> AttachSession | None:
        """The attach connection while there is one."""
        return self._term

    # ------------------------------------------------------------------ size

    async def resize(self, rows: int, cols: int) -> None:
        """Set the PTY size: a `{"type":"resize"}` text frame over the attach connection when there is
        one (no request: quicker to the program's SIGWINCH), else the `resize` call."""
        self.size = (rows, cols)
        term = self._term
        if term is not None:
            with contextlib.suppress(ConnectionLost):  # the reattach sends the size again
                await term.resize(rows, cols)
                return
        await self.client.processes.resize(self.session_id, self.process_id, rows=rows, cols=cols)

    async def _nudge(self, term: AttachSession) -> None:
        """One column less, then the real size: the program gets SIGWINCH and repaints (after a reattach:
        Kernel's VM replays nothing)."""
        if self.size is None:
            return
        rows, cols = self.size
        with contextlib.suppress(ConnectionLost):
            await term.resize(rows, cols - 1 if cols > 2 else cols + 1)
            self._output_seen.clear()
            with contextlib.suppress(TimeoutError):
                await bounded(self._output_seen.wait(), NUDGE_SECONDS)
            rows, cols = self.size  # a resize meanwhile wins
            await term.resize(rows, cols)

    # ------------------------------------------------------------------ output

    async def run(self) -> int | None:
        """Pump output until the process exits; its exit code (None when it is gone without one).

        Raises `NotFound` / `SessionGone` when the process or session is gone before any exit was seen,
        and `ConnectionLost` when the service stays unreachable past `give_up_after`.
        """
        try:
            return await self._run_attach()
        except _RefusedError as refused:
            self.refusal = refused.error
            return await self._run_stream()
        finally:
            self._term = None

    async def exited(self) -> bool:
        """Whether the process has exited (or is gone), asked of the service now.

        For a caller whose `stdin`, `resize` or `kill` just failed: Kernel's VM answers those with 500
        once the program is gone, which is the exit to show, not an error. The run then ends soon."""
        if await self._exit_status() is _RUNNING:
            return False
        self._check_now.set()
        return True

    def _link_changed(self, stalled: bool) -> None:
        """The attach connection's pings: unanswered (said as `LinkStalled` to `on_error`), then answered
        again (said by `on_path` once more). The connection is kept meanwhile: nothing on its way is lost."""
        if stalled:
            self._on_error(LinkStalled(f"no answer from the service within {PING_TIMEOUT:g} s: waiting for the link"))
        elif self.path is not None:
            self._on_path(self.path)

    async def _deliver(self, data: bytes) -> None:
        self._recent.add(data)
        self._last_output = time.monotonic()
        self._output_seen.set()
        result = self._on_output(data)
        if result is not None and inspect.isawaitable(result):
            await result

    async def _run_attach(self) -> int | None:
        failures = 0
        failing_since: float | None = None
        conflicts = 0
        conflict_since: float | None = None
        while True:
            try:
                term = self.client.processes.attach(self.session_id, self.process_id)
                term.on_link = self._link_changed
                await term.__aenter__()
            except (NotFound, SessionGone) as error:
                return await self._gone(error)
            except Conflict as error:
                now = time.monotonic()
                conflict_since = now if conflict_since is None else conflict_since
                if now - conflict_since >= CONFLICT_RETRY_SECONDS:
                    raise _RefusedError(error) from None
                exited = await self._exit_status()
                if exited is not _RUNNING:
                    return exited  # type: ignore[return-value]
                await asyncio.sleep(CONFLICT_DELAYS[min(conflicts, len(CONFLICT_DELAYS) - 1)])
                conflicts += 1
                continue
            except ServiceError as error:
                if not is_permanent(error):
                    failures, failing_since = await self._wait_to_retry(error, failures, failing_since)
                    continue
                raise _RefusedError(error) from None
            except ProtocolError as error:  # answered, but not as a WebSocket: no attach here
                raise _RefusedError(error) from None
            except ConnectionLost as error:
                failures, failing_since = await self._wait_to_retry(error, failures, failing_since)
                continue
            failing_since = None
            conflicts, conflict_since = 0, None
            opened = time.monotonic()
            try:
                code = await self._pump_attach(term)
            except VmGoingAway:
                raise
            except (ConnectionLost, IncompleteStream, ProtocolError) as error:
                self._on_error(error)
                exited = await self._exit_status()
                if exited is not _RUNNING:
                    return exited  # type: ignore[return-value]
                self.reconnects += 1
                if time.monotonic() - opened > STABLE_SECONDS:
                    failures = 0  # a connection that held a while: reconnect at once; one that flaps backs off
                failures, failing_since = await self._wait_to_retry(None, failures, failing_since)
                continue
            finally:
                self._term = None
                self._close_soon(term)
            return code

    async def _pump_attach(self, term: AttachSession) -> int | None:
        self._term = term
        if self.path != ATTACH or self.reconnects:  # said again after a reconnect: the link is back
            self.path = ATTACH
            self._on_path(ATTACH)
        nudge = asyncio.ensure_future(self._nudge(term)) if self.reconnects else None
        self._status_exit = _RUNNING
        watcher = asyncio.ensure_future(self._watch_exit())
        reader = asyncio.ensure_future(self._read_attach(term))
        try:
            # The watcher ends first only with an exit found by `status`: the reader, still waiting for
            # frames that will not come (Kernel neither sends the exit frame nor closes), is stopped.
            await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done() and self._status_exit is None:
                # Gone rather than exited (a deleted session): the connection may yet say why (a 1001).
                await asyncio.wait({reader}, timeout=GONE_GRACE_SECONDS)
            if not reader.done():
                reader.cancel()
                await asyncio.wait({reader})
            if not reader.cancelled():
                reader.result()  # the reader's error, if any
        finally:
            for task in (reader, watcher, nudge):
                if task is not None:
                    task.cancel()
        if term.exit_code is None:
            if self._status_exit is not _RUNNING:
                return self._status_exit  # type: ignore[return-value]
            raise IncompleteStream(f"attach {term.url}: ended without the exit frame")
        return term.exit_code

    async def _read_attach(self, term: AttachSession) -> None:
        frames = aiter(term)
        if not self.reconnects or await self._filter_backlog(frames):
            turn = time.perf_counter()
            async for data in frames:
                await self._deliver(data)
                # Frames already queued are read without suspending: under a flood this loop would
                # keep the event loop from keys and drawing. Let them run every few milliseconds.
                now = time.perf_counter()
                if now - turn > TURN_SECONDS:
                    await asyncio.sleep(0)
                    turn = time.perf_counter()

    def _close_soon(self, term: AttachSession) -> None:
        """Close `term` without waiting for the service's close frame (up to the close timeout): the
        exit is shown at once. The task is kept until done (asyncio holds only weak references)."""
        closing = asyncio.ensure_future(term.close())
        self._closing.add(closing)
        closing.add_done_callback(_settled(self._closing))

    async def _watch_exit(self) -> None:
        """Ask `status` every `STATUS_POLL_SECONDS` (or at once when `exited()` asks); on an exit, let the
        output on its way arrive, then return (the read loop is then stopped)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await bounded(self._check_now.wait(), STATUS_POLL_SECONDS)
            self._check_now.clear()
            exited = await self._exit_status()
            if exited is _RUNNING:
                continue
            answered = time.monotonic()
            while True:
                now = time.monotonic()
                quiet_for = now - self._last_output
                if quiet_for >= DRAIN_QUIET_SECONDS or now - answered >= DRAIN_MAX_SECONDS:
                    break
                await asyncio.sleep(DRAIN_QUIET_SECONDS - quiet_for)
            self._status_exit = exited
            return

    async def _filter_backlog(self, source: AsyncIterator[bytes]) -> bool:
        """After a reconnect: hold output back until a repeated backlog, if any, is recognised and dropped.

        False when `source` ended meanwhile. The read in flight is never cancelled on a pause (that
        would close the async generator under it): the pause only decides, and the read goes on.
        """
        backlog = BacklogFilter(self._recent.tail())
        pending: asyncio.Future[bytes] | None = None
        try:
            while not backlog.done:
                pending = asyncio.ensure_future(anext(source))
                done, _ = await asyncio.wait({pending}, timeout=QUIET_SECONDS)
                if not done:
                    if rest := backlog.flush():
                        await self._deliver(rest)
                    break
                read, pending = pending, None
                try:
                    data = backlog.feed(read.result())
                except StopAsyncIteration:
                    data = backlog.flush()
                    if data:
                        await self._deliver(data)
                    return False
                if data:
                    await self._deliver(data)
            if pending is not None:
                last, pending = pending, None
                try:
                    data = await last
                except StopAsyncIteration:
                    return False
                await self._deliver(data)
            return True
        finally:
            if pending is not None:
                pending.cancel()

    async def _run_stream(self) -> int | None:
        failures = 0
        failing_since: float | None = None
        first = True
        while True:
            try:
                stream = self.client.processes.stdout_stream(self.session_id, self.process_id)
                if self.path != STREAM:  # said before the response: Kernel sends its headers with the first event
                    self.path = STREAM
                    self._on_path(STREAM)
                async with stream as events:
                    failures, failing_since = 0, None
                    ending = _ExitHolder()
                    chunks = _output_of(events, ending)
                    if first or await self._filter_backlog(chunks):
                        async for data in chunks:
                            await self._deliver(data)
                    first = False
                    if ending.code is _RUNNING:
                        raise IncompleteStream(
                            f"stdout stream of process {self.process_id}: ended without the exit event")
                    return ending.code  # type: ignore[return-value]
            except (NotFound, SessionGone) as error:
                try:
                    return await self._gone(error)
                except _RefusedError:
                    raise error from None
            except ServiceError as error:
                if is_permanent(error):
                    raise
                failures, failing_since = await self._wait_to_retry(error, failures, failing_since)
            except (ConnectionLost, IncompleteStream) as error:
                # Kernel: a stream opened after the exit may end without the exit event; the status has it.
                exited = await self._exit_status()
                if exited is not _RUNNING:
                    return exited  # type: ignore[return-value]
                self.reconnects += 1
                first = False
                failures, failing_since = await self._wait_to_retry(error, failures, failing_since)

    # ------------------------------------------------------------------ endings and retries

    async def _exit_status(self) -> int | object | None:
        """After a drop: the exit code if the process has exited, None if it is gone, `_RUNNING` otherwise
        (or when the service cannot say right now: the reconnect will find out)."""
        try:
            status = await self.client.processes.status(self.session_id, self.process_id)
        except (NotFound, SessionGone):
            return None
        except ClientError:
            return _RUNNING
        if status.state == "running":
            return _RUNNING
        return status.exit_code

    async def _gone(self, error: ServiceError) -> int | None:
        """The process (or session) is unknown: its status may still say how it ended."""
        exited = await self._exit_status()
        if exited is _RUNNING:  # status knows it though attach did not: a service without attach
            raise _RefusedError(error)
        if exited is None and isinstance(error, SessionGone):
            raise error
        return exited  # type: ignore[return-value]

    async def _wait_to_retry(
        self, error: BaseException | None, failures: int, failing_since: float | None,
    ) -> tuple[int, float]:
        now = time.monotonic()
        failing_since = now if failing_since is None else failing_since
        if error is not None:
            self._on_error(error)
            if self._give_up_after is not None and now - failing_since > self._give_up_after:
                raise error
        await asyncio.sleep(reconnect_delay(failures))
        return failures + 1, failing_since


def _settled(pending: set[asyncio.Future[None]]) -> Callable[[asyncio.Future[None]], None]:
    def done(task: asyncio.Future[None]) -> None:
        pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a failed close of a finished connection says nothing new

    return done


class _ExitHolder:
    def __init__(self) -> None:
        self.code = _RUNNING


async def _output_of(events: AsyncIterator[StdoutStreamEvent], ending: _ExitHolder) -> AsyncIterator[bytes]:
    """The bytes of a `stdout/stream`; the exit code goes to `ending`."""
    async for event in events:
        if isinstance(event, ProcessExitEvent):
            ending.code = event.exit_code
            return
        yield event.data()


class _RefusedError(Exception):
    """Attach was refused for this process: use `stdout/stream`."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


_RUNNING = object()
