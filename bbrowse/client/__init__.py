"""Async client of the Browser Instance Control Service: REST, SSE, the attach WebSocket, typed errors,
and direct routing to each session's VM as the official SDK does it (`routing.py`).

Imports `bbrowse.wire` and nothing of the service. Start with `BrowserClient`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bbrowse.client.attach import AttachSession
    from bbrowse.client.client import BrowserClient
    from bbrowse.client.config import DEFAULT_BASE_URL, ENV_BASE_URL, ENV_TOKEN, ClientConfig
    from bbrowse.client.errors import (
        BadRequest,
        BrowserUnavailable,
        ClientError,
        ConfigError,
        Conflict,
        ConnectionLost,
        Forbidden,
        IncompleteStream,
        LinkStalled,
        NotFound,
        ProtocolError,
        RateLimited,
        RequestTimeout,
        ServerError,
        ServiceError,
        SessionGone,
        SessionNotLeased,
        Unauthorized,
        VmGoingAway,
    )
    from bbrowse.client.keepalive import KeepAlive
    from bbrowse.client.modes import FileMode, is_symlink, parse_mode
    from bbrowse.client.pool import close_shared_clients
    from bbrowse.client.pty_output import PtyOutput
    from bbrowse.client.retry import NO_RETRY, RetryPolicy, is_permanent
    from bbrowse.client.routing import Route, RouteCache
    from bbrowse.client.sessions import SessionPage
    from bbrowse.client.stdin_writer import StdinWriter
    from bbrowse.client.streams import Stream

#: The module of each name. The package imports one only when a name of it is first asked for: settings
#: and the launcher need `ClientConfig` before anything else, and the app starts faster without the
#: streams, attach and WebSocket machinery loaded first.
_MODULES = {
    "AttachSession": "attach",
    "BrowserClient": "client",
    "DEFAULT_BASE_URL": "config",
    "ENV_BASE_URL": "config",
    "ENV_TOKEN": "config",
    "ClientConfig": "config",
    "BadRequest": "errors",
    "BrowserUnavailable": "errors",
    "ClientError": "errors",
    "ConfigError": "errors",
    "Conflict": "errors",
    "ConnectionLost": "errors",
    "Forbidden": "errors",
    "IncompleteStream": "errors",
    "LinkStalled": "errors",
    "NotFound": "errors",
    "ProtocolError": "errors",
    "RateLimited": "errors",
    "RequestTimeout": "errors",
    "ServerError": "errors",
    "ServiceError": "errors",
    "SessionGone": "errors",
    "SessionNotLeased": "errors",
    "Unauthorized": "errors",
    "VmGoingAway": "errors",
    "KeepAlive": "keepalive",
    "FileMode": "modes",
    "is_symlink": "modes",
    "parse_mode": "modes",
    "close_shared_clients": "pool",
    "PtyOutput": "pty_output",
    "NO_RETRY": "retry",
    "RetryPolicy": "retry",
    "is_permanent": "retry",
    "Route": "routing",
    "RouteCache": "routing",
    "SessionPage": "sessions",
    "StdinWriter": "stdin_writer",
    "Stream": "streams",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])


__all__ = [
    "DEFAULT_BASE_URL",
    "ENV_BASE_URL",
    "ENV_TOKEN",
    "NO_RETRY",
    "AttachSession",
    "BadRequest",
    "BrowserClient",
    "BrowserUnavailable",
    "ClientConfig",
    "ClientError",
    "ConfigError",
    "Conflict",
    "ConnectionLost",
    "FileMode",
    "Forbidden",
    "IncompleteStream",
    "KeepAlive",
    "LinkStalled",
    "NotFound",
    "ProtocolError",
    "PtyOutput",
    "RateLimited",
    "RequestTimeout",
    "RetryPolicy",
    "Route",
    "RouteCache",
    "ServerError",
    "ServiceError",
    "SessionGone",
    "SessionNotLeased",
    "SessionPage",
    "StdinWriter",
    "Stream",
    "Unauthorized",
    "VmGoingAway",
    "close_shared_clients",
    "is_permanent",
    "is_symlink",
    "parse_mode",
]
