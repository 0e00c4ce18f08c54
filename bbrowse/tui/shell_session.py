"""One remote PTY shell, independent of any widget: spawn, input, output, resize, exit, reconnect.

`write` sends bytes to the program's stdin; the caller keeps the order (the terminal widget has one
sender that joins keys typed while a request is in flight). Output arrives through the async
`on_output`, which may apply back-pressure; when the stream breaks (service restarted, network) it
reconnects with backoff, calls `on_reset` first, and the service's backlog redraws the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import Awaitable, Callable, Sequence

from bbrowse.client import BrowserClient, ClientError, NotFound, ServiceError, SessionGone
from bbrowse.wire import ProcessExitEvent

#: What a shell pane runs unless configured otherwise: bash where there is one, else sh.
DEFAULT_SHELL: tuple[str, ...] = ("sh", "-c", "command -v bash >/dev/null && exec bash || exec sh")

RECONNECT_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0)


class ShellSession:
    def __init__(
        self,
        client: BrowserClient,
        session_id: str,
        *,
        on_output: Callable[[bytes], Awaitable[object]],
        on_exit: Callable[[int], None],
        on_error: Callable[[BaseException], None] = lambda error: None,
        on_reset: Callable[[], None] = lambda: None,
        on_connected: Callable[[], None] = lambda: None,
        command: Sequence[str] = DEFAULT_SHELL,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.command = tuple(command)
        self.process_id: str | None = None
        self.exit_code: int | None = None
        self._on_output = on_output
        self._on_exit = on_exit
        self._on_error = on_error
        self._on_reset = on_reset
        self._on_connected = on_connected
        self._size: tuple[int, int] | None = None
        self._tasks: list[asyncio.Task] = []

    @property
    def title(self) -> str:
        return shlex.join(self.command) if self.command != DEFAULT_SHELL else "shell"

    @property
    def running(self) -> bool:
        return self.process_id is not None and self.exit_code is None

    async def start(self, cols: int, rows: int) -> None:
        """Spawn with a PTY of exactly `cols`×`rows`, then pump output and input until it exits."""
        self.exit_code = None
        self._size = (cols, rows)
        result = await self.client.processes.spawn(
            self.session_id, self.command[0], self.command[1:], allocate_tty=True, cols=cols, rows=rows
        )
        self.process_id = result.process_id
        self._tasks = [asyncio.create_task(self._pump_output(), name=f"shell-output-{self.process_id}")]

    async def write(self, data: bytes) -> None:
        """Send bytes to the program's stdin now (never re-sent: a retry could type twice)."""
        if data and self.running:
            await self.client.processes.stdin(self.session_id, self.process_id, data)

    async def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) == self._size or not self.running:
            return
        self._size = (cols, rows)
        try:
            await self.client.processes.resize(self.session_id, self.process_id, rows=rows, cols=cols)
        except ClientError as error:
            self._on_error(error)

    async def interrupt(self, signal: str = "INT") -> None:
        if self.running:
            await self.client.processes.kill(self.session_id, self.process_id, signal)

    async def close(self) -> None:
        """Stop pumping; a still-running remote shell is hung up (HUP), like closing a terminal window."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        if self.running:
            with contextlib.suppress(ClientError):
                await self.client.processes.kill(self.session_id, self.process_id, "HUP")

    async def _pump_output(self) -> None:
        attempt = 0
        while True:
            try:
                async with self.client.processes.stdout_stream(self.session_id, self.process_id) as events:
                    if attempt:
                        self._on_reset()
                    attempt = 0
                    self._on_connected()
                    async for event in events:
                        if type(event) is ProcessExitEvent:
                            self.exit_code = event.exit_code
                            self._on_exit(event.exit_code)
                            return
                        await self._on_output(event.data())
            except asyncio.CancelledError:
                raise
            except (NotFound, SessionGone) as error:
                # The process (or its session) is gone for good: nothing to reconnect to.
                self.exit_code = -1
                self._on_error(error)
                self._on_exit(-1)
                return
            except ClientError as error:
                if isinstance(error, ServiceError) and error.status < 500 and error.status != 429:
                    self._on_error(error)
                    self.exit_code = -1
                    self._on_exit(-1)
                    return
                self._on_error(error)
            delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
            attempt += 1
            await asyncio.sleep(delay)
