"""Processes of a session: spawn, exec, stdin, status, kill, resize, the stdout stream and attach.

`stdin` is the keystroke path: its body is built by hand (no model round trip) and it is sent once,
never retried, so a key is never typed twice.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pybase64
from pydantic import ValidationError

from bbrowse.client.bodies import body
from bbrowse.client.decode import model
from bbrowse.client.errors import IncompleteStream, ProtocolError
from bbrowse.client.sse import iter_sse_json
from bbrowse.client.stdin_writer import StdinWriter
from bbrowse.client.streams import OPENED, Stream
from bbrowse.client.transport import Endpoint, Transport, segment
from bbrowse.wire import (
    ExecRequest,
    ExecResult,
    KillRequest,
    OkResponse,
    ProcessExitEvent,
    ProcessOutputEvent,
    ProcessStatus,
    ResizeRequest,
    Signal,
    SpawnRequest,
    SpawnResult,
    StdinResult,
    StdoutStreamEvent,
)

if TYPE_CHECKING:
    from bbrowse.client.attach import AttachSession

_JSON = {"Content-Type": "application/json"}
#: (rows, cols) of a PTY spawned without a size.
DEFAULT_PTY_SIZE = (24, 80)


class Processes:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _path(self, id_or_name: str, process_id: str | None = None, tail: str = "") -> str:
        base = f"/browsers/{segment(id_or_name)}/process"
        return f"{base}/{segment(process_id)}{tail}" if process_id is not None else base + tail

    async def spawn(
        self,
        id_or_name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        as_root: bool = False,
        as_user: str | None = None,
        timeout_sec: int | None = None,
        allocate_tty: bool = False,
        cols: int | None = None,
        rows: int | None = None,
    ) -> SpawnResult:
        """Start `command` and return at once (never re-sent: a retry could start it twice). A PTY
        (`allocate_tty`) is spawned `rows`x`cols`, 24x80 unless given."""
        fields = _command_fields(command, args, cwd, env, as_root, as_user, timeout_sec)
        if allocate_tty:  # always with a size: Kernel's VM makes a PTY spawned without one 0x0
            fields.update(allocate_tty=True, cols=cols if cols is not None else DEFAULT_PTY_SIZE[1],
                          rows=rows if rows is not None else DEFAULT_PTY_SIZE[0])
        response = await self._t.request("POST", self._path(id_or_name, tail="/spawn"),
                                         json=body(SpawnRequest.model_construct(**fields)), idempotent=False)
        return model(SpawnResult, response, "spawn")

    async def exec(
        self,
        id_or_name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        as_root: bool = False,
        as_user: str | None = None,
        timeout_sec: int | None = None,
    ) -> ExecResult:
        """Run `command` to completion; waits as long as it runs (never re-sent)."""
        request = ExecRequest.model_construct(**_command_fields(command, args, cwd, env, as_root, as_user,
                                                                 timeout_sec))
        response = await self._t.request(
            "POST", self._path(id_or_name, tail="/exec"), json=body(request), idempotent=False,
            timeout=self._t.stream_timeout,
        )
        return model(ExecResult, response, "exec")

    async def stdin(self, id_or_name: str, process_id: str, data: bytes) -> StdinResult:
        """Write `data` to the process's stdin (sent exactly once)."""
        content = b'{"data_b64":"' + pybase64.b64encode(data) + b'"}'
        response = await self._t.request(
            "POST", self._path(id_or_name, process_id, "/stdin"), content=content, headers=_JSON, idempotent=False,
        )
        return model(StdinResult, response, "stdin")

    async def status(self, id_or_name: str, process_id: str) -> ProcessStatus:
        response = await self._t.request("GET", self._path(id_or_name, process_id, "/status"), idempotent=True)
        return model(ProcessStatus, response, "process status")

    async def kill(self, id_or_name: str, process_id: str, signal: Signal = "TERM") -> OkResponse:
        """Send a signal; repeating a signal is harmless, so this one is retried."""
        response = await self._t.request(
            "POST", self._path(id_or_name, process_id, "/kill"), json=body(KillRequest.model_construct(signal=signal)),
            idempotent=True,
        )
        return model(OkResponse, response, "kill")

    async def resize(self, id_or_name: str, process_id: str, rows: int, cols: int) -> OkResponse:
        """Set the PTY window size (the program sees SIGWINCH); 400 when the process has no PTY."""
        response = await self._t.request(
            "POST", self._path(id_or_name, process_id, "/resize"),
            json=body(ResizeRequest.model_construct(rows=rows, cols=cols)), idempotent=True,
        )
        return model(OkResponse, response, "resize")

    def stdout_stream(self, id_or_name: str, process_id: str) -> Stream[StdoutStreamEvent]:
        """Output chunks (`ProcessOutputEvent`) then one `ProcessExitEvent`, after which the iteration ends.

        A stream that ends without the exit event raises `IncompleteStream`; a garbage frame raises
        `ProtocolError`; a broken connection raises `ConnectionLost`.
        """
        return Stream(self._stdout_events(id_or_name, process_id))

    async def _stdout_events(self, id_or_name: str, process_id: str) -> AsyncGenerator[StdoutStreamEvent, None]:
        what = f"stdout stream of process {process_id}"
        async with self._t.open_stream("GET", self._path(id_or_name, process_id, "/stdout/stream"), sse=True) as r:
            yield OPENED
            async for payload in iter_sse_json(r, what):
                event = parse_stdout_payload(payload, what)
                yield event
                if type(event) is ProcessExitEvent:
                    return
        raise IncompleteStream(f"{what}: the stream ended without the process's exit event")

    async def output(self, id_or_name: str, process_id: str) -> tuple[bytes, bytes, int]:
        """Convenience: read the stdout stream to the end; (stdout, stderr, exit_code)."""
        out, err = bytearray(), bytearray()
        async with self.stdout_stream(id_or_name, process_id) as events:
            async for event in events:
                if isinstance(event, ProcessOutputEvent):
                    (out if event.stream == "stdout" else err).extend(event.data())
                else:
                    return bytes(out), bytes(err), event.exit_code
        raise IncompleteStream(f"stdout stream of process {process_id}: ended without the exit event")

    def stdin_writer(self, id_or_name: str, process_id: str) -> StdinWriter:
        """An ordered, coalescing writer for interactive typing (see `StdinWriter`); needs a running loop."""
        return StdinWriter(lambda data: self.stdin(id_or_name, process_id, data))

    def attach(
        self,
        id_or_name: str,
        process_id: str,
        *,
        rows: int | None = None,
        cols: int | None = None,
        url: str | None = None,
    ) -> AttachSession:
        """The PTY of a process over the `attach` WebSocket; use as `async with`.

        Through the session's VM (`{base_url}/process/{id}/attach?jwt=...`) when the client knows its
        route, else (or when the VM refuses the jwt) through the control plane. `url` overrides both.
        """
        from bbrowse.client.attach import AttachSession  # here: the WebSocket library loads with the first shell

        config = self._t.config
        endpoints: list[Endpoint]
        if url is not None:
            endpoints = [(url, {"Authorization": f"Bearer {config.token}"}, None)]
        else:
            endpoints = self._t.websocket_endpoints(self._path(id_or_name, process_id, "/attach"))
        return AttachSession(endpoints, routes=self._t.routes, open_timeout=config.connect_timeout + 5,
                             rows=rows, cols=cols, use_env_proxy=not config.is_loopback)


def _command_fields(
    command: str,
    args: Sequence[str],
    cwd: str | None,
    env: Mapping[str, str] | None,
    as_root: bool,
    as_user: str | None,
    timeout_sec: int | None,
) -> dict[str, Any]:
    """The `ExecRequest` fields given for spawn/exec (the service validates and answers 400 with details)."""
    if isinstance(args, str):
        raise TypeError("args must be a sequence of strings, not one string")
    given: dict[str, Any] = {}  # env and as_root only when they say something, as before
    if env:
        given["env"] = dict(env)
    if as_root:
        given["as_root"] = True
    return body(ExecRequest.model_construct(command=command, args=list(args), cwd=cwd, as_user=as_user,
                                            timeout_sec=timeout_sec, **given))


def parse_stdout_payload(payload: object, what: str = "stdout stream") -> StdoutStreamEvent:
    """One `stdout/stream` event as a wire model; anything else is a `ProtocolError`."""
    if not isinstance(payload, dict):
        raise ProtocolError(f"{what}: event is not a JSON object: {payload!r:.200}")
    try:
        if payload.get("event") == "exit":
            return ProcessExitEvent.model_validate(payload)
        return ProcessOutputEvent.model_validate(payload)
    except ValidationError as exc:
        raise ProtocolError(f"{what}: not an output or exit event: {payload!r:.200} ({exc.error_count()} errors)") \
            from None

