"""The objects one running service shares between its routes, and how routes get at them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import HTTPConnection

from bbrowse.service.config import ServiceConfig
from bbrowse.service.sessions import Session, SessionManager
from bbrowse.service.vm_token import VmTokens


@dataclass
class ServiceState:
    config: ServiceConfig
    sessions: SessionManager
    #: Other managers (processes, browsers, recorder) register themselves here by name.
    parts: dict[str, Any] = field(default_factory=dict)
    #: Called in order when the service starts, and in reverse when it stops.
    startup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    #: Signs and checks the session-scoped `jwt` of every VM endpoint (`/vm/{session_id}/...`) and `cdp_ws_url`.
    #: One per running service, its secret never written down: a restarted service hands out new tokens.
    vm_tokens: VmTokens = field(default_factory=VmTokens)


def service_state(conn: HTTPConnection) -> ServiceState:
    return conn.app.state.service


def active_session(id_or_name: str, conn: HTTPConnection) -> Session:
    """FastAPI dependency: the addressed session (404 unknown, 410 ended), marked as active."""
    return service_state(conn).sessions.get(id_or_name)
