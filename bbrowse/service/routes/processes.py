"""`/browsers/{id_or_name}/process/...`: spawn, exec, stdin, status, kill, resize, stdout stream, attach.

The work is done by `bbrowse.service.processes`; these handlers only find the session and the
process, and turn outcomes into the contract's shapes. The two hot paths stay lean: stdin writes
straight to the process's descriptor, and the SSE stream sends pre-encoded frames.

With `--kernel-compat` (`ProcessPolicy.pty_output_only_attached`) they behave as Kernel's VM does: a
PTY's output flows only over `attach` (`stdout/stream` sends just the exit event), the PTY is read
only while a client is attached, `attach` needs a PTY, and `attach` refusals before the upgrade are
`{"type": "error", "message": ...}` (wire `AttachError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from fastapi import APIRouter, Request, Response, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.responses import StreamingResponse

from bbrowse.service.errors import ServiceError, bad_request, conflict
from bbrowse.service.openapi import errors
from bbrowse.service.process_output import Chunk, sse_exit_frame
from bbrowse.service.processes import ManagedProcess, StdinClosedError, stdin_error
from bbrowse.service.sessions import Session
from bbrowse.service.sse import sse_response
from bbrowse.service.state import active_session, service_state
from bbrowse.service.vm_endpoint import vm_served
from bbrowse.service.websocket_routes import deny_upgrade, until_one_ends
from bbrowse.timeouts import bounded
from bbrowse.wire import (
    AttachError,
    AttachExit,
    AttachResize,
    ExecRequest,
    ExecResult,
    KillRequest,
    OkResponse,
    ProcessStatus,
    ResizeRequest,
    SpawnRequest,
    SpawnResult,
    StdinRequest,
    StdinResult,
)

log = logging.getLogger("bbrowse.processes")

PREFIX = "/browsers/{id_or_name}/process"

#: Every route addresses a session (404 unknown, 410 ended) and most a process of it (404).
router = vm_served(APIRouter(tags=["processes"], responses=errors(404, 410)))

#: How long a second attach waits for the first to finish closing before it is refused with 409.
ATTACH_HANDOVER_SECONDS = 1.0


# Handlers look things up themselves (awaiting `active_session`) instead of through `Depends`:
# resolving even an async dependency costs more than the whole keystroke path.


async def _process(request: Request, id_or_name: str, process_id: str) -> ManagedProcess:
    session = await active_session(id_or_name, request)
    return service_state(request).processes.get(session, process_id)


@router.post(PREFIX + "/spawn", response_model=SpawnResult, responses=errors(403))
async def spawn(id_or_name: str, body: SpawnRequest, request: Request) -> SpawnResult:
    session = await active_session(id_or_name, request)
    proc = await service_state(request).processes.spawn(session, body)
    return SpawnResult(process_id=proc.process_id, pid=proc.pid, started_at=proc.started_at)


@router.post(PREFIX + "/exec", response_model=ExecResult, responses=errors(403))
async def exec_(id_or_name: str, body: ExecRequest, request: Request) -> ExecResult:
    session = await active_session(id_or_name, request)
    return await service_state(request).processes.exec(session, body)


@router.post(PREFIX + "/{process_id}/stdin", response_model=StdinResult)
async def stdin(id_or_name: str, process_id: str, body: StdinRequest, request: Request) -> Response:
    proc = await _process(request, id_or_name, process_id)
    try:
        written = await proc.write_stdin(body.data())
    except StdinClosedError:
        raise stdin_error(proc) from None
    return Response(b'{"written_bytes":%d}' % written, media_type="application/json")


@router.get(PREFIX + "/{process_id}/status", response_model=ProcessStatus, response_model_exclude_none=True)
async def status(id_or_name: str, process_id: str, request: Request) -> ProcessStatus:
    return (await _process(request, id_or_name, process_id)).status()


@router.post(PREFIX + "/{process_id}/kill", response_model=OkResponse)
async def kill(id_or_name: str, process_id: str, body: KillRequest, request: Request) -> OkResponse:
    """Signal the process group. Signalling a process that has already exited is a no-op, still ok.

    In --kernel-compat: the leader alone, and 500 once it has exited (Kernel's VM).
    """
    (await _process(request, id_or_name, process_id)).send_signal(body.signal)
    return OkResponse()


@router.post(PREFIX + "/{process_id}/resize", response_model=OkResponse)
async def resize(id_or_name: str, process_id: str, body: ResizeRequest, request: Request) -> OkResponse:
    (await _process(request, id_or_name, process_id)).resize(body.rows, body.cols)
    return OkResponse()


@router.get(
    PREFIX + "/{process_id}/stdout/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Output chunks, then the exit event"}},
)
async def stdout_stream(id_or_name: str, process_id: str, request: Request) -> StreamingResponse:
    """SSE: the backlog, then every chunk of stdout/stderr (PTY output as stdout), then the exit event.

    In --kernel-compat a PTY-backed process sends only the exit event here: its output is `attach`'s alone.
    """
    session = await active_session(id_or_name, request)
    proc = service_state(request).processes.get(session, process_id)
    if proc.channel is not None:
        return sse_response(proc.channel.frames(), kernel_vm=True)
    return sse_response(_sse_events(session, proc))


async def _sse_events(session: Session, proc: ManagedProcess):
    with session.in_use():
        if proc.reads_only_attached:
            await proc.finished.wait()
        else:
            async for frames in proc.output.follow(Chunk.sse):
                yield frames
        if proc.output.exit_code is not None:
            yield sse_exit_frame(proc.output.exit_code)


# attach ----------------------------------------------------------------------


@router.websocket(PREFIX + "/{process_id}/attach")
async def attach(websocket: WebSocket, id_or_name: str, process_id: str) -> None:
    """Binary frames in = input; text `{"type":"resize",...}` resizes; binary out = output, backlog first.

    Ends with a text `{"type":"exit","exitCode":N}` and close 1000. One attach per process at a time.
    In --kernel-compat it ends as Kernel's VM's does (`_kernel_attach_session`), and a second attach is
    refused at once.
    """
    state = service_state(websocket)
    kernel_vm = state.processes.policy.kernel_vm
    session: Session | None = None
    try:
        session = await active_session(id_or_name, websocket)
        proc = state.processes.get(session, process_id)
        if proc.policy.pty_output_only_attached and not proc.tty:
            raise bad_request("process is not PTY-backed", field="process_id")
        if proc.attached and not kernel_vm:
            # A client that just closed its attach and opens a new one (a reconnect) can be faster than
            # the old handler, which learns of the close a moment after the client: give it that moment.
            with contextlib.suppress(TimeoutError):
                await bounded(proc.detached.wait(), ATTACH_HANDOVER_SECONDS)
        if proc.attached:
            raise conflict(f"process {process_id} already has an active attach session; only one at a time")
    except ServiceError as exc:
        kernel_body = None
        if state.config.kernel_compat:  # the VM's own words once the session is found (the VM answers)
            words = KERNEL_ATTACH_REFUSALS.get(exc.status) if session is not None else None
            kernel_body = AttachError(message=words or exc.message)
        await deny_upgrade(websocket, exc, kernel_body)
        return
    proc.detached.clear()
    try:
        await websocket.accept()
        if kernel_vm:
            with state.websockets.track(session.session_id, websocket):
                await _kernel_attach_session(websocket, proc)
        else:
            with session.in_use():
                await _attach_session(websocket, proc)
    finally:
        proc.stop_reading_pty()
        proc.detached.set()


#: Kernel's VM's bodies for an attach it refuses before the upgrade (`process.go`), by status.
KERNEL_ATTACH_REFUSALS = {
    404: "process not found",
    400: "process is not PTY-backed",
    409: "process already has an active attach session",
}


async def _attach_session(websocket: WebSocket, proc: ManagedProcess) -> None:
    pump = asyncio.create_task(_pump_output(websocket, proc))
    done = await until_one_ends([pump, asyncio.create_task(_feed_input(websocket, proc))])
    if pump in done and not pump.cancelled() and pump.exception() is None and proc.output.exit_code is not None:
        with contextlib.suppress(Exception):
            await websocket.send_text(AttachExit(exitCode=proc.output.exit_code).model_dump_json())
            await websocket.close(code=1000)


async def _kernel_attach_session(websocket: WebSocket, proc: ManagedProcess) -> None:
    """Kernel's VM (`HandleProcessAttachWS`), the harsh branch of its exit race every time.

    At the exit the PTY reader's EIO shuts the session down before the exit watcher queues the exit
    frame, so none is sent. The socket reader is still blocked in `wsConn.Read`, and the handler waits
    for it before its close 1000: the socket stays open until the client sends a frame or closes.
    """
    ended = asyncio.Event()

    async def pump() -> None:
        try:
            await _pump_output(websocket, proc)
        finally:
            ended.set()

    feed = asyncio.create_task(_feed_input(websocket, proc, ended))
    output = asyncio.create_task(pump())
    try:
        await asyncio.wait((feed, output), return_when=asyncio.FIRST_COMPLETED)
        if not feed.done():
            await feed  # the program ended: wait, as Go does, for the client's next frame or its close
    finally:
        for task in (feed, output):
            task.cancel()
        await asyncio.gather(feed, output, return_exceptions=True)
    if not (feed.cancelled() or isinstance(feed.exception(), WebSocketDisconnect)):
        with contextlib.suppress(Exception):
            await websocket.close(code=1000)


async def _pump_output(websocket: WebSocket, proc: ManagedProcess) -> None:
    async for data in proc.output.follow(Chunk.raw, on_subscribed=proc.start_reading_pty):
        await websocket.send_bytes(data)


async def _feed_input(websocket: WebSocket, proc: ManagedProcess, ended: asyncio.Event | None = None) -> None:
    """Runs until the client goes away, or (`ended` set: Kernel's VM) until its first frame after the end."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        if ended is not None and ended.is_set():
            return
        data = message.get("bytes")
        if data is not None:
            try:
                await proc.write_stdin(data)
            except StdinClosedError:
                if ended is not None:  # Kernel's VM: the PTY write fails and the attach shuts down
                    return
                # input after the exit is dropped; the pump sends the exit
            continue
        text = message.get("text")
        if text is not None:
            _control(proc, text)


def _control(proc: ManagedProcess, text: str) -> None:
    try:
        payload = json.loads(text)
    except ValueError:
        log.info("attach %s: ignoring a text frame that is not JSON", proc.process_id)
        return
    if isinstance(payload, dict) and payload.get("type") == "resize":
        try:
            size = AttachResize.model_validate(payload)
            proc.resize(size.rows, size.cols)
        except (ValidationError, ServiceError) as exc:
            log.info("attach %s: resize refused: %s", proc.process_id, exc)
    else:
        log.info("attach %s: ignoring an unknown control frame", proc.process_id)
