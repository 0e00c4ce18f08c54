"""One remote PTY shell, independent of any widget: spawn, input, output, resize, exit, reconnect.

Output comes from `PtyOutput` (bbrowse.client): the `attach` WebSocket through the session's VM
endpoint, binary frames handed to `on_output` as they arrive (the terminal parses them), or
`stdout/stream` when attach is refused; `on_path` says which ("attach" / "stream"). A dropped
connection is reopened and the size nudged so full-screen programs repaint; the exit code comes from
the exit frame or the process's status, never a hang. `write` sends bytes to the program's stdin
through the `stdin` operation; the caller keeps the order (the terminal widget has one sender that
joins keys typed while a request is in flight). A `stdin` or `resize` refused because the program has
just exited (Kernel's VM answers 500 then) is no error: the exit shows instead.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shlex
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bbrowse.client import BrowserClient, ClientError, ServiceError
from bbrowse.client.pty_output import PtyOutput
from bbrowse.config import DEFAULT_SHELL
from bbrowse.paths import state_dir, write_private

#: The environment variable every shell of the app carries, with a value of its own (inherited by what it runs).
MARKER_VARIABLE = "BBROWSE_SHELL"
#: Counts the processes on the instance carrying the shell's marker: the shell, plus whatever it runs.
#: (By marker, not by pid: the pid a spawn answers is the service's view, not the instance's own PID namespace.)
BUSY_PROBE = f'grep -lsa "{MARKER_VARIABLE}=$1" /proc/[0-9]*/environ | wc -l'


def busy_from_probe(output: str) -> str | None:
    """What the shell runs, from BUSY_PROBE's count: None when it is alone (idle at its prompt), else a few
    words for the question asked before closing it."""
    count = int(output.strip() or "0")
    if count == 1:
        return None
    if count == 0:
        return "may be running a program"  # not found: its environment was replaced, or /proc is not readable
    return f"is running a program ({count - 1} process{'es' if count > 2 else ''})"


class ShellSession:
    def __init__(
        self,
        client: BrowserClient,
        session_id: str,
        *,
        on_output: Callable[[bytes], Awaitable[object] | None],
        on_exit: Callable[[int | None], None],
        on_error: Callable[[BaseException], None] = lambda error: None,
        on_path: Callable[[str], None] = lambda path: None,
        command: Sequence[str] = DEFAULT_SHELL,
        env: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.command = tuple(command)
        self.env = env
        self.process_id: str | None = None
        #: This shell's value of MARKER_VARIABLE (what `busy` looks for).
        self.marker = uuid.uuid4().hex
        #: The exit code once the program ended (None with `exited` set: ended, code unknown).
        self.exit_code: int | None = None
        self.exited = False
        self.output: PtyOutput | None = None
        self._on_output = on_output
        self._on_exit = on_exit
        self._on_error = on_error
        self._on_path = on_path
        self._size: tuple[int, int] | None = None
        self._task: asyncio.Task | None = None
        #: Held while `fit` starts the shell: a size reported meanwhile waits, then resizes (never a second spawn).
        self._starting = asyncio.Lock()

    @property
    def title(self) -> str:
        return shlex.join(self.command) if self.command != DEFAULT_SHELL else "shell"

    @property
    def running(self) -> bool:
        return self.live_process_id is not None

    @property
    def live_process_id(self) -> str | None:
        """The program's process id while it runs; None before the spawn and once it ended."""
        return None if self.exited else self.process_id

    @property
    def path(self) -> str | None:
        """How the output arrives: "attach", "stream", or None before the first connection."""
        return self.output.path if self.output is not None else None

    async def start(self, cols: int, rows: int) -> None:
        """Spawn with a PTY of exactly `cols`×`rows`, then pump its output until it exits."""
        self.exit_code, self.exited, self.output = None, False, None
        self._size = (cols, rows)
        if self.session_id not in self.client.routes:
            # Learn where the session's VM is (its base_url and jwt) so every call below goes direct.
            with contextlib.suppress(ClientError):  # the spawn reports the real problem
                await self.client.sessions.get(self.session_id)
        result = await self.client.processes.spawn(
            self.session_id, self.command[0], self.command[1:], allocate_tty=True, cols=cols, rows=rows,
            env={**(self.env or {}), MARKER_VARIABLE: self.marker},
        )
        self.process_id = result.process_id
        self._follow(rows, cols)

    async def fit(self, cols: int, rows: int) -> bool:
        """Follow the terminal's size as it reports it (its `on_pty_resize`): the first size starts the shell at
        exactly that size (True: this call started it; ClientError when it could not), later sizes resize it.
        A size reported while the shell starts is applied once it has started, not by a second spawn."""
        async with self._starting:
            if self.process_id is None:
                await self.start(cols, rows)
                return True
        await self.resize(cols, rows)
        return False

    async def reattach(self, process_id: str, marker: str, cols: int, rows: int) -> None:
        """Follow a shell started earlier (by this app, from a session screen since closed) at the pane's size.

        The output it wrote meanwhile comes first where the service keeps a backlog; the size is set
        afterwards, so a full-screen program repaints (and Kernel's VM, which keeps none, shows its screen)."""
        self.exit_code, self.exited, self.output = None, False, None
        self.process_id, self.marker = process_id, marker
        self._size = (cols, rows)
        if self.session_id not in self.client.routes:
            with contextlib.suppress(ClientError):
                await self.client.sessions.get(self.session_id)
        self._follow(rows, cols)
        assert self.output is not None
        try:  # one column less, then the real size: the program gets SIGWINCH and repaints
            await self.client.processes.resize(self.session_id, process_id, rows=rows, cols=max(2, cols - 1))
            await self.output.resize(rows, cols)
        except ClientError as error:
            self._on_error(error)

    def _follow(self, rows: int, cols: int) -> None:
        assert self.process_id is not None
        self.output = PtyOutput(self.client, self.session_id, self.process_id, on_output=self._on_output,
                                size=(rows, cols), on_path=self._on_path, on_error=self._on_error)
        self._task = asyncio.create_task(self._pump(self.output), name=f"shell-output-{self.process_id}")

    async def busy(self) -> str | None:
        """None when the shell sits idle at its prompt; else what it is doing, in a few words (asked of
        /proc on the instance; "may be running a program" when that cannot be told)."""
        if not self.running:
            return None
        try:
            result = await self.client.processes.exec(self.session_id, "sh", ["-c", BUSY_PROBE, "sh", self.marker],
                                                      timeout_sec=5)
            return busy_from_probe(base64.b64decode(result.stdout_b64).decode(errors="replace"))
        except (ClientError, ValueError):
            return "may be running a program"

    async def _pump(self, output: PtyOutput) -> None:
        try:
            code = await output.run()
        except asyncio.CancelledError:
            raise
        except ClientError as error:  # the session or process is gone, or attach and stream both failed
            self._on_error(error)
            code = None
        self.exit_code, self.exited = code, True
        self._on_exit(code)

    async def write(self, data: bytes) -> None:
        """Send bytes to the program's stdin now (never re-sent: a retry could type twice)."""
        if data and (process_id := self.live_process_id) is not None:
            try:
                await self.client.processes.stdin(self.session_id, process_id, data)
            except ServiceError:
                if not await self._exited_meanwhile():
                    raise

    async def _exited_meanwhile(self) -> bool:
        """After a refused call: True when the program has exited (its exit is then shown, not the error)."""
        output = self.output
        return self.exited or (output is not None and await output.exited())

    async def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) == self._size or not self.running or self.output is None:
            return
        self._size = (cols, rows)
        try:
            await self.output.resize(rows, cols)
        except ClientError as error:
            if not (isinstance(error, ServiceError) and await self._exited_meanwhile()):
                self._on_error(error)

    async def detach(self) -> None:
        """Stop following the output; the remote shell keeps running (reattached when its session is reopened)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        """Stop pumping; a still-running remote shell is hung up (HUP), like closing a terminal window."""
        await self.detach()
        if (process_id := self.live_process_id) is not None:
            with contextlib.suppress(ClientError):
                await self.client.processes.kill(self.session_id, process_id, "HUP")


@dataclass(frozen=True)
class ShellRecord:
    """A shell this app started: enough to find it again (process id) and to tell whether it is busy (marker)."""

    process_id: str
    marker: str
    title: str


class ShellRecords:
    """The shells the app started and has not closed, by service and session, in `<state dir>/app/shells.json`.

    The service lists no processes (neither does Kernel's API), so the app keeps its own list: leaving a
    session screen leaves its shells running, and reopening the session reattaches those still running."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "app" / "shells.json"

    @staticmethod
    def _key(base_url: str, session_id: str) -> str:
        return f"{base_url.rstrip('/')} {session_id}"

    def _read(self) -> dict[str, list[dict]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, list[dict]]) -> None:
        with contextlib.suppress(OSError):  # a read-only state dir loses reattaching, nothing else
            write_private(self.path, json.dumps({key: value for key, value in data.items() if value}))

    def list(self, base_url: str, session_id: str) -> list[ShellRecord]:
        records = []
        for item in self._read().get(self._key(base_url, session_id), []):
            with contextlib.suppress(TypeError, KeyError):
                records.append(ShellRecord(str(item["process_id"]), str(item["marker"]),
                                           str(item.get("title", "shell"))))
        return records

    def add(self, base_url: str, session_id: str, record: ShellRecord) -> None:
        data = self._read()
        key = self._key(base_url, session_id)
        data[key] = [item for item in data.get(key, []) if item.get("process_id") != record.process_id]
        data[key].append(asdict(record))
        self._write(data)

    def remove(self, base_url: str, session_id: str, process_id: str) -> None:
        data = self._read()
        key = self._key(base_url, session_id)
        if key in data:
            data[key] = [item for item in data[key] if item.get("process_id") != process_id]
            self._write(data)
