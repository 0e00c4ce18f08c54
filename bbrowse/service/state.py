"""The objects one running service shares between its routes, how they are tied together, and how routes get them.

`build_state` makes every part once, in dependency order, and registers the session hooks in the
order they must run: a deleted session's processes end first, then its watches, its recording is
finalised while its browser still runs, then the browser closes, then the browser's input helpers.
Routes take what they need with the dependencies below (`State`, `ActiveSession`, `AnySession`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, cast

from fastapi import Depends
from starlette.requests import HTTPConnection

from bbrowse.service.browsers import BrowserManager
from bbrowse.service.chromium_tmpdir import sweep_at_start as sweep_chromium_tmpdirs
from bbrowse.service.computer import ComputerManager
from bbrowse.service.config import ServiceConfig
from bbrowse.service.fs_watch import WatchManager
from bbrowse.service.processes import DEFAULT_POLICY, KERNEL_COMPAT_POLICY, ProcessManager
from bbrowse.service.recorder import ReplayManager
from bbrowse.service.replay_view import ReplayTokens
from bbrowse.service.retention import Retention, clock_from_env
from bbrowse.service.sandbox import SandboxManager
from bbrowse.service.sandbox import probe as probe_sandbox
from bbrowse.service.sessions import Session, SessionManager
from bbrowse.service.stray_children import StrayReaper
from bbrowse.service.vm_token import VmTokens
from bbrowse.service.websocket_routes import WebSocketRegistry

#: A startup or shutdown step (what it returns is not used).
Hook = Callable[[], Awaitable[object]]


@dataclass
class ServiceState:
    config: ServiceConfig
    sessions: SessionManager
    #: Signs and checks the session-scoped `jwt` of every VM endpoint (`/vm/{session_id}/...`) and `cdp_ws_url`.
    #: One per running service, its secret never written down: a restarted service hands out new tokens.
    vm_tokens: VmTokens
    #: Each session's Chromium (and Xvfb for a headful one).
    browsers: BrowserManager
    #: Recordings; they outlive their session until retention removes them.
    replays: ReplayManager
    #: Signs the `jwt` of every `replay_view_url`.
    replay_tokens: ReplayTokens
    #: Spawned programs, their output and their attach sessions.
    processes: ProcessManager
    #: Mouse, keyboard and clipboard of each session's browser.
    computer: ComputerManager
    #: `fs/watch` watches, by session.
    watches: WatchManager
    #: Where uploads wait until they are put in place (`fs/upload` before its `dest_path`, `fs/upload_zip`).
    upload_spool: Path
    #: Keeps the state dir within its age and size limits.
    retention: Retention
    #: Called in order when the service starts, and in reverse when it stops.
    #: `--kernel-compat`: open attach and CDP sockets, closed with 1001 when their VM goes away.
    websockets: WebSocketRegistry = field(default_factory=WebSocketRegistry)
    startup: list[Hook] = field(default_factory=list)
    shutdown: list[Hook] = field(default_factory=list)


def build_state(config: ServiceConfig) -> ServiceState:
    """Every part of one service, made once and tied together (see the module docstring for the order)."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    sessions = SessionManager(config.sessions_dir, config.service_log, kernel_activity=config.kernel_compat)
    browsers = BrowserManager(config.chromium_path)
    replays = ReplayManager(config.state_dir / "replays", browsers)
    processes = ProcessManager(KERNEL_COMPAT_POLICY if config.kernel_compat else DEFAULT_POLICY)
    retention = Retention(
        config.state_dir, sessions, config.retention,
        service_log=config.service_log, replays=replays, clock=clock_from_env(),
    )
    replays.clock = retention.clock  # one clock for "ended long ago" and "looked up just now"
    state = ServiceState(
        config=config,
        sessions=sessions,
        vm_tokens=VmTokens(ttl_seconds=config.vm_token_seconds),
        browsers=browsers,
        replays=replays,
        replay_tokens=ReplayTokens(ttl_seconds=config.replay_link_seconds),
        processes=processes,
        computer=ComputerManager(browsers, kernel_vm=config.kernel_compat),
        watches=WatchManager(),
        upload_spool=_empty_spool(config.state_dir / "spool"),
        retention=retention,
    )
    if config.sandbox is None:
        config.sandbox = probe_sandbox(config.no_sandbox)
    sandboxes = SandboxManager(config.sandbox)
    sessions.validators.append(browsers.validate)
    sessions.on_create.extend([sandboxes.on_create, browsers.on_create])  # the browser runs in the sandbox
    if config.kernel_compat:  # the VM going away: its sockets close first, with 1001

        async def close_sockets(session: Session) -> None:
            await state.websockets.close_all(session.session_id)

        sessions.on_delete.append(close_sockets)
    sessions.on_delete.extend([
        processes.end_session,
        state.watches.on_delete,
        replays.on_delete,  # finalise the recording while the browser still runs
        browsers.on_delete,
        state.computer.on_delete,
        sandboxes.on_delete,  # last: what is left in it ends with it, then its files go
    ])
    # What a killed service left: its Chromiums' temporary directories are swept, then its sessions are
    # restored, once every hook above is in place.
    strays = StrayReaper()
    state.startup.extend([sweep_chromium_tmpdirs, sessions.restore, retention.start, strays.start])
    state.shutdown.extend([processes.shutdown, retention.stop, strays.stop])
    return state


def _empty_spool(spool: Path) -> Path:
    """The upload spool, emptied of what a service killed mid-upload left there."""
    spool.mkdir(parents=True, exist_ok=True)
    for stale in spool.iterdir():
        with contextlib.suppress(OSError):
            stale.unlink()
    return spool


# what routes get -----------------------------------------------------------------------------------


def service_state(conn: HTTPConnection) -> ServiceState:
    """The state of the service that took this request or WebSocket."""
    return cast(ServiceState, conn.app.state.service)


async def _state(conn: HTTPConnection) -> ServiceState:
    # async, as every dependency here: FastAPI runs a plain `def` dependency in a worker thread.
    return service_state(conn)


async def active_session(id_or_name: str, conn: HTTPConnection) -> Session:
    """The addressed session (404 unknown, 410 ended), marked as active.

    The dependency behind `ActiveSession`; handlers on the hot paths (process stdin, attach) and
    WebSocket routes, which turn a refusal into a denied upgrade, await it themselves.
    """
    return service_state(conn).sessions.get(id_or_name)


async def any_session(id_or_name: str, conn: HTTPConnection) -> Session:
    """Active or deleted (404 unknown): a deleted session's replays can still be listed and downloaded."""
    return service_state(conn).sessions.get(id_or_name, include_deleted=True)


State = Annotated[ServiceState, Depends(_state)]
ActiveSession = Annotated[Session, Depends(active_session)]
AnySession = Annotated[Session, Depends(any_session)]
