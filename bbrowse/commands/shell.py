"""`bbrowse shell`: a program in a session, in your own terminal, like `ssh` or `kubectl exec -it`.

Terminal mode (stdin is a terminal: `TerminalSession`) gives the program a PTY and turns the local
terminal raw; pipe mode (`PipeSession`) keeps stdout and stderr apart and passes bytes untouched. The
exit status is the remote program's (255 when it is no longer known). docs/decisions.md has the
alternatives and the ways Kernel's VM ends a shell without saying so, which both modes handle.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import termios
import threading
import tty
from collections.abc import Awaitable, Callable, Sequence

import click

from bbrowse.client import (
    BrowserClient,
    ClientError,
    ConnectionLost,
    IncompleteStream,
    KeepAlive,
    NotFound,
    PtyOutput,
    ServiceError,
    SessionGone,
    StdinWriter,
    Stream,
    VmGoingAway,
)
from bbrowse.commands.output import write_all
from bbrowse.commands.runner import run
from bbrowse.config import DEFAULT_SHELL
from bbrowse.timeouts import bounded
from bbrowse.wire import ProcessExitEvent, Signal, StdoutStreamEvent

#: Exit status after `~.`, as ssh uses for a connection it closed.
EXIT_DISCONNECTED = 255
#: One stdin request carries at most this many bytes (they travel base64 in JSON).
MAX_STDIN_BYTES = 256 * 1024
#: Bytes read from a local pipe but not yet sent; the reader waits when more are queued.
PIPE_QUEUE_BYTES = 16 * MAX_STDIN_BYTES
#: How long the HUP sent after `~.` or a local signal may take before bbrowse leaves anyway.
HANGUP_TIMEOUT_SECONDS = 5.0
#: How long the service may stay unreachable mid-session before bbrowse gives up on it.
RECONNECT_GIVE_UP_SECONDS = 30.0
#: A pipe's output stream that ended without the exit event: how long its status is asked for the code.
EXIT_STATUS_WAIT_SECONDS = 3.0

#: Pipe-mode wrapper, run as `sh -c PIPE_WRAPPER bbrowse-shell CMD...`: see the module docstring.
PIPE_WRAPPER = (
    "exec 3<&0; "
    '{ while IFS= read -r n <&3 && [ "$n" -gt 0 ] 2>/dev/null; do head -c "$n" <&3 || exit; done 2>/dev/null & } '
    '| "$@" 3<&-'
)

_SIGNALS_ENDING_SESSION = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)


class EscapeFilter:
    """ssh's escape sequences: `~.` at the start of a line disconnects, `~~` sends one `~`.

    A `~` at the start of a line is held back until the next byte shows whether it starts an escape.
    """

    def __init__(self) -> None:
        self.at_line_start = True
        self.holding_tilde = False

    def feed(self, data: bytes) -> tuple[bytes, bool]:
        """(bytes to send, True when `~.` was typed: stop there)."""
        out = bytearray()
        for byte in data:
            if self.holding_tilde:
                self.holding_tilde = False
                if byte == 0x2E:  # '.'
                    return bytes(out), True
                out.append(0x7E)  # '~' not starting an escape: send it
                if byte == 0x7E:  # '~~' is one literal '~'
                    self.at_line_start = False
                    continue
            elif self.at_line_start and byte == 0x7E:
                self.holding_tilde = True
                continue
            out.append(byte)
            self.at_line_start = byte in (0x0D, 0x0A)
        return bytes(out), False


class RawTerminal:
    """The local terminal in raw mode, and the guarantee that its old mode comes back."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list | None = None

    def __enter__(self) -> RawTerminal:
        self._saved = termios.tcgetattr(self.fd)
        atexit.register(self.restore)
        tty.setraw(self.fd, termios.TCSADRAIN)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.restore()

    def restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)
            atexit.unregister(self.restore)


def window_size(fd: int) -> tuple[int, int]:
    """(rows, cols) of the terminal on `fd`; 24x80 when it has none."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return 24, 80
    return max(size.lines, 1), max(size.columns, 1)


def _input_gone(exc: ServiceError) -> bool:
    """The remote program exited or closed its stdin (or was forgotten): input is simply dropped."""
    return exc.status in (400, 404, 410)


class _Session:
    """What terminal and pipe mode share: the remote process, its output, and how the session ends."""

    def __init__(self, client: BrowserClient, session: str) -> None:
        self.client = client
        #: The session as the user named it, then its id (`resolve`).
        self.session = session
        self.shown_session = session
        self.process_id = ""
        self.loop = asyncio.get_running_loop()
        #: Resolved with (exit status, hang up the remote program first?) or an exception.
        self.finished: asyncio.Future[tuple[int, bool]] = self.loop.create_future()
        self.tasks: list[asyncio.Task] = []
        #: Local input on its way to the program (`open_stdin`).
        self.stdin: StdinWriter | None = None

    async def resolve(self) -> None:
        """Read the session once: its id (the user may have given its name) and where its VM answers,
        so every call after this one goes straight there (`routing.py`). Unknown: `NotFound`."""
        self.session = (await self.client.sessions.get(self.session)).session_id

    def end(self, status: int, *, hangup: bool = False) -> None:
        if not self.finished.done():
            self.finished.set_result((status, hangup))

    def on_signal(self, sig: int) -> None:
        """A local signal ends the session like a shell reports it (128 + N), hanging up the remote program."""
        self.end(128 + sig, hangup=True)

    def fail(self, exc: BaseException) -> None:
        if not self.finished.done():
            self.finished.set_exception(exc)

    def start(self, coro: Awaitable, *, ends_session: bool = False) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.append(task)
        task.add_done_callback(lambda t: self._task_done(t, ends_session))

    def open_stdin(self, send: Callable[[bytes], Awaitable[None]],
                   after: Callable[[], Awaitable[None]] | None = None) -> StdinWriter:
        """The writer for local input, in order, one request at a time, what was typed meanwhile joined into
        the next (`StdinWriter`). A task watches it: a failed send ends the session, unless the program no
        longer takes input (then input is dropped); `after` runs once the input is closed and all sent."""
        stdin = self.stdin = StdinWriter(send, max_request_bytes=MAX_STDIN_BYTES)
        self.start(_send_until_closed(stdin, after))
        return stdin

    def _task_done(self, task: asyncio.Task, ends_session: bool) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.fail(exc)
        elif ends_session:
            self.end(task.result())

    async def copy_output(self, events, split_streams: bool) -> int:
        """Write output as it comes; the exit status once the exit event arrives."""
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
        async for event in events:
            if isinstance(event, ProcessExitEvent):
                return event.exit_code
            write_all(err if split_streams and event.stream == "stderr" else out, event.data())
        raise ConnectionLost(f"output of process {self.process_id} ended without its exit status")

    async def send_stdin(self, data: bytes) -> None:
        try:
            await self.client.processes.stdin(self.session, self.process_id, data)
        except ServiceError as exc:
            if not _input_gone(exc) and not await self.exited():  # Kernel: 500 once the program is gone
                raise
            raise _InputClosedError from None

    async def exited(self) -> bool:
        """The program has exited (or is gone), by its status now."""
        try:
            status = await self.client.processes.status(self.session, self.process_id)
        except (NotFound, SessionGone):
            return True
        except ClientError:
            return False
        return status.state != "running"

    async def exit_code_from_status(self) -> int:
        """The exit status by `status` (the output ended without saying it): asked until the process
        shows as exited, at most `EXIT_STATUS_WAIT_SECONDS`; 255 when it is unknown."""
        deadline = self.loop.time() + EXIT_STATUS_WAIT_SECONDS
        while True:
            try:
                status = await self.client.processes.status(self.session, self.process_id)
            except (NotFound, SessionGone):
                return EXIT_DISCONNECTED
            if status.state != "running":
                return status.exit_code if status.exit_code is not None else EXIT_DISCONNECTED
            if self.loop.time() > deadline:
                raise ConnectionLost(f"output of process {self.process_id} ended while it still runs")
            await asyncio.sleep(0.1)

    async def hang_up(self) -> None:
        with contextlib.suppress(ClientError, TimeoutError):
            await bounded(self.client.processes.kill(self.session, self.process_id, "HUP"),
                                   HANGUP_TIMEOUT_SECONDS)

    async def stop_tasks(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _InputClosedError(Exception):
    """The remote side no longer takes input; the output stream says how it ended."""


async def _send_until_closed(stdin: StdinWriter, after: Callable[[], Awaitable[None]] | None) -> None:
    try:
        await stdin.wait_closed()
        if after is not None:
            await after()
    except _InputClosedError:
        pass
    finally:  # the session is over when this task is cancelled: input not sent yet goes with it
        stdin.abort()


class TerminalSession(_Session):
    """Terminal mode: raw local terminal, PTY on the remote side.

    The PTY starts at the local window size and SIGWINCH sends the new one; every key is a byte for the
    program, sent to `stdin` in order (`StdinWriter`); output comes over `attach` (Kernel sends PTY output
    nowhere else), or `stdout/stream` where attach is refused. The terminal is restored on every way out
    (return, exceptions, SIGTERM/SIGHUP/SIGINT/SIGQUIT, atexit). `~.` at the start of a line disconnects,
    as in ssh (exit 255)."""

    def __init__(self, client: BrowserClient, session: str, fd: int = 0) -> None:
        super().__init__(client, session)
        self.fd = fd
        self.escape = EscapeFilter()
        self.size = window_size(fd)
        self.stdout = sys.stdout.fileno()
        self.output: PtyOutput | None = None
        self._resized = asyncio.Event()
        self.disconnected = False

    async def run(self, argv: Sequence[str]) -> int:
        rows, cols = self.size
        await self.resolve()
        proc = await self.client.processes.spawn(self.session, argv[0], list(argv[1:]), allocate_tty=True,
                                                 rows=rows, cols=cols)
        self.process_id = proc.process_id
        self.output = PtyOutput(self.client, self.session, proc.process_id, on_output=self._show, size=(rows, cols),
                                give_up_after=RECONNECT_GIVE_UP_SECONDS)
        try:
            async with KeepAlive(self.client, self.session):
                status, hangup = await self._interact()
        except BaseException:
            await self.hang_up()
            raise
        if hangup:
            await self.hang_up()
        if self.disconnected:
            sys.stderr.write(f"Connection to session {self.shown_session} closed.\n")
        return status

    def _show(self, data: bytes) -> None:
        write_all(self.stdout, data)

    async def exited(self) -> bool:
        assert self.output is not None  # made by run() before anything is sent
        return await self.output.exited()  # also ends the output's wait for an exit frame that may not come

    async def _copy_output(self) -> int:
        assert self.output is not None  # made by run() before anything reads it
        try:
            code = await self.output.run()
        except VmGoingAway as exc:
            reason = f" ({exc.reason})" if exc.reason else ""
            sys.stderr.write(f"\r\nbbrowse: the session's VM is going away{reason}; "
                             f"process {self.process_id} ends with it\r\n")
            return EXIT_DISCONNECTED
        if code is None:
            sys.stderr.write(f"bbrowse: process {self.process_id} ended; its exit status is no longer known\r\n")
            return EXIT_DISCONNECTED
        return code

    async def _interact(self) -> tuple[int, bool]:
        self.start(self._copy_output(), ends_session=True)
        self.open_stdin(self.send_stdin)
        self.start(self._send_resizes())
        installed: list[signal.Signals] = []
        try:
            with RawTerminal(self.fd):
                for sig in _SIGNALS_ENDING_SESSION:
                    self.loop.add_signal_handler(sig, self.on_signal, sig)
                    installed.append(sig)
                self.loop.add_signal_handler(signal.SIGWINCH, self._resized.set)
                installed.append(signal.SIGWINCH)
                self._resized.set()  # the size may have changed since spawn
                self.loop.add_reader(self.fd, self._on_input)
                try:
                    return await self.finished
                finally:
                    self.loop.remove_reader(self.fd)
        finally:
            for sig in installed:
                self.loop.remove_signal_handler(sig)
            await self.stop_tasks()

    def _on_input(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the local terminal went away
            self.loop.remove_reader(self.fd)
            self.on_signal(signal.SIGHUP)
            return
        data, disconnect = self.escape.feed(data)
        if data and self.stdin is not None and not self.stdin.stopped:  # stopped: the program takes no more
            self.stdin.write(data)
        if disconnect and not self.finished.done():
            self.disconnected = True
            self.end(EXIT_DISCONNECTED, hangup=True)

    async def _send_resizes(self) -> None:
        while True:
            await self._resized.wait()
            self._resized.clear()
            size = window_size(self.fd)
            if size == self.size:
                continue
            self.size = size
            assert self.output is not None
            try:
                await self.output.resize(*size)
            except ServiceError:  # the program exited meanwhile (Kernel: 500): the output says how it ended
                await self.output.exited()


class PipeSession(_Session):
    """Pipe mode: local stdin streamed through `PIPE_WRAPPER`; stdout and stderr kept apart.

    No PTY, so bytes pass untouched; the wrapper turns length-prefixed chunks on its stdin into a real EOF
    for the program (the contract has no "close stdin")."""

    def __init__(self, client: BrowserClient, session: str, fd: int = 0) -> None:
        super().__init__(client, session)
        self.fd = fd

    async def run(self, argv: Sequence[str]) -> int:
        await self.resolve()
        proc = await self.client.processes.spawn(self.session, "sh", ["-c", PIPE_WRAPPER, "bbrowse-shell", *argv])
        self.process_id = proc.process_id
        events = self.client.processes.stdout_stream(self.session, proc.process_id)
        installed: list[signal.Signals] = []
        try:
            async with KeepAlive(self.client, self.session):
                # The stream opens in its task: Kernel sends its headers only with the first event, and the
                # program may print nothing before it has read its input.
                self.start(self._copy_piped(events), ends_session=True)
                stdin = self.open_stdin(self._send_chunk, after=lambda: self.send_stdin(b"0\n"))
                self._start_reader(stdin)
                self.loop.add_signal_handler(signal.SIGINT, self._forward_interrupt)
                installed.append(signal.SIGINT)
                for sig in (signal.SIGTERM, signal.SIGHUP):
                    self.loop.add_signal_handler(sig, self.on_signal, sig)
                    installed.append(sig)
                try:
                    status, hangup = await self.finished
                finally:
                    for sig in installed:
                        self.loop.remove_signal_handler(sig)
                    await self.stop_tasks()
        except BaseException:
            await self.hang_up()
            raise
        if hangup:
            await self.hang_up()
        return status

    async def _copy_piped(self, events: Stream[StdoutStreamEvent]) -> int:
        try:
            async with events:
                return await self.copy_output(events, split_streams=True)
        except IncompleteStream:  # Kernel: the exit event can be lost to the end of the stream
            return await self.exit_code_from_status()

    async def _send_chunk(self, data: bytes) -> None:
        await self.send_stdin(b"%d\n" % len(data) + data)

    def _forward_interrupt(self) -> None:
        self.start(self._kill("INT"))

    async def _kill(self, sig: Signal) -> None:
        with contextlib.suppress(ServiceError):
            await self.client.processes.kill(self.session, self.process_id, sig)

    def _start_reader(self, stdin: StdinWriter) -> None:
        """Read local stdin on a thread: it may be a regular file, which the event loop cannot watch."""
        loop, fd = self.loop, self.fd

        def read() -> None:
            try:
                while True:
                    try:
                        data = os.read(fd, MAX_STDIN_BYTES)
                    except OSError:
                        data = b""
                    asyncio.run_coroutine_threadsafe(_queue_piped(stdin, data), loop).result()
                    if not data:
                        return
            except Exception:  # the loop has closed or the input stopped: nobody waits for more input
                return

        threading.Thread(target=read, name="bbrowse-shell-stdin", daemon=True).start()


async def _queue_piped(stdin: StdinWriter, data: bytes) -> None:
    """A chunk read from the local pipe, b"" at its end (then what is queued is sent and the input closed).
    Waits while more than `PIPE_QUEUE_BYTES` are queued, so a fast producer is not buffered without bound."""
    if not data:
        await stdin.aclose()
        return
    stdin.write(data)
    if stdin.pending > PIPE_QUEUE_BYTES:
        await stdin.drain()


async def shell(client: BrowserClient, session: str, argv: Sequence[str]) -> int:
    if os.isatty(sys.stdin.fileno()):
        return await TerminalSession(client, session, sys.stdin.fileno()).run(argv)
    return await PipeSession(client, session, sys.stdin.fileno()).run(argv)


@click.command("shell", context_settings={"ignore_unknown_options": True})
@click.argument("session", metavar="ID")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD [ARG]...]")
def shell_command(session: str, command: tuple[str, ...]) -> None:
    """An interactive terminal in the session (bash, else sh, unless CMD is given), like ssh.

    Keys go to the remote program (ctrl-c too); type `~.` at the start of a line to disconnect
    (exit 255). The exit status is the remote program's. With stdin not a terminal, input is piped
    to the program and its stdout and stderr are kept apart.

    \b
    Examples:
      bbrowse shell ID                       # bash or sh
      bbrowse shell ID -- htop
      bbrowse shell ID -- python3 -q
      echo 'ls -la /tmp' | bbrowse shell ID
      tar cz src | bbrowse shell ID -- tar xz -C /tmp
    """
    argv = list(command) or list(DEFAULT_SHELL)
    run(lambda client: shell(client, session, argv))
