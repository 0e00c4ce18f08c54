"""Processes of the local service: spawn, exec, stdin, signals, resize, status, and their lifecycle.

A `ManagedProcess` owns its child's descriptors: output is read with `loop.add_reader` into an
`OutputLog`; the exit is noticed through a pidfd and the child reaped at once. A process is running,
then reaped (exit code known), then finished once its output is drained (EOF on every descriptor, or
OUTPUT_DRAIN_SECONDS after the exit when a grandchild holds them), then forgotten after RETAIN_SECONDS
(404; at once when its session ends). An exit by signal N reports 128 + N, as shells do. Signals go to
the child's whole process group (each child leads its own session).

`ProcessPolicy` holds what `--kernel-compat` changes to behave as Kernel's in-VM server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import psutil

from bbrowse.service.errors import ServiceError, bad_request, internal_error, not_found
from bbrowse.service.process_channel import GO_READ_BYTES, SharedChannel
from bbrowse.service.process_launch import Child, launch, set_winsize
from bbrowse.service.process_output import MAX_LAG_BYTES, STDERR, STDOUT, OutputLog
from bbrowse.service.sandbox import sandbox_of
from bbrowse.service.sessions import Session
from bbrowse.timeouts import bounded
from bbrowse.wire import ExecRequest, ExecResult, ProcessStatus, SpawnRequest, encode_b64

log = logging.getLogger("bbrowse.processes")

#: Largest single read from a process, and the largest chunk broadcast to subscribers.
READ_CHUNK = 64 * 1024
#: How long after the exit output is still awaited from descriptors a grandchild may hold open.
OUTPUT_DRAIN_SECONDS = 0.25
#: At most this much is taken from each descriptor when output is cut off after the exit.
FINAL_DRAIN_BYTES = 4 << 20
#: `timeout_sec` sends TERM, then KILL this long after if the process is still there.
TIMEOUT_KILL_GRACE_SECONDS = 2.0
#: Session deletion and shutdown: HUP/TERM, then KILL this long after.
TERMINATE_GRACE_SECONDS = 1.0
#: A stdin write that makes no progress for this long returns the count written so far.
STDIN_STALL_SECONDS = 10.0
#: How long an exited process stays queryable (status, backlog, exit event).
RETAIN_SECONDS = 60.0
#: `exec` keeps at most this much of each of stdout and stderr; the rest is read and discarded.
EXEC_CAPTURE_LIMIT = 32 << 20

SIGNALS: dict[str, signal.Signals] = {
    "TERM": signal.SIGTERM,
    "KILL": signal.SIGKILL,
    "INT": signal.SIGINT,
    "HUP": signal.SIGHUP,
}


def exit_code_from(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode


@dataclass(frozen=True)
class ProcessPolicy:
    """What differs between bbrowse's generous default and Kernel's VM (`--kernel-compat`)."""

    #: How long an exited process stays queryable (status, final output, exit event) before 404.
    retain_seconds: float = RETAIN_SECONDS
    #: The exit code reported for a process ended by a signal; None: `128 + N`, as shells report it.
    signal_exit_code: int | None = None
    #: PTY output only over `attach`: nothing on `stdout/stream` but the exit event, the PTY read only while
    #: a client is attached (what it writes meanwhile waits in the kernel's buffer, then blocks it), no
    #: backlog kept by the service, and `attach` refused (400) for a process without a PTY.
    pty_output_only_attached: bool = False
    #: The rest of Kernel's VM (`process.go`), harsh branch of each race: PTY output still unread at the
    #: exit is dropped; pipe output goes through one bounded `SharedChannel` its readers split; `spawn`
    #: ignores `timeout_sec`; an `exec` past its timeout is SIGKILLed and answers 500; `kill` signals the
    #: leader only; `kill`, `stdin` and `resize` after the exit answer 500; `attach` ends as Go's does.
    kernel_vm: bool = False

    def exit_code(self, returncode: int) -> int:
        if returncode < 0 and self.signal_exit_code is not None:
            return self.signal_exit_code
        return exit_code_from(returncode)


DEFAULT_POLICY = ProcessPolicy()
#: Kernel's in-VM server: 10 s retention, -1 after a signal (Go's `WaitStatus.ExitStatus()`), attach only.
KERNEL_COMPAT_POLICY = ProcessPolicy(
    retain_seconds=10.0, signal_exit_code=-1, pty_output_only_attached=True, kernel_vm=True
)


class StdinClosedError(Exception):
    """The process's stdin can no longer be written (it exited or closed it)."""


#: How far a reader of a PTY may fall behind before it skips ahead. A terminal shows its last screen,
#: so a reader stuck behind a flood (`yes`, `cat big.log`) would only replay output that scrolls away
#: unseen, while ctrl-c's effect waits behind it; 8 MiB drains in well under a second.
TTY_MAX_LAG_BYTES = 8 << 20


class ManagedProcess:
    """One spawned (or exec'd) child: its descriptors, output, exit, and the controls on it."""

    def __init__(
        self,
        child: Child,
        command: str,
        sink: Callable[[int, bytes], None] | None = None,
        policy: ProcessPolicy = DEFAULT_POLICY,
    ) -> None:
        self.process_id = str(uuid.uuid4())
        self.child = child
        self.pid = child.pid
        self.tty = child.tty
        self.command = command
        self.policy = policy
        self.started_at = datetime.now(UTC)
        #: The PTY is read only while a client is attached (Kernel's VM): nothing is kept for later readers.
        self.reads_only_attached = child.tty and policy.pty_output_only_attached
        if self.reads_only_attached:
            self.output = OutputLog(backlog_bytes=0, max_lag_bytes=TTY_MAX_LAG_BYTES, hold_first=False)
        else:
            self.output = OutputLog(max_lag_bytes=TTY_MAX_LAG_BYTES if child.tty else MAX_LAG_BYTES)
        #: Kernel's VM: the one channel every `stdout/stream` reader takes from (pipe chunks, the exit event).
        self.channel: SharedChannel | None = SharedChannel(self._pause_pipes, self._resume_pipes) \
            if policy.kernel_vm and sink is None else None
        if self.channel is not None and not child.tty:
            sink = self.channel.put
        self._read_limit = GO_READ_BYTES if self.channel is not None else READ_CHUNK
        self._paused = False
        self.exit_code: int | None = None
        self.finished = asyncio.Event()
        #: Set while no WebSocket `attach` is connected (one at a time); see `routes.processes.attach`.
        self.detached = asyncio.Event()
        self.detached.set()
        self._sink = sink or self.output.append
        self._loop = asyncio.get_running_loop()
        self._readers: dict[int, int] = {}
        self._stdin_fd = child.master if child.tty else child.stdin
        self._stdin_lock = asyncio.Lock()
        self._write_waiter: asyncio.Future | None = None
        self._pidfd: int | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self._on_finish: list[Callable[[ManagedProcess], None]] = []
        self._ps: psutil.Process | None = None
        self._cpu_sample = (time.monotonic(), 0.0)
        self._pty_eof = False

    # start ---------------------------------------------------------------------

    def start(self, timeout_sec: int | None) -> None:
        child = self.child
        if child.tty:
            if not self.reads_only_attached:
                self._watch(child.master, STDOUT)
        else:
            self._watch(child.stdout, STDOUT)
            self._watch(child.stderr, STDERR)
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except OSError:  # kernel without pidfd: poll instead
            self._timers.append(self._loop.call_later(0.05, self._poll_exit))
        else:
            self._loop.add_reader(self._pidfd, self._on_exit)
        if timeout_sec:
            self._timers.append(self._loop.call_later(timeout_sec, self._on_timeout, timeout_sec))

    def on_finish(self, callback: Callable[[ManagedProcess], None]) -> None:
        if self.finished.is_set():
            callback(self)
        else:
            self._on_finish.append(callback)

    # output --------------------------------------------------------------------

    def _watch(self, fd: int | None, stream: int) -> None:
        if fd is not None:
            self._readers[fd] = stream
            self._loop.add_reader(fd, self._on_readable, fd, stream)

    def _read_available(self, fd: int, limit: int) -> tuple[list[bytes], bool]:
        """Read what is there now, up to `limit` bytes: (pieces, at end of file)."""
        parts: list[bytes] = []
        size = 0
        while size < limit:
            try:
                data = os.read(fd, min(READ_CHUNK, limit - size))
            except BlockingIOError:
                return parts, False
            except OSError:  # EIO on a PTY master once the terminal's last user has gone
                return parts, True
            if not data:
                return parts, True
            parts.append(data)
            size += len(data)
            if not self.tty:  # a pipe gives all it has in one read; a PTY hands out ~4 KiB at a time
                break
        return parts, False

    def _drain(self, fd: int, stream: int, limit: int = FINAL_DRAIN_BYTES) -> None:
        """Everything still buffered (a grandchild holding the descriptor may add more: bounded)."""
        taken = 0
        while taken < limit:
            parts, eof = self._read_available(fd, READ_CHUNK)
            for part in parts:
                self._sink(stream, part)
                taken += len(part)
            if eof or not parts:
                return

    def _on_readable(self, fd: int, stream: int) -> None:
        parts, eof = self._read_available(fd, self._read_limit)
        if parts:
            self._sink(stream, parts[0] if len(parts) == 1 else b"".join(parts))
        if eof:
            if fd == self.child.master:
                self._pty_eof = True
            self._unwatch(fd)
            if self.exit_code is not None and not self._readers:
                self._finish()

    def _unwatch(self, fd: int) -> None:
        if self._readers.pop(fd, None) is not None:
            self._loop.remove_reader(fd)

    def _pause_pipes(self) -> None:
        """The shared channel is full (Kernel's VM): stop reading, so a program that keeps writing blocks."""
        if not self._paused:
            self._paused = True
            for fd in self._readers:
                self._loop.remove_reader(fd)

    def _resume_pipes(self) -> None:
        if self._paused:
            self._paused = False
            for fd, stream in self._readers.items():
                self._loop.add_reader(fd, self._on_readable, fd, stream)

    def start_reading_pty(self) -> None:
        """An attach began (Kernel's VM mode): read the PTY from now on, for that client only."""
        master = self.child.master
        if self.reads_only_attached and master is not None and master not in self._readers and not self._pty_eof:
            self._watch(master, STDOUT)

    def stop_reading_pty(self) -> None:
        """The attach ended (Kernel's VM mode): leave what the program writes in the PTY until the next one."""
        if self.reads_only_attached and self.child.master is not None and not self.finished.is_set():
            self._unwatch(self.child.master)
            if self.exit_code is not None and not self._readers:
                self._finish()

    # exit ----------------------------------------------------------------------

    def _poll_exit(self) -> None:
        if self.child.popen.poll() is None:
            self._timers.append(self._loop.call_later(0.05, self._poll_exit))
        else:
            self._on_exit()

    def _on_exit(self) -> None:
        if self.child.popen.poll() is None:
            return
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self.exit_code = self.policy.exit_code(self.child.popen.returncode)
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        log.info("process %s (pid %d, %s) exited with %d", self.process_id, self.pid, self.command, self.exit_code)
        if self.reads_only_attached and self.policy.kernel_vm:
            self._finish(drain=False)  # Go closes the PTY master at the exit: what nobody read yet is gone
        elif self._readers:
            self._timers.append(self._loop.call_later(OUTPUT_DRAIN_SECONDS, self._finish))
        else:
            self._finish()

    def _finish(self, drain: bool = True) -> None:
        """Take the last output, close every descriptor, tell subscribers and waiters."""
        if self.finished.is_set():
            return
        channel = self.channel
        for fd, stream in list(self._readers.items()):
            if drain and channel is None:
                self._drain(fd, stream)
            elif drain and channel is not None:  # what the channel has room for; Go's Wait closes the pipes
                self._drain(fd, stream, limit=channel.room() * GO_READ_BYTES)
            if self._paused:
                self._readers.pop(fd, None)
            else:
                self._unwatch(fd)
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self._release_stdin_waiter()
        child = self.child
        for end in {child.master, child.stdin, child.stdout, child.stderr}:
            if end is not None:
                os.close(end)
        child.master = child.stdin = child.stdout = child.stderr = None
        self._stdin_fd = None
        if self.exit_code is None:  # forced: the child is still unreaped; the pidfd reaps it later
            self.exit_code = self.policy.exit_code(-signal.SIGKILL)
        self.output.finish(self.exit_code)
        if self.channel is not None:
            self.channel.finish(self.exit_code)
        self.finished.set()
        callbacks, self._on_finish = self._on_finish, []
        for callback in callbacks:
            callback(self)

    @property
    def attached(self) -> bool:
        return not self.detached.is_set()

    @property
    def reaped(self) -> bool:
        return self.child.popen.returncode is not None

    # stdin ---------------------------------------------------------------------

    async def write_stdin(self, data: bytes) -> int:
        """Write `data` in order with other writes: straight to the descriptor, waiting while it is full.

        A program that stops reading its input cannot hold a request forever: after
        `STDIN_STALL_SECONDS` without progress the bytes written so far are reported (`written_bytes`
        less than sent), and the caller may send the rest again later.
        """
        if not data:
            if self._stdin_fd is None:
                raise StdinClosedError
            return 0
        async with self._stdin_lock:
            view = memoryview(data)
            written = 0
            while written < len(data):
                fd = self._stdin_fd
                if fd is None:
                    if written:
                        return written
                    raise StdinClosedError
                try:
                    written += os.write(fd, view[written:])
                except BlockingIOError:
                    if not await self._writable(fd, STDIN_STALL_SECONDS):
                        log.info("process %s is not reading its input; %d of %d bytes written", self.process_id,
                                 written, len(data))
                        return written
                except OSError as exc:  # EPIPE: the program closed stdin; EIO: the terminal is gone
                    if exc.errno in (errno.EPIPE, errno.EIO, errno.EBADF):
                        if written:
                            return written
                        raise StdinClosedError from None
                    raise
            return written

    async def _writable(self, fd: int, timeout: float) -> bool:
        """Wait until `fd` takes more input (or the process finishes); False after `timeout`."""
        waiter = self._loop.create_future()
        self._write_waiter = waiter
        self._loop.add_writer(fd, _resolve, waiter)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await waiter
            return waiter.done() and not waiter.cancelled()
        finally:
            self._write_waiter = None
            if self._stdin_fd == fd:
                self._loop.remove_writer(fd)

    def _release_stdin_waiter(self) -> None:
        waiter = self._write_waiter
        if waiter is not None and self._stdin_fd is not None:
            self._loop.remove_writer(self._stdin_fd)
            _resolve(waiter)

    def close_stdin(self) -> None:
        """End of input for a pipe-backed process (exec: programs reading stdin see EOF at once)."""
        if not self.tty and self._stdin_fd is not None:
            os.close(self._stdin_fd)
            self.child.stdin = self._stdin_fd = None

    # control -------------------------------------------------------------------

    def send_signal(self, name: str) -> bool:
        """Signal the process group; False if the process has already exited.

        Kernel's VM signals the leader alone (`cmd.Process.Signal`), and answers 500 once it has exited.
        """
        if not self.policy.kernel_vm:
            return self._killpg(SIGNALS[name])
        if self.reaped:
            raise internal_error("failed to signal process")
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, SIGNALS[name])
        return True

    def _killpg(self, sig: int) -> bool:
        if self.reaped:  # its pid may already belong to someone else
            return False
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # some member of the group is not ours to signal: at least reach the child
            with contextlib.suppress(OSError):
                os.kill(self.pid, sig)
        return True

    def resize(self, rows: int, cols: int) -> None:
        if not self.tty:
            raise bad_request(
                f"process {self.process_id} has no terminal to resize (spawn it with allocate_tty: true)",
                field="process_id",
            )
        if self.child.master is None:
            if self.policy.kernel_vm:  # Go's Setsize on the closed master
                raise internal_error("failed to resize PTY")
            raise bad_request(f"process {self.process_id} has exited; its terminal is closed", field="process_id")
        set_winsize(self.child.master, rows, cols)

    def _on_timeout(self, timeout_sec: int) -> None:
        log.info("process %s exceeded timeout_sec=%d: TERM", self.process_id, timeout_sec)
        if self._killpg(signal.SIGTERM):
            self._timers.append(self._loop.call_later(TIMEOUT_KILL_GRACE_SECONDS, self._killpg, signal.SIGKILL))

    async def terminate(self, grace: float = TERMINATE_GRACE_SECONDS) -> None:
        """End the process and its group: HUP (a terminal hanging up) and TERM, then KILL; wait for it."""
        if self.reaped:
            self._kill_leftovers()
        if self.finished.is_set():
            return
        for sig in (signal.SIGHUP, signal.SIGTERM) if self.tty else (signal.SIGTERM,):
            self._killpg(sig)
        if await self._wait_finished(grace):
            self._kill_leftovers()
            return
        self._killpg(signal.SIGKILL)
        if not await self._wait_finished(3.0):
            log.warning("process %s (pid %d) did not end after KILL; closing its descriptors", self.process_id,
                        self.pid)
            self._finish()

    def _kill_leftovers(self) -> None:
        """KILL what an exited program left running in its process group (`cmd &` in a script).

        The group id stays reserved while the group has members; an empty group's id could only be
        handed out again after the pid counter wraps around, far beyond the retention of a process.
        """
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)

    async def _wait_finished(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await bounded(self.finished.wait(), timeout)
        return self.finished.is_set()

    # status --------------------------------------------------------------------

    def status(self) -> ProcessStatus:
        if self.reaped:
            return ProcessStatus(state="exited", exit_code=self.policy.exit_code(self.child.popen.returncode),
                                 cpu_pct=0.0)
        mem, cpu = None, 0.0
        try:
            if self._ps is None:
                self._ps = psutil.Process(self.pid)
            with self._ps.oneshot():
                mem = self._ps.memory_info().rss
                times = self._ps.cpu_times()
            used = times.user + times.system
            now = time.monotonic()
            last_at, last_used = self._cpu_sample
            if now > last_at:
                cpu = round(max(0.0, 100.0 * (used - last_used) / (now - last_at)), 1)
            self._cpu_sample = (now, used)
        except psutil.Error:
            pass
        return ProcessStatus(state="running", cpu_pct=cpu, mem_bytes=mem)


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Capture:
    """What `exec` returns: stdout and stderr kept apart, each up to `limit` bytes."""

    def __init__(self, limit: int = EXEC_CAPTURE_LIMIT) -> None:
        self.limit = limit
        self.parts: tuple[list[bytes], list[bytes]] = ([], [])
        self.sizes = [0, 0]

    def append(self, stream: int, data: bytes) -> None:
        room = self.limit - self.sizes[stream]
        if room > 0:
            piece = data[:room]
            self.parts[stream].append(piece)
            self.sizes[stream] += len(piece)

    def text(self, stream: int) -> bytes:
        return b"".join(self.parts[stream])


class ProcessManager:
    """Every process of every session: registry, retention after exit, and teardown."""

    def __init__(self, policy: ProcessPolicy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self._live: set[ManagedProcess] = set()

    @staticmethod
    def of_session(session: Session) -> dict[str, ManagedProcess]:
        return session.processes

    def get(self, session: Session, process_id: str) -> ManagedProcess:
        proc = self.of_session(session).get(process_id)
        if proc is None:
            raise not_found(f"process {process_id} not found in browser session {session.session_id}")
        return proc

    def _register(self, session: Session, proc: ManagedProcess, retain: bool) -> None:
        table = self.of_session(session)
        table[proc.process_id] = proc
        self._live.add(proc)

        def finished(p: ManagedProcess) -> None:
            self._live.discard(p)
            if retain:
                asyncio.get_running_loop().call_later(self.policy.retain_seconds, table.pop, p.process_id, None)
            else:
                table.pop(p.process_id, None)

        proc.on_finish(finished)

    async def spawn(self, session: Session, request: SpawnRequest) -> ManagedProcess:
        rows, cols = request.rows, request.cols
        if self.policy.kernel_vm and not {"rows", "cols"} <= request.model_fields_set:
            rows = cols = 0  # Go sets the size only when both are given: the PTY stays 0x0
        child = await launch(request, session.workdir, tty=request.allocate_tty, rows=rows, cols=cols,
                             sandbox=sandbox_of(session))
        proc = ManagedProcess(child, request.command, policy=self.policy)
        self._register(session, proc, retain=True)
        proc.start(None if self.policy.kernel_vm else request.timeout_sec)  # Kernel's spawn ignores it
        log.info("process %s spawned in session %s: pid %d, %s%s", proc.process_id, session.session_id, proc.pid,
                 request.command, " (tty)" if proc.tty else "")
        return proc

    async def exec(self, session: Session, request: ExecRequest) -> ExecResult:
        """Run to completion. A timeout ends it like `kill TERM` would; its exit code says so (143 or 137)."""
        capture = Capture()
        started = time.monotonic()
        child = await launch(request, session.workdir, sandbox=sandbox_of(session))
        proc = ManagedProcess(child, request.command, sink=capture.append, policy=self.policy)
        self._register(session, proc, retain=False)
        kernel_timeout = request.timeout_sec if self.policy.kernel_vm else None
        proc.start(None if self.policy.kernel_vm else request.timeout_sec)
        proc.close_stdin()
        try:
            async with asyncio.timeout(kernel_timeout or None):
                await proc.finished.wait()
        except TimeoutError:  # Kernel's VM: SIGKILL to the leader, wait for it, 500, the output is discarded
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            await proc.finished.wait()
            raise internal_error("process timed out") from None
        except asyncio.CancelledError:  # the caller went away: do not leave the command running
            await asyncio.shield(proc.terminate())
            raise
        return ExecResult(
            exit_code=proc.exit_code if proc.exit_code is not None else -1,
            stdout_b64=encode_b64(capture.text(STDOUT)),
            stderr_b64=encode_b64(capture.text(STDERR)),
            duration_ms=round((time.monotonic() - started) * 1000),
        )

    async def end_session(self, session: Session) -> None:
        """on_delete hook: end every process the session started, and forget them at once.

        An exited process is kept `retain_seconds` for the clients that still ask about it, but an
        ended session's routes answer 410: nobody can. Kept, a shell cost ~4 KiB (its output log, its
        Popen) for a minute after every delete: in a soak, the allocator's high-water mark.
        """
        table = self.of_session(session)
        await asyncio.gather(*(p.terminate() for p in list(table.values())), return_exceptions=True)
        table.clear()

    async def shutdown(self) -> None:
        await asyncio.gather(*(p.terminate() for p in list(self._live)), return_exceptions=True)


def stdin_error(proc: ManagedProcess) -> ServiceError:
    if proc.policy.kernel_vm:  # Go's write to the closed pipe or PTY master
        return internal_error("failed to write to stdin")
    return bad_request(f"process {proc.process_id} has exited or closed its stdin", field="process_id")
