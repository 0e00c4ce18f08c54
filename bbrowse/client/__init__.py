"""Async client of the Browser Instance Control Service: REST, SSE, the attach WebSocket, typed errors,
and direct routing to each session's VM as the official SDK does it (`routing.py`).

Imports `bbrowse.wire` and nothing of the service. Start with `BrowserClient`.
"""

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
