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
import contextlib
import shlex
from collections.abc import Awaitable, Callable, Sequence

from bbrowse.client import BrowserClient, ClientError, ServiceError
from bbrowse.client.pty_output import PtyOutput
from bbrowse.config import DEFAULT_SHELL


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
            env=self.env,
        )
        self.process_id = result.process_id
        self.output = PtyOutput(self.client, self.session_id, result.process_id, on_output=self._on_output,
                                size=(rows, cols), on_path=self._on_path, on_error=self._on_error)
        self._task = asyncio.create_task(self._pump(self.output), name=f"shell-output-{self.process_id}")

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

    async def close(self) -> None:
        """Stop pumping; a still-running remote shell is hung up (HUP), like closing a terminal window."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if (process_id := self.live_process_id) is not None:
            with contextlib.suppress(ClientError):
                await self.client.processes.kill(self.session_id, process_id, "HUP")
