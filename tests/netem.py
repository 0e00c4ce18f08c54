"""A network you can make bad: a TCP proxy in front of one address, and a small HTTP CONNECT proxy.

`BadLink` sits between any client and `bbrowse serve` (or anything else on TCP) and delays each
direction, caps the bandwidth, drops the link (every connection reset, new ones refused for N seconds)
or stalls it (no byte moves either way, connections stay open, nothing is lost: a laptop lid, a Wi-Fi
change). Every setting can change while connections are open. `ConnectProxy` is the `HTTPS_PROXY` a
client must go through: it tunnels `CONNECT host:port` and resolves names itself (a name only it knows
proves the client used it). Both run on a loop in a thread of their own, so sync tests, Pilot tests and
subprocesses (the CLI) can use them alike; every method may be called from any thread.

    with BadLink(("127.0.0.1", service_port), delay=0.05) as link:   # 100 ms round trip
        client = BrowserClient(base_url=link.url, ...)
        link.stall(); ...; link.resume()
        link.drop(refuse_for=2.0)
        link.set(rate=10e6 / 8)                                        # 10 Mbit/s

Used by `tests/net_support.py` (fixtures) and by `bench/netem.py` (a command-line proxy) and the benches.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Bytes read from a socket at once (a chunk is then delivered, or cut smaller under a bandwidth cap).
READ_SIZE = 64 * 1024
#: Under a bandwidth cap chunks are sent in pieces this large, so one big chunk does not hold a link.
RATE_PIECE = 4 * 1024
_UNCHANGED: Any = object()
#: A name no resolver knows: the test CA's certificates carry it, and `ConnectProxy` resolves it to loopback.
TLS_HOST = "bbrowse.test"


class _Loop:
    """An asyncio loop running in a daemon thread; `call` runs a coroutine there from any thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("call from outside the proxy's own loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def soon(self, fn: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        with contextlib.suppress(RuntimeError):
            self.loop.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0), as a dropped link shows to both ends."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@dataclass
class _Direction:
    """One way of the link: its delay, its bandwidth (shared by every connection) and its counters."""

    delay: float = 0.0
    rate: float | None = None  # bytes per second
    bytes: int = 0
    busy_until: float = 0.0

    async def reserve(self, size: int) -> None:
        """Wait for the link's bandwidth to carry `size` bytes after what is already on it."""
        if not self.rate:
            return
        now = time.monotonic()
        start = max(now, self.busy_until)
        self.busy_until = start + size / self.rate
        if self.busy_until > now:
            await asyncio.sleep(self.busy_until - now)


@dataclass(eq=False)
class _Pipe:
    """One connection through the link: its two sockets and the tasks moving bytes each way."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class BadLink:
    """A TCP proxy from `url` (127.0.0.1, a free port) to `target`; see the module's docstring.

    `delay` is each direction's one-way delay (the round trip is twice it) unless `up` (client to
    target) or `down` (target to client) say otherwise; `rate` caps each direction in bytes/s.
    """

    def __init__(self, target: tuple[str, int], *, delay: float = 0.0, up: float | None = None,
                 down: float | None = None, rate: float | None = None, scheme: str = "http",
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.target = target
        self.scheme = scheme
        self.up = _Direction(delay if up is None else up, rate)
        self.down = _Direction(delay if down is None else down, rate)
        #: Connections accepted so far (refused ones are not counted).
        self.connections = 0
        self._pipes: set[_Pipe] = set()
        self._host = host
        self._loop = _Loop(f"bad link to {target[0]}:{target[1]}")
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.base_events.Server | None = None
        self._refusing: asyncio.TimerHandle | None = None
        self.port = port
        self._loop.call(self._listen())

    # the settings, from any thread

    def set(self, *, delay: float | None = None, up: float | None = None, down: float | None = None,
            rate: float | object | None = _UNCHANGED) -> None:
        """Change the delays (`delay` both ways, or `up`/`down`) and the cap (`rate=None`: none) now."""
        if delay is not None:
            self.up.delay = self.down.delay = delay
        if up is not None:
            self.up.delay = up
        if down is not None:
            self.down.delay = down
        if rate is not _UNCHANGED:
            self.up.rate = self.down.rate = rate  # type: ignore[assignment]

    def stall(self) -> None:
        """From now on no byte moves either way; connections stay open and new ones hang."""
        self._loop.soon(self._flowing.clear)

    def resume(self) -> None:
        """The link is back: what waited is delivered, in order, then everything flows again."""
        self._loop.soon(self._flowing.set)

    @property
    def stalled(self) -> bool:
        return not self._flowing.is_set()

    def drop(self, refuse_for: float = 0.0) -> int:
        """Reset every open connection (both ends see an RST); refuse new ones for `refuse_for` seconds
        (nothing listens: connection refused). How many connections were reset."""
        return self._loop.call(self._drop(refuse_for))

    @property
    def open_connections(self) -> int:
        return len(self._pipes)

    @property
    def bytes_down(self) -> int:
        """Bytes the target sent to clients so far (what a download costs on the wire)."""
        return self.down.bytes

    @property
    def bytes_up(self) -> int:
        return self.up.bytes

    @property
    def address(self) -> tuple[str, int]:
        return (self._host, self.port)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self._host}:{self.port}"

    def close(self) -> None:
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            self._loop.call(self._close(), timeout=5)
        self._loop.stop()

    def __enter__(self) -> BadLink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # on the link's loop

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self._host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _drop(self, refuse_for: float) -> int:
        dropped = len(self._pipes)
        for pipe in list(self._pipes):
            for task in pipe.tasks:
                task.cancel()
            _reset(pipe.client)
            _reset(pipe.upstream)
        self._pipes.clear()
        if refuse_for > 0:
            if self._refusing is not None:
                self._refusing.cancel()
            if self._server is not None:
                self._server.close()
                self._server = None
            loop = asyncio.get_running_loop()
            self._refusing = loop.call_later(refuse_for, lambda: loop.create_task(self._reopen()))
        return dropped

    async def _reopen(self) -> None:
        self._refusing = None
        if self._server is None:
            await self._listen()

    async def _close(self) -> None:
        if self._refusing is not None:
            self._refusing.cancel()
        if self._server is not None:
            self._server.close()
        await self._drop(0)
        for _ in range(3):  # the connections' own tasks end (cancelled) before the loop stops
            await asyncio.sleep(0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._flowing.wait()  # a stalled link lets no handshake through: the connect hangs
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(writer)
            return
        self.connections += 1
        pipe = _Pipe(writer, up_writer)
        self._pipes.add(pipe)
        queue_up: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        queue_down: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        pipe.tasks = [
            asyncio.create_task(self._read(reader, queue_up, self.up)),
            asyncio.create_task(self._send(queue_up, up_writer, self.up)),
            asyncio.create_task(self._read(up_reader, queue_down, self.down)),
            asyncio.create_task(self._send(queue_down, writer, self.down)),
        ]
        try:
            await asyncio.gather(*pipe.tasks)
        except (asyncio.CancelledError, OSError):
            pass
        finally:
            if pipe in self._pipes:
                self._pipes.discard(pipe)
                for task in pipe.tasks:
                    task.cancel()
                writer.close()
                up_writer.close()

    async def _read(self, reader: asyncio.StreamReader, queue: asyncio.Queue[tuple[float, bytes]],
                    direction: _Direction) -> None:
        while True:
            await self._flowing.wait()  # a stalled link reads nothing: the sender's buffers fill up
            try:
                data = await reader.read(READ_SIZE)
            except OSError:
                data = b""
            await queue.put((time.monotonic() + direction.delay, data))
            if not data:
                return

    async def _send(self, queue: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter,
                    direction: _Direction) -> None:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self._flowing.wait()
            if not data:
                with contextlib.suppress(OSError):
                    if writer.can_write_eof():
                        writer.write_eof()
                return
            pieces = [data[i:i + RATE_PIECE] for i in range(0, len(data), RATE_PIECE)] if direction.rate else [data]
            for piece in pieces:
                await direction.reserve(len(piece))
                await self._flowing.wait()
                direction.bytes += len(piece)  # counted before the peer can read it: never behind
                writer.write(piece)
                await writer.drain()


class ConnectProxy:
    """An HTTP proxy that only tunnels (`CONNECT host:port`), as a corporate `HTTPS_PROXY` does.

    `resolve` maps a host name to the address it is reached at (the proxy resolves names, the client
    never does); other names are connected to as given. `tunnels` lists each `host:port` asked for.
    """

    def __init__(self, resolve: Mapping[str, str] | None = None, host: str = "127.0.0.1") -> None:
        self.resolve = dict(resolve or {})
        self.tunnels: list[str] = []
        self._host = host
        self._loop = _Loop("connect proxy")
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0
        self._loop.call(self._listen())

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    def close(self) -> None:
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            self._loop.call(self._close(), timeout=5)
        self._loop.stop()

    def __enter__(self) -> ConnectProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self._host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        tunnels = list(self._tasks)
        for task in tunnels:
            task.cancel()
        # they end here: one left pending when the loop stops is finished by the collector, on a closed loop
        await asyncio.gather(*tunnels, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._tunnel(reader, writer)
        except (asyncio.CancelledError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        authority = rest.split(" ", 1)[0]
        if method.upper() != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        name, _, port = authority.rpartition(":")
        name = name.strip("[]")
        try:
            up_reader, up_writer = await asyncio.open_connection(self.resolve.get(name, name), int(port))
        except (OSError, ValueError):
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        self.tunnels.append(authority)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        try:
            await asyncio.gather(_splice(reader, up_writer), _splice(up_reader, writer))
        finally:
            up_writer.close()


async def _splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(READ_SIZE):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()
